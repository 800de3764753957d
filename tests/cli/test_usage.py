"""How the `gamegym` command talks to its user: every command's `--help` shows each option's
default; a usage error (a missing or wrong argument, an unknown command, a folder that is not a
session, a command group without its subcommand) goes to stderr with exit status 2 and
nothing on stdout."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from conftest import TICTACTOE

from gamegym.cli.main import build_parser, main


def commands(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()):
    """Every command and subcommand: its words after `gamegym` and its parser."""
    yield words, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, (*words, name))


def typed(value) -> str:
    """A default as a user would type it."""
    if isinstance(value, list):
        return " ".join(map(str, value))
    return json.dumps(value) if isinstance(value, dict) else str(value)


def status(argv: list) -> int:
    """main's exit status for `gamegym ARGV`, also when argparse exits."""
    try:
        return main([str(word) for word in argv])
    except SystemExit as stop:
        return int(stop.code or 0)


def test_every_option_with_a_default_shows_it_in_help(capsys):
    checked = 0
    for words, parser in commands(build_parser()):
        assert status([*words, "--help"]) == 0
        text = " ".join(capsys.readouterr().out.split())  # the help's lines joined
        for action in parser._actions:
            if not action.option_strings or action.nargs == 0 or action.default is None:
                continue  # a positional, a plain flag, or nothing to show
            shown = f"(default: {typed(action.default)})"
            assert shown in text, f"gamegym {' '.join(words)} --help: {action.option_strings}"
            checked += 1
    assert checked > 50  # every command's options were walked, bench's and evaluate's too
    # a few as they read
    status(["check", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--games GAMES random games to play (default: 50)" in text
    status(["bench", "learning", "--help"])
    assert "(default: learning.png)" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        [],  # a command group without its subcommand: its help
        ["bench"],
        ["nosuchcommand"],
        ["new"],  # a missing argument
        ["check", TICTACTOE, "--games", "many"],  # a wrong type
        ["check", TICTACTOE, "--no-such-flag"],
        ["new", "{tmp}/s", "--game", TICTACTOE, "--game-args", "[1]"],  # not a JSON object
        ["new", "{tmp}/s"],  # neither a game nor a preset
        ["new", "{tmp}/s", "--preset", "chess"],
        ["check", "no_such_module_here:Game"],
        ["status", "{tmp}/none"],  # not a session
        ["resume", "{tmp}/none"],
        ["evaluate", "{tmp}/none"],
        ["play", "{tmp}/none"],
        ["serve", "{tmp}/none"],
        ["continue", "{tmp}/none", "{tmp}/next"],
        ["presets", "--no-such-flag"],
        ["bench", "nosuchjob"],
    ],
    ids=lambda argv: " ".join(argv) or "(nothing)",
)
def test_a_usage_error_goes_to_stderr_with_status_2(argv, tmp_path, capsys):
    argv = [word.replace("{tmp}", str(tmp_path)) for word in argv]
    assert status(argv) == 2
    printed = capsys.readouterr()
    assert printed.out == "" and printed.err.strip()
    assert "Traceback" not in printed.err
    assert not Path(tmp_path, "s").exists() and not Path(tmp_path, "next").exists()
