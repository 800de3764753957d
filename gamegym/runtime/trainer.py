"""The Trainer: replay -> learner -> next model iteration.

It waits until the replay is ready (with the default `window`: `min_samplecount` samples, of
which the current model played `min_new_samples`), trains one iteration with the session's
learner, commits the replay's state, publishes models/<it+1>.keras, writes train/<it+1>.json and
tells the Predictor to reload.  Reports go to listeners (the gym's monitor, the loss plot, the
log); the Trainer itself neither prints nor plots inline.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from gamegym import workmeter
from gamegym.data.replay import make_replay
from gamegym.data.samples import SampleShape
from gamegym.game.graph import load_game
from gamegym.runtime.fastmodels import fast_model_bytes, int8_inputs
from gamegym.runtime.messages import Reload, Report
from gamegym.runtime.process import child_entry

log = logging.getLogger("gamegym.runtime.trainer")


class Trainer:
    """Trains model iterations from the session's samples with one Learner.  `model` is the
    Keras model to train, or None with `load_model` (() -> the model): then the model, and
    TensorFlow with it, is loaded only when the first iteration is due, so a Trainer that
    waits for samples holds no TensorFlow."""

    def __init__(
        self,
        session,
        config,
        graph,
        learner,
        model,
        rng: np.random.Generator,
        listeners: list[Callable[[dict], None]] | None = None,
        replay=None,
        load_model: Callable[[], Any] | None = None,
    ):
        if model is None and load_model is None:
            raise ValueError("a Trainer needs a model or a function that loads it")
        self.session = session
        self.config = config
        self.graph = graph
        self.learner = learner
        self._model = model
        self._load_model = load_model
        self.rng = rng
        self.listeners = listeners or []
        if replay is None:  # sample files that do not fit the game are quarantined
            replay = make_replay(session, config, None if graph is None else SampleShape.of(graph))
        self.replay = replay

    @property
    def model(self):
        """The model in training (loaded at the first use when the Trainer was given a
        loader)."""
        if self._model is None:
            assert self._load_model is not None
            self._model = self._load_model()
        return self._model

    def ready(self) -> tuple[bool, str]:
        """Whether enough samples are there to train, and why not."""
        return self.replay.ready(self.session.current_iteration())

    def train_once(self) -> int:
        """Train one iteration on the replay's samples and publish it; returns the new
        iteration.  The replay's state is committed before the model is published, so a
        crash between the two loses only this iteration (see gamegym.data.replay)."""
        cfg = self.config.train
        iteration = self.session.current_iteration()
        clock = time.perf_counter()
        batch, facts = self.replay.load(iteration)
        workmeter.tick()
        if batch is None:
            raise RuntimeError("no readable samples to train on")
        loaded = time.perf_counter()
        start = time.time()
        sampler = self.replay.sampler(batch, self.rng)
        timed = None if sampler is None else TimedSampler(sampler)
        options = self.config.train_options()
        options.learning_rate = cfg.learning_rate_at(iteration + 1)  # train.learning_rate_schedule
        result = self.learner.train_iteration(
            self.model,
            batch,
            options,
            self.rng,
            graph=self.graph,
            sampler=timed,
        )
        trained = time.perf_counter()
        new_iteration = iteration + 1
        self.replay.commit(new_iteration)
        committed = time.perf_counter()
        self.session.publish_model(
            self.model,
            new_iteration,
            keep=cfg.keep_models,
            fast_form=self._fast_form(batch),
        )
        figures = self.replay.figures()
        total = time.perf_counter() - clock
        timing = {
            "load": loaded - clock,
            "train": trained - loaded,
            "commit": committed - trained,
            "publish": total - (committed - clock),
        }
        if timed is not None:
            timing["sampler"] = timed.seconds
            figures["sampler_share"] = round(timed.seconds / total, 4) if total else 0.0
        report = {
            "iteration": new_iteration,
            "time": time.time(),
            "seconds": time.time() - start,
            "samples": len(batch),
            **facts,
            "learner": cfg.learner,
            "replay": cfg.replay,
            "learning_rate": options.learning_rate,
            "history": result.history,
            "losses": {k: v[-1] for k, v in result.history.items() if v},
            "timing": {k: round(v, 4) for k, v in timing.items()},
            **({"replay_figures": figures} if figures else {}),
        }
        self.session.write_train_report(new_iteration, report)
        log.info(
            "iteration %d trained on %d samples in %.1f s: %s",
            new_iteration,
            len(batch),
            report["seconds"],
            _format_losses(report["losses"]),
        )
        for listener in self.listeners:
            listener(report)
        return new_iteration

    def _fast_form(self, batch) -> bytes | None:
        """The fast-path file of the model just trained; with predict.precision "int8", with
        its int8 form calibrated on the samples it was trained on (gamegym.runtime.fastmodels)."""
        precision = self.config.predict.precision
        inputs = None
        if precision == "int8" and self.graph is not None:
            inputs = int8_inputs(self.graph, self.rng, batch.x)
        return fast_model_bytes(
            self.learner, self.model, precision, inputs, self.config.predict.int8_tolerances()
        )

    def run(self, stop_event, max_iterations: int | None = None, check_every: float = 2.0) -> int:
        """Train whenever ready until stopped; returns the number of iterations trained."""
        trained = 0
        last_reason = ""
        while not stop_event.is_set() and (max_iterations is None or trained < max_iterations):
            workmeter.tick()  # each round, waiting or training (the learner counts its steps)
            ok, reason = self.ready()
            if not ok:
                if reason != last_reason:
                    log.info("waiting: %s", reason)
                    last_reason = reason
                stop_event.wait(check_every)
                continue
            self.train_once()
            trained += 1
        return trained


class TimedSampler:
    """A replay's sampler with the seconds spent in it counted (the replay's share of the
    Trainer's time, reported as timing.sampler in train/<it>.json)."""

    def __init__(self, sampler):
        self.sampler = sampler
        self.seconds = 0.0

    def draw(self, size: int) -> np.ndarray:
        started = time.perf_counter()
        try:
            return self.sampler.draw(size)
        finally:
            self.seconds += time.perf_counter() - started

    def update(self, index, losses) -> None:
        started = time.perf_counter()
        try:
            self.sampler.update(index, losses)
        finally:
            self.seconds += time.perf_counter() - started


