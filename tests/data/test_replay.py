"""The replay buffer: SumTree against brute force, the priority rule, eviction, and state files
that survive a crash or damage (no TensorFlow: a stand-in learner and model)."""

import json
import logging
from types import SimpleNamespace

import numpy as np
import pytest

from gamegym.config import ConfigError, GymConfig, TrainConfig
from gamegym.data.prioritized import BufferReplay, Priorities
from gamegym.data.replay import WindowReplay, growing_window, make_replay
from gamegym.data.replaybuffer import ReplayBuffer
from gamegym.data.samples import GameRecord, write_sample_file
from gamegym.data.session import Session
from gamegym.data.sumtree import SumTree
from gamegym.runtime.trainer import Trainer

# the chi-square distribution's 0.999 quantile for 18 degrees of freedom: a correct sampler
# fails the test once in 1000 seeds (this one's seed is fixed)
CHI2_18_999 = 42.31


# ----- SumTree --------------------------------------------------------------------------------
@pytest.mark.parametrize("capacity", [1, 2, 7, 64, 1000])
def test_sumtree_sums_match_brute_force_after_random_updates(capacity):
    rng = np.random.default_rng(capacity)
    tree, p = SumTree(capacity), np.zeros(capacity)
    for _ in range(50):
        index = rng.integers(0, capacity, rng.integers(1, 20))
        value = rng.random(len(index)) * 10.0 ** rng.integers(-3, 6)
        tree.update(index, value)
        _, last = np.unique(index[::-1], return_index=True)  # the last value of a repeat
        p[index[::-1][last]] = value[::-1][last]
        assert np.isclose(tree.total, p.sum(), rtol=1e-12)
        assert np.array_equal(tree.priorities(), p)
    # every inner node is the sum of its children
    inner = np.arange(1, tree.leaves)
    assert np.allclose(tree.tree[inner], tree.tree[2 * inner] + tree.tree[2 * inner + 1])
    fresh = SumTree(capacity)
    fresh.fill(p)
    assert np.allclose(fresh.tree, tree.tree)


@pytest.mark.parametrize("capacity", [5, 1024, 5000, 70_000])
def test_sumtree_find_agrees_with_a_search_of_the_cumulative_sums(capacity):
    rng = np.random.default_rng(capacity)
    p = rng.random(capacity) * (rng.random(capacity) > 0.3)  # a third of them empty
    tree = SumTree(capacity)
    tree.fill(np.zeros(capacity))
    for part in np.array_split(rng.permutation(capacity), 7):  # built by updates
        tree.update(part, p[part])
    mass = rng.random(20_000) * p.sum()
    assert np.array_equal(tree.find(mass), np.searchsorted(np.cumsum(p), mass, side="right"))


def test_sumtree_samples_in_proportion_to_priority():
    rng = np.random.default_rng(0)
    p = rng.random(20) * 5 + 0.1
    p[3] = 0.0  # never drawn
    tree = SumTree(20)
    tree.update(np.arange(20), p)
    draws = tree.sample(200_000, rng)
    counts = np.bincount(draws, minlength=20)
    assert counts[3] == 0
    expected = p / p.sum() * len(draws)
    keep = expected > 0
    chi2 = ((counts[keep] - expected[keep]) ** 2 / expected[keep]).sum()
    assert chi2 < CHI2_18_999  # 19 items with a priority: 18 degrees of freedom


def test_sumtree_find_is_exact_at_the_boundaries_and_never_lands_on_empty_items():
    tree = SumTree(5)
    tree.update([0, 1, 2, 3, 4], [1.0, 0.0, 2.0, 0.0, 1.0])
    assert tree.find([0.0, 0.999, 1.0, 2.999, 3.0, 3.9999]).tolist() == [0, 0, 2, 2, 4, 4]
    with pytest.raises(ValueError):
        tree.update([0], [-1.0])
    with pytest.raises(IndexError):
        tree.update([5], [1.0])
    with pytest.raises(ValueError, match="every priority is 0"):
        SumTree(3).sample(1, np.random.default_rng(0))


# ----- sample files and a session -------------------------------------------------------------
def record(length: int, seed: int) -> GameRecord:
    rng = np.random.default_rng(seed)
    game = GameRecord(result=1.0)
    for step in range(length):
        game.x.append(rng.random((3, 3, 2)).astype(np.float32))
        game.pi.append(np.full(9, 1 / 9, np.float32))
        game.action.append(step)
        game.root_value.append(0.0)
        game.legal.append(np.ones(9, bool))
    return game


