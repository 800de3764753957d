"""The Trainer never publishes a model whose training loss or weights are not finite: it puts
the weights from before the iteration back (fresh optimizer), undoes the replay's uncommitted
counts, records the refusal, tries again, and stops with TrainingDiverged after MAX_REFUSALS
refusals in a row."""

import json
import logging

import numpy as np
import pytest

from gamegym.config import GymConfig
from gamegym.data.fileio import read_jsonl
from gamegym.data.replay import WindowReplay, make_replay
from gamegym.data.samplefolder import load_samples
from gamegym.data.samples import GameRecord, write_sample_file
from gamegym.data.session import Session
from gamegym.runtime.trainer import MAX_REFUSALS, Trainer, TrainingDiverged


def game(n=6, seed=0):
    rng = np.random.default_rng(seed)
    record = GameRecord()
    for i in range(n):
        record.x.append(rng.random((3, 3, 2)).astype(np.float32))
        record.pi.append(np.full(9, 1 / 9, np.float32))
        record.action.append(i)
        record.root_value.append(0.0)
        record.legal.append(np.ones(9, bool))
    record.result = 1.0
    return record


class WeightedModel:
    """Saves like a Keras model and keeps weights like one."""

    def __init__(self):
        self.weights = [np.ones((2, 2), np.float32), np.zeros(3, np.float32)]

    def get_weights(self):
        return [w.copy() for w in self.weights]

    def set_weights(self, weights):
        self.weights = [np.array(w) for w in weights]

    def save(self, path):
        with open(path, "wb") as handle:
            handle.write(b"model")


class Learner:
    """Changes the weights a little each iteration; with `poison`, drives them (and the loss)
    to NaN, as a sample the checks missed or a diverging optimiser would."""

    def __init__(self):
        self.poison = False
        self.compiled = 0

    def compile(self, model, options):
        self.compiled += 1

    def train_iteration(self, model, batch, cfg, rng, graph=None, sampler=None):
        if sampler is not None:
            sampler.update(sampler.draw(4), np.full(4, 0.25))
        step = np.nan if self.poison else 0.5
        model.set_weights([w + step for w in model.get_weights()])
        return type("Report", (), {"history": {"loss": [0.3, step]}})()


def make(tmp_path, **train):
    config = GymConfig(
        game="games.tictactoe:TicTacToe",
        train={
            "min_samplecount": 4,
            "min_new_samples": 4,
            "validation_split": 0.0,
            "batchsize": 4,
            **train,
        },
    )
    session = Session(tmp_path / "s")
    session.create(config)
    model, learner = WeightedModel(), Learner()
    session.publish_model(model, 0)
    write_sample_file(session.samples_dir / "0" / "a.npz", [game()])
    trainer = Trainer(session, config, None, learner, model, np.random.default_rng(0))
    return session, trainer, model, learner


def test_a_nan_loss_publishes_nothing_and_keeps_the_weights_from_before(tmp_path, caplog):
    session, trainer, model, learner = make(tmp_path)
    assert trainer.train_once() == 1
    published = model.get_weights()
    write_sample_file(session.samples_dir / "1" / "b.npz", [game(seed=1)])
    learner.poison = True
    with caplog.at_level(logging.INFO, "gamegym.runtime.trainer"):
        assert trainer.train_once() == 1  # refused: the session stays at iteration 1
    assert session.current_iteration() == 1
    assert not session.model_path(2).exists() and not (session.train_dir / "2.json").exists()
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), published))
    assert learner.compiled == 1  # a fresh optimizer: its state went bad with the weights
    [record] = read_jsonl(session.train_dir / "refused.jsonl")
    assert record["iteration"] == 2 and record["attempt"] == 1
    assert "loss that is not finite" in record["reason"]
    assert set(record["sources"]) == {"0/a.npz", "1/b.npz"}
    assert "iteration 2 refused (attempt 1 of 3)" in caplog.text
    assert "the 2 sample files read for it: 0/a.npz 1/b.npz" in caplog.text

    learner.poison = False  # the next attempt trains: its report counts the refusal
    assert trainer.train_once() == 2
    report = json.loads((session.train_dir / "2.json").read_text())
    assert report["refused"] == 1 and np.isfinite(report["losses"]["loss"])
    assert trainer.train_once() == 3
    assert "refused" not in json.loads((session.train_dir / "3.json").read_text())


