"""The yardstick benches: `bench calibrate` (players against each other) and `bench peer
openspiel` (our search ceiling beside OpenSpiel's MCTSBot), on tiny budgets."""

import builtins
import json
import subprocess
import sys

import pytest

from gamegym.bench.calibration import CalibrationSettings, run_calibration
from gamegym.bench.peer import PeerSettings, run_peer_bench

TICTACTOE = "games.tictactoe:TicTacToe"


def test_calibration_plays_each_pair_and_times_the_moves():
    lines = []
    settings = CalibrationSettings(
        TICTACTOE, {}, (("mcts:30", "random"), ("solver", "alphabeta0:1")), games=4, seed=1
    )
    figures = run_calibration(settings, progress=lines.append)
    first, second = figures["pairs"]
    assert (first["player"], first["opponent"], first["games"]) == ("mcts:30", "random", 4)
    assert first["wins"] >= 3  # 30 rollouts a move beat random
    assert second["losses"] == 0  # nobody beats the solver
    assert first["seconds_per_move"][0] > 0 and second["seconds_per_move"][0] > 0
    assert all(t >= 0 for row in figures["pairs"] for t in row["seconds_per_move"])
    assert len(lines) == 2 and lines[0].strip().startswith("mcts:30 vs random")
    again = run_calibration(
        CalibrationSettings(TICTACTOE, {}, (("mcts:30", "random"),), games=4, seed=1), None
    )
    assert {k: again["pairs"][0][k] for k in ("wins", "draws", "losses")} == {
        k: first[k] for k in ("wins", "draws", "losses")
    }


def test_calibration_names_a_bad_spec_before_playing():
    with pytest.raises(ValueError, match="player 'mcts:x'"):
        run_calibration(CalibrationSettings(TICTACTOE, {}, (("mcts:100", "mcts:x"),), 2), None)


def test_peer_bench_without_openspiel_names_the_extra(monkeypatch):
    real_import = builtins.__import__

    def no_openspiel(name, *args, **kwargs):
        if name == "pyspiel" or name.startswith("open_spiel"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_openspiel)
    with pytest.raises(ValueError, match=r'pip install -e "\.\[openspiel\]"'):
        run_peer_bench(PeerSettings(seconds=0.1))


@pytest.mark.slow
def test_peer_bench_command_on_a_tiny_budget():
    pytest.importorskip("pyspiel", reason="the optional extra openspiel is not installed")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gamegym",
            "bench",
            "peer",
            "openspiel",
            "--seconds",
            "0.3",
            "--searchcount",
            "10",
            "--threads",
            "4",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert len(figures["games"]) == 4
    (connectfour,) = [r for r in figures["games"] if r["game"] == "games.connectfour:ConnectFour"]
    assert connectfour["game_args"] == {"rows": 6, "columns": 7}
    assert connectfour["openspiel_game"] == "connect_four"
    for side in ("ours_1", "ours_4", "openspiel"):
        assert connectfour[side]["searches_per_s"] > 0 and connectfour[side]["games"] >= 1
    assert connectfour["ratio_1"] > 0
    santorini = [r for r in figures["games"] if r["game"] == "games.santorini:Santorini"]
    assert all(r["note"] == "OpenSpiel has no such game" for r in santorini)


def test_calibrate_plays_each_player_against_each_opponent(monkeypatch, capsys):
    from gamegym.bench import calibration
    from gamegym.cli.main import main

    asked = []

    def fake(settings, progress=None):
        asked.append(list(settings.pairs))
        s = settings
        return {
            "game": s.game,
            "game_args": s.game_args,
            "games": s.games,
            "seed": s.seed,
            "pairs": [],
        }

    monkeypatch.setattr(calibration, "run_calibration", fake)
    argv = ["bench", "calibrate", "--game", TICTACTOE, "--player", "mcts:30,solver"]
    assert main([*argv, "--opponent", "random,alphabeta0:1", "--json"]) == 0
    assert asked == [
        [
            ("mcts:30", "random"),
            ("mcts:30", "alphabeta0:1"),
            ("solver", "random"),
            ("solver", "alphabeta0:1"),
        ]
    ]
    assert main(["bench", "calibrate", "--json"]) == 0
    assert asked[-1] == list(calibration.CALIBRATION_PAIRS)  # neither: Connect Four's yardsticks
    capsys.readouterr()
    assert main(argv) == 2  # a player without an opponent
    assert "give --player and --opponent together" in capsys.readouterr().err
