"""The bootstrapped learner: negamax DQN targets on hand-made positions, masks, truncation, the
target network's copy period and its survival through a model file, the majority vote, the
masks of self-play (seeded, stored, read back), the sampler seam and the config fields."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import multiprocessing  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from gamegym.nets.tfsetup import configure_tensorflow, load_model  # noqa: E402

configure_tensorflow(use_gpu=False, threads=2)  # 2 cores; a no-op when TF is already set up

from gamegym.config import ConfigError, GymConfig  # noqa: E402
from gamegym.data.samplefolder import load_samples  # noqa: E402
from gamegym.data.samples import GameRecord, SampleShape, read_sample_file, write_sample_file  # noqa: E402
from gamegym.data.session import Session  # noqa: E402
from gamegym.game.graph import load_game  # noqa: E402
from gamegym.learners import get_learner  # noqa: E402
from gamegym.learners.bootstrapped.config import positions_per_iteration  # noqa: E402
from gamegym.learners.bootstrapped.learner import transitions  # noqa: E402
from gamegym.learners.bootstrapped.play import VotePlayer, epsilon_for, vote  # noqa: E402
from gamegym.learners.bootstrapped.qnetwork import parts, target_age  # noqa: E402
from gamegym.nets.inference import LocalService  # noqa: E402
from gamegym.runtime.messages import EvalRequest, EvalResponse  # noqa: E402
from gamegym.search.play import ModelWait  # noqa: E402

GAME = "games.tictactoe:TicTacToe"
NETWORK = {"kind": "dense", "width": 16, "blocks": 1, "l2": 0.0}
TINY = {**NETWORK, "heads": 4}  # the network options the learner builds from (4 heads)


@pytest.fixture(scope="module")
def graph():
    return load_game(GAME)


def game(graph, actions, heads=4, masks=None):
    """A GameRecord of the moves `actions` (action ids), as QSelfplay stores it; truncated when
    the moves do not end the game."""
    vertex, record = graph.roots[0], GameRecord(extra={"mask": [], "head": [], "terminal": []})
    for i, action in enumerate(actions):
        pi = np.zeros(graph.action_space_size, np.float32)
        pi[action] = 1.0
        record.x.append(graph.numpify(vertex))
        record.pi.append(pi)
        record.action.append(action)
        record.root_value.append(0.0)
        record.legal.append(graph.legal_mask(vertex))
        record.extra["mask"].append(np.ones(heads, bool) if masks is None else masks[i])
        record.extra["head"].append(np.int16(0))
        record.extra["terminal"].append(False)
        vertex = graph.child_by_action(vertex, action)
    if graph.children_at(vertex):
        record.truncated = True
    else:
        score = graph.score_at(vertex)
        record.result = score if len(record) % 2 == 0 else -score
        record.extra["terminal"][-1] = True
    return record


def stored(tmp_path, records, name="g.npz"):
    """The records written as a sample file and read back as the Trainer reads them."""
    write_sample_file(tmp_path / "samples" / "0" / name, records)
    return load_samples(tmp_path / "samples", 0, 10**6)


def fresh(graph, network=TINY, seed=0):
    """The learner and a model with seeded initial weights: a test's training starts from the same
    weights on every run."""
    learner = get_learner("bootstrapped")
    return learner, learner.build_model(graph, network, seed=seed)


def test_build_model_takes_the_seed_of_the_learner_contract(graph):
    """`Learner.build_model(..., seed=)`: the same seed builds the same initial weights, another
    seed other weights."""
    learner = get_learner("bootstrapped")
    one, again, other = (learner.build_model(graph, TINY, seed=s).get_weights() for s in (7, 7, 8))
    assert all(np.array_equal(a, b) for a, b in zip(one, again))
    assert any(not np.array_equal(a, c) for a, c in zip(one, other))


# X takes 0 and 1 while O answers 3 and then 4, a blunder: X completes the top row with 2
BLUNDER = [0, 3, 1, 4, 2]
CONFIG = {
    "num_updates_per_train_iter": 300,
    "batchsize": 8,
    "target_update_period": 20,
    "validation_split": 0.0,
    "learning_rate": 3e-3,
    "augment_symmetries": False,
}


def test_negamax_targets_on_hand_made_positions(graph, tmp_path):
    batch = stored(tmp_path, [game(graph, BLUNDER)])
    learner, model = fresh(graph)
    ids, y = learner.td_targets(model, batch)
    assert list(ids) == [0, 1, 2, 3, 4]
    assert np.allclose(y[4], 1.0)  # the move that wins now: +1 for every head
    # 600 updates: over seeds 0-7 every head ends above 0.98 on the winning move and below -0.98
    # on the blunder (at 300, an unseeded model can leave a head at 0.89)
    longer = {**CONFIG, "num_updates_per_train_iter": 600}
    learner.train_iteration(model, batch, longer, np.random.default_rng(0), graph=graph)
    online, _ = parts(model)
    q = online(batch.x).numpy()
    chosen = q[np.arange(len(batch)), :, batch.action]  # [N, K] Q of the moves played
    assert (chosen[4] > 0.95).all()  # learnt: the winning move
    assert (chosen[3] < -0.9).all()  # the blunder: the opponent wins next
    _, y = learner.td_targets(model, batch)
    assert (y[3] < -0.9).all() and np.allclose(y[4], 1.0)


def test_a_draw_and_a_loss_are_worth_their_result(graph, tmp_path):
    draw = [4, 0, 8, 2, 1, 7, 6, 3, 5]  # a full board, no line
    batch = stored(tmp_path, [game(graph, draw)])
    learner, model = fresh(graph)
    x, targets, ids = learner.make_targets(batch)
    assert targets["done"].tolist() == [False] * 8 + [True]
    assert targets["reward"].tolist() == [0.0] * 9
    assert not targets["next_legal"][-1].any()
    _, y = learner.td_targets(model, batch)
    assert np.allclose(y[-1], 0.0)


def test_truncation_bootstraps(graph, tmp_path):
    cut = [0, 3, 1, 4]  # cut at max_moves before X's winning move
    batch = stored(tmp_path, [game(graph, cut)])
    assert batch.truncated.all() and batch.z[-1] == 0.0
    learner, model = fresh(graph)
    ids, following, done = transitions(batch)
    assert list(ids) == [0, 1, 2] and not done.any()  # the last position has no successor
    _, targets, _ = learner.make_targets(batch)
    assert (targets["reward"] == 0).all()
    # y = -max over the legal moves of the target network at the next position (one head each)
    _, target = parts(model)
    q_next = target(targets["next_x"]).numpy()
    best = np.where(targets["next_legal"][:, None, :], q_next, -np.inf).max(axis=2)
    _, y = learner.td_targets(model, batch, {"double_q": False})
    assert np.allclose(y, -best, atol=1e-6) and np.abs(y).max() > 0
    _, y = learner.td_targets(model, batch, {"double_q": False, "discount": 0.5})
    assert np.allclose(y, -0.5 * best, atol=1e-6)


def test_a_head_with_mask_0_gets_no_gradient(graph, tmp_path):
    heads, silent = 4, 2
    masks = [np.arange(heads) != silent] * len(BLUNDER)
    batch = stored(tmp_path, [game(graph, BLUNDER, heads, masks)])
    learner, model = fresh(graph)
    online, _ = parts(model)
    hidden = online.get_layer("head_hidden").kernel.shape[1] // heads

    def head_weights():
        kernel = online.get_layer("head_hidden").kernel.numpy()
        out = online.get_layer("head_out")
        return (
            [kernel[:, k * hidden : (k + 1) * hidden].copy() for k in range(heads)],
            [out.kernel.numpy()[k].copy() for k in range(heads)],
            [out.bias.numpy()[k].copy() for k in range(heads)],
        )

    before = head_weights()
    torso = online.get_layer("torso").get_weights()[0].copy()
    learner.train_iteration(
        model,
        batch,
        {**CONFIG, "num_updates_per_train_iter": 5},
        np.random.default_rng(0),
        graph=graph,
    )
    after = head_weights()
    for k in range(heads):
        same = [np.array_equal(b[k], a[k]) for b, a in zip(before, after)]
        assert all(same) if k == silent else not any(same), (k, same)
    assert not np.array_equal(torso, online.get_layer("torso").get_weights()[0])


def test_target_network_copy_period_survives_a_model_file(graph, tmp_path):
    batch = stored(tmp_path, [game(graph, BLUNDER)])
    learner, model = fresh(graph)
    online, target = parts(model)
    config = {**CONFIG, "target_update_period": 3}
    rng = np.random.default_rng(0)

    def same() -> bool:
        return all(np.array_equal(a, b) for a, b in zip(online.get_weights(), target.get_weights()))

    assert same() and target_age(model) == 0
    learner.train_iteration(model, batch, {**config, "num_updates_per_train_iter": 2}, rng)
    assert not same() and target_age(model) == 2
    learner.train_iteration(model, batch, {**config, "num_updates_per_train_iter": 1}, rng)
    assert same() and target_age(model) == 0  # copied at the 3rd step, across iterations
    learner.train_iteration(model, batch, {**config, "num_updates_per_train_iter": 4}, rng)
    assert not same() and target_age(model) == 1
    kept = [w.copy() for w in target.get_weights()]

    session = Session(tmp_path / "s")
    session.create(
        GymConfig.from_dict(
            {
                "game": GAME,
                "network": NETWORK,
                "train": {"learner": "bootstrapped"},
                "bootstrapped": {"heads": 4},
            }
        )
    )
    session.publish_model(model, 1)
    again = load_model(session.model_path(1))  # a resumed Trainer's model
    assert target_age(again) == 1
    assert all(np.array_equal(a, b) for a, b in zip(parts(again)[1].get_weights(), kept))
    resumed = get_learner("bootstrapped")
    resumed.train_iteration(again, batch, {**config, "num_updates_per_train_iter": 1}, rng)
    assert target_age(again) == 2
    assert all(np.array_equal(a, b) for a, b in zip(parts(again)[1].get_weights(), kept))
    resumed.train_iteration(again, batch, {**config, "num_updates_per_train_iter": 1}, rng)
    assert target_age(again) == 0
    assert all(
        np.array_equal(a, b)
        for a, b in zip(parts(again)[0].get_weights(), parts(again)[1].get_weights())
    )


def test_majority_vote():
    rng = np.random.default_rng(0)
    legal = np.array([True, True, True, False])
    # three heads prefer action 0 a little; one head loves action 1: the mean Q would pick 1
    q = np.array(
        [[0.2, 0.1, 0.0, 0.9], [0.3, 0.2, 0.0, 0.9], [0.1, 0.0, -0.1, 0.9], [-1.0, 1.0, 0.0, 0.9]],
        np.float32,
    )
    assert q[:, :3].mean(axis=0).argmax() == 1
    assert vote(q, legal, rng) == 0  # never the illegal action 3, loved by all
    # a 2-2 tie is settled by the mean Q of the tied moves
    tie = np.array(
        [[0.5, 0.0, 0.0, 0.0], [0.4, 0.0, 0.0, 0.0], [0.0, 0.9, 0.0, 0.0], [0.0, 0.8, 0.0, 0.0]],
        np.float32,
    )
    assert vote(tie, np.ones(4, bool), rng) == 1
    # the player asks the model and votes
    learner, model = fresh(load_game(GAME))
    from gamegym.search.tree import SearchParams

    service = LocalService(learner.make_evaluator(model, 0))
    player = learner.player(load_game(GAME), service, SearchParams())
    assert isinstance(player, VotePlayer)
    graph = load_game(GAME)
    vertex = graph.child_by_action(graph.roots[0], 4)
    assert player.choose(graph, vertex, rng) in graph.actions_at(vertex)


def test_the_mean_q_search_player(graph):
    learner, model = fresh(graph)
    config = GymConfig.from_dict(
        {"game": GAME, "train": {"learner": "bootstrapped"}, "bootstrapped": {"q_search": True}}
    )
    from gamegym.search.tree import SearchParams

    service = LocalService(learner.make_evaluator(model, 0))
    player = learner.player(graph, service, SearchParams(searchcount=16, threads=4), config)
    assert not isinstance(player, VotePlayer)
    vertex = graph.roots[0]
    for action in (0, 3, 1, 4):
        vertex = graph.child_by_action(vertex, action)
    assert player.choose(graph, vertex, np.random.default_rng(0)) == 2  # the search sees the win


def selfplay_config(selfplay=None, **own):
    """A bootstrapped config of the TINY network: `own` its section's fields."""
    own = {"heads": 4, "concurrent_games": 6, "positions_per_iteration": 0, **own}
    return GymConfig.from_dict(
        {
            "game": GAME,
            "network": NETWORK,
            "bootstrapped": own,
            "selfplay": {"temperature_drop_move": 0, **(selfplay or {})},
            "train": {"learner": "bootstrapped", "min_samplecount": 20, "min_new_samples": 30},
        }
    )


