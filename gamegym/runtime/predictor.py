"""The batching Predictor: the only place outside the Trainer where TensorFlow runs.

Every Selfplayer owns one end of a duplex pipe; the Predictor waits on all of them at once
(`multiprocessing.connection.wait`, no polling), gathers requests until `batchsize` positions,
until every client has a request waiting, or until `batch_timeout_ms` passes, evaluates them with
one model call per kind of request and sends each client its slice.  A `Reload` on the control
pipe loads a new iteration.  Models come from `models`: the session folder, or on a Ray node the
copies of the models the gym broadcast (`gamegym.runtime.ray.backend`), where Selfplayers also join
later (`add_client`).

The model call is the learner's (`Learner.make_evaluator`): AlphaZero answers "evaluate"
requests; a learner whose searches carry state made by one iteration (MuZero's hidden states)
tags its requests with that iteration.  The Predictor therefore holds the newest `HOLD`
iterations; a request for an older one gets an error answer and its search starts again.

When the evaluator has a form that runs without TensorFlow (`portable()`: the model on the CPU
fast path) and `predict.evaluate_in_selfplayers` is on, the Predictor hands it to the clients
that ask (`EvaluatorRequest`) and announces each iteration with a `Reload`: the Selfplayers then
evaluate their own leaves, with no round trip (see `gamegym.runtime.pipes.PipeService`), and only
what the handed-out evaluators cannot answer comes here.

Where models come from: with the fast path on and no GPU wanted
(`gamegym.nets.fastmodels.cpu_fast_path`), each iteration is read from its fast-path file
(models/<it>.fast.npz), so this process never imports TensorFlow; otherwise, and for a model
with no fast form, from the Keras file through TensorFlow (the reference path, and the one that
uses a GPU).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import threading
import time
from collections import deque
from multiprocessing.connection import Connection, wait
from typing import cast

import numpy as np

from gamegym import workmeter
from gamegym.nets.fastmodels import cpu_fast_path, load_fast_model_or_none
from gamegym.nets.protocols import ModelCall
from gamegym.runtime.messages import (
    EvalRequest,
    EvalResponse,
    EvaluatorRequest,
    EvaluatorUpdate,
    NewClient,
    Reload,
    Report,
)
from gamegym.runtime.process import child_entry

log = logging.getLogger("gamegym.runtime.predictor")

HOLD = 2  # model iterations held at once: the newest and the one before it


class ModelPruned(Exception):
    """A model iteration's file was deleted (`train.keep_models`) before it could be loaded."""


