"""train.weight_average "ema": the Trainer trains on from its own weights and publishes their
exponential moving average over the iterations (models/<it>.keras and its fast-path file),
with the trained weights beside it (models/<it>.raw.keras); a resume continues both; "none"
publishes the trained weights; pruning, recovery and the finite check cover the extra file."""

import json
import logging
import shutil
import zipfile

import numpy as np
import pytest
from conftest import TICTACTOE, create_session, random_game

from gamegym.config import GymConfig
from gamegym.data.fileio import read_jsonl
from gamegym.data.samples import GameRecord, write_sample_file
from gamegym.data.session import Session
from gamegym.game.graph import load_game
from gamegym.runtime.trainer import Trainer, build_trainer
from gamegym.runtime.weightaverage import WeightAverage

DECAY = 0.6
HEADS = 3
NETWORKS = {  # small; alphazero's residual one has batch normalization (averaged too)
    "alphazero": {"kind": "residual", "width": 8, "blocks": 1},
    "muzero": {"kind": "dense", "width": 16, "blocks": 1},
    "bootstrapped": {"kind": "dense", "width": 16, "blocks": 1},
}


def random_games(learner: str, count: int, seed: int = 0) -> list[GameRecord]:
    """Random tic-tac-toe games as `learner`'s self-play stores them."""
    graph, rng = load_game(TICTACTOE), np.random.default_rng(seed)
    heads = HEADS if learner == "bootstrapped" else None
    return [random_game(graph, rng, heads) for _ in range(count)]


def settings(learner: str, **train) -> dict:
    own = {
        "muzero": {"muzero": {"hidden_size": 8, "num_unroll_steps": 2}},
        "bootstrapped": {"bootstrapped": {"heads": HEADS, "target_update_period": 3}},
    }
    return {
        "network": NETWORKS[learner],
        **own.get(learner, {}),
        "train": {
            "learner": learner,
            "epochs": 1,
            "batchsize": 16,
            "learning_rate": 0.01,  # steps that move the weights well beyond float rounding
            "min_samplecount": 10,
            "min_new_samples": 10,
            **train,
        },
    }


def trained_session(tmp_path, learner: str, **train) -> Session:
    """A new tic-tac-toe session of `learner` (as `gamegym new` makes it) with random games to
    train on."""
    path = create_session(tmp_path / learner, TICTACTOE, settings(learner, **train))
    session = Session(path)
    write_sample_file(session.samples_dir / "0" / "a.npz", random_games(learner, 8))
    return session


def split(learner: str, model) -> tuple[list, list]:
    """(the weights averaged, the weights published as trained) of a model: a bootstrapped
    model's target network and target age are training bookkeeping, not averaged."""
    if learner == "bootstrapped":
        kept = model.get_layer("target").get_weights() + model.get_layer("target_age").get_weights()
        return model.get_layer("online").get_weights(), kept
    return model.get_weights(), []


def ema(average: list | None, trained: list) -> list:
    """The test's own exponential moving average, in float64."""
    if average is None:
        return [np.asarray(w, np.float64) for w in trained]
    return [DECAY * a + (1 - DECAY) * np.asarray(w, np.float64) for a, w in zip(average, trained)]


def assert_close(got: list, want: list) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)


def assert_equal(got: list, want: list) -> None:
    assert len(got) == len(want) and all(np.array_equal(g, w) for g, w in zip(got, want))


def differ(a: list, b: list, by: float = 1e-4) -> bool:
    return max(float(np.abs(np.asarray(x) - np.asarray(y)).max()) for x, y in zip(a, b)) > by


def assert_published_average(session, learner, iteration, trained_model, average) -> None:
    """Model `iteration` holds `average` (and the rest as trained); its raw file the trained
    weights exactly."""
    from gamegym.nets.tfsetup import load_model

    published = split(learner, load_model(session.model_path(iteration)))
    raw = split(learner, load_model(session.raw_model_path(iteration)))
    trained = split(learner, trained_model)
    assert_equal(raw[0], trained[0])
    assert_equal(raw[1], trained[1])
    assert_close(published[0], average)
    assert_equal(published[1], trained[1])


def train_two(tmp_path, learner: str):
    """A session of `learner` with train.weight_average "ema" trained two iterations: each
    published model is the test's own EMA of the trained weights, the raw file holds those;
    returns (session, the Trainer, the test's average)."""
    session = trained_session(tmp_path, learner, weight_average="ema", weight_average_decay=DECAY)
    trainer = build_trainer(session, session.load_config(), np.random.default_rng(0))
    average = None
    for iteration in (1, 2):
        assert trainer.train_once() == iteration
        average = ema(average, split(learner, trainer.model)[0])
        assert_published_average(session, learner, iteration, trainer.model, average)
    assert differ(average, split(learner, trainer.model)[0])  # the average is not the trained
    reports = [session.train_report(i)["weight_average"] for i in (1, 2)]
    assert reports == [
        {"kind": "ema", "decay": DECAY, "started": True},
        {"kind": "ema", "decay": DECAY, "started": False},
    ]
    return session, trainer, average


