"""A dummy run of the real thing with `train.learner = "muzero"`: real processes, a temporary
session, two iterations trained with curious replay and rated by the Evaluator, then the
evaluate command; and every role in one process.  (A MuZero model file loads with every answer
kept: tests/learners/test_muzero.py; a resume that goes on from trained iterations: the
AlphaZero end-to-end test.)"""

import json

import numpy as np
import pytest
from conftest import assert_curious_replay_trained, create_session, gamegym

from gamegym.cli.main import main

pytestmark = pytest.mark.slow

TICTACTOE = "games.tictactoe:TicTacToe"
SMALL = {
    "network": {"width": 16, "blocks": 1},
    "muzero": {"hidden_size": 8, "num_unroll_steps": 3},
    "selfplay": {
        "selfplayprocesses": 1,
        "search": {"threads": 4, "searchcount": 16},
        "gamelog_dump_threshold": 5,
        "positions_per_iteration": 100,
    },
    "train": {
        "learner": "muzero",
        "min_samplecount": 60,
        "min_new_samples": 60,
        "batchsize": 32,
        # curious replay: sequences drawn by their last step's priority, every unrolled step's
        # loss reported back
        "replay": "curious",
        "num_updates_per_train_iter": 8,
        "replay_capacity": 400,
    },
    "evaluate": {
        "every": 1,
        "games": 2,
        "search": {"searchcount": 8},
        "opponents": ["random", "previous"],
    },
    "status_interval": 2.0,
}


def test_new_resume_and_evaluate(tmp_path, capsys):
    session = create_session(tmp_path / "mz", TICTACTOE, SMALL)  # as `gamegym new` makes it
    assert json.loads((session / "config.json").read_text())["train"]["learner"] == "muzero"

    done = gamegym("resume", str(session), "--max-iterations", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 new iterations trained" in done.stdout
    current = json.loads((session / "models" / "current.json").read_text())["iteration"]
    assert current >= 2
    for it in (1, 2):
        report = json.loads((session / "train" / f"{it}.json").read_text())
        assert report["learner"] == "muzero" and report["samples"] >= 54
        assert {"loss", "policy_loss", "value_loss", "reward_loss"} <= set(report["losses"])
        assert all(np.isfinite(v) for v in report["losses"].values())
    assert_curious_replay_trained(session, current, "muzero")
    files = sorted((session / "samples").glob("*/*.npz"))
    assert files
    with np.load(files[0]) as data:  # the same sample files as AlphaZero's
        assert data["x"].shape[1:] == (3, 3, 2) and data["pi"].shape[1] == 9
        assert np.allclose(data["pi"].sum(axis=1), 1.0, atol=1e-5)
        assert (data["pi"][~data["legal"]] == 0).all()  # legal moves masked at the root
    for role in ("predictor", "trainer", "selfplayer0", "evaluator"):
        log = (session / "logs" / f"{role}.log").read_text()
        assert "Traceback" not in log, log
    ratings = json.loads((session / "evaluation" / "ratings.json").read_text())
    assert ratings["random"] == 0 and any(name.startswith("iteration:") for name in ratings)

    # the evaluate command, in this process (its start-up is tested elsewhere)
    args = ["--opponent", "random", "--games", "2", "--searchcount", "8", "--json"]
    assert main(["evaluate", str(session), *args]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["wins"] + result["draws"] + result["losses"] == 2


def test_every_role_in_one_process(tmp_path):
    from gamegym.config import GymConfig
    from gamegym.runtime.gym import GameGym

    config = GymConfig.from_dict(
        {**SMALL, "game": TICTACTOE, "debug_single_process": True, "evaluate": {}}
    )
    gym = GameGym(tmp_path / "one", config=config)
    assert gym.resume(max_iterations=1, console=False) == 0
    assert gym.session.current_iteration() == 1
    report = json.loads((tmp_path / "one" / "train" / "1.json").read_text())
    assert report["learner"] == "muzero" and np.isfinite(report["losses"]["reward_loss"])
