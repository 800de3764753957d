"""The AlphaZero learner overfits one game; augmentation permutes policies correctly."""
from types import SimpleNamespace

import numpy as np
import pytest

from games.tictactoe import TicTacToe
from gamegym.config import NetworkConfig, TrainConfig
from gamegym.learners import get_learner
from gamegym.learners.alphazero import Augmenter
from gamegym.samples import GameRecord, SampleBatch, records_to_arrays


def one_game(graph, seed=0):
    """A random tic-tac-toe game as samples: pi one-hot on the move played."""
    rng = np.random.default_rng(seed)
    record, vertex = GameRecord(), graph.roots[0]
    while graph.children_at(vertex):
        actions = graph.actions_at(vertex)
        index = int(rng.integers(len(actions)))
        pi = np.zeros(9, np.float32)
        pi[actions[index]] = 1.0
        record.x.append(graph.numpify(vertex))
        record.pi.append(pi)
        record.action.append(actions[index])
        record.root_value.append(0.0)
        record.legal.append(graph.legal_mask(vertex))
        vertex = graph.children_at(vertex)[index]
    score = graph.score_at(vertex)
    record.result = score if len(record) % 2 == 0 else -score
    return record


def as_batch(records):
    arrays = records_to_arrays(records)
    n = len(arrays["z"])
    return SampleBatch(x=arrays["x"], pi=arrays["pi"], z=arrays["z"], action=arrays["action"],
                       root_value=arrays["root_value"], legal=arrays["legal"],
                       game=arrays["game"], step=arrays["step"],
                       iteration=np.zeros(n, np.int32), truncated=np.zeros(n, bool))


def test_overfits_one_game():
    graph = TicTacToe()
    record = one_game(graph, seed=3)
    assert record.result != 0  # a decided game, so values are ±1
    batch = as_batch([record])
    learner = get_learner("alphazero")
    model = learner.build_model(graph, NetworkConfig(kind="dense", width=64, blocks=2, l2=0.0))
    config = TrainConfig(epochs=300, batchsize=16, learning_rate=3e-3, validation_split=0.0,
                         augment_symmetries=False)
    learner.compile(model, config)
    result = learner.train_iteration(model, batch, config, np.random.default_rng(0), graph=graph)
    history = result.history
    assert history["policy_loss"][-1] < 0.05 and history["value_loss"][-1] < 0.01
    assert history["loss"][-1] < history["loss"][0] / 10
    logits, value = model(batch.x, training=False)
    legal_logits = np.where(batch.legal, logits.numpy(), -np.inf)  # illegal ones are masked
    assert (np.argmax(legal_logits, axis=1) == batch.action).all()
    assert np.allclose(value.numpy().reshape(-1), batch.z, atol=0.15)
    losses = learner.per_sample_loss(model, batch, config)
    assert losses.shape == (len(batch),) and np.isfinite(losses).all() and losses.max() < 0.2


def test_sampled_minibatch_schedule_and_validation():
    graph = TicTacToe()
    batch = as_batch([one_game(graph, seed=s) for s in range(6)])
    learner = get_learner("alphazero")
    model = learner.build_model(graph, NetworkConfig(kind="dense", width=16, blocks=1))
    config = TrainConfig(num_updates_per_train_iter=7, batchsize=8, validation_split=0.25)
    result = learner.train_iteration(model, batch, config, np.random.default_rng(1), graph=graph)
    assert len(result.history["loss"]) == 1 and len(result.history["val_loss"]) == 1
    assert result.samples == len(batch) - int(len(batch) * 0.25)


def test_unknown_learner_is_named():
    with pytest.raises(ValueError, match="unknown learner 'nope'; known learners: alphazero"):
        get_learner("nope")


def test_augmentation_moves_the_policy_with_the_board():
    graph = TicTacToe()
    # mover has a mark in the top-left corner; the policy says "play top-right" (action 2)
    vertex = (1, 0, 0, 0, -1, 0, 0, 0, 0)
    pi = np.zeros(9, np.float32)
    pi[2] = 1.0
    legal = graph.legal_mask(vertex)
    augment = Augmenter(graph)
    for k in range(graph.symmetry_count):
        rng = SimpleNamespace(integers=lambda low, high, n, k=k: np.full(n, k))
        x, new_pi, new_legal = augment(graph.numpify(vertex)[None], pi[None], legal[None], rng)
        image = graph.transform(vertex, k)
        assert graph.unnumpify(x[0]) == image
        target = graph.child_by_action(vertex, 2)
        expected = graph.actions_at(image)[graph.children_at(image).index(graph.transform(
            target, k))]
        assert np.argmax(new_pi[0]) == expected
        assert (new_legal[0] == graph.legal_mask(image)).all()
