"""The batching Predictor: the only place outside the Trainer where TensorFlow runs.

Every Selfplayer owns one end of a duplex pipe; the Predictor waits on all of them at once
(`multiprocessing.connection.wait`, no polling), gathers requests until `batchsize` positions,
until every client has a request waiting, or until `batch_timeout_ms` passes, evaluates them with
one model call per kind of request and sends each client its slice.  A `Reload` on the control
pipe loads a new iteration.

The model call is the learner's (`Learner.make_evaluator`): AlphaZero answers "evaluate"
requests; a learner whose searches carry state made by one iteration (MuZero's hidden states)
tags its requests with that iteration.  The Predictor therefore holds the newest `HOLD`
iterations; a request for an older one gets an error answer and its search starts again.
"""
from __future__ import annotations

import logging
import os
import time
from multiprocessing.connection import Connection, wait

import numpy as np

from gamegym.messages import EvalRequest, EvalResponse, Reload, Report
from gamegym.process import child_entry

log = logging.getLogger("gamegym.predictor")

HOLD = 2   # model iterations held at once: the newest and the one before it


class Predictor:
    """The batching loop over client pipes (runs inside the Predictor process)."""

    def __init__(self, session, config, clients: list[Connection], control: Connection | None,
                 reports=None):
        from gamegym.learners import get_learner
        self.session = session
        self.config = config.predict
        self.learner = get_learner(config.train.learner)
        self.clients = list(clients)
        self.controls = [control] if control is not None else []
        self.reports = reports
        self.held: dict[int, object] = {}   # iteration -> evaluator, oldest first
        self._batches = 0
        self._positions = 0
        self._busy = 0.0
        self._last_report = time.monotonic()

    @property
    def evaluator(self):
        """The evaluator of the newest iteration held."""
        return self.held[next(reversed(self.held))] if self.held else None

    def load(self, iteration: int) -> None:
        """Hold `iteration` as the newest; beyond HOLD iterations the oldest evaluator takes the
        new weights (its traced function is kept: a new trace per reload would grow memory)."""
        if iteration in self.held:
            self.held[iteration] = self.held.pop(iteration)
            return
        from gamegym.tfsetup import import_keras, load_model
        keras = import_keras()
        path = self.session.model_path(iteration)
        keras.backend.clear_session()  # Keras' global name state would grow with every reload
        model = load_model(path)
        reuse = None
        if len(self.held) >= HOLD:
            reuse = self.held.pop(next(iter(self.held)))
        if reuse is None or not reuse.update(model, iteration):
            reuse = self.learner.make_evaluator(model, iteration, fast=self.config.numpy_fastpath)
        self.held[iteration] = reuse
        log.info("loaded model iteration %d from %s", iteration, path)

    def serve(self, stop_event) -> None:
        self.load(max(0, self.session.current_iteration()))
        timeout = self.config.batch_timeout_ms / 1000.0
        live = list(self.clients)
        while live:
            ready = wait(live + self.controls, timeout=1.0)
            if not ready:
                self._report(force=False)
                if stop_event.is_set():
                    return  # stopping, and a whole second without a request: Selfplayers are done
                continue
            pending: list[tuple[Connection, EvalRequest]] = []
            for control in [c for c in ready if c in self.controls]:
                ready.remove(control)
                self._handle_control(control)
            self._receive(ready, pending, live)
            waiting = {id(c) for c, _ in pending}
            count = sum(_size(r) for _, r in pending)
            deadline = time.monotonic() + timeout
            while pending and count < self.config.batchsize and len(waiting) < len(live):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                more = [c for c in wait([c for c in live if id(c) not in waiting], timeout=left)]
                if not more:
                    break
                before = len(pending)
                self._receive(more, pending, live)
                for c, r in pending[before:]:
                    waiting.add(id(c))
                    count += _size(r)
            if pending:
                self._evaluate(pending)
            self._report(force=False)

    def _receive(self, ready, pending, live) -> None:
        for conn in ready:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                live.remove(conn)  # that Selfplayer is gone; the gym restarts it or stops
                continue
            if isinstance(message, EvalRequest):
                pending.append((conn, message))

    def _handle_control(self, control: Connection) -> None:
        """Act on a control message (a Reload from the Trainer)."""
        try:
            message = control.recv()
        except (EOFError, OSError):
            self.controls.remove(control)  # the Trainer is gone; the gym decides what follows
            return
        if isinstance(message, Reload) and message.iteration != self.evaluator.iteration:
            self.load(message.iteration)

    def _evaluate(self, pending) -> None:
        """One model call per (kind, iteration) among the pending requests."""
        start = time.perf_counter()
        groups: dict[tuple, list] = {}
        newest = self.evaluator.iteration
        for conn, request in pending:
            iteration = newest if request.iteration < 0 else request.iteration
            groups.setdefault((request.kind, iteration), []).append((conn, request))
        for (kind, iteration), members in groups.items():
            evaluator = self.held.get(iteration)
            if evaluator is None:
                error = (f"model iteration {iteration} is no longer held (the Predictor holds "
                         f"{sorted(self.held)})")
                for conn, request in members:
                    _send(conn, EvalResponse(request.request_id, iteration, {}, error))
                continue
            requests = [r for _, r in members]
            inputs = {name: np.concatenate([r.inputs[name] for r in requests])
                      if len(requests) > 1 else requests[0].inputs[name]
                      for name in requests[0].inputs}
            outputs = evaluator.run(kind, inputs)
            offset = 0
            for conn, request in members:
                n = _size(request)
                _send(conn, EvalResponse(request.request_id, iteration,
                                         {k: v[offset:offset + n] for k, v in outputs.items()}))
                offset += n
            self._batches += 1
            self._positions += offset
        self._busy += time.perf_counter() - start

    def _report(self, force: bool) -> None:
        now = time.monotonic()
        if self.reports is None or (not force and now - self._last_report < 2.0):
            return
        self.reports.put(Report("predictor", os.getpid(), {
            "batches": self._batches, "positions": self._positions, "busy_s": self._busy,
            "seconds": now - self._last_report,
            "iteration": self.evaluator.iteration if self.evaluator else -1}))
        self._batches = self._positions = 0
        self._busy = 0.0
        self._last_report = now


def _size(request: EvalRequest) -> int:
    """The batch size of a request (the length of its arrays)."""
    return len(next(iter(request.inputs.values()))) if request.inputs else 0


def _send(conn: Connection, response: EvalResponse) -> None:
    try:
        conn.send(response)
    except (BrokenPipeError, OSError):
        pass   # that Selfplayer is gone


@child_entry("predictor")
def predictor_main(session_path, config, clients, control, reports, *, stop_event):
    from gamegym.session import Session
    from gamegym.tfsetup import configure_tensorflow
    configure_tensorflow(config.predict.use_gpu, config.predict.gpu_memorylimit, threads=1,
                         announce=True)   # a missing GPU: one line on the console, from here
    predictor = Predictor(Session(session_path), config, clients, control, reports)
    predictor.serve(stop_event)
