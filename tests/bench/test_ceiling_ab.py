"""scripts/ceiling_ab.py, the search ceiling of two source trees in one run: the trees take
turns (after-before, then before-after), each tree's figure is its median and the case's the
ratio; a case and a tree are checked as they are given (the ceilings stubbed: no processes)."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import ceiling_ab  # noqa: E402 (a script, not a package)


def test_the_trees_take_turns_and_the_ratio_is_of_their_medians(tmp_path, monkeypatch, capsys):
    before, after = tmp_path / "before", tmp_path / "after"
    for tree in (before, after):
        (tree / "gamegym").mkdir(parents=True)
        (tree / "gamegym" / "__init__.py").write_text("")
    turns = []
    rates = {before: iter([100.0, 90.0, 300.0]), after: iter([150.0, 120.0, 135.0])}

    def measure(tree, case):
        turns.append(tree.name)
        assert case == {"preset": "connectfour", "rule": "puct", "core": "", "seconds": 2.0}
        return {"searches_per_cpu_s": next(rates[tree])}

    monkeypatch.setattr(ceiling_ab, "measure", measure)
    argv = ["--before", str(before), "--after", str(after), "--case", "connectfour:puct:-"]
    assert ceiling_ab.main([*argv, "--seconds", "2", "--rounds", "3", "--json"]) == 0
    assert turns == ["after", "before", "before", "after", "after", "before"]
    [case] = json.loads(capsys.readouterr().out)["cases"]
    assert case["case"] == "connectfour:puct:-"
    assert (case["before_searches_per_cpu_s"], case["after_searches_per_cpu_s"]) == (100, 135)
    assert case["after_over_before"] == 1.35
    assert case["rounds"] == {"before": [100, 90, 300], "after": [150, 120, 135]}


def test_a_bad_case_or_a_folder_that_is_no_tree_is_named(tmp_path, capsys):
    with pytest.raises(SystemExit):
        ceiling_ab.main(["--before", str(tmp_path), "--after", str(tmp_path), "--case", "c4"])
    assert "'c4': a case is PRESET:RULE:CORE" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        ceiling_ab.main(["--before", str(tmp_path), "--after", str(tmp_path)])
    assert "not a gamegym source tree" in capsys.readouterr().err


def test_instructions_per_search_take_one_game_from_three_under_valgrind(
    tmp_path, monkeypatch, capsys
):
    """The count of one game is taken from that of three, so the interpreter's start and
    imports cancel; the ceiling's ratio is before's count over after's."""
    before, after = tmp_path / "before", tmp_path / "after"
    for tree in (before, after):
        (tree / "gamegym").mkdir(parents=True)
        (tree / "gamegym" / "__init__.py").write_text("")
    monkeypatch.setattr(ceiling_ab.shutil, "which", lambda name: "/usr/bin/" + name)
    counts = {  # (tree, games): (instructions, searches)
        (before, 1): (5_000_000_000, 1_000),
        (before, 3): (5_300_000_000, 3_000),
        (after, 1): (5_100_000_000, 1_000),
        (after, 3): (5_420_000_000, 3_000),
    }

    def measure(tree, case, under=()):
        assert under[:2] == ("valgrind", "--tool=cachegrind") and case["core"] == "python"
        instructions, searches = counts[tree, case["games"]]
        return {"searches": searches, "stderr": f"==1== I   refs:      {instructions:,}\n"}

    monkeypatch.setattr(ceiling_ab, "measure", measure)
    argv = ["--before", str(before), "--after", str(after), "--case", "connectfour:puct:python"]
    assert ceiling_ab.main([*argv, "--instructions", "--json"]) == 0
    [case] = json.loads(capsys.readouterr().out)["cases"]
    assert case["before_instructions_per_search"] == 150_000  # 300 M over 2,000 searches
    assert case["after_instructions_per_search"] == 160_000
    assert case["after_over_before"] == 0.938  # 150,000 / 160,000: after is the slower
    assert case["searches"] == {"before": 2_000, "after": 2_000}
    with pytest.raises(SystemExit):  # the compiled core's are timed
        ceiling_ab.main([*argv[:4], "--case", "connectfour:puct:compiled", "--instructions"])
    assert "counts the Python core only" in capsys.readouterr().err
