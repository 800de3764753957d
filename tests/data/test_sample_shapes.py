"""A sample file whose arrays do not fit the game (shape, action count), the learner (its own
columns) or hold bad data (a dtype, a value not finite or out of range) is quarantined with a
warning naming what is wrong, as a torn file is; the Trainer trains on the others instead of
crashing."""

import io
import logging
from types import SimpleNamespace

import numpy as np
import pytest

from gamegym.config import GymConfig
from gamegym.data.samplefolder import load_samples
from gamegym.data.samples import GameRecord, SampleColumn, SampleShape, encode_sample_file
from gamegym.data.session import Session
from gamegym.runtime.trainer import Trainer
from games.tictactoe import TicTacToe

SHAPE = SampleShape.of(TicTacToe())


def record(n=4):
    rng = np.random.default_rng(n)
    game = GameRecord()
    for i in range(n):
        game.x.append(rng.random((3, 3, 2)).astype(np.float32))
        game.pi.append(np.full(9, 1 / 9, np.float32))
        game.action.append(i)
        game.root_value.append(0.5)
        game.legal.append(np.ones(9, bool))
    game.result = -1.0
    return game


def arrays_of(n=4):
    return arrays_of_records([record(n)])


def damage(kind):
    arrays = arrays_of()
    n = len(arrays["z"])
    if kind == "x shape":
        arrays["x"] = np.zeros((n, 4, 4, 2), np.float32)
    elif kind == "x dtype":
        arrays["x"] = arrays["x"].astype("<U1")
    elif kind == "action count":
        arrays["pi"] = np.full((n, 7), 1 / 7, np.float32)
        arrays["legal"] = np.ones((n, 7), bool)
    elif kind == "action id":
        arrays["action"][1] = 9
    elif kind == "legal shape":
        arrays["legal"] = np.ones((n, 10), bool)
    elif kind == "z range":
        arrays["z"][0] = 3.0
    elif kind == "nan value":
        arrays["root_value"][2] = np.nan
    elif kind == "negative policy":
        arrays["pi"][0, 0] = -0.5
    elif kind == "game ids":
        arrays["game"][:] = 5  # no such game in the file
    elif kind == "nan policy weight":
        arrays["policy_weight"][1] = np.nan
    elif kind == "huge policy weight":
        arrays["policy_weight"][1] = 1e30
    elif kind == "negative policy weight":
        arrays["policy_weight"][1] = -1.0
    elif kind == "legal dtype":
        arrays["legal"] = arrays["legal"].astype(np.float32)
    elif kind == "truncated dtype":
        arrays["truncated"] = arrays["truncated"].astype(np.int8)
    elif kind == "infinite x":
        arrays["x"][0, 0, 0, 0] = np.inf
    elif kind == "negative step":
        arrays["step"][0] = -1
    elif kind == "policy weight shape":
        arrays["policy_weight"] = np.ones((n, 2), np.float32)
    return arrays


KINDS = [
    "x shape",
    "x dtype",
    "action count",
    "action id",
    "legal shape",
    "z range",
    "nan value",
    "negative policy",
    "game ids",
    "nan policy weight",
    "huge policy weight",
    "negative policy weight",
    "legal dtype",
    "truncated dtype",
    "infinite x",
    "negative step",
    "policy weight shape",
]
# the kinds wrong whatever the game: refused by every reader, not only the Trainer's
BAD_DATA = {
    "x dtype",
    "z range",
    "nan value",
    "negative policy",
    "game ids",
    "nan policy weight",
    "huge policy weight",
    "negative policy weight",
    "legal dtype",
    "truncated dtype",
    "infinite x",
    "negative step",
}


def write(path, arrays):
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    path.write_bytes(buffer.getvalue())


@pytest.mark.parametrize("kind", KINDS)
def test_a_file_that_does_not_fit_the_game_is_quarantined(tmp_path, kind, caplog):
    samples = tmp_path / "samples"
    write(samples / "0" / "a-good.npz", arrays_of())
    write(samples / "0" / "b-bad.npz", damage(kind))
    with caplog.at_level(logging.WARNING):
        batch = load_samples(samples, 0, 1000, tmp_path / "quarantine", shape=SHAPE)
    assert len(batch) == 4
    assert [p.name.endswith("b-bad.npz") for p in (tmp_path / "quarantine").iterdir()] == [True]
    why = "holds bad data" if kind in BAD_DATA else "does not fit the game"
    assert why in caplog.text and "b-bad.npz" in caplog.text


def test_a_search_value_past_the_score_range_is_bounded_not_refused(tmp_path, caplog):
    """A model is not bound to [-1, 1] (MuZero backs up predicted rewards plus values): its
    estimate is written within the range, and a file that holds one anyway is read with it
    bounded, not quarantined.  A cut game's value target, taken from that estimate, fits too."""
    from gamegym.data.samples import bounded_value

    assert (bounded_value(1.7), bounded_value(-2.5), bounded_value(0.25)) == (1.0, -1.0, 0.25)
    cut = record()
    cut.root_value[-1] = 1.6  # as MuZero's search may back it up: bounded when encoded
    cut.truncated = True
    samples = tmp_path / "samples"
    write(samples / "0" / "a-cut.npz", arrays_of_records([cut]))
    unbounded = arrays_of()
    unbounded["root_value"][:] = [1.4, -1.2, 0.5, 2.0]
    write(samples / "0" / "b-unbounded.npz", unbounded)
    with caplog.at_level(logging.WARNING):
        batch = load_samples(samples, 0, 1000, tmp_path / "quarantine", shape=SHAPE)
    assert len(batch) == 8 and not (tmp_path / "quarantine").exists(), caplog.text
    assert np.abs(batch.root_value).max() <= 1.0 and np.abs(batch.z).max() <= 1.0
    assert sorted(np.asarray(batch.root_value).tolist()).count(1.0) >= 3


