"""Argument types and readers shared by the command-line modules (cli, bench, evaluation)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from gamegym.config import ConfigError

__all__ = ["json_object", "read_overrides", "add_trust_flag", "console_ask"]


def json_object(text: str) -> dict:
    """An argparse type: a JSON object, e.g. --game-args '{"dimension": 3}'."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"not valid JSON: {error}") from error
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object, e.g. '{\"dimension\": 3}'")
    return value


def read_overrides(path: Path) -> dict:
    """A config file's JSON object, as changes to apply (ConfigError when it is not one)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ConfigError(f"cannot read config file {path}: {error}") from error
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a JSON object")
    return data


def add_trust_flag(parser: argparse.ArgumentParser, imports: str) -> None:
    """The `--trust` flag of a command that imports modules a session folder names."""
    parser.add_argument(
        "--trust",
        action="store_true",
        help=f"import {imports} that the session's config.json names, even when not bundled "
        "with gamegym and the folder was not made here (a folder from elsewhere); remembered "
        "for the folder (see the reliability guide, 'Code from a session folder')",
    )


def console_ask() -> Callable[[str], bool] | None:
    """A question to the person at the console ("... [y/N]"), or None when stdin or stdout
    is not a terminal (a script, a service): the command then refuses instead of asking."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return None

    def ask(question: str) -> bool:
        try:
            answer = input(
                f"{question}\nimport it, and allow it for this folder from now on? [y/N] "
            )
        except EOFError:
            return False
        return answer.strip().lower() in ("y", "yes")

    return ask
