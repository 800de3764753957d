"""Argument types shared by the command-line modules (cli, bench, evaluation)."""
from __future__ import annotations

import argparse
import json

__all__ = ["json_object"]


def json_object(text: str) -> dict:
    """An argparse type: a JSON object, e.g. --game-args '{"dimension": 3}'."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"not valid JSON: {error}") from error
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object, e.g. '{\"dimension\": 3}'")
    return value
