"""The Trainer: replay -> learner -> next model iteration.

It waits until the replay is ready (with the default `window`: `min_samplecount` samples, of
which the current model played `min_new_samples`), trains one iteration with the session's
learner, commits the replay's state, publishes models/<it+1>.keras, writes train/<it+1>.json and
tells the Predictor to reload.  Reports go to listeners (the gym's monitor, the loss plot, the
log); the Trainer itself neither prints nor plots inline.

A model is published only when its training losses and weights are all finite.  An iteration
that ends with a NaN or infinite one is refused: the weights from before it are put back (with
a fresh optimizer, as on a resume), the replay's counts go back to its last committed state,
nothing is published, the refusal is logged and appended to train/refused.jsonl, and the next
published train/<it>.json counts it ("refused").  The Trainer then tries again; after
MAX_REFUSALS refusals in a row it stops with `TrainingDiverged` (every sample it reads has
passed the checks of gamegym.data.samples, so it is the training that diverges).

With train.weight_average "ema" the published model holds an exponential moving average of the
trained weights (gamegym.runtime.weightaverage): the Trainer trains on from its own weights,
saved beside it as models/<it>.raw.keras, and a resume continues from those and from the
average.  The average is checked for finite weights before it is published, as the trained
weights are.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from gamegym import workmeter
from gamegym.data.faults import mutated
from gamegym.data.fileio import append_jsonl
from gamegym.data.replay import make_replay
from gamegym.data.samples import SampleShape
from gamegym.nets.fastmodels import fast_model_bytes, int8_inputs
from gamegym.runtime.messages import Reload, Report
from gamegym.runtime.process import child_entry
from gamegym.runtime.weightaverage import WeightAverage

log = logging.getLogger("gamegym.runtime.trainer")
MAX_REFUSALS = 3  # iterations refused in a row (loss not finite) before the Trainer stops


class TrainingDiverged(RuntimeError):
    """Training gave a loss or weights that are not finite MAX_REFUSALS times in a row."""


class Trainer:
    """Trains model iterations from the session's samples with one Learner.  `model` is the
    Keras model to train, with the weights it trained (`Session.training_model_path`, not an
    average that train.weight_average published), or None with `load_model` (() -> the
    model): then the model, and TensorFlow with it, is loaded only when the first iteration
    is due, so a Trainer that waits for samples holds no TensorFlow."""

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
        if replay is None:  # sample files that do not fit the game or learner are quarantined
            shape = None
            if graph is not None:
                shape = SampleShape.of(graph, learner.sample_columns(config))
            replay = make_replay(session, config, shape)
        self.replay = replay
        self.refusals: list[dict] = []  # refused attempts since the last published iteration
        # train.weight_average "ema": the average the published models hold (None: "none")
        self.average = WeightAverage.of(config.train)

    @property
    def model(self):
        """The model in training, with the weights it trained (models/<it>.raw.keras where
        the published model is an average); loaded at the first use when the Trainer was
        given a loader."""
        if self._model is None:
            assert self._load_model is not None
            self._model = self._load_model()
        return self._model

    def ready(self) -> tuple[bool, str]:
        """Whether enough samples are there to train, and why not."""
        return self.replay.ready(self.session.current_iteration())

    def train_once(self) -> int:
        """Train one iteration on the replay's samples and publish it; returns the session's
        iteration afterwards: the new one, or the same when there was nothing readable to
        train on or the iteration was refused (a loss not finite, see the module).  The
        replay's state is committed before the model is published, so a crash between the two
        loses only this iteration (see gamegym.data.replay)."""
        cfg = self.config.train
        iteration = self.session.current_iteration()
        clock = time.perf_counter()
        batch, facts = self.replay.load(iteration)
        workmeter.tick()
        if batch is None:  # every file in reach was quarantined meanwhile: wait for more
            log.warning("no readable samples to train iteration %d on", iteration + 1)
            return iteration
        read = sorted(facts.get("sources", {}))
        log.info(
            "iteration %d trains on %d samples; the %d sample files read for it: %s",
            iteration + 1,
            len(batch),
            len(read),
            " ".join(read) or "none new",
        )
        if facts.get("reanalysed"):
            log.info("%d of them with reanalysed targets (train.reanalyze)", facts["reanalysed"])
        loaded = time.perf_counter()
        start = time.time()
        sampler = self.replay.sampler(batch, self.rng)
        timed = None if sampler is None else TimedSampler(sampler)
        options = self.config.train_options()
        options.learning_rate = cfg.learning_rate_at(iteration + 1)  # train.learning_rate_schedule
        before = _weights(self.model)
        result = self.learner.train_iteration(
            self.model,
            batch,
            options,
            self.rng,
            graph=self.graph,
            sampler=timed,
        )
        weights = _weights(self.model)
        wrong = _not_finite(result.history, weights)
        averaged = previous = None
        if not wrong and self.average is not None and weights is not None:
            previous = self.average.stored(self.session, iteration)
            averaged = self.average.next(
                previous, weights, self.learner.averaged_weights(self.model)
            )
            if not _finite(averaged):
                wrong = "averaged weights that are not finite (train.weight_average)"
        if wrong:
            self._refuse(iteration, wrong, before, options, facts)
            return iteration
        trained = time.perf_counter()
        new_iteration = iteration + 1
        self.replay.commit(new_iteration)
        committed = time.perf_counter()
        self._publish(new_iteration, batch, weights, averaged)
        if averaged is not None and previous is None:
            log.info(
                "models from %d on hold an average of the trained weights (train.weight_average "
                '"ema", decay %g); training goes on from models/<it>.raw.keras',
                new_iteration,
                cfg.weight_average_decay,
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
            **({"refused": len(self.refusals)} if self.refusals else {}),
        }
        if self.average is not None:
            report["weight_average"] = self.average.report(started=previous is None)
        self.session.write_train_report(new_iteration, report)
        self.refusals = []
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

    def _refuse(self, iteration: int, wrong: str, before, options, facts: dict) -> None:
        """Keep iteration `iteration`: put its weights back with a fresh optimizer, undo the
        replay's uncommitted counts, record why; TrainingDiverged after MAX_REFUSALS in a
        row."""
        if before is not None:
            self.model.set_weights(before)
            self.learner.compile(self.model, options)  # the optimizer's state went bad too
        self.replay.rollback()
        record = {
            "time": time.time(),
            "iteration": iteration + 1,
            "reason": wrong,
            "attempt": len(self.refusals) + 1,
            "learning_rate": options.learning_rate,
            "sources": facts.get("sources", {}),
        }
        self.refusals.append(record)
        append_jsonl(self.session.train_dir / "refused.jsonl", record)
        log.error(
            "iteration %d refused (attempt %d of %d): %s; model %d is kept and nothing is "
            "published (train/refused.jsonl lists the files it trained on)",
            iteration + 1,
            record["attempt"],
            MAX_REFUSALS,
            wrong,
            iteration,
        )
        if len(self.refusals) >= MAX_REFUSALS:
            raise TrainingDiverged(
                f"training iteration {iteration + 1} gave {wrong} {MAX_REFUSALS} times in a "
                f"row; model {iteration} is kept.  The samples passed every check when read, "
                "so the training diverges: lower train.learning_rate (now "
                f"{options.learning_rate:g}), then resume the session"
            )

    def _publish(self, iteration: int, batch, trained, averaged: list | None) -> None:
        """Publish model `iteration`: the weights trained, or with train.weight_average their
        average `averaged` (and the trained weights beside it, models/<it>.raw.keras); the
        model in training keeps the trained weights."""
        keep = self.config.train.keep_models
        if averaged is None:
            self.session.publish_model(
                self.model, iteration, keep=keep, fast_form=self._fast_form(batch)
            )
            return
        assert self.average is not None
        # (the soak's mutation check: the fast form of the weights trained, not published)
        trained_form = self._fast_form(batch) if mutated("fast_form") else None
        self.model.set_weights(averaged)
        try:
            fast_form = trained_form or self._fast_form(batch)  # of the model published
            self.session.publish_model(
                self.model, iteration, keep=keep, fast_form=fast_form, raw_weights=trained
            )
        finally:
            self.model.set_weights(trained)
        self.average.published(iteration, averaged)

    def _fast_form(self, batch) -> bytes | None:
        """The fast-path file of the model just trained; with predict.precision "int8", with
        its int8 form calibrated on the samples it was trained on (gamegym.nets.fastmodels)."""
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


def _weights(model) -> list | None:
    """A copy of a Keras model's weights (None for a model that has none to copy)."""
    get = getattr(model, "get_weights", None)
    return None if get is None else get()


