"""Playout-cap randomization in self-play, the sample files' policy_weight column, and the
learners' policy losses that ignore the fast-search positions."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import json  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from conftest import gamegym  # noqa: E402

from gamegym.config import GymConfig  # noqa: E402
from gamegym.data.replaybuffer import ReplayBuffer  # noqa: E402
from gamegym.data.samplefolder import load_samples  # noqa: E402
from gamegym.data.samples import (
    GameRecord,
    SampleBatch,
    read_sample_file,
    records_to_arrays,
    write_sample_file,
)
from gamegym.search.mcts import Search, SearchParams, uniform_evaluator  # noqa: E402
from gamegym.search.play import playout_cap, selfplay_game  # noqa: E402
from games.tictactoe import TicTacToe  # noqa: E402

GAME = "games.tictactoe:TicTacToe"


class RecordingSearch(Search):
    """A Search that remembers the budget and the exploration of each move's search."""

    def __init__(self, *args):
        super().__init__(*args)
        self.moves = []

    def run(self, root, rng, searchcount=None, explore=True):
        self.moves.append((searchcount, explore))
        return super().run(root, rng, searchcount, explore)


def capped(search="puct", probability=0.5, **selfplay):
    return GymConfig(
        game=GAME,
        selfplay={
            "search": {"rule": search, "searchcount": 16},
            "fast_searchcount": 4,
            "playout_cap_probability": probability,
            **selfplay,
        },
    ).selfplay


def play_games(cfg, seed, games=4):
    graph = TicTacToe()
    search = RecordingSearch(graph, uniform_evaluator(9), SearchParams.from_selfplay(cfg))
    rng = np.random.default_rng(seed)
    return [selfplay_game(graph, search, cfg, rng, GameRecord()) for _ in range(games)], search


@pytest.mark.parametrize("rule", ["puct", "gumbel"])
def test_each_move_draws_a_full_or_a_fast_search_seeded(rule):
    records, search = play_games(capped(rule), 11)
    weights = [w for r in records for w in r.policy_weight]
    assert len(weights) == sum(len(r) for r in records) == len(search.moves)
    assert set(weights) == {0.0, 1.0}  # both kinds in 4 games at p = 0.5
    for weight, (count, explore) in zip(weights, search.moves):
        assert (count, explore) == ((16, True) if weight else (4, False))
    again, _ = play_games(capped(rule), 11)
    assert [r.policy_weight for r in again] == [r.policy_weight for r in records]
    assert [r.action for r in again] == [r.action for r in records]


def test_without_playout_caps_every_move_is_full_and_draws_nothing():
    cfg = GymConfig(game=GAME, selfplay={"search": {"searchcount": 16}}).selfplay
    assert playout_cap(cfg) is None
    records, search = play_games(cfg, 3, games=1)
    assert records[0].policy_weight == [] and all(m == (None, True) for m in search.moves)
    assert playout_cap(capped(probability=0.25)).full_probability == 0.25


def test_the_temperature_schedule_keeps_working_with_caps():
    """PUCT with caps: before temperature_drop_move the move is sampled (a huge temperature:
    often not the most visited), from it on it is always a most visited one."""
    cfg = capped(probability=0.5, temperature=100.0, temperature_drop_move=2)
    records, _ = play_games(cfg, 0, games=8)
    early = [r.pi[i][a] < r.pi[i].max() for r in records for i, a in enumerate(r.action[:2])]
    assert any(early)
    for r in records:
        assert all(r.pi[i][a] == r.pi[i].max() for i, a in enumerate(r.action) if i >= 2)


# ----- the sample files ----------------------------------------------------------------------
def tiny_records(weights_per_game):
    graph, records = TicTacToe(), []
    for game, weights in enumerate(weights_per_game):
        vertex, record = graph.roots[0], GameRecord(policy_weight=list(weights))
        for i in range(len(weights)):
            actions = graph.actions_at(vertex)
            action = actions[(game + i) % len(actions)]
            record.x.append(graph.numpify(vertex))
            record.pi.append(np.eye(9, dtype=np.float32)[action])
            record.action.append(action)
            record.root_value.append(0.0)
            record.legal.append(graph.legal_mask(vertex))
            vertex = graph.child_by_action(vertex, action)
        record.truncated = True
        records.append(record)
    return records