@pytest.fixture(scope="module")
def two_iterations(tmp_path_factory):
    """An AlphaZero session (a residual network: batch normalization) trained two iterations
    with "ema", its trained weights and the test's average: each test resumes a copy."""
    session, trainer, average = train_two(tmp_path_factory.mktemp("ema"), "alphazero")
    return session.path, trainer.model.get_weights(), average


def resumed_copy(two_iterations, tmp_path, **train):
    """A copy of the two-iteration session, its config changed by `train`, and a Trainer
    built on it as a resume builds one."""
    folder, trained, average = two_iterations
    shutil.copytree(folder, tmp_path / "s")
    session = Session(tmp_path / "s")
    config = session.load_config().updated({"train": train})
    session.save_config(config)
    return session, build_trainer(session, config, np.random.default_rng(1))


@pytest.mark.parametrize("learner", ["muzero", "bootstrapped"])
def test_every_learner_publishes_the_average_of_its_weights(tmp_path, learner):
    """The bootstrapped model's target network and target age are published as trained."""
    train_two(tmp_path, learner)


def test_a_resume_continues_training_from_the_trained_weights_and_the_average(
    two_iterations, tmp_path
):
    _, trained, average = two_iterations
    session, resumed = resumed_copy(two_iterations, tmp_path)
    assert_equal(resumed.model.get_weights(), trained)  # the raw file, not the average
    assert resumed.train_once() == 3
    average = ema(average, resumed.model.get_weights())
    assert_published_average(session, "alphazero", 3, resumed.model, average)
    assert session.train_report(3)["weight_average"]["started"] is False


def test_the_fast_path_file_holds_the_average(two_iterations, tmp_path):
    """Self-play on the CPU fast path plays the average too, not the trained weights."""
    from gamegym.nets.portable import evaluator_from_bytes
    from gamegym.nets.tfsetup import load_model

    session, resumed = resumed_copy(two_iterations, tmp_path)
    fast = evaluator_from_bytes(session.fast_model_path(2).read_bytes(), 2)
    x = np.stack(random_games("alphazero", 1, seed=5)[0].x).astype(np.float32)
    kind = fast.kinds[0]

    def answers(model):
        return resumed.learner.make_evaluator(model, 2, fast=False).run(kind, {"x": x})

    mine = fast.run(kind, {"x": x})
    average, trained = answers(load_model(session.model_path(2))), answers(resumed.model)
    assert all(np.abs(mine[k] - average[k]).max() < 1e-4 for k in average)
    assert any(np.abs(mine[k] - trained[k]).max() > 1e-3 for k in trained)


def test_none_after_ema_trains_on_from_the_trained_weights_and_publishes_them(
    two_iterations, tmp_path
):
    """Switched off on a resume: training goes on from the trained weights, and the models
    from then on are exactly the trained ones, with no raw file beside them."""
    from gamegym.nets.tfsetup import load_model

    _, trained, _ = two_iterations
    session, resumed = resumed_copy(two_iterations, tmp_path, weight_average="none")
    assert_equal(resumed.model.get_weights(), trained)
    assert resumed.train_once() == 3
    assert_equal(load_model(session.model_path(3)).get_weights(), resumed.model.get_weights())
    assert not session.raw_model_path(3).exists()
    assert "weight_average" not in session.train_report(3)


# ----- without TensorFlow: a model that saves like a Keras one --------------------------------


class Model:
    """Keeps weights like a Keras model; saves them as a zip archive a test can read back."""

    def __init__(self, value=1.0):
        self.weights = [np.full((2, 2), value, np.float32), np.full(3, value, np.float32)]

    def get_weights(self):
        return [w.copy() for w in self.weights]

    def set_weights(self, weights):
        self.weights = [np.array(w) for w in weights]

    def save(self, path):
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("config.json", "{}")
            for i, w in enumerate(self.weights):
                archive.writestr(f"{i}.npy", w.tobytes())


def saved_weights(path) -> list:
    with zipfile.ZipFile(path) as archive:
        return [np.frombuffer(archive.read(f"{i}.npy"), np.float32) for i in range(2)]


class Learner:
    """Adds 1 to every weight each iteration."""

    def compile(self, model, options):
        pass

    def fast_form(self, model):
        return None

    def averaged_weights(self, model):
        return [True, True]

    def train_iteration(self, model, batch, cfg, rng, graph=None, sampler=None):
        model.set_weights([w + 1.0 for w in model.get_weights()])
        return type("Report", (), {"history": {"loss": [0.5]}})()


