"""A game is built once per process from its reference (gamegym.game.ref) and a config once in
the main process and passed down: the learning bench's set-up, `gamegym new` and `gamegym
resume` (children build their own game from the config's reference)."""

import json

import pytest
from conftest import SMALL, TICTACTOE

from gamegym.bench import curve, learning
from gamegym.bench.learning import LearningSettings
from gamegym.cli.main import main
from gamegym.game.graph import GameSpecError
from gamegym.game.ref import GameRef, forget_built
from gamegym.runtime import gym as gym_module


def test_the_learning_bench_builds_its_game_and_config_once(builds, monkeypatch, tmp_path):
    # no training processes: the gym returns at once, so the trip is the set-up, the session
    # and its first model, and the curve's first and final points (measured in this process);
    # the first model is made here too, with the graph already built, not in a child
    monkeypatch.setattr(gym_module.GameGym, "resume", lambda self, **options: 0)
    monkeypatch.setattr(gym_module, "tensorflow_imported", lambda: True)
    settings = LearningSettings(
        TICTACTOE, minutes=0.01, interval=10, games=2, searchcount=2, keep=tmp_path / "learn"
    )
    figures = learning.run_learning_bench(settings)
    assert [point["iteration"] for point in figures["curve"]] == [0]
    assert figures["final"]["iteration"] == 0
    (game,) = builds["game"]
    (config,) = builds["config"]
    assert "build_game < build < run_learning_bench" in game, game
    assert "from_dict < preset_config < run_learning_bench" in config, config


def test_the_learning_bench_builds_a_game_named_without_its_arguments_once(
    connectfour_builds, monkeypatch, tmp_path
):
    # Connect Four named with no arguments, its preset with all of them: one game either way,
    # built from its reference once in this process through the set-up (the yardstick, the
    # preset's starter model judged, the session's first model published); no training
    monkeypatch.setattr(gym_module, "tensorflow_imported", lambda: True)
    trained = []
    monkeypatch.setattr(
        learning, "train_and_measure", lambda gym, *rest: trained.append(gym) or ([], {}, {})
    )
    settings = LearningSettings(
        "games.connectfour:ConnectFour", opponents=("random",), keep=tmp_path / "learn"
    )
    figures = learning.run_learning_bench(settings)
    assert connectfour_builds == [{}]
    assert trained[0].config.game_ref == GameRef(
        "games.connectfour:ConnectFour", {"rows": 6, "columns": 7}
    )
    assert figures["game_args"] == {"rows": 6, "columns": 7}
    assert (tmp_path / "learn" / "models" / "0.keras").is_file()


def test_a_learning_bench_variant_changes_the_preset_in_the_one_config(builds, monkeypatch):
    monkeypatch.setattr(gym_module.GameGym, "resume", lambda self, **options: 0)
    monkeypatch.setattr(gym_module, "tensorflow_imported", lambda: True)
    settings = LearningSettings(
        TICTACTOE,
        minutes=0.01,
        interval=10,
        games=2,
        searchcount=2,
        overrides={"selfplay": {"search": {"searchcount": 16}}},
    )
    figures = learning.run_learning_bench(settings)
    assert figures["selfplay_searchcount"] == 16
    assert len(builds["game"]) == 1 and len(builds["config"]) == 1


def new_process(builds) -> None:
    """As in a new process (each command runs in its own): nothing built, nothing counted."""
    forget_built()
    builds["game"].clear()
    builds["config"].clear()


def test_new_and_resume_build_the_game_and_the_config_once(builds, monkeypatch, tmp_path):
    monkeypatch.setattr(gym_module, "tensorflow_imported", lambda: True)
    session = tmp_path / "s"
    assert main(["new", str(session), "--preset", "tictactoe"]) == 0
    assert len(builds["game"]) == 1 and len(builds["config"]) == 1, builds
    new_process(builds)
    config = tmp_path / "small.json"
    config.write_text(json.dumps(SMALL))
    assert main(["new", str(tmp_path / "t"), "--game", TICTACTOE, "--config", str(config)]) == 0
    assert len(builds["game"]) == 1 and len(builds["config"]) == 1, builds
    new_process(builds)
    ran = []
    monkeypatch.setattr(gym_module.GameGym, "resume", lambda self, **options: ran.append(self))
    assert main(["resume", str(session), "--max-iterations", "1"]) in (0, None)
    assert len(ran) == 1 and ran[0].config.game == TICTACTOE
    assert builds["game"] == [] and len(builds["config"]) == 1, builds  # config.json, read once


def test_runs_side_by_side_share_the_one_game_and_its_one_solve(builds, monkeypatch):
    calls = []
    solves = []
    real_solver = curve.Solver

    def fake_run(settings, solver=None):
        calls.append({"settings": settings, "graph": settings.game_ref.build(), "solver": solver})
        return {"learner": settings.learner, "curve": []}

    def counted_solver(graph):
        solves.append(graph)
        return real_solver(graph)

    monkeypatch.setattr(learning, "run_learning_bench", fake_run)
    monkeypatch.setattr(curve, "Solver", counted_solver)
    learning.run_learning_benches(
        LearningSettings(TICTACTOE, minutes=1.0), ["alphazero", "muzero"], seeds=(0, 1)
    )
    assert len(calls) == 4 and len(builds["game"]) == 1
    assert all(call["graph"] is calls[0]["graph"] for call in calls)
    # tic-tac-toe is measured against its exact solver: solved once, before the first run
    assert solves == [calls[0]["graph"]]
    solver = calls[0]["solver"]
    assert solver is not None and all(call["solver"] is solver for call in calls)
    assert calls[0]["settings"].opponents == ("solver",)
    # and a run given the solver does not solve again
    assert curve.bench_opponents(GameRef(TICTACTOE), None, solver)[1] is solver
    assert len(solves) == 1


def test_a_game_that_does_not_build_is_refused_before_the_session_is_made(tmp_path):
    # the gym builds its graph from the config's reference before it makes the folder
    from gamegym.config import GymConfig

    config = GymConfig(game="games.santorini:Santorini", game_args={"dimension": 9})
    with pytest.raises(GameSpecError, match="cannot build games.santorini:Santorini with"):
        gym_module.GameGym(tmp_path / "s", config=config)
    assert list(tmp_path.iterdir()) == []


def test_several_runs_name_a_game_without_a_preset_before_solving(monkeypatch):
    monkeypatch.setattr(curve, "Solver", lambda graph: pytest.fail("solved first"))
    with pytest.raises(ValueError, match="no bundled alphazero preset for games.santorini"):
        learning.run_learning_benches(
            LearningSettings("games.santorini:Santorini", {"dimension": 4}, minutes=1.0),
            ["alphazero", "muzero"],
        )
    with pytest.raises(ValueError, match="unknown learner preset 'nosuch'"):
        learning.run_learning_benches(
            LearningSettings(TICTACTOE, minutes=1.0), ["alphazero", "nosuch"]
        )
