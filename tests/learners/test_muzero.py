"""The MuZero learner: latent search signs with an oracle model, unroll targets, gradient scaling,
iterations never mixed in a search, sequence draws for prioritised replays, save/load."""

import math
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from conftest import MUST_BLOCK, WIN_IN_ONE  # noqa: E402  (boards: win in one, must block)

from gamegym.config import ConfigError, GymConfig  # noqa: E402
from gamegym.data.samples import GameRecord, SampleBatch, records_to_arrays  # noqa: E402
from gamegym.game.graph import GameGraphError  # noqa: E402
from gamegym.nets.inference import LocalService, StaleIteration  # noqa: E402
from gamegym.search.latent import (  # noqa: E402
    LatentNode,
    LatentSearch,
    NetworkLatentValuer,
    uniform_latent_evaluator,
)
from gamegym.search.mcts import SearchParams, choose_action, visit_policy  # noqa: E402
from games.tictactoe import TicTacToe  # noqa: E402

GAME = "games.tictactoe:TicTacToe"


class OracleModel:
    """A perfect MuZero model of tic-tac-toe answering the Predictor's request kinds: the hidden
    state is the board (9 cells) and a flag for the absorbing state after the game's end; the
    reward is the real outcome for the mover, an illegal move loses; uniform policy, value 0."""

    kinds = ("initial", "recurrent")

    def __init__(self, iteration=0):
        self.graph = TicTacToe()
        self.iteration = iteration

    def run(self, kind, inputs):
        if kind == "initial":
            hidden = np.zeros((len(inputs["x"]), 10), np.float32)
            hidden[:, :9] = inputs["x"][..., 0].reshape(-1, 9) - inputs["x"][..., 1].reshape(-1, 9)
            rewards = np.zeros(len(hidden), np.float32)
        else:
            hidden, rewards = self.step(inputs["hidden"], inputs["action"])
        n = len(hidden)
        return {
            "hidden": hidden,
            "reward": rewards,
            "values": np.zeros(n, np.float32),
            "probs": np.full((n, 9), 1 / 9, np.float32),
        }

    def step(self, hidden, actions):
        out = np.zeros_like(hidden)
        rewards = np.zeros(len(hidden), np.float32)
        for i, (state, action) in enumerate(zip(hidden, actions)):
            if state[9]:
                out[i, 9] = 1.0  # absorbing: stays, pays 0
                continue
            board = tuple(int(c) for c in state[:9])
            if action not in self.graph.actions_at(board):
                out[i, 9], rewards[i] = 1.0, -1.0  # an illegal move loses
                continue
            child = self.graph.child_by_action(board, int(action))
            if self.graph.children_at(child):
                out[i, :9] = child
            else:
                out[i, 9] = 1.0
                rewards[i] = -self.graph.score_at(child)  # the mover's view
        return out, rewards


def latent_search(threads=1, searchcount=300, service=None):
    graph = TicTacToe()
    service = service or LocalService(OracleModel())
    return LatentSearch(
        graph,
        NetworkLatentValuer(graph, service),
        SearchParams(searchcount=searchcount, threads=threads),
    )


# ----- the search ------------------------------------------------------------------------------


@pytest.mark.parametrize("threads", [1, 8])
@pytest.mark.parametrize("vertex,expected", [(WIN_IN_ONE, 2), (MUST_BLOCK, 2)])
def test_latent_search_wins_and_blocks_with_an_oracle_model(threads, vertex, expected):
    """Rewards and values are negated per ply the right way: the mover takes a win in one, and
    blocks the opponent's (whose reward of +1 is a loss two plies down)."""
    search = latent_search(threads)
    root = search.run(search.new_root(vertex), np.random.default_rng(0))
    assert root.actions[choose_action(root, 0.0, np.random.default_rng(0))] == expected
    assert sum(root.visits) == search.searches_done == 300
    if vertex == WIN_IN_ONE:
        assert root.mean_value() > 0.5  # the win backed up as the root mover's


def test_legal_moves_are_masked_at_the_root_only():
    search = latent_search(searchcount=50)
    root = search.run(search.new_root(MUST_BLOCK), np.random.default_rng(0))
    assert root.actions == TicTacToe().actions_at(MUST_BLOCK)
    policy = visit_policy(root, 9)
    assert policy[[0, 1, 3]].sum() == 0 and math.isclose(policy.sum(), 1.0, rel_tol=1e-6)
    inner = [c for c in root.children if c is not None and c.children]
    assert inner and all(c.actions == tuple(range(9)) for c in inner)
    assert all(isinstance(c, LatentNode) and c.parent is root for c in inner)