def test_weights_that_are_not_finite_are_refused_even_with_a_finite_loss(tmp_path):
    session, trainer, model, learner = make(tmp_path)

    class FiniteLossBadWeights(Learner):
        def train_iteration(self, model, batch, cfg, rng, graph=None, sampler=None):
            model.set_weights([np.full_like(w, np.inf) for w in model.get_weights()])
            return type("Report", (), {"history": {"loss": [0.1]}})()

    trainer.learner = FiniteLossBadWeights()
    assert trainer.train_once() == 0
    assert session.current_iteration() == 0 and not session.model_path(1).exists()
    assert np.isfinite(model.get_weights()[0]).all()
    [record] = read_jsonl(session.train_dir / "refused.jsonl")
    assert record["reason"] == "weights that are not finite"


def test_refusals_in_a_row_stop_the_trainer_naming_the_learning_rate(tmp_path):
    session, trainer, _, learner = make(tmp_path, learning_rate=0.5)
    learner.poison = True
    for _ in range(MAX_REFUSALS - 1):
        assert trainer.train_once() == 0
    with pytest.raises(
        TrainingDiverged, match=r"3 times in a row.*train.learning_rate \(now 0.5\)"
    ):
        trainer.train_once()
    assert session.current_iteration() == 0 and not session.model_path(1).exists()
    assert len(read_jsonl(session.train_dir / "refused.jsonl")) == MAX_REFUSALS


def test_a_refused_iteration_leaves_the_replay_counts_as_committed(tmp_path):
    session, trainer, _, learner = make(
        tmp_path, replay="curious", num_updates_per_train_iter=1, replay_capacity=100
    )
    assert trainer.train_once() == 1
    committed = make_replay(session, trainer.config)
    committed.load(1)
    learner.poison = True
    assert trainer.train_once() == 1
    assert trainer.replay.buffer is None  # reopened from replay/1.npz at the next load
    trainer.replay.load(1)
    assert np.array_equal(trainer.replay.buffer.count, committed.buffer.count)
    assert not (session.replay_dir / "2.npz").exists()


def test_the_alphazero_learner_on_a_poisoned_batch_keeps_its_model_and_trains_on(new_session):
    """A real network: a batch with a value the sample checks would refuse (slipped past them)
    makes its loss NaN; the iteration is refused with the network as it was, and a sound
    batch afterwards trains and publishes a finite model."""
    from gamegym.learners import get_learner
    from gamegym.nets.tfsetup import load_model

    session = Session(new_session())
    config = session.load_config()
    write_sample_file(session.samples_dir / "0" / "a.npz", [game(6, s) for s in range(4)])
    sound = load_samples(session.samples_dir, 0, 1000)

    class Fixed(WindowReplay):
        batch = sound

        def load(self, iteration):
            return self.batch, {"sources": {"0/a.npz": len(self.batch)}}

    learner = get_learner("alphazero")
    model = load_model(session.model_path(0))
    learner.compile(model, config.train_options())
    replay = Fixed(session, config)
    # no graph: no symmetric images (the game cannot unnumpify the poisoned position)
    trainer = Trainer(
        session, config, None, learner, model, np.random.default_rng(0), replay=replay
    )
    before = model.get_weights()
    poisoned = sound.take(np.arange(len(sound)))
    poisoned.x[0, 0, 0, 0] = np.inf
    replay.batch = poisoned
    assert trainer.train_once() == 0
    assert session.current_iteration() == 0 and not session.model_path(1).exists()
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), before))
    replay.batch = sound
    assert trainer.train_once() == 1
    assert all(np.isfinite(w).all() for w in load_model(session.model_path(1)).get_weights())
    assert json.loads((session.train_dir / "1.json").read_text())["refused"] == 1