def write_files(session: Session, iteration: int, sizes: list[int], tag: str = "f") -> list:
    paths = []
    for i, size in enumerate(sizes):
        path = session.samples_dir / str(iteration) / f"{tag}{iteration}-{i:03d}.npz"
        write_sample_file(path, [record(size, seed=iteration * 100 + i)])
        paths.append(path)
    return paths


def buffer_config(**train) -> GymConfig:
    settings = {
        "replay": "curious",
        "num_updates_per_train_iter": 4,
        "batchsize": 8,
        "min_samplecount": 10,
        "min_new_samples": 10,
        "replay_capacity": 100,
        "validation_split": 0.0,
        **train,
    }
    return GymConfig(game="games.tictactoe:TicTacToe", train=settings)


@pytest.fixture
def session(tmp_path):
    session = Session(tmp_path / "s")
    session.create(buffer_config())
    return session


def train_steps(replay, iteration: int, steps: int, seed: int = 0) -> None:
    """What a learner does with the sampler: draw, train, report each drawn sample's loss."""
    batch, _ = replay.load(iteration)
    sampler = replay.sampler(batch, np.random.default_rng(seed))
    for _ in range(steps):
        index = sampler.draw(8)
        sampler.update(index, batch.z[index] * 0 + 0.5)


# ----- the window ------------------------------------------------------------------------------
def test_the_growing_window_is_katagos():
    """All samples up to the base, then KataGo's shaped growth (alpha 0.75, beta 0.4): at 16
    times the base the window is base * (1 + 0.4 * (16 ** 0.75 - 1) / 0.75) = 4.73 bases."""
    assert [growing_window(n, 20_000) for n in (0, 500, 20_000)] == [0, 500, 20_000]
    assert growing_window(16 * 250_000, 250_000) == int(250_000 * (1 + 0.4 * 7 / 0.75))
    sizes = [growing_window(n, 20_000) for n in range(20_000, 2_000_000, 20_000)]
    assert all(a < b for a, b in zip(sizes, sizes[1:], strict=False))  # it always grows...
    steps = np.diff(sizes)
    assert all(a >= b for a, b in zip(steps, steps[1:], strict=False))  # ...ever more slowly
    assert steps[0] < 20_000  # by less than the samples added


def window_config(**train) -> GymConfig:
    settings = {"min_samplecount": 5, "min_new_samples": 1, "validation_split": 0.0, **train}
    return GymConfig(game="games.tictactoe:TicTacToe", train=settings)


def test_the_growing_window_takes_the_newest_samples_of_any_age(tmp_path):
    """With six iterations of 10 samples held, the fixed window takes the last max_sampleage
    iterations; the growing one (base 20) the newest growing_window(60, 20) = 33 samples, from
    iterations older than that, at most max_samplecount."""
    session = Session(tmp_path / "s")
    session.create(window_config())
    for iteration in range(6):
        write_files(session, iteration, [10])
    fixed = make_replay(session, window_config(max_sampleage=1))
    assert isinstance(fixed, WindowReplay)
    batch, facts = fixed.load(5)
    assert len(batch) == 20 and facts["window"] == [4, 5] and facts["window_size"] == 20_000
    growing = make_replay(
        session, window_config(max_sampleage=1, window_shape="growing", window_base=20)
    )
    assert growing_window(60, 20) == 33
    batch, facts = growing.load(5)
    assert len(batch) == 33 and facts["window_size"] == 33
    assert sorted(facts["sources"]) == [f"{it}/f{it}-000.npz" for it in (2, 3, 4, 5)]
    assert facts["sources"]["2/f2-000.npz"] == 3  # the oldest file, cut at the window's size
    assert growing.ready(5) == (True, "60 samples in the window")
    capped = window_config(window_shape="growing", window_base=20, max_samplecount=25)
    assert len(make_replay(session, capped).load(5)[0]) == 25


def test_a_window_shape_that_does_not_exist_or_has_no_window_is_refused():
    with pytest.raises(ConfigError, match="train.window_shape"):
        window_config(window_shape="katago")
    with pytest.raises(ConfigError, match="train.window_base"):
        window_config(window_base=0)
    with pytest.raises(ConfigError, match="'train.window_shape' \\('growing'\\) sizes the window"):
        buffer_config(window_shape="growing")  # a buffer has no window to grow


