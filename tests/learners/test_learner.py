"""The Learner interface and the AlphaZero learner: it overfits one game, its models save and
load, the train config may be a dataclass, a namespace or a dict, and symmetry augmentation
moves the policy with the board."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from types import SimpleNamespace  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from gamegym.nets.tfsetup import configure_tensorflow, load_model  # noqa: E402

configure_tensorflow(use_gpu=False, threads=2)  # 2 cores; a no-op when TF is already set up

import keras  # noqa: E402
from conftest import random_game as shared_random_game  # noqa: E402

from gamegym.config import GymConfig, NetworkConfig, TrainConfig  # noqa: E402
from gamegym.data.samples import SampleBatch, records_to_arrays  # noqa: E402
from gamegym.game.graph import load_game  # noqa: E402
from gamegym.learners import Learner, TrainReport, get_learner  # noqa: E402
from gamegym.learners.alphazero.learner import Augmenter  # noqa: E402
from gamegym.nets.builders import build_network, network_for_game  # noqa: E402
from gamegym.presets import INITIAL_MODELS, PRESETS, initial_model_path, preset_learner  # noqa: E402
from games.tictactoe import TicTacToe  # noqa: E402


class TicTacToeWithoutUnnumpify(TicTacToe):
    """Symmetries but no unnumpify: augmentation must switch itself off."""

    def unnumpify(self, array):
        raise NotImplementedError("no unnumpify")


def random_game(graph, seed):
    """One random game as samples: pi one-hot on the move played."""
    return shared_random_game(graph, np.random.default_rng(seed))


def as_batch(records):
    arrays = records_to_arrays(records)
    n = len(arrays["z"])
    return SampleBatch(
        x=arrays["x"],
        pi=arrays["pi"],
        z=arrays["z"],
        action=arrays["action"],
        root_value=arrays["root_value"],
        legal=arrays["legal"],
        game=arrays["game"],
        step=arrays["step"],
        iteration=np.zeros(n, np.int32),
        truncated=np.zeros(n, bool),
    )


def test_alphazero_overfits_one_game():
    graph = TicTacToe()
    record = random_game(graph, seed=3)
    assert record.result != 0 and len(record) >= 5  # a decided game: values are ±1
    batch = as_batch([record])
    learner = get_learner("alphazero")
    assert isinstance(learner, Learner) and learner.name == "alphazero"
    model = learner.build_model(graph, {"kind": "dense", "width": 64, "blocks": 2})
    # the names of the brief (batch_size) on a plain namespace; one minibatch = the whole game
    config = SimpleNamespace(
        epochs=200,
        batch_size=16,
        learning_rate=3e-3,
        validation_split=0.0,
        augment_symmetries=False,
        num_updates_per_train_iter=None,
    )
    learner.compile(model, config)
    report = learner.train_iteration(model, batch, config, np.random.default_rng(0), graph=graph)
    assert isinstance(report, TrainReport) and report.samples == len(batch)
    history = report.history
    assert len(history["loss"]) == 200 and "val_loss" not in history
    assert history["policy_loss"][-1] < 0.1 and history["value_loss"][-1] < 0.01
    assert history["loss"][-1] < history["loss"][0] / 10

    logits, value = model(batch.x, training=False)
    legal_logits = np.where(batch.legal, logits.numpy(), -np.inf)
    assert (np.argmax(legal_logits, axis=1) == batch.action).all()
    assert np.allclose(value.numpy().reshape(-1), batch.z, atol=0.15)

    losses = learner.per_sample_loss(model, batch)
    assert losses.shape == (len(batch),) and losses.dtype == np.float32
    assert np.isfinite(losses).all() and losses.max() < 0.2
    assert report.per_sample_loss.shape == (len(batch),)
    assert np.isfinite(report.per_sample_loss).all()


def test_sampled_schedule_validation_and_dict_config():
    graph = TicTacToe()
    batch = as_batch([random_game(graph, seed=s) for s in range(6)])
    n_val = int(len(batch) * 0.25)
    learner = get_learner("alphazero")
    model = learner.build_model(graph, {"width": 16, "blocks": 1})
    config = {
        "num_updates_per_train_iter": 5,
        "batch_size": 8,
        "validation_split": 0.25,
        "augment_symmetries": True,
    }
    report = learner.train_iteration(model, batch, config, np.random.default_rng(1), graph=graph)
    assert {k: len(v) for k, v in report.history.items()} == {
        "loss": 1,
        "policy_loss": 1,
        "value_loss": 1,
        "l2_loss": 1,
        "val_loss": 1,
        "val_policy_loss": 1,
        "val_value_loss": 1,
    }
    assert report.samples == len(batch) - n_val
    assert np.isfinite(report.per_sample_loss).all()  # drawn, validation and unseen samples

    # epochs over the batch with the TrainConfig dataclass (its `batchsize` spelling)
    config = TrainConfig(epochs=2, batchsize=8, validation_split=0.25)
    report = learner.train_iteration(model, batch, config, np.random.default_rng(2), graph=graph)
    assert len(report.history["loss"]) == 2 and len(report.history["val_loss"]) == 2

    x, targets, ids = learner.make_targets(batch, graph)
    assert x.shape == (len(batch), 3, 3, 2) and (ids == np.arange(len(batch))).all()
    assert targets["pi"].shape == targets["legal"].shape == (len(batch), 9)
    assert targets["z"].shape == (len(batch),)
    assert np.array_equal(targets["z"], batch.z)  # the game result by default


def three_games_with_search_values():
    """Three random tic-tac-toe games as one batch, root values spread over [-0.5, 0.5]."""
    graph = TicTacToe()
    batch = as_batch([random_game(graph, seed=s) for s in range(3)])
    batch.root_value = np.linspace(-0.5, 0.5, len(batch)).astype(np.float32)
    return graph, batch


def test_value_target_mix_moves_z_towards_the_search_value():
    graph, batch = three_games_with_search_values()
    learner = get_learner("alphazero")
    _, targets, _ = learner.make_targets(batch, graph, TrainConfig(value_target_mix=0.25))
    assert targets["z"].dtype == np.float32
    assert np.allclose(targets["z"], 0.75 * batch.z + 0.25 * batch.root_value)
    _, targets, _ = learner.make_targets(batch, graph, {"value_target_mix": 1.0})
    assert np.array_equal(targets["z"], batch.root_value)


def test_value_td_steps_bootstrap_then_mix():
    graph, batch = three_games_with_search_values()
    learner = get_learner("alphazero")
    _, targets, _ = learner.make_targets(batch, graph, TrainConfig(value_td_steps=1))
    # within a game (rows in order), z[t] = -root_value[t + 1]; the last position keeps z
    last = np.append(batch.game[1:] != batch.game[:-1], True)
    assert np.allclose(targets["z"][~last], -batch.root_value[1:][~last[:-1]])
    assert np.array_equal(targets["z"][last], batch.z[last])
    config = {"value_td_steps": 1, "value_target_mix": 0.5}
    _, mixed, _ = learner.make_targets(batch, graph, config)
    assert np.allclose(mixed["z"], 0.5 * targets["z"] + 0.5 * batch.root_value)


def test_models_save_and_load_with_the_same_outputs(tmp_path):
    rng = np.random.default_rng(0)
    graph = TicTacToe()
    learner = get_learner("alphazero")
    residual = build_network((6, 7, 2), 7, "residual", width=8, blocks=1, seed=1)
    dense = learner.build_model(graph, None)
    # train the residual one a little so its batch-norm statistics are not the initial ones
    x = rng.random((16, 6, 7, 2)).astype(np.float32)
    legal = np.ones((16, 7), bool)
    batch = SampleBatch(
        x=x,
        pi=np.full((16, 7), 1 / 7, np.float32),
        z=rng.choice([-1.0, 1.0], 16).astype(np.float32),
        action=np.zeros(16, np.int32),
        root_value=np.zeros(16, np.float32),
        legal=legal,
        game=np.zeros(16, np.int32),
        step=np.arange(16, dtype=np.int32),
        iteration=np.zeros(16, np.int32),
        truncated=np.zeros(16, bool),
    )
    get_learner("alphazero").train_iteration(residual, batch, {"epochs": 2, "batchsize": 8}, rng)
    for model, shape in ((dense, (3, 3, 2)), (residual, (6, 7, 2))):
        assert model.output_names == ["policy", "value"]
        path = tmp_path / f"{model.name}.keras"
        model.save(path)
        loaded = keras.models.load_model(path, compile=False)
        inputs = rng.random((5, *shape)).astype(np.float32)
        for before, after in zip(model(inputs, training=False), loaded(inputs, training=False)):
            np.testing.assert_allclose(before.numpy(), after.numpy(), rtol=1e-5, atol=1e-6)
        logits, value = loaded(inputs, training=False)
        assert logits.shape == (5, model.outputs[0].shape[-1]) and value.shape == (5, 1)
        assert np.abs(value.numpy()).max() <= 1.0


def test_seeds_make_the_same_network():
    first, second = (build_network((3, 3, 2), 9, seed=7) for _ in range(2))
    for a, b in zip(first.get_weights(), second.get_weights()):
        assert (a == b).all()


def test_network_kind_by_board_shape_and_options():
    graph = TicTacToe()
    assert network_for_game(graph).name == "dense_64x2"

    class Board5x5(TicTacToe):
        def numpify(self, vertex):
            return np.zeros((5, 5, 2), np.float32)

    assert network_for_game(Board5x5(), {"width": 8, "blocks": 1}).name == "residual_8x1"
    assert network_for_game(Board5x5(), {"kind": "dense", "width": 8}).name == "dense_8x2"
    with pytest.raises(ValueError, match="unknown network option"):
        network_for_game(graph, {"widht": 8})


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_initial_models_fit_their_games(name):
    path = INITIAL_MODELS / f"{name}.keras"
    assert path.is_file(), "run scripts/make_initialmodels.py"
    assert path.stat().st_size < 1_000_000
    preset = PRESETS[name]
    graph = load_game(preset["game"], preset["game_args"])
    model = load_model(path)  # gamegym.nets.tfsetup: registers MuZero's MinMaxScale first
    learner = get_learner(preset_learner(preset))
    learner.check_fits(model, graph)
    evaluator = learner.make_evaluator(model, 0, fast=False)
    outputs = evaluator.run(*evaluator.search_request(graph.numpify(graph.roots[0])[None]))
    assert outputs["probs"].shape == (1, graph.action_space_size)
    assert outputs["values"].shape == (1,)
    # the file is the preset's network, weight shape for weight shape; and the benches' check
    # (for AlphaZero's its config.json, without TensorFlow) says so too
    network = GymConfig.from_dict(preset).network_options()  # the learner's fields included
    fresh = learner.build_model(graph, network)
    assert (model.name, [w.shape for w in model.weights]) == (
        fresh.name,
        [w.shape for w in fresh.weights],
    ), f"{path.name} is not the preset's network: run scripts/make_initialmodels.py"
    assert (
        initial_model_path(preset["game"], preset["game_args"], network, preset_learner(preset))
        == path
    ), f"{path.name} is not the preset's network: run scripts/make_initialmodels.py"


def test_a_starter_model_of_another_network_is_not_used(caplog):
    preset = PRESETS["tictactoe"]
    game, args = preset["game"], preset["game_args"]
    assert initial_model_path(game, args) == INITIAL_MODELS / "tictactoe.keras"
    assert initial_model_path(game, args, preset["network"]) == INITIAL_MODELS / "tictactoe.keras"
    assert initial_model_path(game, args, NetworkConfig(**preset["network"])) is not None
    wider = {**preset["network"], "width": 2 * preset["network"]["width"]}
    with caplog.at_level("WARNING", logger="gamegym.presets"):
        assert initial_model_path(game, args, wider) is None
    assert "tictactoe.keras is not the network" in caplog.text
    assert initial_model_path(game, {"size": 4}) is None  # no preset for these arguments


def test_unknown_learner_is_named():
    with pytest.raises(ValueError, match="unknown learner 'nope'; known learners: .*alphazero"):
        get_learner("nope")


def fixed_symmetry(k):
    """An rng stand-in whose `integers` always draws symmetry k."""
    return SimpleNamespace(integers=lambda low, high, n: np.full(n, k))


def test_rotation_moves_a_corner_move_to_the_next_corner():
    graph = TicTacToe()
    # opponent in the centre, mover in the bottom-right corner; pi: play the top-left corner
    vertex = (0, 0, 0, 0, -1, 0, 0, 0, 1)
    pi = np.zeros(9, np.float32)
    pi[0] = 1.0
    x, new_pi, new_legal = Augmenter(graph)(
        graph.numpify(vertex)[None], pi[None], graph.legal_mask(vertex)[None], fixed_symmetry(1)
    )
    # symmetry 1 turns the board 90° clockwise: top-left -> top-right, bottom-right -> bottom-left
    rotated = (0, 0, 0, 0, -1, 0, 1, 0, 0)
    assert graph.transform(vertex, 1) == rotated and graph.unnumpify(x[0]) == rotated
    assert new_pi[0].tolist() == [0, 0, 1, 0, 0, 0, 0, 0, 0]
    assert new_legal[0].tolist() == [True, True, True, True, False, True, False, True, True]


def test_every_symmetry_moves_the_policy_with_the_board():
    graph = TicTacToe()
    vertex = (1, 0, 0, 0, -1, 0, 0, 0, 0)
    pi = np.zeros(9, np.float32)
    pi[2] = 1.0  # the move to the top-right corner
    augment = Augmenter(graph)
    for k in range(graph.symmetry_count):
        x, new_pi, new_legal = augment(
            graph.numpify(vertex)[None], pi[None], graph.legal_mask(vertex)[None], fixed_symmetry(k)
        )
        image = graph.transform(vertex, k)
        assert graph.unnumpify(x[0]) == image
        # the image of the move's child is the child of the image reached by the new action
        child = graph.transform(graph.child_by_action(vertex, 2), k)
        assert graph.child_by_action(image, int(np.argmax(new_pi[0]))) == child
        assert (new_legal[0] == graph.legal_mask(image)).all()


def test_augmentation_is_skipped_without_unnumpify():
    graph = TicTacToeWithoutUnnumpify()
    assert not Augmenter(graph).ok
    batch = as_batch([random_game(graph, seed=1)])
    learner = get_learner("alphazero")
    model = learner.build_model(graph, {"width": 8, "blocks": 1})
    report = learner.train_iteration(
        model,
        batch,
        {"epochs": 1, "augment_symmetries": True},
        np.random.default_rng(0),
        graph=graph,
    )
    assert len(report.history["loss"]) == 1
