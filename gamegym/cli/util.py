"""Argument types and readers shared by the command-line modules (cli, bench, evaluation)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gamegym.config import ConfigError

__all__ = ["json_object", "read_overrides"]


def json_object(text: str) -> dict:
    """An argparse type: a JSON object, e.g. --game-args '{"dimension": 3}'."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"not valid JSON: {error}") from error
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object, e.g. '{\"dimension\": 3}'")
    return value


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 1..65535 (the page checks requests name it, so it is
    chosen, not left to the system)."""
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1..65535)")
    return int(text)


def read_overrides(path: Path) -> dict:
    """A config file's JSON object, as changes to apply (ConfigError when it is not one)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ConfigError(f"cannot read config file {path}: {error}") from error
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a JSON object")
    return data
