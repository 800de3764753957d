"""The command line's parser class and help layout, and the argument types and readers of its
commands (the helpers the benchmarks share with it are in gamegym.console)."""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from gamegym.config import ConfigError

__all__ = [
    "HelpFormatter",
    "Parser",
    "add_trust_flag",
    "console_ask",
    "default_text",
    "port_number",
    "read_overrides",
    "shows_default",
]


def shows_default(action: argparse.Action) -> bool:
    """Whether `--help` names the action's default: an option (or optional positional) that
    takes a value and has a default other than None; a plain flag's False is not shown."""
    takes_value = action.nargs != 0
    optional = bool(action.option_strings) or action.nargs in ("?", "*")
    unset = action.default is None or action.default is argparse.SUPPRESS
    return takes_value and optional and not unset and action.help is not argparse.SUPPRESS


def default_text(value: Any) -> str:
    """A default as it would be typed: a list's items apart, a dict as JSON."""
    if isinstance(value, list | tuple):
        return ",".join(map(str, value))
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs as written (their examples keep their lines); every option
    with a default ends its help with `(default: VALUE)`.  Only `--help` shows it: the
    reference pages have a column of their own for the default."""

    def _format_action(self, action: argparse.Action) -> str:
        if shows_default(action) and "%(default)" not in (action.help or ""):
            action = copy.copy(action)
            shown = f"(default: {default_text(action.default)})".replace("%", "%%")
            action.help = f"{action.help} {shown}" if action.help else shown
        return super()._format_action(action)


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose help uses HelpFormatter; its subcommands' parsers are Parsers
    too (argparse makes them of the parent's class).  A flag is taken only as written, never
    abbreviated (`--interval` must not pass for `--interval-seconds`), and a usage error that
    names a retired spelling says what to write instead (gamegym.cli.vocabulary)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        from gamegym.cli.vocabulary import retired_hints

        super().error(message + retired_hints(message))


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