class Predictor:
    """The batching loop over client pipes (runs inside the Predictor process).

    `models` is where model iterations are read: the Session, or anything else with
    `model_path(iteration)` and `current_iteration()`."""

    def __init__(
        self,
        models,
        config,
        clients: list[Connection],
        control: Connection | None,
        reports=None,
        joins: Connection | None = None,
    ):
        from gamegym.learners import get_learner

        self.models = models
        self.config = config.predict
        self.learner = get_learner(config.train.learner)
        self.live = list(clients)  # clients whose pipe is open (a dead one's is closed)
        self.controls = [control] if control is not None else []
        self.reports = reports
        self.held: dict[int, ModelCall] = {}  # iteration -> evaluator, oldest first
        self.fast_files = cpu_fast_path(self.config)  # models from fast-path files, no TF
        self._plugins = list(getattr(config, "plugins", []))  # for a converting child
        self._batches = 0
        self._positions = 0
        self._busy = 0.0
        self._last_report = time.monotonic()
        self._outboxes: dict[int, Outbox] = {}  # id(client) -> its sending thread
        self._joining: deque = deque()  # clients added from another thread, not yet served
        self._wake: Connection | None = None  # add_client's signal to the serving loop
        self._accepting = joins is not None  # serve on with no client: more may join
        if joins is not None:  # the gym's NewClient messages
            self.controls.append(joins)

    def accept_clients(self) -> None:
        """Serve until stopped even with no client, and take clients added by `add_client`
        (call before `serve`)."""
        wake_in, self._wake = multiprocessing.Pipe(duplex=False)
        self.controls.append(wake_in)
        self._accepting = True

    def add_client(self, conn: Connection) -> None:
        """A new client from another thread (a Selfplayer that joined); served from the next
        turn of the loop."""
        if self._wake is None:
            raise RuntimeError("add_client before accept_clients")
        self._joining.append(conn)
        self._wake.send(None)

    @property
    def evaluator(self):
        """The evaluator of the newest iteration held."""
        return self.held[next(reversed(self.held))] if self.held else None

    def load(self, iteration: int) -> None:
        """Hold `iteration` as the newest; beyond HOLD iterations the oldest evaluator takes the
        new weights (its traced function is kept: a new trace per reload would grow memory).
        An iteration whose file was pruned (`train.keep_models`) before it could be loaded
        is skipped for the newest one."""
        while True:
            try:
                self._load(iteration)
                workmeter.tick()
                return
            except ModelPruned as error:
                newest = self.models.current_iteration()
                if newest <= iteration:
                    raise
                log.warning("%s; loading the newest, %d", error, newest)
                iteration = newest

    def _load(self, iteration: int) -> None:
        if iteration in self.held:
            self.held[iteration] = self.held.pop(iteration)
            return
        path = self.models.model_path(iteration)
        if not path.is_file():
            raise ModelPruned(f"model iteration {iteration} was pruned before it was loaded")
        evaluator = self._load_fast(path, iteration) if self.fast_files else None
        if evaluator is None and not path.is_file():  # gone while the fast path looked
            raise ModelPruned(f"model iteration {iteration} was pruned while it was loaded")
        oldest = self.held.pop(next(iter(self.held))) if len(self.held) >= HOLD else None
        if evaluator is None:
            try:
                evaluator = self._load_tensorflow(path, iteration, oldest)
            except Exception:
                if oldest is not None:  # still held: a request for it is answered
                    self.held = {oldest.iteration: oldest, **self.held}
                if path.is_file():
                    raise
                raise ModelPruned(
                    f"model iteration {iteration} was pruned while it was loaded"
                ) from None
        self.held[iteration] = evaluator
        log.info("loaded model iteration %d from %s (%s)", iteration, path, _path_name(evaluator))
        if self._portable(evaluator) is not None:
            for conn in self.live:
                self._send(conn, Reload(iteration))

    def _load_fast(self, path, iteration: int):
        """The iteration's evaluator from its fast-path file, or None (then TensorFlow, from
        now on: the network is the same in every iteration)."""
        evaluator = load_fast_model_or_none(self.learner, path, iteration, self._plugins)
        if evaluator is None and not path.is_file():
            return None  # pruned meanwhile (the caller says so): no reason to leave the path
        if evaluator is None:
            log.info("model iteration %d has no fast form here: TensorFlow from now on", iteration)
            self.fast_files = False
        return evaluator

    def _load_tensorflow(self, path, iteration: int, reuse):
        """The iteration's evaluator from its Keras file; `reuse` (an evaluator of an older
        iteration) takes the new weights when it can."""
        from gamegym.nets.tfsetup import configure_tensorflow, import_keras, load_model

        configure_tensorflow(
            self.config.use_gpu, self.config.gpu_memorylimit, threads=1, announce=True
        )  # a missing GPU: one line on the console
        import_keras().backend.clear_session()  # Keras' global name state would grow with every reload
        model = load_model(path)
        update = getattr(reuse, "update", None)
        if update is not None and update(model, iteration):
            return reuse
        return self.learner.make_evaluator(model, iteration, fast=self.config.numpy_fastpath)

    def _portable(self, evaluator):
        """The evaluator as the clients may run it themselves, or None."""
        if not self.config.evaluate_in_selfplayers:
            return None
        portable = getattr(evaluator, "portable", None)
        return portable() if portable is not None else None

    def serve(self, stop_event) -> None:
        """Answer the clients until the stop is asked and every client has left.

        A stop does not end the serving while a client's pipe is open: a Selfplayer finishes
        its move after the stop, and that move may need this process even after long quiet
        (one that evaluates its own leaves asks only for a new iteration's evaluator, one
        still starting asks for the first time).  The gym stops the Selfplayers first (killing
        one that does not stop in time), so each client pipe reaches its end; on a Ray node it kills
        the Selfplayer actors before it stops the node's Predictor actor, which waits for this
        loop a few seconds at most."""
        self.load(max(0, self.models.current_iteration()))
        timeout = self.config.batch_timeout_ms / 1000.0
        live = self.live  # clients that join are added to it
        while live or self._accepting:
            workmeter.tick()  # a turn of the loop, idle or not: this process is not stuck
            if stop_event.is_set() and not live:
                return  # stopping, and every client has left
            ready = wait(live + self.controls, timeout=1.0)
            if not ready:
                self._report(force=False)
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
                self._drop(conn)
                continue
            if isinstance(message, EvalRequest):
                pending.append((conn, message))
            elif isinstance(message, EvaluatorRequest):
                iteration = self.evaluator.iteration if message.iteration < 0 else message.iteration
                held = self.held.get(iteration)
                self._send(conn, EvaluatorUpdate(iteration, self._portable(held) if held else None))

    def _handle_control(self, control: Connection) -> None:
        """Act on a control message (a Reload from the Trainer)."""
        try:
            message = control.recv()
        except (EOFError, OSError):
            self.controls.remove(control)  # the Trainer is gone; the gym decides what follows
            return
        if isinstance(message, NewClient):  # a restarted Selfplayer, on a pipe of its own
            conn = cast(Connection, message.conn)
            self.live.append(conn)
        # (newer only: a restarted Predictor loads the newest at its start, then may read
        # announcements the Trainer made while no Predictor ran)
        if isinstance(message, Reload) and message.iteration > self.evaluator.iteration:
            self.load(message.iteration)
        while self._joining:
            conn = self._joining.popleft()
            self.live.append(conn)

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
                error = (
                    f"model iteration {iteration} is no longer held (the Predictor holds "
                    f"{sorted(self.held)})"
                )
                for conn, request in members:
                    self._send(conn, EvalResponse(request.request_id, iteration, {}, error))
                continue
            portable = self._portable(evaluator)
            if portable is not None and kind in portable.kinds:
                # these clients could have answered themselves: tell them the iteration
                for conn in {id(c): c for c, _ in members}.values():
                    self._send(conn, Reload(iteration))
            requests = [r for _, r in members]
            inputs = {
                name: np.concatenate([r.inputs[name] for r in requests])
                if len(requests) > 1
                else requests[0].inputs[name]
                for name in requests[0].inputs
            }
            outputs = evaluator.run(kind, inputs)
            offset = 0
            for conn, request in members:
                n = _size(request)
                self._send(
                    conn,
                    EvalResponse(
                        request.request_id,
                        iteration,
                        {k: v[offset : offset + n] for k, v in outputs.items()},
                    ),
                )
                offset += n
            self._batches += 1
            self._positions += offset
        self._busy += time.perf_counter() - start

    def _send(self, conn: Connection, message) -> None:
        """Queue a message for a client (see Outbox)."""
        outbox = self._outboxes.get(id(conn))
        if outbox is None or outbox.conn is not conn:
            outbox = self._outboxes[id(conn)] = Outbox(conn)
        outbox.put(message)

    def _drop(self, conn: Connection) -> None:
        """A client is gone: close its end of the pipe (once its outbox has stopped), so no
        file descriptor is left behind however often Selfplayers are restarted."""
        outbox = self._outboxes.pop(id(conn), None)
        if outbox is not None and outbox.conn is conn:
            outbox.close()  # its thread closes the pipe when it stops
        else:
            conn.close()

    def _report(self, force: bool) -> None:
        now = time.monotonic()
        if self.reports is None or (not force and now - self._last_report < 2.0):
            return
        self.reports.put(
            Report(
                "predictor",
                os.getpid(),
                {
                    "batches": self._batches,
                    "positions": self._positions,
                    "busy_s": self._busy,
                    "seconds": now - self._last_report,
                    "iteration": self.evaluator.iteration if self.evaluator else -1,
                },
            )
        )
        self._batches = self._positions = 0
        self._busy = 0.0
        self._last_report = now


