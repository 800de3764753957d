"""MuZero Reanalyze (`train.reanalyze`): stored tic-tac-toe positions searched again by a better
model move their targets to that model's search; the reanalysis files are whole or absent,
damaged ones are left out; the Selfplayers' pacing, file choice and share of the files; the
config's checks.  (Real processes, a kill included: test_reanalyse_e2e.py.)"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import dataclasses  # noqa: E402
import importlib.util  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from test_muzero import OracleModel  # noqa: E402  (a perfect MuZero model of tic-tac-toe)

from gamegym.config import ConfigError, GymConfig  # noqa: E402
from gamegym.data.reanalysis import (  # noqa: E402
    Reanalysis,
    apply_reanalysis,
    read_reanalysis,
    reanalysis_path,
    write_reanalysis,
)
from gamegym.data.samplefolder import load_samples  # noqa: E402
from gamegym.data.samples import (  # noqa: E402
    SampleShape,
    read_sample_file,
    write_sample_file,
)
from gamegym.learners import get_learner  # noqa: E402
from gamegym.nets.inference import LocalService  # noqa: E402
from gamegym.runtime.reanalyse import Reanalyser  # noqa: E402
from gamegym.search.latent import LatentSearch, NetworkLatentValuer  # noqa: E402
from gamegym.search.mcts import SearchParams  # noqa: E402
from games.tictactoe import TicTacToe  # noqa: E402

GAME = "games.tictactoe:TicTacToe"


class BlindModel:
    """A MuZero model that knows nothing: uniform policy, value and reward 0 everywhere."""

    kinds = ("initial", "recurrent")

    def __init__(self, iteration=0):
        self.iteration = iteration

    def run(self, kind, inputs):
        n = len(inputs["x"] if kind == "initial" else inputs["action"])
        return {
            "hidden": np.zeros((n, 10), np.float32),
            "reward": np.zeros(n, np.float32),
            "values": np.zeros(n, np.float32),
            "probs": np.full((n, 9), 1 / 9, np.float32),
        }


def config(core="python", **train):
    return GymConfig(
        game=GAME,
        train={"learner": "muzero", "reanalyze": 0.5, "value_td_steps": 2, **train},
        selfplay={
            "search": {"searchcount": 48, "threads": 2, "core": core},
            "gamelog_dump_threshold": 4,
        },
    )


def blind_games(count, seed=0):
    """Games the blind model played by self-play: their targets know nothing."""
    learner = get_learner("muzero")
    driver = learner.selfplayer(
        TicTacToe(), LocalService(BlindModel()), config(), np.random.default_rng(seed)
    )
    games = []
    for record, iteration in driver.play(lambda: len(games) >= count):
        assert iteration == 0
        games.append(record)
    return games


def oracle_targets(x, cfg):
    """The oracle's own search of each position (the real game's graph): (pi, root value)."""
    graph = TicTacToe()
    params = SearchParams.from_selfplay(cfg.selfplay, noise=False)
    pis, values = [], []
    for observation in x:
        search = LatentSearch(
            graph, NetworkLatentValuer(graph, LocalService(OracleModel(1))), params
        )
        root = search.run(search.new_root(graph.unnumpify(observation)), np.random.default_rng(0))
        pis.append(search.policy_target(root))
        values.append(root.mean_value())
    return np.array(pis), np.array(values)


@pytest.fixture
def stored(tmp_path):
    """A sample file of blind self-play in samples/0 of a session folder."""
    path = tmp_path / "samples" / "0" / "selfplayer0-1-0-abcd.npz"
    assert write_sample_file(path, blind_games(4)) > 0
    return path


CORES = ["python"] + (["compiled"] if importlib.util.find_spec("numba") else [])


@pytest.mark.parametrize("core", CORES)
def test_reanalysis_moves_the_targets_to_the_better_models_search(stored, core):
    """The stored targets of the blind model's games, reanalysed by a perfect model, become
    that model's own search of each position (policy and root value), and the Trainer's batch
    (with its n-step value targets) takes them."""
    cfg = config(core)
    before = read_sample_file(stored)
    oracle_pi, oracle_value = oracle_targets(before["x"], cfg)
    reanalyser = get_learner("muzero").reanalyser(TicTacToe(), LocalService(OracleModel(1)), cfg)
    result = reanalyser(before["x"], before["legal"], np.random.default_rng(0))
    assert result.iteration == 1
    assert np.allclose(result.pi, oracle_pi, atol=1e-6)
    assert np.allclose(result.root_value, oracle_value, atol=1e-5)
    # where a move wins at once the blind search saw nothing; the reanalysed targets see it
    wins = np.flatnonzero(oracle_value > 0.5)
    assert len(wins) and (np.abs(before["root_value"][wins]) < 0.5).all()
    graph, winning = TicTacToe(), np.zeros_like(before["legal"])
    for i in wins:
        vertex = graph.unnumpify(before["x"][i])
        for action, child in zip(graph.actions_at(vertex), graph.children_at(vertex)):
            winning[i, action] = not graph.children_at(child) and graph.score_at(child) < 0
    stored_mass = (before["pi"] * winning).sum(axis=1)[wins]
    new_mass = (result.pi * winning).sum(axis=1)[wins]
    assert (new_mass >= stored_mass).all() and new_mass.mean() > stored_mass.mean() + 0.2
    assert np.abs(before["pi"] - oracle_pi).sum(axis=1)[wins].mean() > 0.3

    write_reanalysis(stored, result)
    reanalysed = {}
    batch = load_samples(stored.parents[1], 0, 10_000, reanalysed=reanalysed)
    assert reanalysed == {f"0/{stored.name}": len(before["z"])}
    assert np.allclose(batch.pi, result.pi, atol=1e-6)  # one file: its rows in order
    assert np.allclose(batch.root_value, result.root_value)
    assert (batch.policy_weight == 1).all()
    # MuZero's value targets bootstrap two plies ahead from the reanalysed root values
    learner = get_learner("muzero")
    _, targets, _ = learner.make_targets(batch, train_config=cfg.train_options())
    z = targets["value"][:, 0]
    ahead = (batch.step[:, None] == batch.step[None, :] - 2) & (
        batch.game[:, None] == batch.game[None, :]
    )
    rows, later = np.nonzero(ahead)
    assert len(rows) and np.allclose(z[rows], result.root_value[later])


def test_a_stopped_reanalysis_writes_nothing_and_keeps_the_targets_before(stored):
    cfg = config()
    arrays = read_sample_file(stored)
    older = Reanalysis(arrays["pi"], np.full(len(arrays["z"]), 0.25, np.float32), 1)
    write_reanalysis(stored, older)
    reanalyser = Reanalyser(
        stored.parents[1],
        cfg,
        get_learner("muzero").reanalyser(TicTacToe(), LocalService(OracleModel(3)), cfg),
        np.random.default_rng(0),
    )
    asked = []

    def stop_after_three():
        asked.append(1)
        return len(asked) > 3

    assert reanalyser.reanalyse(stored, stop_after_three) is None
    kept = read_reanalysis(stored, len(arrays["z"]), 9)
    assert kept.iteration == 1 and np.allclose(kept.root_value, 0.25)
    assert sorted(p.name for p in reanalysis_path(stored).parent.iterdir()) == [stored.name]
    # and done whole, it replaces them
    assert reanalyser.reanalyse(stored, lambda: False) == len(arrays["z"])
    assert read_reanalysis(stored, len(arrays["z"]), 9).iteration == 3
    assert reanalyser.files == 1 and reanalyser.positions == len(arrays["z"])


@pytest.mark.parametrize(
    "damage,problem",
    [
        (lambda path: path.write_bytes(b"PK\x03\x04 torn"), "damaged reanalysis file"),
        (lambda path: _rewrite(path, pi=np.ones((2, 9), np.float32)), "does not fit"),
        (lambda path: _rewrite(path, root_value=None), "lacks"),
        (lambda path: _rewrite(path, format_version=np.int64(99)), "format version 99"),
    ],
)
def test_a_bad_reanalysis_file_is_quarantined_and_the_samples_keep_their_own_targets(
    stored, tmp_path, caplog, damage, problem
):
    arrays = read_sample_file(stored)
    write_reanalysis(stored, Reanalysis(arrays["pi"], arrays["root_value"], 2))
    damage(reanalysis_path(stored))
    quarantine = tmp_path / "quarantine"
    reanalysed = {}
    batch = load_samples(stored.parents[1], 0, 10_000, quarantine, reanalysed=reanalysed)
    assert reanalysed == {} and len(batch) == len(arrays["z"])
    assert np.array_equal(batch.pi, arrays["pi"])
    assert problem in caplog.text
    assert stored.exists() and not reanalysis_path(stored).exists()
    assert len(list(quarantine.iterdir())) == 1


def _rewrite(path, **changes):
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    for name, value in changes.items():
        if value is None:
            del arrays[name]
        else:
            arrays[name] = value
    np.savez(path.with_suffix(""), **arrays)  # np.savez adds the suffix back


def test_a_truncated_games_value_target_bootstraps_from_the_new_last_value():
    arrays = {
        "pi": np.zeros((5, 9), np.float32),
        "root_value": np.zeros(5, np.float32),
        "z": np.array([0.1, -0.1, 0.1, 1.0, -1.0], np.float32),
        "policy_weight": np.array([1, 0, 1, 1, 1], np.float32),
        "game": np.array([0, 0, 0, 1, 1], np.int32),
        "step": np.array([0, 1, 2, 0, 1], np.int32),
        "truncated": np.array([True, False]),
    }
    values = np.array([0.2, 0.3, -0.6, 0.9, 0.8], np.float32)
    apply_reanalysis(arrays, Reanalysis(np.full((5, 9), 1 / 9, np.float32), values, 4))
    assert np.allclose(arrays["z"], [-0.6, 0.6, -0.6, 1.0, -1.0])  # the decided game keeps z
    assert np.allclose(arrays["root_value"], values) and (arrays["policy_weight"] == 1).all()


def files_of(tmp_path, iterations, per_iteration=3):
    """Sample files of the same game, `per_iteration` of each iteration."""
    games = blind_games(1)
    paths = []
    for it in iterations:
        for k in range(per_iteration):
            path = tmp_path / "samples" / str(it) / f"selfplayer0-{it}-{k}.npz"
            write_sample_file(path, games)
            paths.append(path)
    return paths


def test_the_selfplayers_reanalyse_the_windows_files_at_the_share_set(tmp_path):
    """At reanalyze 0.5 as many positions are reanalysed as played (whole files, the debt
    paid back by the next games); a file of the window is due once half the window's samples
    were played after it (after the model of its targets, once reanalysed), the one with the
    largest age times share of the window ahead first; files with targets of the model
    playing are left alone, and so are files past the window."""
    paths = files_of(tmp_path, (0, 1, 2, 3))
    cfg = config(max_sampleage=2)
    calls = []

    def search(x, legal, rng, should_stop):
        calls.append(len(x))
        return Reanalysis(np.full((len(x), 9), 1 / 9, np.float32), np.zeros(len(x)), 3)

    reanalyser = Reanalyser(tmp_path / "samples", cfg, search, np.random.default_rng(0))
    # the window of model 3: iterations 1 to 3 (0 is too old), 9 files; due: the files with 5
    # or more played after them (2-0 and iteration 1), 2-0 first (5 files after it times 4
    # of 9 ahead, against 6 times 3 of 9 for 1-2)
    assert reanalyser.next_file(3) == paths[6]
    reanalyser.earn(1)
    done = reanalyser.spend(3, lambda: False)
    assert calls == [done] and reanalyser.credit == 1 - done  # overdrawn by one file
    reanalyser.earn(done - 1)  # pays the debt back: nothing to spend
    assert reanalyser.spend(3, lambda: False) == 0
    reanalyser.earn(1000)
    reanalyser.spend(3, lambda: False)
    done_files = {p for p in paths if reanalysis_path(p).exists()}
    assert done_files == {*paths[3:7]}  # 2-1 and 2-2 are not due: 4 and 3 files after them
    assert reanalyser.credit == 0  # nothing left to refresh: not saved up
    # model 4's window: iterations 2 and 3; 2-2 and 2-1 are due (3 and 4 of 6 files after
    # them), 2-0 has targets of model 3
    assert reanalyser.next_file(3) is None and reanalyser.next_file(4) == paths[8]


def fixed_search(state):
    """A search that returns uniform targets of model state["model"]."""

    def search(x, legal, rng, should_stop):
        n = len(x)
        return Reanalysis(np.full((n, 9), 1 / 9, np.float32), np.zeros(n), state["model"])

    return search


def test_files_past_the_trainers_sample_count_are_left_alone(tmp_path):
    """max_samplecount cuts the Trainer's window short of max_sampleage: the files it no
    longer trains on are not searched again."""
    games = blind_games(1)
    paths = []
    for it in range(5):
        paths.append(tmp_path / "samples" / str(it) / f"selfplayer0-{it}.npz")
        per_file = write_sample_file(paths[-1], games)
    cfg = config(max_sampleage=30, min_samplecount=1, max_samplecount=2 * per_file)
    reanalyser = Reanalyser(tmp_path / "samples", cfg, fixed_search({"model": 4}), None)
    reanalyser.earn(100 * per_file)
    reanalyser.spend(4, lambda: False)
    # the window: iterations 3 and 4; 4 has targets of the model playing
    assert [p for p in paths if reanalysis_path(p).exists()] == [paths[3]]


@pytest.mark.parametrize(("share", "files"), [(0.5, 1), (0.75, 1), (0.5, 4), (0.75, 4)])
def test_the_share_of_samples_trained_on_with_reanalysed_targets_follows_the_setting(
    tmp_path, share, files
):
    """Forty iterations of `files` sample files each, a window of six iterations' files (of
    thirty iterations' age), a file reanalysed when due after each file played: the
    Trainer's window holds `share` of its samples with reanalysed targets, give or take one
    file (the oldest targets of the thirty iterations first would refresh files past the
    window; ages counted in whole iterations would keep an iteration's files waiting on its
    last one, half an iteration too long)."""
    games = blind_games(1)
    samples = tmp_path / "samples"
    state = {"model": 0}
    per_file = write_sample_file(samples / "0" / "selfplayer0-0-0.npz", games)
    window = 6 * files * per_file
    cfg = config(reanalyze=share, max_sampleage=30, min_samplecount=1, max_samplecount=window)
    reanalyser = Reanalyser(samples, cfg, fixed_search(state), None)
    shares = []
    for it in range(1, 40):
        state["model"] = it
        for file in range(files):
            write_sample_file(samples / str(it) / f"selfplayer0-{it}-{file}.npz", games)
            reanalyser.earn(per_file)
            reanalyser.spend(it, lambda: False)
            reanalysed: dict[str, int] = {}
            batch = load_samples(samples, 0, window, reanalysed=reanalysed)
            assert batch is not None
            shares.append(sum(reanalysed.values()) / window)
    assert abs(np.mean(shares[15 * files :]) - share) <= per_file / window + 1e-9


def test_each_file_is_one_selfplayers(tmp_path):
    paths = files_of(tmp_path, (0,), per_iteration=12)
    cfg = config()
    owners = [
        Reanalyser(tmp_path / "samples", cfg, None, np.random.default_rng(0), index, 3)
        for index in range(3)
    ]
    owned = [{p for p in paths if r.owns(p.name)} for r in owners]
    assert set().union(*owned) == set(paths) and sum(map(len, owned)) == len(paths)
    assert all(owned)  # twelve files: each of three gets some


def test_a_file_that_does_not_fit_the_game_is_left_alone(stored, caplog):
    cfg = config()
    shape = dataclasses.replace(SampleShape.of(TicTacToe()), actions=7)
    reanalyser = Reanalyser(stored.parents[1], cfg, None, np.random.default_rng(0), shape=shape)
    assert reanalyser.reanalyse(stored, lambda: False) == 0
    assert "not reanalysed" in caplog.text and reanalyser.next_file(1) is None
    assert not reanalysis_path(stored).exists()


@pytest.mark.parametrize("value", [1.0, -0.1, "half", True])
def test_the_share_must_be_in_0_to_1(value):
    with pytest.raises(ConfigError, match=r"'train.reanalyze' must be a number in \[0, 1\)"):
        config(reanalyze=value)


@pytest.mark.parametrize(
    "settings,problem",
    [
        ({"train": {"learner": "alphazero"}}, "does not reanalyse stored positions"),
        (
            {"train": {"learner": "muzero", "replay": "curious", "num_updates_per_train_iter": 8}},
            "use train.replay 'window'",
        ),
        (
            {"train": {"learner": "muzero"}, "selfplay": {"backend": "ray"}},
            "use selfplay.backend 'processes'",
        ),
    ],
)
def test_reanalysis_is_refused_where_it_cannot_run(settings, problem):
    data = {"game": GAME, **settings}
    data["train"] = {**data["train"], "reanalyze": 0.25}
    with pytest.raises(ConfigError, match=problem):
        GymConfig.from_dict(data)
    data["train"]["reanalyze"] = 0.0
    GymConfig.from_dict(data)  # the default: nothing changes
    assert GymConfig(game=GAME).train.reanalyze == 0.0


def test_a_continued_session_carries_the_reanalysed_targets(new_session, tmp_path):
    from gamegym.runtime.continuation import continue_session

    session = new_session()
    sample = session / "samples" / "0" / "selfplayer0-1-0-abcd.npz"
    write_sample_file(sample, blind_games(1))
    arrays = read_sample_file(sample)
    write_reanalysis(sample, Reanalysis(arrays["pi"], arrays["root_value"], 1))
    new = continue_session(session, tmp_path / "new")
    carried = new.samples_dir / "0" / sample.name
    assert read_reanalysis(carried, len(arrays["z"]), 9).iteration == 1


def test_a_position_without_a_legal_move_leaves_its_file_alone(stored, caplog):
    arrays = read_sample_file(stored)
    legal = arrays["legal"].copy()
    legal[2] = False
    _rewrite(stored, legal=legal)
    cfg = config()
    search = get_learner("muzero").reanalyser(TicTacToe(), LocalService(OracleModel(1)), cfg)
    reanalyser = Reanalyser(stored.parents[1], cfg, search, np.random.default_rng(0))
    assert reanalyser.reanalyse(stored, lambda: False) == 0
    assert "stored position 2 has no legal move" in caplog.text
    assert not reanalysis_path(stored).exists() and reanalyser.next_file(1) is None