def test_a_replay_of_ones_own_is_refused_a_window_shape_it_does_not_take():
    """What every replay checks comes before its own `check_config`: a plugin's replay that
    says nothing of windows is refused train.window_shape "growing" all the same."""

    class Newest(WindowReplay):
        name = "newest"
        shaped_window = False

        @classmethod
        def check_config(cls, train_config):
            return None if train_config.batchsize <= 64 else "'train.batchsize' is over 64"

    assert Newest.config_problem(TrainConfig()) is None
    assert "train.replay 'newest' has no window it sizes" in Newest.config_problem(
        TrainConfig(window_shape="growing")
    )
    assert Newest.config_problem(TrainConfig(batchsize=128)) == "'train.batchsize' is over 64"
    assert WindowReplay.config_problem(TrainConfig(window_shape="growing")) is None


# ----- the priority rule ----------------------------------------------------------------------
def test_priority_formula_on_known_numbers():
    curious = Priorities.of(TrainConfig(replay="curious", num_updates_per_train_iter=1))
    assert (curious.c, curious.beta, curious.alpha, curious.epsilon, curious.new) == (
        1e4,
        0.7,
        0.7,
        0.01,
        1e5,
    )  # the paper's values are the defaults
    # v = 1, L = 0.5: 1e4 * 0.7 + 0.51^0.7;  v = 3, L = -2: 1e4 * 0.343 + 2.01^0.7
    assert np.allclose(
        curious([1, 3], [0.5, -2.0]), [7000 + 0.51**0.7, 3430 + 2.01**0.7], rtol=1e-12
    )
    assert np.isclose(curious([1], [0.5])[0], 7000.6242, atol=1e-4)
    prioritized = Priorities.of(TrainConfig(replay="prioritized", num_updates_per_train_iter=1))
    assert np.allclose(prioritized([1, 5], [0.5, 0.0]), [0.51**0.7, 0.01**0.7])
    assert curious([2], [np.nan])[0] == 1e5  # a diverged loss: look at it again soon


def test_new_samples_enter_at_priority_max_and_only_drawn_ones_are_updated(session):
    write_files(session, 0, [6, 6, 6])
    replay = make_replay(session, buffer_config())
    assert isinstance(replay, BufferReplay)
    assert replay.ready(0)[0]
    batch, facts = replay.load(0)
    assert len(batch) == 18 and sorted(facts["sources"].values()) == [6, 6, 6]
    buffer = replay.buffer
    assert (buffer.priorities() == 1e5).all() and (buffer.count[:18] == 0).all()

    sampler = replay.sampler(batch, np.random.default_rng(0))
    drawn = sampler.draw(5)
    before = buffer.priorities()
    sampler.update(drawn, np.full(len(drawn), 0.5))
    untouched = np.setdiff1d(np.arange(18), drawn)
    assert (buffer.priorities()[untouched] == before[untouched]).all()
    assert (buffer.count[untouched] == 0).all()
    times = np.bincount(drawn, minlength=18)
    assert (buffer.count[:18] == times).all()  # a sample drawn twice counts twice
    expected = 1e4 * 0.7 ** times[drawn] + 0.51**0.7
    assert np.allclose(buffer.priorities()[drawn], expected)
    assert sampler.figures()["new_share"] == 1.0  # all were new when drawn

    # a learner may report more samples than it drew (every step of a sequence)
    sampler.update(np.arange(18), np.zeros(18))
    assert (buffer.count[:18] == times + 1).all()
    with pytest.raises(IndexError):
        sampler.update([18], [0.0])


def test_uniform_draws_ignore_priority_but_keep_counts(session):
    write_files(session, 0, [10, 10])
    replay = make_replay(session, buffer_config(replay="uniform"))
    batch, _ = replay.load(0)
    replay.buffer.tree.update(np.arange(10), 1e-9)  # the first file almost never drawn...
    sampler = replay.sampler(batch, np.random.default_rng(1))
    draws = np.concatenate([sampler.draw(8) for _ in range(500)])
    assert 0.4 < np.mean(draws < 10) < 0.6  # ...by priority, but uniform ignores it
    sampler.update(draws[:8], np.ones(8))
    assert replay.buffer.count[:20].sum() == 8


def test_curious_draws_new_samples_first(session):
    write_files(session, 0, [20])
    replay = make_replay(session, buffer_config())
    train_steps(replay, 0, steps=30)  # the first file: replayed many times
    write_files(session, 1, [20])
    batch, _ = replay.load(1)
    sampler = replay.sampler(batch, np.random.default_rng(2))
    index = sampler.draw(8)
    assert (batch.iteration[index] == 1).all()  # p_max against c * beta^v + ...
    assert replay.figures()["new_share"] == 1.0