def write_old_file(path, records):
    """A sample file as written before the policy_weight column existed."""
    arrays = records_to_arrays(records)
    del arrays["policy_weight"]
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)


def test_fast_positions_carry_weight_zero_in_the_sample_file(tmp_path):
    records = tiny_records([[1, 0, 0, 1], [0, 1, 1]])
    path = tmp_path / "samples" / "0" / "a.npz"
    path.parent.mkdir(parents=True)
    write_sample_file(path, records)
    data = read_sample_file(path)
    assert data["policy_weight"].dtype == np.float32
    assert data["policy_weight"].tolist() == [1, 0, 0, 1, 0, 1, 1]
    batch = load_samples(tmp_path / "samples", 0, 100)
    assert batch.policy_weight.tolist() == [1, 0, 0, 1, 0, 1, 1]
    assert batch.take(np.array([1, 3])).policy_weight.tolist() == [0, 1]
    with pytest.raises(ValueError, match="2 policy weights for 3 positions"):
        records_to_arrays(
            tiny_records([[1, 0]])[:0]
            + [
                GameRecord(
                    x=[np.zeros((3, 3, 2))] * 3,
                    pi=[np.zeros(9)] * 3,
                    action=[0] * 3,
                    root_value=[0.0] * 3,
                    legal=[np.ones(9, bool)] * 3,
                    policy_weight=[1, 0],
                )
            ]
        )


def test_old_sample_files_read_as_all_full_searches(tmp_path):
    samples = tmp_path / "samples"
    write_old_file(samples / "0" / "old.npz", tiny_records([[0, 0, 0]]))
    write_sample_file(samples / "1" / "new.npz", tiny_records([[0, 1]]))
    assert read_sample_file(samples / "0" / "old.npz")["policy_weight"].tolist() == [1, 1, 1]
    batch = load_samples(samples, 0, 100)  # newest files first
    assert batch.policy_weight.tolist() == [0, 1, 1, 1, 1]
    buffer = ReplayBuffer(samples, capacity=100)
    for iteration, path in buffer.new_files():
        buffer.add(iteration, path, buffer.read(iteration, path))
    assert buffer.batch().policy_weight.tolist() == [1, 1, 1, 0, 1]
    plain = SampleBatch(
        **{k: v for k, v in vars(batch).items() if k not in ("policy_weight", "extra")}
    )
    assert plain.policy_weight.tolist() == [1] * 5


# ----- the learners -----------------------------------------------------------------------------
def weighted_batch():
    records = tiny_records([[1, 0, 1, 0, 0], [0, 1, 1, 0]])
    arrays = records_to_arrays(records)
    n = len(arrays["z"])
    return SampleBatch(
        **{
            k: arrays[k]
            for k in (
                "x",
                "pi",
                "z",
                "action",
                "root_value",
                "legal",
                "game",
                "step",
                "policy_weight",
            )
        },
        iteration=np.zeros(n, np.int32),
        truncated=np.ones(n, bool),
    )


def softmax_cross_entropy(pi, logits):
    logits = logits - logits.max(axis=1, keepdims=True)
    log_softmax = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return -(pi * log_softmax).sum(axis=1)


def test_alphazero_policy_loss_ignores_fast_positions():
    from gamegym.learners import get_learner
    from gamegym.nets.tfsetup import configure_tensorflow

    configure_tensorflow(use_gpu=False, threads=2)
    graph, batch = TicTacToe(), weighted_batch()
    learner = get_learner("alphazero")
    model = learner.build_model(graph, {"kind": "dense", "width": 8, "blocks": 1}, seed=0)
    train = {"value_loss_weight": 0.0}
    losses = learner.per_sample_loss(model, batch, train)
    logits, value = model(batch.x, training=False)
    logits = np.where(batch.legal, logits.numpy(), -1e9)
    expected = softmax_cross_entropy(batch.pi, logits) * batch.policy_weight
    np.testing.assert_allclose(losses, expected, rtol=1e-4, atol=1e-6)
    fast = batch.policy_weight == 0
    assert np.all(losses[fast] == 0) and np.all(losses[~fast] > 0)
    # the value loss stays on every position
    with_value = learner.per_sample_loss(model, batch, {"value_loss_weight": 1.0})
    value_loss = (batch.z - value.numpy().reshape(-1)) ** 2
    np.testing.assert_allclose(with_value, expected + value_loss, rtol=1e-4, atol=1e-6)


