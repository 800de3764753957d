"""The Connect Four walkthrough (docs/tutorial/connectfour.md): the records it takes its
figures from are committed files that hold its final scores, and the commands whose output it
shows print those lines, apart from their numbers (run for real on fewer positions; slow)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "tutorial" / "connectfour.md"
FIGURES = ROOT / "docs" / "figures"

# the page's records by letter: each file and the variant of its runs that is the preset
RECORDS = {
    "A": [("connectfour-ema-15.json", "preset")],
    "B": [("connectfour-nice-45.json", "default")],
    "C": [("connectfour-120.json", None), ("connectfour-120-seed1.json", None)],
    "D": [
        ("connectfour-r16x3-int8-vs-preset-60.json", "preset"),
        ("connectfour-r16x3-int8-vs-preset-60-seed1.json", "preset"),
    ],
}
YARDSTICKS = ("mcts:1000", "alphabeta:5")


def page_text() -> str:
    return PAGE.read_text(encoding="utf-8")


def preset_runs(name: str, variant: str | None) -> list[dict]:
    """The runs of a record that ran the preset as it is (a record of one run: that run)."""
    record = json.loads((FIGURES / name).read_text(encoding="utf-8"))
    if "runs" not in record:
        return [record]
    return [run for run in record["runs"] if run.get("variant") == variant]


def test_the_records_are_committed_and_hold_the_final_scores_the_page_shows():
    text = page_text()
    for letter, records in RECORDS.items():
        row = next(line for line in text.splitlines() if line.startswith(f"| {letter} |"))
        for name, variant in records:
            runs = preset_runs(name, variant)
            assert runs, (name, variant)
            assert name in row or name.split("-seed1")[0] in row, (letter, name)
            for run in runs:
                for opponent in YARDSTICKS:
                    result = run["final"]["by_opponent"][opponent]
                    wdl = f"{result['wins']}–{result['draws']}–{result['losses']}"
                    assert f"({wdl})" in text, (name, variant, opponent, wdl)
    named = set(re.findall(r"`(?:docs/figures/)?(connectfour-[\w.-]+\.json)`", text))
    named |= set(re.findall(r"`docs/figures/([\w.-]+\.json)`", text))
    assert named and all((FIGURES / name).is_file() for name in named), named


def table_rows(text: str, header: str) -> dict[str, list[str]]:
    """The rows of the page's table whose header line starts with `header`, by first cell."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        rows[cells[0]] = cells
    return rows


def percent(share: float) -> str:
    return f"{round(share * 100, 1):g}%"


def shows_iteration(cell: str, iteration: int) -> bool:
    """Whether a cell ("8", "149, 139", "17–22") shows the iteration or a range holding it."""
    ranges = re.findall(r"(\d+)–(\d+)", cell)
    if any(int(low) <= iteration <= int(high) for low, high in ranges):
        return True
    return str(iteration) in re.findall(r"\d+", re.sub(r"\d+–\d+", "", cell))


def test_every_curve_point_of_the_records_is_in_the_table_of_what_to_expect():
    rows = table_rows(page_text(), "| after | iteration | against `mcts:1000` |")
    assert len(rows) >= 8
    checked = 0
    for records in RECORDS.values():
        for name, variant in records:
            for run in preset_runs(name, variant):
                for point in run["curve"]:
                    minutes = point["minutes"]
                    row = rows["the start (iteration 0)" if minutes == 0 else f"{minutes:g} min"]
                    where = (name, variant, minutes)
                    assert shows_iteration(row[1], point["iteration"]), (where, row[1])
                    for opponent, cell in zip(YARDSTICKS, row[2:4]):
                        score = percent(point["by_opponent"][opponent]["score"])
                        assert score in re.findall(r"[\d.]+%", cell), (where, opponent, cell)
                    if "accuracy" in point:
                        middle = point["accuracy"]["middle"]["search"]["optimal"]
                        assert f"{middle * 100:.1f}%" in row[4], (where, middle, row[4])
                    checked += 1
    assert checked >= 25


