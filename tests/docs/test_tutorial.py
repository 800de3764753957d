"""The tutorial's game (docs/tutorial/hex.py) keeps the GameGraph contract and plays Hex, and the
commands the tutorial page shows run as shown and print the lines it shows, apart from their
numbers (with smaller budgets; slow)."""

from __future__ import annotations

import json
import random
import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from gamegym import GymConfig, solve
from gamegym.game.checker import check_graph

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorial"
PAGE = TUTORIAL / "index.md"

sys.path.insert(0, str(TUTORIAL))
from hex import Hex  # noqa: E402


@pytest.mark.parametrize("size", [2, 3, 4, 5])
def test_hex_keeps_the_contract(size):
    assert check_graph(Hex(size), games=30, seed=size) == []


def page_block(word: str, language: str) -> str:
    """The page's first `language` block that holds `word`."""
    blocks = re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    return next(block for block in blocks if word in block)


def test_the_pages_broken_hex_fails_the_check_as_the_page_shows(tmp_path, monkeypatch, capsys):
    """The page's broken Hex, saved as broken_hex.py, fails the `gamegym check` the page shows
    with exit status 1 and prints the lines the page shows (its report on stderr), apart from
    their numbers."""
    from gamegym.cli.main import main

    (tmp_path / "broken_hex.py").write_text(page_block("class BrokenHex", "python"))
    monkeypatch.syspath_prepend(str(tmp_path))
    command, *shown = page_block("$ gamegym check", "text").splitlines()
    assert main(shlex.split(command.removeprefix("$ "))[1:]) == 1
    printed = capsys.readouterr()
    assert "score-at-nonterminal" in printed.err
    lines = (printed.out + printed.err).splitlines()
    assert [shape(x, tmp_path) for x in lines if x] == [shape(x, tmp_path) for x in shown if x]


def test_every_game_has_exactly_one_winner():
    """Hex has no draws: every random game ends with the player to move lost, and only when
    the previous mover's chain joins their two sides."""
    graph, rng = Hex(4), random.Random(0)
    for _ in range(200):
        vertex = graph.roots[0]
        while not graph.terminal_at(vertex):
            assert graph.score_at(vertex) == 0.0
            vertex = rng.choice(graph.children_at(vertex))
        assert graph.score_at(vertex) == -1.0
        assert "has won" in graph.render(vertex)


def test_the_first_player_wins_and_the_render_is_the_real_board():
    for size in (2, 3):
        assert solve(Hex(size), Hex(size).roots[0]).value == 1.0  # strategy stealing
    graph = Hex(3)
    # X plays a1, O plays c1 (in O's transposed frame c1 is cell a3 = action 6)
    after_x = graph.child_by_action(graph.roots[0], 0)
    assert graph.describe_action(after_x, 6) == "c1"
    after_o = graph.child_by_action(after_x, 6)
    assert graph.render(after_o).splitlines()[1] == "1 X . O"
    assert graph.render(after_o).endswith("X to move (top to bottom)")
    assert graph.unnumpify(graph.numpify(after_o)) == after_o


def test_the_pages_config_is_a_valid_config():
    data = json.loads((TUTORIAL / "hex-config.json").read_text())
    config = GymConfig.from_dict({**data, "game": "hex:Hex", "game_args": {"size": 4}})
    assert config.selfplay.selfplayprocesses == 1


def test_the_page_shows_the_whole_game_and_the_commands():
    text = PAGE.read_text(encoding="utf-8")
    assert '--8<-- "docs/tutorial/hex.py"' in text
    commands = {c.split()[1] for c in page_commands()}
    assert {"check", "new", "resume", "status", "evaluate", "play"} <= commands


# ----- the commands of the page, run for real ----------------------------------------------------
SMALLER = {"--max-iterations": "1", "--games": "2", "--searchcount": "8"}
# iterations the smaller run makes: one resume of one iteration (the page's second resume is
# the same command once cut to one iteration); a weaker opponent
RENAMED = {"iteration:3": "iteration:0", "mcts:200": "mcts:20"}
# the page's config with a tiny network and small sample counts (its own values are checked
# by test_the_pages_config_is_a_valid_config): each Selfplayer plays 100 positions with a model,
# then waits for the next one
FASTER_CONFIG = {
    "network": {"kind": "dense", "width": 16, "blocks": 1},
    "train": {"min_samplecount": 60, "min_new_samples": 60, "max_samplecount": 200, "epochs": 1},
    "selfplay": {
        "search": {"searchcount": 16},
        "gamelog_dump_threshold": 5,
        "positions_per_iteration": 100,
    },
}


def page_commands() -> list[str]:
    """The `gamegym ...` lines of the page's bash blocks, in order."""
    text = PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    return [
        line.strip()
        for block in blocks
        for line in block.splitlines()
        if line.strip().startswith("gamegym ")
    ]