def _format_losses(losses: dict) -> str:
    return ", ".join(f"{k} {v:.4f}" for k, v in sorted(losses.items()))


def build_trainer(
    session, config, rng, listeners=None, graph=None, load: Callable[[], object] | None = None
) -> Trainer:
    """A Trainer on the session's current model, loaded (with TensorFlow) at its first use;
    `graph`: the session's game when this process has it built already; `load`: what to do
    just before, e.g. configure TensorFlow."""
    from gamegym.learners import get_learner

    if graph is None:
        graph = load_game(config.game, config.game_args)
    learner = get_learner(config.train.learner)

    def current_model():
        from gamegym.nets.tfsetup import load_model

        if load is not None:
            load()
        model = load_model(session.model_path(max(0, session.current_iteration())))
        learner.compile(model, config.train_options())
        return model

    return Trainer(session, config, graph, learner, None, rng, listeners, load_model=current_model)


@child_entry("trainer")
def trainer_main(session_path, config, control, seed, *, stop_event, reports):
    from gamegym.data.session import Session
    from gamegym.nets.tfsetup import configure_tensorflow
    from gamegym.runtime.monitor import plot_replay, plot_training
    from gamegym.runtime.tensorboard import BoardWriter, train_scalars

    session = Session(session_path)
    board = BoardWriter(session.tensorboard_dir, "trainer")

    def publish(report: dict) -> None:
        control.send(Reload(report["iteration"]))
        reports.put(
            Report(
                "trainer",
                os.getpid(),
                {
                    "iteration": report["iteration"],
                    "losses": report["losses"],
                    "samples": report["samples"],
                    "replay": report.get("replay_figures", {}),
                },
            )
        )
        board.scalars(report["iteration"], train_scalars(report, report["learning_rate"]))
        plot_training(session)
        if "replay_figures" in report:
            plot_replay(session)

    trainer = build_trainer(
        session,
        config,
        np.random.default_rng(seed),
        [publish],
        load=lambda: configure_tensorflow(config.predict.use_gpu, 0, threads=0),
    )
    try:
        trainer.run(stop_event)
    finally:
        board.close()