def test_the_progress_of_each_run_is_the_records():
    """The table of how far the runs had got: each curve point's iteration and training loss,
    and each run's self-play rate at its end."""
    rows = table_rows(page_text(), "| after | iteration | training loss")
    for records in RECORDS.values():
        for name, variant in records:
            for run in preset_runs(name, variant):
                rate = str(run["selfplay_positions_per_s"])
                assert rate in rows[f"{run['minutes']:g} min"][3], (name, variant, rate)
                for point in run["curve"][1:]:
                    row = rows[f"{point['minutes']:g} min"]
                    assert shows_iteration(row[1], point["iteration"]), (name, point["minutes"])
                    if point.get("training"):
                        loss = f"{point['training']['loss']:.2f}"
                        assert loss in row[2], (name, variant, point["minutes"], loss)


def test_a_cell_shows_an_iteration_alone_in_a_list_or_in_a_range():
    assert shows_iteration("149, 139", 139) and shows_iteration("17–22", 18)
    assert not shows_iteration("17–22", 23) and not shows_iteration("149, 139", 14)


# ----- the commands whose output the page shows, run for real ----------------------------------
FOLDER = "/home/me/gamegym"  # the folder the page's outputs were run in
# the same lines from fewer positions: what the test adds to a command
FEWER = {("bench", "accuracy"): ["--per-band", "30"]}
IN_CHECKOUT = "gamegym/initialmodels/"  # a command naming a file of the checkout runs there


def shown_outputs(text: str) -> list[tuple[list[str], list[str]]]:
    """The bash blocks whose output follows at once in a text block: (the `gamegym` command
    lines, the lines shown)."""
    block = r"((?:(?!```).)*)```"  # a fenced block's text, up to its own end
    pairs = re.findall(rf"```bash\n{block}\s*```text\n{block}", text, flags=re.S)
    return [
        (
            [line.strip() for line in bash.splitlines() if line.strip().startswith("gamegym ")],
            [line for line in shown.splitlines() if line.strip()],
        )
        for bash, shown in pairs
    ]


def shape(line: str, folders: tuple[str, ...]) -> str:
    """A line apart from its numbers and the folder it ran in."""
    for folder in folders:
        line = line.replace(folder, FOLDER)
    return " ".join(re.sub(r"\d+(?:[.,]\d+)*", "N", line).split())


def test_shape_keeps_the_words_and_drops_the_numbers_and_the_folder():
    folders = ("/tmp/pytest-7/test0",)
    assert shape("created session /tmp/pytest-7/test0/sessions/c4 for x {'rows': 6}", folders) == (
        f"created session {FOLDER}/sessions/cN for x {{'rows': N}}"
    )
    assert shape("  early    30 positions: raw policy 31.7% optimal", ()) == (
        "early N positions: raw policy N% optimal"
    )
    pairs = shown_outputs("```bash\ngamegym new s  # a note\n```\n\n```text\na 1\n\nb\n```\n")
    assert pairs == [(["gamegym new s  # a note"], ["a 1", "b"])]


@pytest.mark.slow
def test_the_pages_commands_print_what_it_shows(tmp_path):
    from conftest import gamegym

    pairs = shown_outputs(page_text())
    shown_commands = {tuple(shlex.split(c)[1:3]) for commands, _ in pairs for c in commands}
    assert {("new", "sessions/c4"), ("bench", "accuracy")} <= shown_commands
    folders = tuple(sorted({str(tmp_path.resolve()), str(tmp_path)}, key=len, reverse=True))
    problems = {}
    for commands, shown in pairs:
        printed = []
        for command in commands:
            words = shlex.split(command, comments=True)[1:]
            words += FEWER.get(tuple(words[:2]), [])
            cwd = ROOT if any(IN_CHECKOUT in word for word in words) else tmp_path
            result = gamegym(*words, cwd=cwd, timeout=600)
            assert result.returncode == 0, (command, result.stdout, result.stderr)
            printed += [line for line in result.stdout.splitlines() if line.strip()]
        want = [shape(line, folders) for line in shown]
        real = [shape(line, folders) for line in printed]
        if want != real:
            problems[" && ".join(commands)] = {"shown": want, "printed": real}
    assert not problems, problems
    assert (tmp_path / "sessions" / "c4" / "models" / "0.keras").is_file()
