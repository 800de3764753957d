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
        return ",".join(map(str, value))
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
    assert "(default: 600.0)" in capsys.readouterr().out  # --seconds


@pytest.mark.parametrize(
    "argv",
    [
        [],  # a command group without its subcommand: its help
        ["bench"],
        ["nosuchcommand"],
        ["new"],  # a missing argument
        ["check", "--game", TICTACTOE, "--games", "many"],  # a wrong type
        ["check", "--game", TICTACTOE, "--no-such-flag"],
        ["new", "{tmp}/s", "--game", TICTACTOE, "--game-args", "[1]"],  # not a JSON object
        ["new", "{tmp}/s"],  # neither a game nor a preset
        ["new", "{tmp}/s", "--preset", "chess"],
        ["check", "--game", "no_such_module_here:Game"],
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


# ----- one vocabulary ----------------------------------------------------------------------------
def options(parser: argparse.ArgumentParser):
    """Every option of every command: (command words, action)."""
    for words, command in commands(parser):
        for action in command._actions:
            if action.option_strings and not isinstance(action, argparse._HelpAction):
                yield words, action


def test_every_command_spells_each_idea_the_same_way():
    """The game is `--game` (never positional), the opponent `--opponent`, several values one
    comma-separated argument named in the singular, a time a number of seconds in a flag
    ending in `seconds`; no command takes a retired spelling (gamegym.cli.vocabulary)."""
    from gamegym.cli.vocabulary import RETIRED
    from gamegym.console import comma_list

    list_type = comma_list().__name__
    found = list(options(build_parser()))
    flags = {flag for _, action in found for flag in action.option_strings}
    assert {"--game", "--opponent", "--seed", "--seconds", "--max-seconds"} <= flags
    assert not flags & set(RETIRED), flags & set(RETIRED)
    for words, command in commands(build_parser()):
        positionals = [a.dest for a in command._actions if not a.option_strings]
        assert "game" not in positionals, f"gamegym {' '.join(words)} takes the game positionally"
    for words, action in found:
        name = action.option_strings[0]
        where = f"gamegym {' '.join(words)} {name}"
        if action.metavar == "MODULE:CLASS" or action.dest.startswith("game"):
            assert name in ("--game", "--game-args", "--games", "--adapt-to"), where
        if action.nargs not in (None, 0, "?") or isinstance(action, argparse._AppendAction):
            assert name == "--variant", f"{where}: several values are one comma-separated word"
        if getattr(action.type, "__name__", "") == list_type:
            assert not name.endswith("s"), f"{where}: a list flag is named in the singular"
        if action.type is float:  # every float flag is a time
            assert name.endswith("seconds") or name == "--batch-timeout-ms", where
        if "opponent" in action.dest or "against" in action.dest:
            assert name == "--opponent", where


def test_a_list_is_one_comma_separated_argument(capsys):
    args = parse(["bench", "learning", "--game", TICTACTOE, "--seed", "0,1,2"])
    assert args.seed == [0, 1, 2]
    args = parse(["bench", "replay", "--game", TICTACTOE, "--replay", "window,curious"])
    assert args.replay == ["window", "curious"]
    args = parse(["bench", "peer", "openspiel", "--game", f"{TICTACTOE},games.nim:Nim"])
    assert args.game == [TICTACTOE, "games.nim:Nim"]
    for argv, says in (
        (["bench", "learning", "--game", TICTACTOE, "--seed", "0,x"], "'x' in '0,x' is not an"),
        (["bench", "learning", "--game", TICTACTOE, "--seed", "0,,1"], "single commas"),
        (["bench", "replay", "--game", TICTACTOE, "--replay", "lifo"], "unknown lifo; the known"),
        (["bench", "learning", "--game", TICTACTOE, "--seed", "0", "1"], "unrecognized"),
    ):
        assert status(argv) == 2
        assert says in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, instead",
    [
        (["evaluate", "s", "--against", "random"], "instead of --against, write --opponent SPEC"),
        (["bench", "learning", "--game", TICTACTOE, "--minutes", "5"], "--seconds (seconds, not"),
        (["bench", "learning", "--game", TICTACTOE, "--seeds", "0"], "write --seed N,N"),
        (["bench", "calibrate", "--pair", "a", "b"], "--player SPEC,... --opponent SPEC,..."),
        (["bench", "accuracy", "s", "--searches", "8"], "write --searchcount N"),
    ],
    ids=lambda value: value[-2] if isinstance(value, list) else "",
)
def test_a_retired_spelling_is_refused_naming_the_one_to_write(argv, instead, capsys):
    assert status(argv) == 2
    printed = capsys.readouterr()
    assert printed.out == "" and instead in printed.err


def test_a_flag_is_never_taken_abbreviated(capsys):
    """`--interval 2` (minutes, once) must not pass for `--interval-seconds 2`."""
    assert status(["bench", "learning", "--game", TICTACTOE, "--interval", "2"]) == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --interval 2" in err and "--interval-seconds" in err
    assert status(["check", "--game", TICTACTOE, "--game-arg", "{}"]) == 2  # one flag starts so


def test_the_game_is_a_flag_in_every_command_that_takes_one(capsys):
    assert status(["check", TICTACTOE]) == 2
    err = capsys.readouterr().err
    assert "the following arguments are required: --game" in err
    assert "every command takes the game as --game MODULE:CLASS, never positionally" in err


def parse(argv: list[str]) -> argparse.Namespace:
    return build_parser().parse_args(argv)
