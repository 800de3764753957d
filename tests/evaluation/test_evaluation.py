"""Evaluating a session: ratings over iterations (gamegym.evaluation.ratings), `gamegym evaluate`,
`gamegym play`, and the learning benchmark."""

import json

import numpy as np
import pytest
from conftest import gamegym

from gamegym.bench.curve import training_figures
from gamegym.cli.main import main
from gamegym.data.fileio import read_jsonl
from gamegym.evaluation.ratings import evaluate_iteration

TICTACTOE = "games.tictactoe:TicTacToe"


def test_evaluate_iteration_records_results_ratings_and_a_plot(two_iterations):
    session, config = two_iterations.session, two_iterations.config
    ratings = evaluate_iteration(session, config, 1, np.random.default_rng(0))
    rows = read_jsonl(session.evaluation_dir / "results.jsonl")
    assert [(r["player"], r["opponent"]) for r in rows] == [
        ("iteration:1", "random"),
        ("iteration:1", "alphabeta:1"),
        ("iteration:1", "iteration:0"),
        ("iteration:1", "mcts:20"),
    ]
    assert all(r["wins"] + r["draws"] + r["losses"] == 4 and r["iteration"] == 1 for r in rows)
    stored = json.loads((session.evaluation_dir / "ratings.json").read_text())
    assert stored == ratings and ratings["random"] == 0
    assert set(ratings) == {"random", "alphabeta:1", "iteration:0", "iteration:1", "mcts:20"}
    assert (session.plots_dir / "rating.png").stat().st_size > 1000