def test_next_root_is_a_fresh_real_position():
    search = latent_search(searchcount=30)
    root = search.run(search.new_root(TicTacToe().roots[0]), np.random.default_rng(0))
    index = root.actions.index(4)
    following = search.next_root(root, index)
    assert following.parent is None and following.vertex == root.child_vertices[index]
    assert following.state == LatentNode.NEW


def test_the_search_ceiling_stub_plays_whole_games():
    from gamegym.search.play import selfplay_game

    graph = TicTacToe()
    cfg = GymConfig(game=GAME).selfplay
    search = LatentSearch(
        graph, uniform_latent_evaluator(9), SearchParams(searchcount=20, threads=4)
    )
    record = selfplay_game(graph, search, cfg, np.random.default_rng(0), GameRecord())
    assert 5 <= len(record) <= 9 and search.searches_done == 20 * len(record)


class SwitchingService:
    """A Predictor stand-in holding the newest `hold` iterations of an oracle model; a new
    iteration is loaded before the requests numbered in `reloads`.  Records (kind, tag,
    answering iteration or None when refused) per request."""

    def __init__(self, reloads, hold=2):
        self.reloads, self.hold = set(reloads), hold
        self.newest = 0
        self.requests = 0
        self.log = []

    def submit(self, kind, inputs, iteration=-1):
        self.requests += 1
        if self.requests in self.reloads:
            self.newest += 1
        answering = self.newest if iteration < 0 else iteration
        held = answering > self.newest - self.hold
        self.log.append((kind, iteration, answering if held else None))
        outputs = OracleModel(answering).run(kind, inputs) if held else None

        def collect():
            if outputs is None:
                raise StaleIteration(f"model iteration {answering} is no longer held")
            return outputs, answering

        return collect


def searches(log):
    """The requests of each search (from one initial request to the next)."""
    out = []
    for entry in log:
        if entry[0] == "initial":
            out.append([])
        out[-1].append(entry)
    return out


@pytest.mark.parametrize("threads", [1, 8])
def test_a_reload_during_a_search_does_not_mix_iterations(threads):
    service = SwitchingService(reloads=[10])  # iteration 1 arrives mid-search
    search = latent_search(threads, searchcount=200, service=service)
    rng = np.random.default_rng(0)
    root = search.run(search.new_root(MUST_BLOCK), rng)
    assert service.newest == 1 and service.requests > 10
    assert service.log[0] == ("initial", -1, 0)
    assert {entry[1:] for entry in service.log[1:]} == {(0, 0)}  # all tagged and answered 0
    assert search.restarts == 0
    assert root.actions[choose_action(root, 0.0, rng)] == 2
    again = search.run(search.new_root(MUST_BLOCK), rng)  # the next search: the newest
    following = searches(service.log)[1]
    assert following[0] == ("initial", -1, 1) and {e[1:] for e in following[1:]} == {(1, 1)}
    assert again.actions[choose_action(again, 0.0, rng)] == 2


def test_a_search_whose_iteration_is_gone_starts_again_at_the_root():
    service = SwitchingService(reloads=[3], hold=1)  # holds only the newest: a reload is fatal
    search = latent_search(threads=4, searchcount=60, service=service)
    root = search.run(search.new_root(WIN_IN_ONE), np.random.default_rng(0))
    assert service.log[2][1:] == (0, None)  # the refused request
    assert search.restarts == 1
    assert sum(root.visits) == 60 and all(v >= 0 for v in root.visits)
    last = searches(service.log)[-1]
    assert {answering for _, _, answering in last} == {1}  # the new tree: iteration 1 only
    assert root.actions[choose_action(root, 0.0, np.random.default_rng(0))] == 2


# ----- targets -----------------------------------------------------------------------------------


def make_batch(records):
    arrays = records_to_arrays(records)
    n = len(arrays["z"])
    return SampleBatch(
        **{k: arrays[k] for k in ("x", "pi", "z", "action", "root_value", "legal", "game", "step")},
        iteration=np.zeros(n, np.int32),
        truncated=arrays["truncated"][arrays["game"]],
    )


def record(actions, root_values, result=0.0, truncated=False):
    n = len(actions)
    return GameRecord(
        x=[np.full((3, 3, 2), i + 1, np.float32) for i in range(n)],
        pi=[np.eye(9, dtype=np.float32)[a] for a in actions],
        action=list(actions),
        root_value=list(root_values),
        legal=[np.ones(9, bool)] * n,
        result=result,
        truncated=truncated,
    )