# ----- capacity -------------------------------------------------------------------------------
def test_capacity_evicts_the_oldest_first_and_keeps_the_newest_rows(tmp_path):
    session = Session(tmp_path / "cap")
    session.create(buffer_config(replay_capacity=25))
    replay = make_replay(session, buffer_config(replay_capacity=25))
    write_files(session, 0, [10, 10])
    replay.load(0)
    assert len(replay.buffer) == 20
    write_files(session, 1, [8, 9])  # 37 rows for 25 slots
    batch, facts = replay.load(1)
    assert len(batch) == 25 and list(facts["sources"].values()) == [8, 9]
    buffer = replay.buffer
    segments = [(s.key, s.row_from, s.row_to) for s in buffer.segments]
    # oldest out first: the first file entirely, the second's first 2 rows
    assert segments == [("0/f0-001.npz", 2, 10), ("1/f1-000.npz", 0, 8), ("1/f1-001.npz", 0, 9)]
    assert buffer.evicted == {"0/f0-000.npz"}
    assert sorted(np.bincount(batch.iteration, minlength=2).tolist()) == [8, 17]
    assert len(set(batch.game.tolist())) == 3  # game ids unique in the buffer
    # the rows in the buffer are the file's own: step numbers 2..9 of file 0/001
    order = buffer.ring_order()
    assert batch.step[order][:8].tolist() == list(range(2, 10))
    assert replay.buffer.new_files() == []  # nothing is read twice


def test_a_file_larger_than_the_buffer_keeps_its_newest_rows(tmp_path):
    buffer = ReplayBuffer(tmp_path, capacity=5)
    path = write_files(Session(tmp_path / "x"), 0, [12])[0]
    from gamegym.data.samples import read_sample_file

    buffer.add(0, path, read_sample_file(path))
    assert len(buffer) == 5 and sorted(buffer.batch().step.tolist()) == [7, 8, 9, 10, 11]


# ----- state files: resume, crash, damage -----------------------------------------------------
def snapshot(replay) -> dict:
    """Count and priority per (file, row), whatever the ring slots."""
    buffer = replay.buffer
    order = buffer.ring_order()
    keys = [(s.key, r) for s in buffer.segments for r in range(s.row_from, s.row_to)]
    return dict(
        zip(keys, zip(buffer.count[order].tolist(), buffer.tree.priorities(order).tolist()))
    )


def test_resume_continues_with_the_same_counts_and_priorities(session):
    write_files(session, 0, [12, 12])
    replay = make_replay(session, buffer_config())
    train_steps(replay, 0, steps=6)
    replay.commit(1)
    saved = snapshot(replay)
    assert (session.path / "replay" / "1.npz").is_file()
    again = make_replay(session, buffer_config())
    write_files(session, 1, [5])  # written after the commit: new
    again.load(1)
    restored = snapshot(again)
    assert {k: v for k, v in restored.items() if k in saved} == saved
    assert {v for k, v in restored.items() if k not in saved} == {(0, 1e5)}


class StandInModel:
    """Saves like a Keras model; `fail` makes the save die (a kill between two writes)."""

    def __init__(self):
        self.fail = False

    def save(self, path):
        if self.fail:
            raise KeyboardInterrupt("killed while publishing the model")
        with open(path, "wb") as handle:
            handle.write(b"model")


class StandInLearner:
    """Draws and reports like a learner, with loss 0.25 for every sample."""

    def train_iteration(self, model, batch, cfg, rng, graph=None, sampler=None):
        for _ in range(cfg.num_updates_per_train_iter):
            index = sampler.draw(cfg.batchsize)
            sampler.update(index, np.full(len(index), 0.25))
        return SimpleNamespace(history={"loss": [0.25]})


def test_the_trainer_trains_each_iteration_at_the_scheduled_learning_rate(session):
    """`train.learning_rate_schedule`: the rate the learner is given, and the one the report
    (and TensorBoard) records, steps at the iterations named, resumed sessions included."""
    config = buffer_config(learning_rate=1e-3, learning_rate_schedule=[[2, 5e-4], [3, 1e-4]])
    rates = []

    class Recording(StandInLearner):
        def train_iteration(self, model, batch, cfg, rng, graph=None, sampler=None):
            rates.append(cfg.learning_rate)
            return super().train_iteration(model, batch, cfg, rng, graph, sampler)

    model = StandInModel()
    session.publish_model(model, 0)
    trainer = Trainer(
        session, config, graph=None, learner=Recording(), model=model, rng=np.random.default_rng(0)
    )
    for iteration in range(3):
        write_files(session, iteration, [15])
        assert trainer.train_once() == iteration + 1
    assert rates == [1e-3, 5e-4, 1e-4]
    reports = [json.loads((session.train_dir / f"{i}.json").read_text()) for i in (1, 2, 3)]
    assert [r["learning_rate"] for r in reports] == rates


