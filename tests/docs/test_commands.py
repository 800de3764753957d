"""The `gamegym` commands the docs and the README show exist as shown: every command line in a
code block or a code span names real commands and only flags its command takes; every
command's `--help` runs, and every flag has a meaning in it; the `gamegym check` lines on
bundled games run clean (with fewer games).  Fast: everything runs in this process."""

from __future__ import annotations

import argparse
import functools
import re
import shlex
from pathlib import Path

import pytest

from gamegym.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
FENCED = re.compile(r"```[a-z]*\n(.*?)```", re.S)
# a command: at the start of a line, after a prompt, `python -m`, `do`, `&&` or `;`
COMMAND = re.compile(r"(?:^|(?<=\$ )|(?<=-m )|(?<=\bdo )|(?<=&& )|(?<=; ))gamegym [^;|>\n]*", re.M)


def shown_commands(text: str) -> list[str]:
    """Each `gamegym ...` command line of a page: in code blocks (their `\\` line continuations
    joined) and in code spans (which may wrap), without comments."""
    spans = re.findall(r"`([^`]+)`", FENCED.sub("", text))
    codes = [block.replace("\\\n", " ") for block in FENCED.findall(text)]
    codes += [" ".join(span.split()) for span in spans]
    return [
        match.group(0).split(" #")[0].strip() for code in codes for match in COMMAND.finditer(code)
    ]


def words_of(command: str) -> list[str]:
    try:
        words = shlex.split(command, comments=True)
    except ValueError:  # an unbalanced quote in an elided example
        words = command.split()
    return [w.strip("[]") for w in words]


def parser_for(words: list[str]) -> tuple[list[str], argparse.ArgumentParser]:
    """The command words after `gamegym` (as far as they name subcommands) and the parser of
    the last one (of one parser for every call: it is only read)."""
    parser, path = _parser(), []
    for word in words[1:]:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or word not in subs[0].choices:
            break
        parser, path = subs[0].choices[word], [*path, word]
    return path, parser


@functools.cache
def _parser() -> argparse.ArgumentParser:
    return build_parser()


def every_shown_command() -> list[tuple[str, str]]:
    return [
        (page.relative_to(ROOT).as_posix(), command)
        for page in PAGES
        for command in shown_commands(page.read_text(encoding="utf-8"))
    ]


def test_the_docs_show_many_commands():
    shown = every_shown_command()
    assert len(shown) > 100
    commands = {tuple(parser_for(words_of(c))[0][:1]) for _, c in shown}
    assert {("new",), ("resume",), ("status",), ("evaluate",), ("check",), ("bench",)} <= commands


def test_every_flag_the_docs_show_is_a_flag_of_its_command():
    wrong = []
    for page, command in every_shown_command():
        words = words_of(command)
        path, parser = parser_for(words)
        if len(words) > 1 and not path and re.fullmatch(r"[a-z]+", words[1]):
            wrong.append(f"{page}: {command!r}: no command {words[1]!r}")
            continue
        flags = {flag for action in parser._actions for flag in action.option_strings}
        for word in words[1 + len(path) :]:
            name = word.split("=")[0]
            if name.startswith("--") and name not in flags:
                wrong.append(f"{page}: {command!r}: gamegym {' '.join(path)} has no {name}")
    assert not wrong, "\n".join(wrong)


def test_the_check_catches_a_flag_that_does_not_exist():
    text = "```bash\ngamegym evaluate sessions/x --against solver\n```\nand `gamegym check hex:Hex`"
    commands = shown_commands(text)
    assert commands == ["gamegym evaluate sessions/x --against solver", "gamegym check hex:Hex"]
    path, parser = parser_for(words_of(commands[0]))
    assert path == ["evaluate"]
    assert "--against" not in {f for a in parser._actions for f in a.option_strings}


def all_commands(parser: argparse.ArgumentParser, words: tuple = ()):
    yield words, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from all_commands(sub, (*words, name))


def test_every_command_has_help_with_a_meaning_for_every_argument(capsys):
    silent = []
    for words, parser in all_commands(build_parser()):
        with pytest.raises(SystemExit) as stop:
            main([*words, "--help"])
        assert stop.value.code == 0
        assert capsys.readouterr().out.startswith("usage: gamegym")
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            if not (action.help or "").strip():
                name = action.option_strings[0] if action.option_strings else action.dest
                silent.append(f"gamegym {' '.join(words)} {name}")
    assert not silent, f"arguments without a meaning in --help and the reference: {silent}"


def test_evaluate_help_lists_every_player_spec(capsys):
    from gamegym.game.playerspecs import PLAYER_SPECS

    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert all(name in text for name in PLAYER_SPECS)
    assert "openspiel-mcts:SIMULATIONS" in text


BUNDLED = re.compile(r"^(games\.\w+|gamegym\.adapters\.openspiel):\w+$")


def bundled_checks() -> list[tuple[str, list[str]]]:
    """The `gamegym check` lines of the docs on games that come with gamegym."""
    found = []
    for page, command in every_shown_command():
        words = words_of(command)
        if parser_for(words)[0] == ["check"] and "--game" in words:
            game = words[words.index("--game") + 1]
            if BUNDLED.match(game):
                found.append((f"{page}: {command}", words[2:]))
    return found


@pytest.mark.parametrize(
    "shown, argv", bundled_checks(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_a_check_the_docs_show_runs_clean(shown, argv, capsys):
    if "openspiel" in " ".join(argv):
        pytest.importorskip("pyspiel", reason="the optional extra openspiel is not installed")
    argv = list(argv)
    if "--games" in argv:
        argv[argv.index("--games") + 1] = "3"
    else:
        argv += ["--games", "3"]
    assert main(["check", *argv]) == 0, capsys.readouterr().err
    assert "no contract violations found" in capsys.readouterr().out


def test_the_status_line_the_readme_and_getting_started_show_is_the_monitors():
    """The trial run's status line as the pages show it is what the gym prints for the same
    figures (gamegym.runtime.monitor)."""
    from gamegym.runtime.monitor import Monitor

    def role(cpu: float, rss: float) -> dict:
        return {"cpu_percent": cpu, "rss_mib": rss}

    status = {
        "iteration": 3,
        "games": 412,
        "samples_per_s": 21.3,
        "searches_per_s": 2210,
        "mean_batch": 7.9,
        "last_losses": {"loss": 1.482},
        "rating": None,
        "resources": {
            "gym": role(2, 170),
            "predictor": role(31, 480),
            "selfplayer": role(95, 120),
            "trainer": role(3, 700),
        },
        "backend": {"name": "processes", "selfplayers": 1, "selfplayers_alive": 1},
    }
    line = f"[gamegym] {Monitor().status_line(status)}"
    for page in (ROOT / "README.md", ROOT / "docs" / "getting-started.md"):
        shown = [x for x in page.read_text(encoding="utf-8").splitlines() if "| games 412 |" in x]
        assert shown == [line], page