def short_games():
    """A finished game of 4 positions (the last mover wins), a truncated one of 3, and a game
    of 2 last in the batch (maybe cut by the window: its end is unknown)."""
    return make_batch(
        [
            record([0, 1, 2, 3], [0.1, 0.2, 0.3, 0.4], result=-1.0),
            record([4, 5, 6], [0.5, 0.6, 0.7], truncated=True),
            record([7, 8], [0.8, 0.9], result=1.0),
        ]
    )


def targets_of(batch, unroll, td=0):
    from gamegym.learners import get_learner

    inputs, targets, ids = get_learner("muzero").make_targets(
        batch, train_config={"num_unroll_steps": unroll, "value_td_steps": td}
    )
    assert list(ids) == list(range(len(batch)))
    return inputs["actions"], targets


def test_unroll_targets_on_short_games():
    batch = short_games()
    actions, t = targets_of(batch, 3)
    # the finished game from its first position: four real steps, the reward at the end only
    assert list(t["rows"][0]) == [0, 1, 2, 3] and list(actions[0]) == [0, 1, 2]
    assert list(t["value"][0]) == [-1, 1, -1, 1] and t["value_mask"][0].all()
    assert list(t["reward"][0]) == [0, 0, 0, 0] and list(t["reward_mask"][0]) == [0, 1, 1, 1]
    # from its third position: the winning move pays +1, then absorbing steps
    assert list(t["rows"][2]) == [2, 3, -1, -1] and list(actions[2]) == [2, 3, -1]
    assert list(t["value"][2]) == [-1, 1, 0, 0] and t["value_mask"][2].all()
    assert list(t["reward"][2]) == [0, 0, 1, 0] and list(t["reward_mask"][2]) == [0, 1, 1, 1]
    # the truncated game: bootstrapped from its last root value; after the cut nothing is known
    assert list(t["rows"][5]) == [5, 6, -1, -1]
    assert np.allclose(t["value"][5], [-0.7, 0.7, 0, 0])
    assert list(t["value_mask"][5]) == [1, 1, 0, 0]
    assert list(t["reward"][5]) == [0, 0, 0, 0] and list(t["reward_mask"][5]) == [0, 1, 1, 0]
    # the batch's last game may have been cut by the window: no reward after its last row
    assert list(t["rows"][8]) == [8, -1, -1, -1]
    assert list(t["value_mask"][8]) == [1, 0, 0, 0] and not t["reward_mask"][8].any()


def test_unroll_targets_bootstrap_n_steps_and_do_not_depend_on_row_order():
    batch = short_games()
    _, t = targets_of(batch, 2, td=2)
    # position 0 of the first game: the search value two plies later, same mover
    assert np.isclose(t["value"][0][0], 0.3) and np.isclose(t["value"][0][1], 0.4)
    assert t["value"][0][2] == -1  # position 2: the game ends within 2 plies: z
    shuffled = np.random.default_rng(0).permutation(len(batch) - 2)  # the last game stays last
    order = np.r_[shuffled, len(batch) - 2, len(batch) - 1]
    _, u = targets_of(batch.take(order), 2, td=2)
    back = np.argsort(order)
    for key in ("value", "value_mask", "reward", "reward_mask"):
        assert np.array_equal(u[key][back], t[key]), key
    assert np.array_equal(np.where(u["rows"] >= 0, order[u["rows"]], -1)[back], t["rows"])


# ----- training -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_model():
    from gamegym.learners import get_learner

    return get_learner("muzero").build_model(
        TicTacToe(), {"width": 16, "blocks": 1, "hidden_size": 8}, seed=0
    )