def test_a_crash_between_the_two_writes_loses_only_the_iteration_in_flight(session):
    config = buffer_config()
    model = StandInModel()
    trainer = Trainer(
        session,
        config,
        graph=None,
        learner=StandInLearner(),
        model=model,
        rng=np.random.default_rng(0),
    )
    session.publish_model(model, 0)
    write_files(session, 0, [15, 15])
    assert trainer.ready()[0]
    assert trainer.train_once() == 1
    after_one = snapshot(trainer.replay)
    report = json.loads((session.train_dir / "1.json").read_text())
    assert report["replay"] == "curious" and report["timing"]["sampler"] > 0
    assert 0 < report["replay_figures"]["sampler_share"] < 1
    assert report["replay_figures"]["mean_replays"] > 0

    write_files(session, 1, [15])
    model.fail = True  # the replay state of iteration 2 is written, its model not
    with pytest.raises(KeyboardInterrupt):
        trainer.train_once()
    assert (session.replay_dir / "2.npz").is_file() and session.current_iteration() == 1

    resumed = make_replay(session, config)  # the next run: at iteration 1 again
    resumed.load(1)
    assert not (session.replay_dir / "2.npz").exists()  # the orphan state is gone
    state = snapshot(resumed)
    assert {k: state[k] for k in after_one} == after_one  # iteration 1's priorities, exactly
    assert {v for k, v in state.items() if k not in after_one} == {(0, 1e5)}  # the file of
    # iteration 1 was in the lost iteration's state; here it is new experience again


def test_a_damaged_state_falls_back_to_the_previous_one_then_rebuilds(session, caplog):
    write_files(session, 0, [12])
    replay = make_replay(session, buffer_config())
    train_steps(replay, 0, steps=3)
    replay.commit(1)
    first = snapshot(replay)
    train_steps(replay, 1, steps=3, seed=1)
    replay.commit(2)
    assert sorted(p.name for p in session.replay_dir.iterdir()) == ["1.npz", "2.npz"]
    newest = session.replay_dir / "2.npz"
    newest.write_bytes(newest.read_bytes()[:100])  # torn

    with caplog.at_level(logging.WARNING, logger="gamegym.data.replay"):
        older = make_replay(session, buffer_config())
        older.load(2)
    assert snapshot(older) == first
    assert "damaged" in caplog.text and "used for iteration 2" in caplog.text
    assert any(p.name.endswith("2.npz") for p in session.quarantine_dir.iterdir())

    (session.replay_dir / "1.npz").write_bytes(b"not a state file")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="gamegym.data.replay"):
        rebuilt = make_replay(session, buffer_config())
        batch, _ = rebuilt.load(2)
    assert len(batch) == 12 and set(snapshot(rebuilt).values()) == {(0, 1e5)}
    assert "rebuilt from the sample files" in caplog.text


def test_a_flipped_bit_in_the_priorities_is_caught(session):
    from gamegym.data.replaybuffer import ReplayStateError, read_state

    write_files(session, 0, [50])
    replay = make_replay(session, buffer_config())
    replay.load(0)
    replay.buffer.tree.update(np.arange(50), 1.0)
    data = bytearray(replay.buffer.state({}))
    data[data.find(np.ones(4, np.float64).tobytes()) + 12] ^= 0x40  # inside the priorities
    with pytest.raises(ReplayStateError, match="CRC"):
        read_state(bytes(data))


def test_a_missing_state_is_rebuilt_with_a_warning(session, caplog):
    write_files(session, 0, [12])
    session.write_train_report(3, {"iteration": 3, "replay": "curious"})
    with caplog.at_level(logging.WARNING, logger="gamegym.data.replay"):
        replay = make_replay(session, buffer_config())
        assert len(replay.load(3)[0]) == 12
    assert "no usable replay state for iteration 3" in caplog.text