def _size(request: EvalRequest) -> int:
    """The batch size of a request (the length of its arrays)."""
    return len(next(iter(request.inputs.values()))) if request.inputs else 0


class Outbox:
    """Sends a client's messages from a thread of its own, in order.

    The Predictor's loop never waits on a client's pipe: a client may be sending a large
    request while an answer larger than the pipe's buffers waits to go to it (MuZero's hidden
    states), and a loop blocked in that send would never read the request that blocks the
    client.  A client that is gone makes its sends fail; they are dropped, and the pipe is
    closed only when the loop drops the client (`close`): closed under the loop's wait for
    its clients, it would stop the Predictor ("handle is closed")."""

    def __init__(self, conn: Connection):
        self.conn = conn
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name="outbox", daemon=True)
        self.thread.start()

    def put(self, message) -> None:
        self.queue.put(message)

    def close(self) -> None:
        """Stop the thread and close the pipe (the client is gone)."""
        self.queue.put(None)

    def _run(self) -> None:
        gone = False
        try:
            while True:
                message = self.queue.get()
                if message is None:
                    return
                if gone:
                    continue
                try:
                    self.conn.send(message)
                except (OSError, ValueError):  # that Selfplayer is gone (or its pipe closed)
                    gone = True  # the loop reads the pipe's end next, and drops the client
        finally:
            self.conn.close()


@child_entry("predictor")
def predictor_main(session_path, config, clients, control, joins=None, *, stop_event, reports=None):
    from gamegym.data.session import Session

    predictor = Predictor(Session(session_path), config, clients, control, reports, joins)
    predictor.serve(stop_event)


def _path_name(evaluator) -> str:
    """How an evaluator runs its network, for the log: "onnx", "onnx int8", "numpy", or its
    class's name (TensorFlow's evaluators)."""
    path = getattr(evaluator, "path", type(evaluator).__name__)
    precision = getattr(evaluator, "precision", "float32")
    return path if precision == "float32" else f"{path} {precision}"
