"""A dummy run of the bootstrapped learner: real processes, a new session resumed for two
iterations with curious replay, the sample files' masks, the target network's copy period
counted across iterations, and the model playing in `evaluate` (majority vote) and in the
Evaluator process.  (That the count survives a model file, as a resumed Trainer reads it, is
in test_bootstrapped.py.)"""

import json

import numpy as np
import pytest
from conftest import assert_curious_replay_trained, create_session, gamegym

from gamegym.cli.main import main

pytestmark = pytest.mark.slow

HEADS = 3
SMALL = {
    "network": {"kind": "dense", "width": 16, "blocks": 1},
    "bootstrapped": {
        "heads": HEADS,
        "concurrent_games": 8,
        "positions_per_iteration": 80,
        "target_update_period": 10,
    },
    "selfplay": {"selfplayprocesses": 1, "gamelog_dump_threshold": 8},
    "train": {
        "learner": "bootstrapped",
        "min_samplecount": 60,
        "min_new_samples": 60,
        "batchsize": 16,
        "num_updates_per_train_iter": 7,
        "replay": "curious",  # each sample's TD error is its priority
        "replay_capacity": 400,
    },
    "evaluate": {"every": 1, "games": 2, "opponents": ["random"]},
    "status_interval": 2.0,
}


def test_new_resume_then_evaluate(tmp_path, capsys):
    from gamegym.learners.bootstrapped.qnetwork import parts, target_age
    from gamegym.nets.tfsetup import load_model

    # as `gamegym new` makes it
    session = create_session(tmp_path / "ttt", "games.tictactoe:TicTacToe", SMALL)
    done = gamegym("resume", str(session), "--max-iterations", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 new iterations trained" in done.stdout
    first = json.loads((session / "models" / "current.json").read_text())["iteration"]
    assert first >= 2
    for it in (1, 2):
        report = json.loads((session / "train" / f"{it}.json").read_text())
        assert report["learner"] == "bootstrapped" and report["samples"] >= 60
        assert np.isfinite(report["losses"]["td_loss"])
    assert_curious_replay_trained(session, first, "bootstrapped")
    # 7 gradient steps an iteration, a target copy every 10, counted across iterations
    model = load_model(session / "models" / f"{first}.keras")
    assert target_age(model) == 7 * first % 10
    untrained, once = (load_model(session / "models" / f"{it}.keras") for it in (0, 1))
    assert all(
        np.array_equal(a, b)
        for a, b in zip(parts(untrained)[0].get_weights(), parts(once)[1].get_weights())
    )
    files = sorted((session / "samples").glob("*/*.npz"))
    assert files
    with np.load(files[0]) as data:
        n = len(data["z"])
        assert data["mask"].shape == (n, HEADS) and data["mask"].dtype == bool
        assert data["terminal"].shape == data["head"].shape == (n,)
        assert data["terminal"].sum() + data["truncated"].sum() == len(data["result"])
        assert np.allclose(data["pi"].sum(axis=1), 1.0)
    for role in ("predictor", "trainer", "selfplayer0", "evaluator"):
        log = (session / "logs" / f"{role}.log").read_text()
        assert "Traceback" not in log, log

    # the evaluate command, in this process (its start-up is tested elsewhere)
    assert main(["evaluate", str(session), "--opponent", "random", "--games", "4", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["games"] == 4 and result["iteration"] == first
    # what the Evaluator process does for an iteration, here in this process
    from gamegym.data.session import Session
    from gamegym.evaluation.ratings import evaluate_iteration

    stored = Session(session)
    config = stored.load_config()
    ratings = evaluate_iteration(stored, config, first, np.random.default_rng(0))
    assert f"iteration:{first}" in ratings and "random" in ratings


def test_debug_single_process_waits_for_its_own_trainer(tmp_path):
    # one self-play driver in the gym's process: it plays what the Trainer waits for (its share
    # is not split between selfplay.selfplayprocesses), then goes idle until the new model
    from gamegym import GameGym, GymConfig
    from gamegym.learners.bootstrapped.config import positions_per_iteration

    config = GymConfig.from_dict(
        {
            "game": "games.tictactoe:TicTacToe",
            "debug_single_process": True,
            "network": {"kind": "dense", "width": 16, "blocks": 1},
            "bootstrapped": {"heads": 3, "concurrent_games": 8},
            "selfplay": {"gamelog_dump_threshold": 8},
            "train": {
                "learner": "bootstrapped",
                "min_samplecount": 60,
                "min_new_samples": 60,
                "batchsize": 16,
                "num_updates_per_train_iter": 5,
            },
            "status_interval": 0.0,
        }
    )
    assert config.selfplay.selfplayprocesses == 2
    assert positions_per_iteration(config) == 67  # ceil(60 / 0.9), all of it
    gym = GameGym(tmp_path / "debug", config=config)
    assert gym.resume(max_iterations=2, console=False) == 0
    assert gym.session.current_iteration() == 2
    for iteration, needed in ((0, 67), (1, 60)):  # the first window, then min_new_samples
        files = list((tmp_path / "debug" / "samples" / str(iteration)).glob("debug-*.npz"))
        assert sum(len(np.load(f)["z"]) for f in files) >= needed