def test_the_state_matches_the_files_on_disk(session, caplog):
    kept, gone = write_files(session, 0, [10, 10])
    replay = make_replay(session, buffer_config())
    train_steps(replay, 0, steps=4)
    replay.commit(1)
    gone.unlink()  # removed by hand
    with caplog.at_level(logging.WARNING):
        again = make_replay(session, buffer_config())
        batch, _ = again.load(1)
    assert len(batch) == 10 and [s.key for s in again.buffer.segments] == ["0/" + kept.name]
    assert "missing or unreadable" in caplog.text
    assert again.buffer.new_files() == []


def test_buffer_replays_need_sampled_minibatches():
    with pytest.raises(ConfigError, match="num_updates_per_train_iter.*curious.*priorities"):
        GymConfig(game="a:B", train={"replay": "curious"})
    with pytest.raises(ConfigError, match="replay_capacity"):
        GymConfig(
            game="a:B",
            train={"replay": "uniform", "num_updates_per_train_iter": 5, "replay_capacity": 100},
        )
    with pytest.raises(ConfigError, match="curious_beta"):
        GymConfig(game="a:B", train={"curious_beta": 1.5})


# ----- the replay benchmark's figures ---------------------------------------------------------
def test_minutes_to_perfect_play_needs_a_confirmed_point():
    from gamegym.bench.replay_modes import minutes_to_perfect

    curve = [{"minutes": m, "losses": n} for m, n in [(0, 9), (1, 0), (2, 1), (3, 0), (4, 0)]]
    assert minutes_to_perfect(curve) == 3  # 1 min was a lucky point
    assert minutes_to_perfect(curve[:2]) == 1  # the last point needs no confirmation
    assert minutes_to_perfect(curve[:1]) is None


def test_summary_medians_count_runs_that_never_got_there_as_longest():
    from gamegym.bench.replay_modes import summarise

    runs = (
        [{"replay": "uniform", "minutes_to_perfect": t} for t in (2.0, 4.0, None)]
        + [{"replay": "curious", "minutes_to_perfect": t} for t in (1.0, 3.0, 2.0)]
        + [{"replay": "prioritized", "minutes_to_perfect": t} for t in (1.0, None, None)]
    )
    summary = summarise(runs, ["uniform", "curious", "prioritized"])
    assert summary["uniform"]["median"] == 4.0 and summary["uniform"]["reached"] == 2
    assert summary["curious"]["median"] == 2.0 and summary["curious"]["ratio_to_uniform"] == 0.5
    assert (
        summary["prioritized"]["median"] is None
        and "ratio_to_uniform" not in summary["prioritized"]
    )


@pytest.mark.parametrize("mode", ["window", "uniform", "prioritized", "curious"])
def test_every_preset_has_valid_replay_settings(mode):
    from gamegym.bench.replay_modes import replay_overrides
    from gamegym.presets import PRESETS

    for name, preset in PRESETS.items():
        config = GymConfig.from_dict(preset).updated(replay_overrides(name, mode))
        assert config.train.replay == mode
        assert (config.train.num_updates_per_train_iter > 0) == (mode != "window")


def test_the_bench_times_the_sum_tree():
    from gamegym.bench.replay_modes import sumtree_timing

    timing = sumtree_timing(items=1000, batch=16, repeats=3)
    assert (timing["items"], timing["batch"]) == (1000, 16)
    assert timing["draw_ms"] > 0 and timing["update_ms"] > 0


def test_the_replay_comparison_solves_the_game_once_for_all_its_runs(monkeypatch):
    from gamegym.bench import curve, replay_modes

    calls, solves = [], []
    real_solver = curve.Solver

    def counted_solver(graph):
        solves.append(graph)
        return real_solver(graph)

    def fake_run(settings, solver=None):
        calls.append({"settings": settings, "solver": solver})
        return {"curve": [], "final": {}}

    monkeypatch.setattr(curve, "Solver", counted_solver)
    monkeypatch.setattr(replay_modes, "run_learning_bench", fake_run)
    monkeypatch.setattr(replay_modes, "sumtree_timing", lambda: {})
    settings = replay_modes.ReplaySettings(
        "games.tictactoe:TicTacToe", modes=("window", "uniform"), seeds=(0, 1), minutes=1.0,
        interval=1.0, games=2, searchcount=2,
    )  # fmt: skip
    result = replay_modes.run_replay_comparison(settings)
    assert len(result["runs"]) == 4 and len(calls) == 4
    assert len(solves) == 1 and calls[0]["solver"] is not None
    assert all(call["solver"] is calls[0]["solver"] for call in calls)