def test_muzero_policy_loss_ignores_fast_positions():
    from gamegym.learners import get_learner
    from gamegym.learners.muzero.unrolls import Unrolls
    from gamegym.nets.tfsetup import configure_tensorflow

    configure_tensorflow(use_gpu=False, threads=2)
    graph, batch = TicTacToe(), weighted_batch()
    learner = get_learner("muzero")
    train = {"num_unroll_steps": 2, "value_loss_weight": 0.0, "reward_loss_weight": 0.0}
    inputs, targets, _ = learner.make_targets(batch, train_config=train)
    data = Unrolls(inputs, targets, None, False)
    starts = np.arange(len(batch))
    *_, policy_mask = data.minibatch(starts, np.random.default_rng(0))
    rows = targets["rows"]
    expected = np.where(rows >= 0, batch.policy_weight[np.maximum(rows, 0)], 0.0)
    np.testing.assert_array_equal(policy_mask, expected)
    model = learner.build_model(graph, {"width": 8, "blocks": 1, "hidden_size": 8}, seed=0)
    losses = learner.per_sample_loss(model, batch, train)
    fast = batch.policy_weight == 0
    assert np.all(losses[fast] == 0) and np.all(losses[~fast] > 0)


# ----- end to end ------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_gumbel_session_with_playout_caps_trains_an_iteration(new_session):
    session = new_session(
        changes={
            "selfplay": {
                "search": {"rule": "gumbel"},
                "playout_cap_probability": 0.5,
                "fast_searchcount": 4,
            }
        }
    )
    done = gamegym("resume", str(session), "--max-iterations", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((session / "train" / "1.json").read_text())
    assert np.isfinite(report["losses"]["loss"]) and np.isfinite(report["losses"]["policy_loss"])
    weights = np.concatenate(
        [
            read_sample_file(p)["policy_weight"]
            for p in sorted((session / "samples").glob("*/*.npz"))
        ]
    )
    assert set(weights.tolist()) == {0.0, 1.0}
    assert 0.3 < weights.mean() < 0.7


@pytest.mark.slow
def test_a_muzero_session_with_gumbel_and_playout_caps_trains_an_iteration(tmp_path):
    """Every role in one process (the cheapest real run): MuZero's latent search under the
    Gumbel rule with playout caps writes weighted samples and trains on them."""
    from gamegym.runtime.gym import GameGym

    config = GymConfig.from_dict(
        {
            "game": GAME,
            "debug_single_process": True,
            "status_interval": 0.0,
            "network": {"width": 16, "blocks": 1},
            "muzero": {"hidden_size": 8, "num_unroll_steps": 3},
            "selfplay": {
                "search": {"rule": "gumbel", "threads": 4, "searchcount": 16},
                "gamelog_dump_threshold": 5,
                "positions_per_iteration": 100,
                "playout_cap_probability": 0.5,
                "fast_searchcount": 4,
            },
            "train": {
                "learner": "muzero",
                "min_samplecount": 60,
                "min_new_samples": 60,
                "epochs": 1,
                "batchsize": 32,
            },
        }
    )
    gym = GameGym(tmp_path / "mz", config=config)
    assert gym.resume(max_iterations=1, console=False) == 0
    report = json.loads((tmp_path / "mz" / "train" / "1.json").read_text())
    assert report["learner"] == "muzero" and np.isfinite(report["losses"]["policy_loss"])
    weights = np.concatenate(
        [
            read_sample_file(p)["policy_weight"]
            for p in sorted((tmp_path / "mz" / "samples").glob("*/*.npz"))
        ]
    )
    assert set(weights.tolist()) == {0.0, 1.0}