def smaller(command: str) -> list[str]:
    words = shlex.split(command)
    for i, word in enumerate(words[:-1]):
        if word in SMALLER:
            words[i + 1] = SMALLER[word]
    return [RENAMED.get(word, word) for word in words]


def shown_outputs() -> list[tuple[list[str], list[str]]]:
    """The page's bash blocks whose output follows at once in a text block: (the commands,
    the lines shown)."""
    text = PAGE.read_text(encoding="utf-8")
    block = r"((?:(?!```).)*)```"  # a fenced block's text, up to its own end
    pairs = re.findall(rf"```bash\n{block}\s*```text\n{block}", text, flags=re.S)
    return [
        ([c.strip() for c in bash.splitlines() if c.strip().startswith("gamegym ")], out)
        for bash, out in ((b, o.splitlines()) for b, o in pairs)
    ]


def shape(line: str, folder: Path) -> str:
    """A line of output apart from its numbers, dates and the folder it ran in."""
    line = line.replace(str(folder), "/tmp/my-hex")
    return " ".join(re.sub(r"\d+(?:[.,:]\d+)*", "N", line).split())


def matches(shown: str, real: list[str]) -> bool:
    """A shown line is one of the real ones apart from numbers; '…' in it stands for the rest
    of the line."""
    if "…" in shown:
        head = shown.split("…")[0]
        return any(line.startswith(head) for line in real)
    return shown in real


def compare(commands: list[str], shown: list[str], outputs: dict, folder: Path) -> list[str]:
    """What differs between the lines the page shows for `commands` and what they printed."""
    real = [
        shape(line, folder)
        for command in commands
        for line in outputs[tuple(smaller(command))].splitlines()
        if line.strip()
    ]
    shown = [shape(line, folder) for line in shown if line.strip() and "more status" not in line]
    if commands[0].split()[1] == "resume":  # the status lines vary; the first and last do not
        shown = [line for line in shown if not line.startswith("[gamegym] it ")]
        real = [line for line in real if not line.startswith("[gamegym] it ")]
    problems = [f"shown, not printed: {line}" for line in shown if not matches(line, real)]
    problems += [
        f"printed, not shown: {line}"
        for line in real
        if not any(line == s or ("…" in s and line.startswith(s.split("…")[0])) for s in shown)
    ]
    return problems


@pytest.mark.slow
def test_the_pages_commands_run_and_print_what_it_shows(tmp_path, monkeypatch):
    from conftest import gamegym

    shutil.copy(TUTORIAL / "hex.py", tmp_path / "hex.py")
    config = json.loads((TUTORIAL / "hex-config.json").read_text())
    for section, changes in FASTER_CONFIG.items():
        config[section] = {**config.get(section, {}), **changes}
    (tmp_path / "hex-config.json").write_text(json.dumps(config))
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}:{ROOT}")
    outputs: dict[tuple, str] = {}
    for command in page_commands():
        words = smaller(command)
        if tuple(words) in outputs:  # the same command once the budgets are cut: run once
            continue
        moves = "0\n" * 20 if words[1] == "play" else None
        result = gamegym(*words[1:], cwd=tmp_path, input=moves, timeout=300)
        assert result.returncode == 0, (command, result.stdout, result.stderr)
        outputs[tuple(words)] = result.stdout
        if words[1] == "play":
            assert "has won" in result.stdout
    assert (tmp_path / "sessions" / "hex4" / "models" / "1.keras").exists()
    pairs = shown_outputs()
    assert {commands[0].split()[1] for commands, _ in pairs} >= {"check", "new", "resume"}
    assert {commands[0].split()[1] for commands, _ in pairs} >= {"status", "evaluate"}
    problems = {
        " && ".join(commands): compare(commands, shown, outputs, tmp_path)
        for commands, shown in pairs
    }
    assert not any(problems.values()), {k: v for k, v in problems.items() if v}


def test_a_shown_output_is_compared_apart_from_its_numbers(tmp_path):
    outputs = {
        ("gamegym", "status", "s"): f"session   {tmp_path}/s\niteration 1  (model files: 2)\n",
        ("gamegym", "evaluate", "s"): "iteration:1 vs random: 2 wins (score 1.00; as first 1)\n",
    }
    shown = ["session   /tmp/my-hex/s", "iteration 3  (model files: 4)"]
    assert compare(["gamegym status s"], shown, outputs, tmp_path) == []
    assert compare(["gamegym status s"], shown[:1], outputs, tmp_path) == [
        "printed, not shown: iteration N (model files: N)"
    ]
    assert (
        compare(
            ["gamegym evaluate s"],
            ["iteration:3 vs random: 20 wins (score 0.75; …)"],
            outputs,
            tmp_path,
        )
        == []
    )
    assert compare(["gamegym evaluate s"], ["iteration:3 vs random: 20 wins"], outputs, tmp_path)