def play_games(graph, model, config, seed, count):
    learner = get_learner("bootstrapped")
    driver = learner.selfplayer(
        graph, LocalService(learner.make_evaluator(model, 0)), config, np.random.default_rng(seed)
    )
    games = []
    for finished in driver.play(lambda: len(games) >= count):
        games.append(finished[0])
    return driver, games


def test_selfplay_masks_are_seeded_stored_and_read_back(graph, tmp_path):
    _, model = fresh(graph)
    config = selfplay_config()
    driver, games = play_games(graph, model, config, seed=5, count=12)
    _, again = play_games(graph, model, config, seed=5, count=12)
    masks = np.concatenate([np.stack(g.extra["mask"]) for g in games])
    assert masks.shape[1] == 4 and masks.dtype == bool
    assert np.array_equal(masks, np.concatenate([np.stack(g.extra["mask"]) for g in again]))
    assert 0.3 < masks.mean() < 0.7  # Bernoulli(0.5)
    assert driver.searches_done >= sum(len(g) for g in games)
    for record in games:
        assert sum(record.extra["terminal"]) == (0 if record.truncated else 1)
        assert record.extra["terminal"][-1] == (not record.truncated)
        heads = set(int(h) for h in record.extra["head"])
        assert len(heads) == 1  # one head acts for the whole game
    batch = stored(tmp_path, games)
    assert np.array_equal(batch.extra["mask"].astype(bool), masks)
    # the columns are as the learner declares them: the Trainer reads the file with them
    declared = SampleShape.of(graph, get_learner("bootstrapped").sample_columns(config))
    assert dict(declared.columns)["mask"].shape == (4,)
    checked = read_sample_file(tmp_path / "samples" / "0" / "g.npz", declared)
    assert sorted(k for k in checked if k in dict(declared.columns)) == ["head", "mask", "terminal"]
    # greedy on its head: each move is the head's best legal move (epsilon 0 with 4 heads)
    assert epsilon_for(None, 4) == 0.0 and epsilon_for(None, 1) > 0
    online, _ = parts(model)
    q = online(batch.x).numpy()[np.arange(len(batch)), batch.extra["head"]]
    assert np.array_equal(np.where(batch.legal, q, -np.inf).argmax(axis=1), batch.action)
    # in the opening (the first temperature_drop_move plies) it samples softmax(Q / T) instead
    _, opened = play_games(
        graph, model, selfplay_config({"temperature_drop_move": 2}), seed=3, count=12
    )
    batch = stored(tmp_path, opened, "opened.npz")
    q = online(batch.x).numpy()[np.arange(len(batch)), batch.extra["head"]]
    greedy = np.where(batch.legal, q, -np.inf).argmax(axis=1) == batch.action
    assert greedy[batch.step >= 2].all() and not greedy[batch.step < 2].all()
    # cut games are truncated, not lost
    _, short = play_games(graph, model, selfplay_config({"max_moves": 3}), seed=1, count=6)
    assert all(g.truncated and len(g) == 3 and not any(g.extra["terminal"]) for g in short)


