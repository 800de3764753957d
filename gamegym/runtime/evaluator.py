"""The optional Evaluator process (`evaluate.every` > 0): beside the Trainer, it rates each new
model iteration as it is published (gamegym.evaluation.ratings: matches against
`evaluate.opponents`, results, ratings and their plot), and reports each rating to the gym
and to TensorBoard.
"""

from __future__ import annotations

import logging
import os

import numpy as np

from gamegym import workmeter
from gamegym.data.fileio import read_jsonl
from gamegym.evaluation.ratings import ModelPruned, evaluate_iteration, iteration_name
from gamegym.runtime.messages import Report
from gamegym.runtime.process import child_entry

__all__ = ["Evaluator", "evaluator_main"]

log = logging.getLogger("gamegym.runtime.evaluator")


class Evaluator:
    """Rates the session's newest iteration once `evaluate.every` iterations have passed since
    the last one rated (an evaluation can take longer than several iterations: none is waited
    for); `listeners` hear each rating (iteration, ratings, that iteration's result rows)."""

    def __init__(self, session, config, rng: np.random.Generator, listeners=()):
        self.session, self.config, self.rng = session, config, rng
        self.listeners = list(listeners)
        self.done = {r["iteration"] for r in read_jsonl(session.evaluation_dir / "results.jsonl")}
        self.last = max(self.done, default=0)

    def step(self) -> int | None:
        """Rate the newest iteration if it is due; returns it (None: none rated).  An
        iteration pruned before it could be loaded is passed over: the next step rates the
        newest."""
        iteration = self.session.current_iteration()
        if iteration < self.last + self.config.evaluate.every or iteration in self.done:
            return None
        try:
            ratings = evaluate_iteration(self.session, self.config, iteration, self.rng)
        except ModelPruned as error:
            if self.session.current_iteration() == iteration:  # not pruned: missing
                raise
            log.info("%s; rating the newest iteration instead", error)
            return None
        self.done.add(iteration)
        self.last = iteration
        rows = [
            r
            for r in read_jsonl(self.session.evaluation_dir / "results.jsonl")
            if r.get("iteration") == iteration
        ]
        for listener in self.listeners:
            listener(iteration, ratings, rows)
        return iteration


# how often the Evaluator looks for a new iteration (one small file read): often enough to
# rate an iteration that a short run (`resume --max-iterations N`) stops right after
POLL_S = 0.5


@child_entry("evaluator")
def evaluator_main(session_path, config, seed, *, stop_event, reports):
    from gamegym.data.session import Session
    from gamegym.runtime.tensorboard import BoardWriter, evaluation_scalars

    session = Session(session_path)
    board = BoardWriter(session.tensorboard_dir, "evaluator")

    def rated(iteration: int, ratings: dict, rows: list) -> None:
        board.scalars(iteration, evaluation_scalars(iteration, ratings, rows))
        reports.put(
            Report(
                "evaluator",
                os.getpid(),
                {"rating": ratings.get(iteration_name(iteration)), "rated_iteration": iteration},
            )
        )

    evaluator = Evaluator(session, config, np.random.default_rng(seed), [rated])
    while not stop_event.is_set():
        workmeter.tick()  # a look for a new iteration; each move of a match counts too
        evaluator.step()
        stop_event.wait(POLL_S)
    board.close()