def test_the_gradient_into_each_dynamics_step_is_halved(tiny_model):
    import tensorflow as tf

    from gamegym.learners.muzero.nets import muzero_parts
    from gamegym.learners.muzero.unrolls import scale_gradient, step_weights, unroll_predictions

    parts = muzero_parts(tiny_model)
    x = np.random.default_rng(0).random((4, 3, 3, 2)).astype(np.float32)
    actions = np.array([[0, 1, 2], [3, 4, 5], [6, 7, 8], [1, 1, 1]], np.int32)
    variables = parts[0].trainable_variables  # the representation's

    def gradients(scale, k):
        with tf.GradientTape() as tape:
            _, _, rewards = unroll_predictions(parts, x, actions, False, hidden_scale=scale)
            out = tf.reduce_sum(rewards[:, k])
        return tape.gradient(out, variables)

    for k in (1, 2, 3):
        halved, plain = gradients(0.5, k), gradients(1.0, k)
        for a, b in zip(halved, plain):
            assert np.allclose(a.numpy(), 0.5**k * b.numpy(), atol=1e-6)
    value = tf.constant([1.0, -2.0])
    with tf.GradientTape() as tape:
        tape.watch(value)
        scaled = scale_gradient(value, 0.25)
    assert np.allclose(scaled.numpy(), value.numpy())
    assert np.allclose(tape.gradient(scaled, value).numpy(), 0.25)
    assert np.allclose(step_weights(4), [1, 0.25, 0.25, 0.25, 0.25])


def selfplay_records(model, games, seed=0):
    from gamegym.learners import get_learner

    learner = get_learner("muzero")
    config = GymConfig(
        game=GAME, train={"learner": "muzero"}, selfplay={"search": {"searchcount": 16}}
    )
    service = LocalService(learner.make_evaluator(model, 0))
    driver = learner.selfplayer(TicTacToe(), service, config, np.random.default_rng(seed))
    records = []
    for rec, iteration in driver.play(lambda: len(records) >= games):
        assert iteration == 0
        records.append(rec)
    return records


def random_game(seed):
    """A decided random tic-tac-toe game; the policy target is the move played."""
    graph, rng = TicTacToe(), np.random.default_rng(seed)
    while True:
        rec, vertex = GameRecord(), graph.roots[0]
        while graph.children_at(vertex):
            action = int(rng.choice(graph.actions_at(vertex)))
            rec.x.append(graph.numpify(vertex))
            rec.pi.append(np.eye(9, dtype=np.float32)[action])
            rec.legal.append(graph.legal_mask(vertex))
            rec.root_value.append(0.0)
            rec.action.append(action)
            vertex = graph.child_by_action(vertex, action)
        if graph.score_at(vertex):
            rec.result = -graph.score_at(vertex) * (-1) ** (len(rec) - 1)
            return rec
        seed += 1000


def test_muzero_overfits_one_game():
    """Style rule 12: the learner fits one game: its moves, values and the final reward, along
    the unroll from its first position (the dynamics alone, no observation after it)."""
    import tensorflow as tf

    from gamegym.learners import get_learner
    from gamegym.learners.muzero.nets import muzero_parts
    from gamegym.learners.muzero.unrolls import unroll_predictions

    rec = random_game(3)
    batch = make_batch([rec, record([0], [0.0], truncated=True)])  # the last game: a stub
    learner = get_learner("muzero")
    model = learner.build_model(TicTacToe(), {"width": 64, "blocks": 2}, seed=1)
    unroll = len(rec) - 1
    config = {
        "num_unroll_steps": unroll,
        "epochs": 120,
        "batchsize": 16,
        "learning_rate": 1e-2,
        "validation_split": 0.0,
        "augment_symmetries": False,
    }
    report = learner.train_iteration(model, batch, config, np.random.default_rng(0))
    history = report.history
    assert history["loss"][-1] < history["loss"][0] / 10
    assert history["policy_loss"][-1] < 0.1 and history["value_loss"][-1] < 0.02
    assert history["reward_loss"][-1] < 0.02
    assert np.isfinite(report.per_sample_loss).all()
    assert learner.per_sample_loss(model, batch, config)[: len(rec)].max() < 0.3
    x = tf.constant(np.asarray(rec.x[:1]))
    actions = tf.constant([rec.action[:unroll]], tf.int32)
    logits, values, rewards = (
        t.numpy()[0] for t in unroll_predictions(muzero_parts(model), x, actions, False)
    )
    assert (logits.argmax(axis=1) == rec.action).all()
    assert np.allclose(values, rec.value_targets(), atol=0.2)
    assert np.allclose(rewards[1:], 0.0, atol=0.2)  # no move before the last ends the game


class RecordingSampler:
    """A prioritised sampler stand-in: draws rows in proportion to fixed priorities and
    records what it is told."""

    def __init__(self, priorities, seed=0):
        self.p = np.asarray(priorities, np.float64) / np.sum(priorities)
        self.rng = np.random.default_rng(seed)
        self.updates = []

    def draw(self, size):
        return self.rng.choice(len(self.p), size, p=self.p)

    def update(self, index, losses):
        self.updates.append((np.asarray(index), np.asarray(losses)))