def _finite(weights: list) -> bool:
    return all(np.isfinite(w).all() for w in weights)


def _not_finite(history: dict, weights: list | None) -> str:
    """What of a trained iteration is not finite (its losses, its weights), or ""."""
    for name, values in sorted(history.items()):
        if not np.isfinite(np.asarray(values, np.float64)).all():
            return f"a {name} that is not finite ({values[-1] if values else '?'})"
    if weights is not None and not _finite(weights):
        return "weights that are not finite"
    return ""


def _format_losses(losses: dict) -> str:
    return ", ".join(f"{k} {v:.4f}" for k, v in sorted(losses.items()))


def build_trainer(
    session, config, rng, listeners=None, load: Callable[[], object] | None = None
) -> Trainer:
    """A Trainer on the session's current model, loaded (with TensorFlow) at its first use,
    on the game `config` names (this process's graph of it); `load`: what to do just before,
    e.g. configure TensorFlow."""
    from gamegym.learners import get_learner

    graph = config.game_ref.build()
    learner = get_learner(config.train.learner)

    def current_model():
        from gamegym.nets.tfsetup import load_model

        if load is not None:
            load()
        # the weights it trained: an average is published (train.weight_average) beside them
        model = load_model(session.training_model_path(max(0, session.current_iteration())))
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
