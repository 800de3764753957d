"""An I/O error at any write, fsync or rename of an iteration's work (sample files, the replay
state, the model, current.json, the training report) is raised to the writer, never swallowed;
after it the session resumes: it loads, and every file reported written is there and whole."""

import errno
import io
import os
import shutil
import zipfile

import numpy as np
import pytest

from gamegym.config import GymConfig
from gamegym.data import fileio
from gamegym.data.samples import GameRecord, read_sample_file, write_sample_file
from gamegym.data.session import Session
from gamegym.runtime.trainer import Trainer

CONFIG = GymConfig(
    game="games.tictactoe:TicTacToe",
    train={
        "replay": "curious",
        "num_updates_per_train_iter": 2,
        "batchsize": 4,
        "min_samplecount": 4,
        "min_new_samples": 4,
        "replay_capacity": 100,
        "validation_split": 0.0,
    },
)
OPS = ("write", "fsync", "replace")


class ZipModel:
    """Saves a small zip with a config.json, as a Keras model file is."""

    def save(self, path):
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("config.json", "{}")


class Learner:
    def train_iteration(self, model, batch, cfg, rng, graph=None, sampler=None):
        index = sampler.draw(4)
        sampler.update(index, np.full(len(index), 0.25))
        from types import SimpleNamespace

        return SimpleNamespace(history={"loss": [0.25]})


def record(n, seed):
    rng = np.random.default_rng(seed)
    game = GameRecord()
    for i in range(n):
        game.x.append(rng.random((3, 3, 2)).astype(np.float32))
        game.pi.append(np.full(9, 1 / 9, np.float32))
        game.action.append(i)
        game.root_value.append(0.0)
        game.legal.append(np.ones(9, bool))
    return game


class Faults:
    """Counts the writes, fsyncs and renames of gamegym.data.fileio; fails number `fail_at` of
    kind `op` with EIO."""

    def __init__(self, monkeypatch, op=None, fail_at=0):
        self.op, self.fail_at = op, fail_at
        self.calls = dict.fromkeys(OPS, 0)
        real_fsync, real_replace, real_open = os.fsync, os.replace, open
        faults = self

        def fsync(fd):
            faults.tick("fsync")
            return real_fsync(fd)

        def replace(a, b):
            faults.tick("replace")
            return real_replace(a, b)

        class Handle(io.FileIO):
            def write(self, data):
                faults.tick("write")
                return super().write(data)

        def faulty_open(path, mode="r", *args, **kwargs):
            if "w" in mode or "a" in mode or "+" in mode:
                return Handle(
                    path, mode.replace("b", "").replace("+", "") + "b" if "+" not in mode else "rb+"
                )
            return real_open(path, mode, *args, **kwargs)

        monkeypatch.setattr(fileio.os, "fsync", fsync)
        monkeypatch.setattr(fileio.os, "replace", replace)
        monkeypatch.setattr(fileio, "open", faulty_open, raising=False)

    def tick(self, op):
        self.calls[op] += 1
        if op == self.op and self.calls[op] == self.fail_at:
            raise OSError(errno.EIO, f"injected {op} failure")


def one_iteration(session, reported):
    """What an iteration does on disk: two sample files, then training publishes the replay
    state, the model, current.json and the report.  `reported` gets each file said written."""
    for i in range(2):
        path = session.samples_dir / "0" / f"selfplayer{i}-000001.npz"
        write_sample_file(path, [record(4, i)])
        reported.append(path)
    trainer = Trainer(session, CONFIG, None, Learner(), ZipModel(), np.random.default_rng(0))
    new = session.current_iteration() + 1
    assert trainer.train_once() == new
    reported += [
        session.model_path(new),
        session.train_dir / f"{new}.json",
        session.replay_dir / f"{new}.npz",
    ]


@pytest.fixture
def fresh(tmp_path):
    template = Session(tmp_path / "template")
    template.create(CONFIG)
    template.publish_model(ZipModel(), 0)
    counter = [0]

    def make():
        counter[0] += 1
        path = tmp_path / f"s{counter[0]}"
        shutil.copytree(template.path, path)
        return Session(path)

    return make


def test_every_io_error_of_an_iteration_is_raised_and_the_session_resumes(fresh, monkeypatch):
    with monkeypatch.context() as patch:
        counted = Faults(patch)
        one_iteration(fresh(), [])
    assert all(counted.calls[op] >= 5 for op in OPS), counted.calls
    for op in OPS:
        for n in range(1, counted.calls[op] + 1):
            session, reported = fresh(), []
            with monkeypatch.context() as patch:
                Faults(patch, op, n)
                with pytest.raises(OSError, match=f"injected {op} failure"):
                    one_iteration(session, reported)
            resumed = Session(session.path)  # as `gamegym resume` does
            resumed.tidy()
            assert resumed.load_config() == CONFIG
            iteration = resumed.recover_models()
            assert iteration in (0, 1) and resumed.model_is_sound(iteration)
            for path in reported:
                if path.suffix == ".npz" and path.parent.parent == resumed.samples_dir:
                    assert len(read_sample_file(path)["z"]) == 4, (op, n, path)
                else:
                    assert path.is_file(), (op, n, path)
            assert not list(resumed.path.rglob(".*.tmp*")), (op, n)
            one_iteration(resumed, [])  # and it goes on


def test_a_new_folder_is_made_durable_in_its_parent(tmp_path, monkeypatch):
    synced = []
    real = fileio._fsync_dir
    monkeypatch.setattr(fileio, "_fsync_dir", lambda folder: synced.append(folder) or real(folder))
    fileio.atomic_write_bytes(tmp_path / "samples" / "7" / "a.npz", b"data")
    assert tmp_path in synced and tmp_path / "samples" in synced
    assert tmp_path / "samples" / "7" in synced


def test_a_folder_fsync_error_is_not_swallowed(tmp_path, monkeypatch):
    def fail(fd):
        raise OSError(errno.EIO, "injected")

    monkeypatch.setattr(fileio.os, "fsync", fail)
    with pytest.raises(OSError, match="injected"):
        fileio._fsync_dir(tmp_path)