def fake_session(tmp_path, **train):
    config = GymConfig(
        game=TICTACTOE,
        train={"min_samplecount": 4, "min_new_samples": 4, "validation_split": 0.0, **train},
    )
    session = Session(tmp_path / "s")
    session.create(config)
    model = Model()
    session.publish_model(model, 0)
    write_sample_file(session.samples_dir / "0" / "a.npz", random_games("alphazero", 2))
    return session, config, model


def test_the_average_of_a_model_without_tensorflow_and_its_refusal_when_not_finite(tmp_path):
    """The published file holds the average, the raw file the trained weights; a stored
    average that is not finite is refused like a diverged iteration: nothing published, the
    trained weights from before put back."""
    session, config, model = fake_session(tmp_path, weight_average="ema", weight_average_decay=0.5)
    trainer = Trainer(session, config, None, Learner(), model, np.random.default_rng(0))
    trainer.average = WeightAverage(0.5, load=saved_weights)
    assert trainer.train_once() == 1  # trained 2: the average starts there
    assert trainer.train_once() == 2  # trained 3: 0.5 * 2 + 0.5 * 3
    assert all((w == 2.5).all() for w in saved_weights(session.model_path(2)))
    assert all((w == 3.0).all() for w in saved_weights(session.raw_model_path(2)))
    assert all((w == 3.0).all() for w in model.get_weights())

    resumed = Trainer(session, config, None, Learner(), Model(3.0), np.random.default_rng(0))
    resumed.average = WeightAverage(
        0.5, load=lambda path: [np.full((2, 2), np.inf), np.full(3, np.inf)]
    )
    assert resumed.train_once() == 2
    assert not session.model_path(3).exists() and not session.raw_model_path(3).exists()
    assert all((w == 3.0).all() for w in resumed.model.get_weights())
    [record] = read_jsonl(session.train_dir / "refused.jsonl")
    assert record["reason"] == "averaged weights that are not finite (train.weight_average)"


def test_pruning_removes_the_raw_files_and_publishing_without_one_removes_a_stale_one(tmp_path):
    session, _, model = fake_session(tmp_path)
    for iteration in range(1, 5):
        session.publish_model(model, iteration, raw_weights=Model(7.0).get_weights())
    assert all(session.raw_model_path(i).exists() for i in range(1, 5))
    assert all((w == 7.0).all() for w in saved_weights(session.raw_model_path(4)))
    assert all((w == 1.0).all() for w in model.get_weights())  # the model keeps its own
    session.prune_models(2)
    assert sorted(p.name for p in session.models_dir.glob("*.keras")) == [
        "0.keras",
        "3.keras",
        "3.raw.keras",
        "4.keras",
        "4.raw.keras",
    ]
    session.publish_model(model, 4)  # the trained weights this time: the raw file would lie
    assert not session.raw_model_path(4).exists()
    assert session.training_model_path(4) == session.model_path(4)
    assert session.training_model_path(3) == session.raw_model_path(3)


def test_a_damaged_raw_file_is_quarantined_and_training_goes_on_from_the_model(tmp_path, caplog):
    session, _, model = fake_session(tmp_path)
    session.publish_model(model, 1, raw_weights=model.get_weights())
    session.publish_model(model, 2, raw_weights=model.get_weights())
    raw = session.raw_model_path(2)
    raw.write_bytes(raw.read_bytes()[:40])  # torn
    with caplog.at_level(logging.WARNING):
        assert session.recover_models() == 2
    assert not raw.exists() and session.training_model_path(2) == session.model_path(2)
    assert "the trained weights of iteration 2 (2.raw.keras) are damaged" in caplog.text
    assert any(p.name.endswith("models-2.raw.keras") for p in session.quarantine_dir.iterdir())

    damaged = session.model_path(2)  # a damaged model goes with its raw file
    session.publish_model(model, 2, raw_weights=model.get_weights())
    damaged.write_bytes(b"torn")
    assert session.recover_models() == 1
    assert not session.raw_model_path(2).exists() and session.raw_model_path(1).exists()
    assert json.loads((session.models_dir / "current.json").read_text())["iteration"] == 1


def test_a_continued_session_carries_the_trained_weights_beside_the_average(tmp_path):
    """`gamegym continue`: the new session trains on from the trained weights, and its
    average goes on from the carried model."""
    from gamegym.runtime.continuation import continue_session

    session, _, model = fake_session(tmp_path, weight_average="ema")
    session.publish_model(model, 1, raw_weights=Model(5.0).get_weights())
    new = continue_session(session.path, tmp_path / "new")
    assert new.current_iteration() == 2
    assert all((w == 5.0).all() for w in saved_weights(new.training_model_path(2)))
    assert all((w == 1.0).all() for w in saved_weights(new.model_path(2)))
