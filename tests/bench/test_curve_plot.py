"""The learning bench's picture (gamegym.bench.curve.plot_curves)."""

from pathlib import Path

from gamegym.bench import curve
from gamegym.data import figures as figure_files


def run(label, bands):
    def point(minutes, share):
        p = {
            "minutes": minutes,
            "iteration": int(minutes),
            "by_opponent": {"mcts:1000": {"score": share}, "alphabeta:5": {"score": share / 2}},
        }
        if bands:
            p["accuracy"] = {
                band: {"search": {"optimal": share}, "policy": {"optimal": share / 2}}
                for band in ("late", "early", "middle")  # as a JSON file with sorted keys has them
            }
        return p

    return {
        "label": label,
        "learner": "alphazero",
        "game": "games.connectfour:ConnectFour",
        "game_args": {"rows": 6, "columns": 7},
        "opponents": ["mcts:1000", "alphabeta:5"],
        "eval_searchcount": 100,
        "curve": [point(0.0, 0.1), point(5.0, 0.6)],
        "final": {**point(5.0, 0.7), "minutes": 5.0},
    }


def drawn(monkeypatch, runs, tmp_path) -> list:
    kept = []

    def save(figure, path):
        kept.append(figure)
        return Path(path)

    monkeypatch.setattr(figure_files, "save_figure", save)
    curve.plot_curves(runs, tmp_path / "learning.png")
    return kept[0].axes


def test_runs_with_a_solved_position_benchmark_get_a_panel_of_bands_under_the_matches(
    monkeypatch, tmp_path
):
    matches, bands = drawn(monkeypatch, [run("preset seed 0", True), run("ema", True)], tmp_path)
    assert [t.get_text() for t in matches.get_legend().get_texts()][:2] == [
        "preset seed 0: score vs mcts:1000",
        "preset seed 0: score vs alphabeta:5",
    ]
    labels = [t.get_text() for t in bands.get_legend().get_texts()]
    # early, middle, late: a game's order, whatever order the file kept
    assert labels[:3] == [
        "preset seed 0: early positions",
        "preset seed 0: middle positions",
        "preset seed 0: late positions",
    ]
    assert labels[-1] == "final, on more games"
    assert [list(line.get_ydata()) for line in bands.get_lines()[:1]] == [[0.1, 0.6]]
    assert "rows=6" in matches.get_title()


def test_runs_without_one_get_one_panel(monkeypatch, tmp_path):
    (axis,) = drawn(monkeypatch, [run("preset", False)], tmp_path)
    assert axis.get_xlabel() == "minutes of training (2-core CPU)"
    assert [t.get_text() for t in axis.get_legend().get_texts()] == [
        "score vs mcts:1000",
        "score vs alphabeta:5",
        "final, on more games",
    ]