def test_sequences_are_drawn_by_the_priority_of_their_last_step():
    from gamegym.learners.muzero.unrolls import SequenceDraws

    batch = make_batch(
        [record(list(range(7)), [0.0] * 7, result=1.0), record([0, 1], [0.0] * 2, result=1.0)]
    )
    unroll = 2
    priorities = np.arange(1, len(batch) + 1, dtype=np.float64)
    draws = SequenceDraws(
        RecordingSampler(priorities), batch, unroll, 4000, 1, np.random.default_rng(1)
    )
    starts = draws.draw()
    # the last step of the sequence from each start, and the expected share of each start
    last = {0: 2, 1: 3, 2: 4, 3: 5, 4: 6, 5: 6, 6: 6, 7: 8, 8: 8}
    expected = np.array([priorities[last[s]] for s in range(len(batch))])
    expected /= expected.sum()
    seen = np.bincount(starts, minlength=len(batch)) / len(starts)
    assert np.allclose(seen, expected, atol=0.02)


def test_a_sampler_hears_every_unrolled_step(tiny_model):
    from gamegym.learners import get_learner

    batch = make_batch(selfplay_records(tiny_model, 6))
    sampler = RecordingSampler(np.ones(len(batch)))
    learner = get_learner("muzero")
    model = learner.build_model(TicTacToe(), {"width": 16, "blocks": 1}, seed=2)
    config = {"num_unroll_steps": 3, "batchsize": 8, "num_updates_per_train_iter": 5}
    report = learner.train_iteration(
        model, batch, config, np.random.default_rng(0), sampler=sampler
    )
    assert len(sampler.updates) == 5
    for index, losses in sampler.updates:
        assert 8 <= len(index) <= 8 * 4 and len(losses) == len(index)  # up to K+1 per start
        assert np.isfinite(losses).all()
    trained = np.unique(np.concatenate([index for index, _ in sampler.updates]))
    assert np.isfinite(report.per_sample_loss[trained]).all()
    # one small step: the samples it did not reach get no loss made up for them
    sampler = RecordingSampler(np.ones(len(batch)))
    config.update(num_updates_per_train_iter=1, batchsize=2, validation_split=0.0)
    report = learner.train_iteration(
        model, batch, config, np.random.default_rng(1), sampler=sampler
    )
    trained = np.unique(sampler.updates[0][0])
    untouched = np.setdiff1d(np.arange(len(batch)), trained)
    assert len(untouched) >= len(batch) - 8
    assert np.isfinite(report.per_sample_loss[trained]).all()
    assert np.isnan(report.per_sample_loss[untouched]).all()


def test_save_and_load_keep_every_answer(tmp_path, tiny_model):
    from gamegym.learners import get_learner
    from gamegym.nets.tfsetup import load_model

    path = tmp_path / "model.keras"
    tiny_model.save(path)
    loaded = load_model(path)
    learner = get_learner("muzero")
    x = np.stack([TicTacToe().numpify(v) for v in (WIN_IN_ONE, MUST_BLOCK, (0,) * 9)])
    answers = []
    for model, fast in ((tiny_model, False), (loaded, False), (loaded, True)):
        evaluator = learner.make_evaluator(model, 0, fast)
        assert (evaluator.fast is not None) == fast
        first = evaluator.run("initial", {"x": x})
        second = evaluator.run(
            "recurrent", {"hidden": first["hidden"], "action": np.array([2, 5, 4], np.int32)}
        )
        answers.append((first, second))
    for first, second in answers[1:]:
        for got, want in ((first, answers[0][0]), (second, answers[0][1])):
            assert set(got) == set(want)
            for key in want:
                assert np.allclose(got[key], want[key], atol=1e-5), key
    hidden = answers[0][0]["hidden"]
    assert hidden.min() >= 0 and hidden.max() <= 1  # min-max scaled


