"""The Evaluator process (gamegym.runtime.evaluator): the iterations it rates, one pruned
before it could be loaded, and the Evaluator in a running gym."""

import json

import numpy as np
import pytest
from conftest import TICTACTOE, create_session, gamegym, publish_as_trained

from gamegym.data.fileio import read_jsonl
from gamegym.nets.tfsetup import load_model
from gamegym.runtime.evaluator import Evaluator


def test_the_evaluator_passes_over_a_model_pruned_before_it_was_loaded(two_iterations):
    """`keep_models` may delete an iteration between the Evaluator naming it and loading it,
    as the one it was to rate or as the previous one it plays: it rates the newest instead,
    against the newest earlier iteration still there."""

    session = two_iterations.session
    config = two_iterations.config.updated(
        {
            "evaluate": {
                "games": 2,
                "search": {"searchcount": 4},
                "opponents": ["random", "previous"],
            }
        }
    )
    publish_as_trained(session, load_model(session.model_path(0)), 2)
    listed = session.model_iterations()
    session.model_path(1).unlink()  # pruned: 2 is current, 1 was listed a moment ago
    named = iter([1])
    real = session.current_iteration
    session.current_iteration = lambda: next(named, None) or real()
    session.model_iterations = lambda: listed
    evaluator = Evaluator(session, config, np.random.default_rng(0))
    assert evaluator.step() is None  # 1 is gone: nothing rated this time
    assert evaluator.step() == 2
    rows = read_jsonl(session.evaluation_dir / "results.jsonl")
    assert [(r["player"], r["opponent"]) for r in rows] == [
        ("iteration:2", "random"),
        ("iteration:2", "iteration:0"),
    ]


@pytest.mark.slow
def test_evaluator_in_the_gym_rates_new_iterations(tmp_path):
    settings = {
        "network": {"kind": "dense", "width": 16, "blocks": 1},
        "selfplay": {
            "selfplayprocesses": 1,
            "search": {"threads": 4, "searchcount": 16},
            "positions_per_iteration": 100,
        },
        "train": {"min_samplecount": 60, "min_new_samples": 60, "epochs": 1, "batchsize": 32},
        "evaluate": {"every": 1, "games": 2, "search": {"searchcount": 4}, "opponents": ["random"]},
        "status_interval": 1.0,
    }
    path = create_session(tmp_path / "s", TICTACTOE, settings)  # as `gamegym new` makes it
    done = gamegym("resume", str(path), "--max-iterations", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = read_jsonl(path / "evaluation" / "results.jsonl")
    assert rows and all(r["opponent"] == "random" and r["games"] == 2 for r in rows)
    assert {r["iteration"] for r in rows} <= {1, 2, 3}
    ratings = json.loads((path / "evaluation" / "ratings.json").read_text())
    assert ratings["random"] == 0 and f"iteration:{rows[-1]['iteration']}" in ratings
    assert (path / "plots" / "rating.png").exists()
    assert "Elo " in done.stdout  # the latest rating in the status line
    # the Evaluator plays the models from their fast-path files, as the Predictor loads them
    assert (
        "evaluator exiting (TensorFlow not imported)"
        in (path / "logs" / "evaluator.log").read_text()
    )