@pytest.mark.slow
def test_evaluate_command(two_iterations, capsys):
    path = str(two_iterations.session.path)
    done = gamegym(
        "evaluate", path, "--opponent", "solver", "--games", "4", "--searchcount", "8", "--json"
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["player"] == "iteration:1" and record["opponent"] == "solver"
    assert record["wins"] == 0 and record["draws"] + record["losses"] == 4  # nobody beats it
    # an older iteration against a newer, and the refusals: the same command line, in this
    # process (no start-up of its own)
    args = ["--iteration", "0", "--opponent", "iteration:1", "--games", "2", "--searchcount", "8"]
    assert main(["evaluate", path, *args]) == 0
    out = capsys.readouterr().out
    assert out.startswith("iteration:0 vs iteration:1: ") and "in 2 games" in out
    for opponent, message in [
        ("iteration:7", "has no model iteration 7"),
        ("minimax:2", "unknown player 'minimax:2'"),
        ("mcts:0", "needs mcts:SIMULATIONS with simulations >= 1"),
    ]:
        assert main(["evaluate", path, "--opponent", opponent, "--games", "2"]) == 2
        assert message in capsys.readouterr().err
    done = gamegym(
        "evaluate", path, "--opponent", "mcts:30", "--games", "2", "--searchcount", "8", "--json"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["opponent"] == "mcts:30"


@pytest.mark.slow
def test_play_command_takes_moves_by_number_until_the_end(two_iterations, capsys):
    path = str(two_iterations.session.path)
    # "0" is always a legal answer (the first listed move); one bad answer first
    done = gamegym("play", path, "--second", "--searchcount", "8", input="x\n" + "0\n" * 9)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert out.startswith("you play second against iteration:1")
    assert "'x' is not a move number between 0 and" in out
    assert out.rstrip().splitlines()[-1] in ("you won!", "you lost.", "a draw.")
    assert "your moves: [0] row " in out and "iteration:1 plays row " in out
    done = gamegym("play", path, "--searchcount", "8", input="0\n")  # input ends mid-game
    assert done.returncode == 1 and "game abandoned" in done.stdout
    done = gamegym("play", path, "--opponent", "mcts:50", input="0\n" * 5)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        done.stdout.startswith("you play first against mcts:50")
        and "mcts:50 plays row" in done.stdout
    )
    assert done.stdout.rstrip().splitlines()[-1] == "you lost."  # 0, 0, ...: no defence
    assert main(["play", path, "--opponent", "mcts:x"]) == 2  # in this process, as above
    assert "player 'mcts:x'" in capsys.readouterr().err


@pytest.mark.slow
def test_learning_benchmark_refuses_a_bad_opponent_before_training(tmp_path):
    done = gamegym(
        "bench",
        "learning",
        "--game",
        TICTACTOE,
        "--opponent",
        "solver,mcts:0",
        "--keep",
        str(tmp_path / "kept"),
    )
    assert done.returncode == 2 and "player 'mcts:0'" in done.stderr
    assert not (tmp_path / "kept").exists()


@pytest.mark.slow
def test_learning_benchmark_json_and_plot(tmp_path, capsys, monkeypatch):
    # in this process: the bench's own start-up is that of every command (tests/cli)
    monkeypatch.chdir(tmp_path)  # nothing may land in the current folder
    code = main(
        [
            "bench",
            "learning",
            "--game",
            TICTACTOE,
            "--seconds",
            "6",
            "--interval-seconds",
            "3",
            "--eval-games",
            "2",
            "--eval-searchcount",
            "8",
            "--opponent",
            "solver,mcts:20",
            "--keep",
            str(tmp_path / "kept"),
            "--json",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    figures = json.loads(out.strip().splitlines()[-1])
    assert figures["game"] == TICTACTOE and figures["minutes"] == 0.1
    assert {"gym", "predictor", "trainer", "selfplayer"} <= set(figures["peak_rss_mib_by_role"])
    assert figures["eval_searchcount"] == 8 and figures["eval_threads"] == 8
    assert figures["selfplay_searchcount"] == 64  # the tic-tac-toe preset's
    curve = figures["curve"]
    assert curve[0]["minutes"] == 0.0 and curve[0]["iteration"] == 0 and len(curve) >= 2
    assert [p["minutes"] for p in curve] == sorted(p["minutes"] for p in curve)
    assert figures["opponents"] == ["solver", "mcts:20"] and figures["opponent"] == "solver"
    for point in curve:
        assert point["wins"] + point["draws"] + point["losses"] == 2
        assert point["by_opponent"]["solver"]["wins"] == point["wins"]  # the headline figure
        assert sum(point["by_opponent"]["mcts:20"][k] for k in ("wins", "draws", "losses")) == 2
        assert 0.0 <= point["optimal_move_rate"] <= 1.0
    for point in curve:  # each point says what the Trainer reported for its model
        if point["iteration"] == 0:
            assert "training" not in point  # the starting model was not trained here
            continue
        report = tmp_path / "kept" / "train" / f"{point['iteration']}.json"
        report = json.loads(report.read_text())
        assert point["training"]["loss"] == round(report["losses"]["loss"], 4)
        assert point["training"]["samples"] == report["samples"] > 0
    final = figures["final"]
    assert final["opponent"] == "solver" and final["iteration"] == curve[-1]["iteration"]
    assert final["wins"] + final["draws"] + final["losses"] == 8  # 4x the games of a point
    assert sum(final["by_opponent"]["mcts:20"][k] for k in ("wins", "draws", "losses")) == 8
    for point in (final, curve[-1]):  # at least 2 self-play games of 5 or more plies
        assert point["positions"] >= 10
    plot = tmp_path / "kept" / "plots" / "learning.png"  # beside the kept session
    assert figures["plot"] == str(plot) and plot.stat().st_size > 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"]
    kept = json.loads((tmp_path / "kept" / "models" / "current.json").read_text())
    assert kept["iteration"] == final["iteration"]  # the session is kept


def test_a_curve_point_carries_the_trainers_last_epoch_losses_samples_and_rate():
    report = {
        "iteration": 7,
        "samples": 3000,
        "reanalysed": 1200,
        "learning_rate": 3e-4,
        "losses": {"loss": 1.234567, "val_loss": 1.5, "value_loss": 0.25},
        "history": {"loss": [2.0, 1.234567]},
    }
    assert training_figures(report) == {
        "loss": 1.2346,
        "val_loss": 1.5,
        "value_loss": 0.25,
        "samples": 3000,
        "reanalysed": 1200,
        "learning_rate": 3e-4,
    }
    assert training_figures(None) == {} and training_figures({"losses": {}}) == {}


@pytest.mark.slow
def test_throughput_bench_reports_every_figure_the_targets_need(capsys, drawn_bars):
    code = main(
        [
            "bench",
            "throughput",
            "--game",
            TICTACTOE,
            "--seconds",
            "3",
            "--selfplayers",
            "1",
            "--threads",
            "4",
            "--searchcount",
            "16",
            "--network-seconds",
            "0.5",
            "--network-batchsize",
            "8",
            "--json",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    figures = json.loads(out)
    assert figures["searches_per_s"] > 0 and figures["efficiency"] > 0
    assert figures["cpu_efficiency"] > 0 and figures["ceiling_searches_per_cpu_s"] > 0
    assert set(figures["rss_mb_by_role"]) == {"gym", "predictor", "selfplayer"}  # gym: the bench
    assert all(mb > 10 for mb in figures["rss_mb_by_role"].values())
    assert set(figures["cpu_by_role"]) == {"gym", "predictor", "selfplayer"}
    assert figures["network_path"] == "onnx, in the Selfplayers"
    paths = figures["network_evals_per_cpu_s"]
    assert {"tensorflow", "xla", "numpy", "onnx"} <= set(paths)
    assert all(list(per) == ["8"] and per["8"] > 0 for per in paths.values())
    drawn = drawn_bars.getvalue()  # each phase had its bar on a terminal (stderr)
    for phase in ("search ceiling", "starting self-play", "self-play end to end", "network paths"):
        assert phase in drawn, phase