class ChangingService:
    """A model service whose model iteration goes up after `every` requests."""

    def __init__(self, evaluator, every):
        self.evaluator, self.every, self.requests = evaluator, every, 0

    def submit(self, kind, inputs, iteration=-1):
        self.requests += 1
        outputs = self.evaluator.run(kind, inputs)
        result = (outputs, self.requests // self.every)
        return lambda: result


def test_selfplay_waits_for_a_new_model_after_positions_per_iteration(graph, monkeypatch):
    learner, model = fresh(graph)
    config = selfplay_config({"selfplayprocesses": 1}, positions_per_iteration=30)
    monkeypatch.setattr(ModelWait, "PROBE_SECONDS", 0.0)
    driver = learner.selfplayer(
        graph,
        ChangingService(learner.make_evaluator(model, 0), 40),
        config,
        np.random.default_rng(0),
    )
    seen, idle = [], 0
    for finished in driver.play(lambda: len(seen) >= 40):
        if finished is None:
            idle += 1
            # while it waits, all it finished with the newest iteration holds >= 30 positions
            assert driver.pause.played >= 30
            continue
        seen.append(finished)
    assert idle > 0
    per_iteration = {}
    for record, iteration in seen:
        per_iteration[iteration] = per_iteration.get(iteration, 0) + len(record)
    assert len(per_iteration) >= 2
    # no iteration got much more than 30 positions (plus the games in flight when it paused)
    assert max(per_iteration.values()) <= 30 + 2 * 9 * 6


def test_by_default_selfplayers_play_their_share_of_what_the_trainer_waits_for():
    config = GymConfig(
        game=GAME,
        train={
            "learner": "bootstrapped",
            "min_samplecount": 900,
            "min_new_samples": 500,
            "validation_split": 0.1,
        },
        selfplay={"selfplayprocesses": 3},
    )
    assert positions_per_iteration(config) == 334  # ceil(1000 / 3)
    assert (
        positions_per_iteration(config.updated({"bootstrapped": {"positions_per_iteration": 0}}))
        == 0
    )


class RecordingSampler:
    def __init__(self, n, rng):
        self.n, self.rng, self.updates = n, rng, []

    def draw(self, size):
        return self.rng.integers(0, self.n, size)

    def update(self, index, losses):
        self.updates.append((np.array(index), np.array(losses)))


def test_the_sampler_draws_every_minibatch_and_hears_each_samples_loss(graph, tmp_path):
    records = [
        game(graph, BLUNDER),
        game(graph, [4, 0, 8, 2]),
        game(graph, [4, 0, 8, 2, 1, 7, 6, 3, 5]),
    ]
    batch = stored(tmp_path, records)
    learner, model = fresh(graph)
    sampler = RecordingSampler(len(batch), np.random.default_rng(1))
    report = learner.train_iteration(
        model,
        batch,
        {**CONFIG, "num_updates_per_train_iter": 6},
        np.random.default_rng(0),
        graph=graph,
        sampler=sampler,
    )
    assert len(sampler.updates) == 6
    ids, _, _ = transitions(batch)
    no_transition = np.setdiff1d(np.arange(len(batch)), ids)
    assert len(no_transition) == 1  # the truncated game's last position
    for index, losses in sampler.updates:
        assert index.shape == losses.shape == (8,)
        assert (losses[np.isin(index, no_transition)] == 0).all()
        assert (losses[~np.isin(index, no_transition)] > 0).all()
    assert report.per_sample_loss.shape == (len(batch),)
    assert np.isfinite(report.per_sample_loss).all()
    now = learner.per_sample_loss(model, batch)  # after training; the report's: when trained
    assert (now[no_transition] == 0).all() and (now[ids] > 0).all()
    never = np.setdiff1d(ids, np.concatenate([index for index, _ in sampler.updates]))
    assert np.allclose(now[never], report.per_sample_loss[never], atol=1e-5)


def test_the_predictor_answers_q_requests_like_the_online_network(graph, tmp_path):
    from gamegym.runtime.predictor import Predictor

    learner, model = fresh(graph)
    session = Session(tmp_path / "s")
    config = selfplay_config()
    session.create(config)
    session.publish_model(model, 0)
    mine, theirs = multiprocessing.Pipe()
    predictor = Predictor(session, config, [theirs], None)
    predictor.load(0)
    x = np.stack([graph.numpify(v) for v in graph.children_at(graph.roots[0])])
    predictor._evaluate(
        [(theirs, EvalRequest(1, "q", {"x": x[:5]})), (theirs, EvalRequest(2, "q", {"x": x[5:]}))]
    )
    answers = []  # (the Reloads announce the portable form; a thread sends them)
    while len(answers) < 2 and mine.poll(30):
        message = mine.recv()
        if isinstance(message, EvalResponse):
            answers.append(message)
    assert [a.request_id for a in answers] == [1, 2]
    got = np.concatenate([a.outputs["q"] for a in answers])
    assert got.shape == (9, 4, 9)
    assert np.allclose(got, parts(model)[0](x).numpy(), atol=1e-5)


def test_prior_functions_are_fixed_and_the_model_fits_the_game(graph):
    from gamegym.runtime.gym import check_model_fits

    learner, model = fresh(graph, {**TINY, "prior_scale": 3.0})
    check_model_fits(model, graph)
    online, _ = parts(model)
    prior = online.get_layer("prior")
    assert not prior.trainable_variables and prior.weights
    assert all(id(v) not in {id(w) for w in prior.weights} for v in online.trainable_variables)


@pytest.mark.parametrize(
    "data,message",
    [
        ({"heads": 0}, "'bootstrapped.heads' must be in [1, 256]"),
        ({"prior_scale": -1}, "'bootstrapped.prior_scale' must be in [0.0, 100.0]"),
        ({"mask_probability": 0}, "'bootstrapped.mask_probability' must be in (0.0, 1.0]"),
        ({"target_update_period": 0}, "'bootstrapped.target_update_period' must be in [1,"),
        ({"double_q": 1}, "'bootstrapped.double_q' must be true or false"),
        ({"discount": 1.5}, "'bootstrapped.discount' must be in (0.0, 1.0]"),
        ({"epsilon": 2}, "'bootstrapped.epsilon' must be in [0.0, 1.0]"),
        ({"concurrent_games": 0}, "'bootstrapped.concurrent_games' must be in [1,"),
        ({"q_search": "no"}, "'bootstrapped.q_search' must be true or false"),
        (
            {"positions_per_iteration": 100},
            "'bootstrapped.positions_per_iteration' (100) times selfplay.selfplayprocesses (2) must "
            "be at least train.min_new_samples (500)",
        ),
    ],
)
def test_bad_values_name_the_field(data, message):
    with pytest.raises(ConfigError) as error:
        GymConfig.from_dict(
            {
                "game": GAME,
                "selfplay": {"selfplayprocesses": 2},
                "train": {"learner": "bootstrapped", "min_new_samples": 500},
                "bootstrapped": data,
            }
        )
    assert message in str(error.value)


def test_a_field_in_its_former_section_names_its_section_now():
    with pytest.raises(
        ConfigError,
        match="'network.heads'; it is a field of the learner's own section: 'bootstrapped.heads'",
    ):
        GymConfig.from_dict(
            {"game": GAME, "train": {"learner": "bootstrapped"}, "network": {"heads": 3}}
        )
    with pytest.raises(
        ConfigError,
        match="section 'bootstrapped' is for train.learner "
        "'bootstrapped', but train.learner is 'alphazero'",
    ):
        GymConfig.from_dict({"game": GAME, "bootstrapped": {"heads": 3}})


def test_a_stored_config_of_the_former_layout_reads_into_the_learner_section():
    """A session's config.json written before learner sections held every learner's fields in
    the shared sections: the session's learner's go to its section, the others are dropped."""
    old = GymConfig(game=GAME).to_dict()
    old["network"].update({"hidden_size": 0, "heads": 3, "prior_scale": 0.5})
    old["selfplay"].update(
        {
            "epsilon": None,
            "head_per_side": True,
            "concurrent_games": 8,
            "positions_per_iteration": None,
        }
    )
    old["train"].update(
        {
            "learner": "bootstrapped",
            "num_unroll_steps": 5,
            "reward_loss_weight": 1.0,
            "mask_probability": 0.7,
            "target_update_period": 50,
            "double_q": False,
            "discount": 0.9,
        }
    )
    old["evaluate"]["q_search"] = True
    config = GymConfig.from_dict(old, stored=1)
    assert (
        config.learner_config.heads,
        config.learner_config.prior_scale,
        config.learner_config.head_per_side,
        config.learner_config.concurrent_games,
        config.learner_config.mask_probability,
        config.learner_config.target_update_period,
        config.learner_config.double_q,
        config.learner_config.discount,
        config.learner_config.q_search,
    ) == (3, 0.5, True, 8, 0.7, 50, False, 0.9, True)
    assert "num_unroll_steps" not in config.to_dict()["train"]
    assert GymConfig.from_dict(config.to_dict()) == config  # today's layout
    old["train"]["learner"] = "alphazero"  # every field dropped
    assert GymConfig.from_dict(old, stored=1) == GymConfig(game=GAME)


def test_heads_and_prior_are_fixed_on_resume():
    stored_config = GymConfig(game=GAME, train={"learner": "bootstrapped"})
    stored_config.check_resume(stored_config.updated({"bootstrapped": {"target_update_period": 9}}))
    for field, value in (("heads", 3), ("prior_scale", 1.0)):
        with pytest.raises(ConfigError, match=f"'bootstrapped.{field}' cannot change on resume"):
            stored_config.updated({"bootstrapped": {field: value}}).check_resume(stored_config)


def test_one_head_per_side(graph):
    _, model = fresh(graph)
    _, games = play_games(graph, model, selfplay_config(head_per_side=True), seed=2, count=12)
    pairs = set()
    for record in games:
        heads = [int(h) for h in record.extra["head"]]
        assert len(set(heads[0::2])) == 1 and len(set(heads[1::2])) <= 1
        pairs.add((heads[0], heads[1]))
    assert any(first != second for first, second in pairs)


def test_side_by_side_runs_share_one_plot(tmp_path, monkeypatch):
    from gamegym.bench import learning as learnbench

    def point(minutes, score):
        return {
            "minutes": minutes,
            "iteration": int(minutes),
            "score": score,
            "wins": 0,
            "draws": 1,
            "losses": 0,
            "by_opponent": {"random": {"score": score}, "alphabeta:2": {"score": score / 2}},
        }

    def fake_run(settings, solver=None):
        learner = settings.learner
        assert settings.plot is None and settings.keep == tmp_path / "kept" / learner
        assert settings.minutes == 3
        assert settings.game_ref.build().action_space_size == 7  # built once for both runs
        return {
            "learner": learner,
            "game": "games.connectfour:ConnectFour",
            "game_args": {},
            "opponents": ["random", "alphabeta:2"],
            "eval_player": "vote",
            "eval_searchcount": 0,
            "curve": [point(0, 0.5), point(3, 0.9)],
            "final": {**point(3, 0.95), "minutes": 3},
        }

    monkeypatch.setattr(learnbench, "run_learning_bench", fake_run)
    plot = tmp_path / "both.png"
    settings = learnbench.LearningSettings(
        "games.connectfour:ConnectFour", minutes=3, plot=plot, keep=tmp_path / "kept"
    )
    figures = learnbench.run_learning_benches(settings, ["bootstrapped", "dqn"])
    assert [run["learner"] for run in figures["runs"]] == ["bootstrapped", "dqn"]
    assert figures["plot"] == str(plot) and plot.stat().st_size > 1000