@pytest.mark.slow
def test_the_numpy_evaluator_goes_to_a_process_without_tensorflow(tmp_path, tiny_model):
    """What a Selfplayer needs (its driver, and the portable evaluator the Predictor may hand
    it) unpickles and runs without importing TensorFlow."""
    import pickle
    import subprocess
    import sys

    from gamegym.learners import get_learner
    from gamegym.learners.muzero.fastnets import MINMAX_EPSILON
    from gamegym.nets.layers import MinMaxScale

    assert MINMAX_EPSILON == MinMaxScale.EPSILON
    evaluator = get_learner("muzero").make_evaluator(tiny_model, 3)
    portable = evaluator.portable()
    assert portable is not None and portable.iteration == 3
    x = TicTacToe().numpify(WIN_IN_ONE)[None]
    (tmp_path / "e.pkl").write_bytes(
        pickle.dumps((portable, x, evaluator.run("initial", {"x": x})))
    )
    script = f"""
import pickle, sys
import numpy as np
from games.tictactoe import TicTacToe
from gamegym.config import GymConfig
from gamegym.nets.inference import LocalService
from gamegym.learners import get_learner
portable, x, want = pickle.load(open({str(tmp_path / "e.pkl")!r}, "rb"))
got = portable.run("initial", {{"x": x}})
assert all(np.allclose(got[k], want[k], atol=1e-6) for k in want)
config = GymConfig(game="{GAME}", train={{"learner": "muzero"}}, selfplay={{"search": {{"searchcount": 8}}}})
driver = get_learner("muzero").selfplayer(TicTacToe(), LocalService(portable), config,
                                          np.random.default_rng(0))
record, iteration = next(driver.play(lambda: False))
assert len(record) >= 5 and iteration == 3
assert "tensorflow" not in sys.modules and "keras" not in sys.modules, "TensorFlow imported"
print("ok")
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip() == "ok", done.stdout + done.stderr


def test_the_bench_ceilings_measure_muzero(tiny_model):
    """`gamegym bench throughput --learner muzero`: its search ceiling runs the latent search
    on whole games, and its network ceiling the recurrent call."""
    from gamegym.bench.ceiling import search_ceiling
    from gamegym.bench.networks import network_ceiling

    graph = TicTacToe()
    cfg = GymConfig(game=GAME, selfplay={"search": {"searchcount": 16, "threads": 4}}).selfplay
    ceiling = search_ceiling(graph, cfg, 0.3, learner="muzero")
    assert ceiling["searches_per_s"] > 0 and ceiling["games_per_s"] > 0
    assert ceiling["core"] == "compiled"  # the latent search on the default core
    network = network_ceiling(tiny_model, graph, [1, 4], seconds_each=0.05, learner="muzero")
    assert list(network) == ["muzero onnx"]
    assert network["muzero onnx"][1] > 0 and network["muzero onnx"][4] > 0


# ----- refusals --------------------------------------------------------------------------------


class PassingTicTacToe(TicTacToe):
    """Says its turns do not alternate."""

    turns_alternate = False


def test_a_game_whose_turns_do_not_alternate_is_refused(tmp_path):
    from gamegym.learners import get_learner
    from gamegym.runtime.gym import GameGym

    graph = PassingTicTacToe()
    with pytest.raises(GameGraphError, match="turns strictly alternate"):
        get_learner("muzero").build_model(graph, {"width": 8, "blocks": 1})
    with pytest.raises(GameGraphError, match="turns_alternate = False"):
        LatentSearch(graph, uniform_latent_evaluator(9), SearchParams())
    with pytest.raises(GameGraphError, match="turns strictly alternate"):
        GameGym(
            tmp_path / "s",
            config=GymConfig(game=f"{__name__}:PassingTicTacToe", train={"learner": "muzero"}),
        )
    assert not (tmp_path / "s").exists()


def test_config_refuses_the_solver_and_bad_unrolls():
    with pytest.raises(ConfigError, match="selfplay.search.solver"):
        GymConfig(game=GAME, train={"learner": "muzero"}, selfplay={"search": {"solver": True}})
    with pytest.raises(ConfigError, match="muzero.num_unroll_steps"):
        GymConfig.from_dict(
            {"game": GAME, "train": {"learner": "muzero"}, "muzero": {"num_unroll_steps": 0}}
        )
    with pytest.raises(ConfigError, match="muzero.hidden_size"):
        GymConfig(game=GAME, train={"learner": "muzero"}, learner_config={"hidden_size": -1})


def test_an_alphazero_model_is_refused_for_a_muzero_session(tmp_path):
    from gamegym.nets.builders import network_for_game
    from gamegym.runtime.gym import GameGym, GymError

    model = network_for_game(TicTacToe(), {"width": 8, "blocks": 1})
    with pytest.raises(GymError, match="not a MuZero container"):
        GameGym(
            tmp_path / "s",
            initial_model=model,
            config=GymConfig(game=GAME, train={"learner": "muzero"}),
        )