def arrays_of_records(records):
    data, _ = encode_sample_file(records)
    with np.load(io.BytesIO(data)) as npz:
        return {k: npz[k] for k in npz.files}


def config(**train):
    return GymConfig(
        game="games.tictactoe:TicTacToe",
        train={
            "min_samplecount": 4,
            "min_new_samples": 4,
            "validation_split": 0.0,
            "batchsize": 4,
            **train,
        },
    )


class Learner:
    """Trains nothing; keeps the batch it was given."""

    def sample_columns(self, config):
        return {}

    def train_iteration(self, model, batch, cfg, rng, graph=None, sampler=None):
        self.batch = batch
        if sampler is not None:
            sampler.update(sampler.draw(4), np.full(4, 0.25))
        return SimpleNamespace(history={"loss": [0.25]})


class Model:
    def save(self, path):
        with open(path, "wb") as handle:
            handle.write(b"model")


@pytest.mark.parametrize(
    "replay", [{}, {"replay": "curious", "num_updates_per_train_iter": 1, "replay_capacity": 100}]
)
def test_the_trainer_trains_on_the_files_that_fit_and_quarantines_the_others(tmp_path, replay):
    cfg = config(**replay)
    session = Session(tmp_path / "s")
    session.create(cfg)
    learner = Learner()
    trainer = Trainer(session, cfg, TicTacToe(), learner, Model(), np.random.default_rng(0))
    session.publish_model(Model(), 0)
    write(session.samples_dir / "0" / "a-good.npz", arrays_of())
    write(session.samples_dir / "0" / "b-bad.npz", damage("action count"))
    newer = arrays_of()
    newer["format_version"] = np.int64(999)
    write(session.samples_dir / "0" / "c-new.npz", newer)
    write(session.samples_dir / "0" / "d-nan.npz", damage("nan policy weight"))
    assert trainer.train_once() == 1
    assert len(learner.batch) == 4 and learner.batch.pi.shape == (4, 9)
    assert sorted(p.name[-9:] for p in session.quarantine_dir.iterdir()) == [
        "b-bad.npz",
        "c-new.npz",
        "d-nan.npz",
    ]


COLUMNS = {
    "mask": SampleColumn("bool", (4,)),
    "head": SampleColumn("int16"),
    "terminal": SampleColumn("bool"),
}
LEARNER_SHAPE = SampleShape.of(TicTacToe(), COLUMNS)


def with_columns(kind=""):
    """A file's arrays with the learner's columns as declared, or one of them wrong."""
    arrays = arrays_of()
    n = len(arrays["z"])
    arrays["mask"] = np.ones((n, 4), bool)
    arrays["head"] = np.zeros(n, np.int16)
    arrays["terminal"] = np.arange(n) == n - 1
    if kind == "mask shape":
        arrays["mask"] = np.ones((n, 3), bool)
    elif kind == "mask dtype":
        arrays["mask"] = np.ones((n, 4), np.float32)
    elif kind == "no terminal":
        del arrays["terminal"]
    elif kind == "head range":
        arrays["head"] = np.full(n, 70000, np.int64)
    elif kind == "head per game":
        arrays["head"] = np.zeros((n, 2), np.int16)
    return arrays


@pytest.mark.parametrize(
    "kind", ["mask shape", "mask dtype", "no terminal", "head range", "head per game"]
)
def test_a_file_whose_learner_columns_are_not_as_declared_is_quarantined(tmp_path, kind, caplog):
    """Each learner declares its own columns (Learner.sample_columns); a file with one of
    another shape or dtype, or without one, would crash the learner's targets or the
    concatenation: it is quarantined and the others are trained on."""
    samples = tmp_path / "samples"
    write(samples / "0" / "a-good.npz", with_columns())
    write(samples / "0" / "b-bad.npz", with_columns(kind))
    write(samples / "1" / "c-good.npz", with_columns())
    with caplog.at_level(logging.WARNING):
        batch = load_samples(samples, 0, 1000, tmp_path / "quarantine", shape=LEARNER_SHAPE)
    assert len(batch) == 8 and batch.extra["mask"].shape == (8, 4)
    assert [p.name[-9:] for p in (tmp_path / "quarantine").iterdir()] == ["b-bad.npz"]
    assert "does not fit the learner" in caplog.text and "b-bad.npz" in caplog.text


def test_the_learner_columns_are_read_as_declared_and_no_others(tmp_path):
    arrays = with_columns()
    arrays["head"] = arrays["head"].astype(np.int64)  # another integer type: read as int16
    arrays["notes"] = np.zeros((4, 7), np.float32)  # not declared: left out
    write(tmp_path / "samples" / "0" / "a.npz", arrays)
    batch = load_samples(tmp_path / "samples", 0, 100, shape=LEARNER_SHAPE)
    assert sorted(batch.extra) == ["head", "mask", "terminal"]
    assert batch.extra["head"].dtype == np.int16 and batch.extra["mask"].dtype == bool


def test_columns_of_different_shapes_in_two_files_are_left_out_not_a_crash(tmp_path, caplog):
    """Read without a learner's shape (a tool, not the Trainer), a column whose rows differ
    from file to file cannot be concatenated: it is left out with a warning."""
    first, second = with_columns(), with_columns("mask shape")
    write(tmp_path / "samples" / "0" / "a.npz", first)
    write(tmp_path / "samples" / "0" / "b.npz", second)
    with caplog.at_level(logging.WARNING):
        batch = load_samples(tmp_path / "samples", 0, 100)
    assert len(batch) == 8 and sorted(batch.extra) == ["head", "terminal"]
    assert "'mask'" in caplog.text
