"""`train.compile`: every learner's training step compiled by XLA trains as the traced step
does (the same losses, to float rounding, over 300 steps from the same seed), and a setting
changed on the same model keeps the optimizer's state."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import logging  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from gamegym.nets.tfsetup import configure_tensorflow, load_model  # noqa: E402

configure_tensorflow(use_gpu=False, threads=2)  # 2 cores; a no-op when TF is already set up

from gamegym.bench.windows import self_play_window  # noqa: E402
from gamegym.config import GymConfig  # noqa: E402
from gamegym.game.graph import load_game  # noqa: E402
from gamegym.learners import get_learner  # noqa: E402

GAME = "games.tictactoe:TicTacToe"
# the largest relative difference between a round's mean loss on the XLA path and on the
# traced path: XLA fuses and reorders the float32 arithmetic, and Adam carries the rounding on
# from step to step (these small dense networks differ by about 1e-8; residual networks with
# batch normalisation drift further, see docs/guides/performance.md)
LOSS_TOLERANCE = 1e-3
ROUNDS, UPDATES = 3, 100  # 300 training steps in all
SETTINGS = {
    "alphazero": {},
    "muzero": {"muzero": {"num_unroll_steps": 3, "hidden_size": 16}},
    "bootstrapped": {"bootstrapped": {"heads": 4, "target_update_period": 40}},
}


def config_for(learner: str) -> GymConfig:
    return GymConfig.from_dict(
        {
            "game": GAME,
            "network": {"kind": "dense", "width": 16, "blocks": 1},
            "train": {
                "learner": learner,
                "batchsize": 16,
                "validation_split": 0.0,
                "num_updates_per_train_iter": UPDATES,
                "augment_symmetries": True,
            },
            **SETTINGS[learner],
        }
    )


def losses_of(path: str, learner_name: str, model_file, window, graph, config) -> list[float]:
    """Each round's mean training loss on `path`, from the model in `model_file`."""
    learner, model = get_learner(learner_name), load_model(model_file)
    options = config.train_options()
    options.compile = path
    losses = []
    for round_number in range(ROUNDS):
        report = learner.train_iteration(
            model, window, options, np.random.default_rng([7, round_number]), graph
        )
        losses.extend(report.history["loss"])
    return losses


@pytest.mark.parametrize("learner_name", sorted(SETTINGS))
def test_the_xla_step_trains_as_the_traced_step_does(learner_name, tmp_path, caplog):
    graph, config = load_game(GAME), config_for(learner_name)
    learner = get_learner(learner_name)
    model = learner.build_model(graph, config.network_options(), seed=3)
    model.save(tmp_path / "start.keras")
    window = self_play_window(graph, config, model, 300, 2, seed=5)
    with caplog.at_level(logging.WARNING, logger="gamegym.nets.trainstep"):
        xla = losses_of("xla", learner_name, tmp_path / "start.keras", window, graph, config)
    # it did run on XLA: no fall-back line (TensorFlow's own warnings, e.g. of retracing an
    # evaluation step, may come depending on the tests before it in this process)
    assert not [r for r in caplog.records if r.name == "gamegym.nets.trainstep"]
    traced = losses_of("traced", learner_name, tmp_path / "start.keras", window, graph, config)
    assert len(xla) == len(traced) == ROUNDS
    # the weights move: the rounds' losses differ by far more than the tolerance
    assert np.ptp(traced) > 20 * LOSS_TOLERANCE * np.abs(traced).max()
    difference = np.abs(np.array(xla) - traced) / np.abs(traced)
    assert difference.max() <= LOSS_TOLERANCE, (xla, traced)


def test_another_compile_setting_on_the_same_model_keeps_the_optimizer(tmp_path):
    graph, config = load_game(GAME), config_for("alphazero")
    learner = get_learner("alphazero")
    model = learner.build_model(graph, config.network_options(), seed=3)
    window = self_play_window(graph, config, model, 100, 2, seed=5)
    options = config.train_options()
    options.num_updates_per_train_iter = 5
    learner.train_iteration(model, window, options, np.random.default_rng(0), graph)
    optimizer, steps = learner.optimizer, int(learner.optimizer.iterations.numpy())
    options.compile = "xla"
    learner.train_iteration(model, window, options, np.random.default_rng(1), graph)
    assert learner.optimizer is optimizer
    assert int(optimizer.iterations.numpy()) == steps + 5
    assert learner._train_step.path == "xla"


def test_auto_takes_the_learners_own_choice():
    for name in SETTINGS:
        learner = get_learner(name)
        assert learner.train_path({"compile": "auto"}) == learner.train_compile
        assert learner.train_path({"compile": "traced"}) == "traced"
        assert learner.train_path({"compile": "xla"}) == "xla"
