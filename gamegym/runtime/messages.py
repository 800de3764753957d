"""Typed messages between the gym's processes (all picklable), and the pipes that carry the
children's reports to the gym."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from gamegym.nets.protocols import PortableCall


@dataclass
class EvalRequest:
    """A batch of network evaluations asked of the Predictor (see gamegym.nets.inference).

    The learner names the kinds and their arrays; AlphaZero's "evaluate" has
    inputs {"x": float32 [B, *input_shape]}, the numpify of each leaf."""

    request_id: int
    kind: str  # which model call, e.g. "evaluate" (AlphaZero), "recurrent" (MuZero)
    inputs: dict  # name -> array [B, ...]; every array has the same batch size B
    iteration: int = -1  # the model iteration that must answer; -1: the newest


@dataclass
class EvalResponse:
    """The Predictor's answer to one EvalRequest.

    "evaluate" answers {"probs": float32 [B, A] softmax policy over action ids,
    "values": float32 [B] value from each leaf's mover's view}."""

    request_id: int
    iteration: int  # model iteration that evaluated the batch
    outputs: dict = field(default_factory=dict)  # name -> array [B, ...]
    error: str = ""  # why there is no answer (an iteration no longer held)


@dataclass
class Reload:
    """A new model iteration was published: the Trainer tells the Predictor, and the Predictor
    tells its clients when they run the model themselves (`predict.evaluate_in_selfplayers`)."""

    iteration: int


@dataclass
class EvaluatorRequest:
    """A Predictor client asks for the evaluator of a model iteration in a form it can run
    itself, without TensorFlow (see gamegym.runtime.pipes.PipeService)."""

    iteration: int = -1  # -1: the newest


@dataclass
class EvaluatorUpdate:
    """The Predictor's answer to an EvaluatorRequest: the evaluator (an object with
    `iteration`, `kinds` and `run(kind, inputs) -> outputs`), or None when the model does not
    run outside TensorFlow or the session turned this off."""

    iteration: int
    evaluator: PortableCall | None = None


@dataclass
class Report:
    """Figures a process reports to the gym's monitor (role, pid, counters since last report)."""

    role: str
    pid: int
    figures: dict = field(default_factory=dict)


@dataclass
class NewClient:
    """The gym hands the Predictor its end of a restarted Selfplayer's pipe: each incarnation
    of a Selfplayer has a pipe of its own, so no answer meant for a dead one reaches it."""

    conn: object  # a multiprocessing Connection (duplex)


class ReportSender:
    """A child's end of its report pipe: `put(report)` as on a queue.  The pipe is this
    process incarnation's own, so a child killed mid-message tears only its own pipe (the gym
    reads it to the EOF and drops it) and holds no lock that another process waits on, as a
    shared `multiprocessing.Queue`'s writer lock would be held forever."""

    def __init__(self, conn) -> None:
        self._conn = conn
        self._lock = threading.Lock()  # the Counters thread and the main thread both report

    def put(self, report) -> None:
        with self._lock:
            try:
                self._conn.send(report)
            except OSError:
                pass  # the gym is gone: no one reads reports any more

    def close(self) -> None:
        self._conn.close()

    def __getstate__(self) -> dict:  # to the child, when it is spawned
        return {"conn": self._conn}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["conn"])  # type: ignore[misc]


class ReportInbox:
    """The gym's ends of the report pipes: `sender()` makes one for each child it spawns (the
    gym closes its copy of the sender once the child has started); `take()` reads them all."""

    MAX_TAKE = 10_000  # reports taken in one call at most (the gym's loop goes on)

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self._ends: list[Connection] = []

    def sender(self) -> ReportSender:
        receive, send = self.ctx.Pipe(duplex=False)
        self._ends.append(receive)
        return ReportSender(send)

    def take(self, timeout: float) -> list:
        """The reports waiting, after up to `timeout` seconds for the first.  A pipe whose
        writer is gone (its EOF, a message torn by a kill) is closed and forgotten.  With no
        pipe it waits out `timeout` (as `connection.wait` on none does)."""
        taken: list = []
        ready = self._ready(timeout)
        while ready and len(taken) < self.MAX_TAKE:
            for end in ready:
                try:
                    taken.append(end.recv())
                except Exception:  # noqa: BLE001 - EOF, a torn or unreadable message: gone
                    self._ends.remove(end)
                    end.close()
            ready = self._ready(0.0)
        return taken

    def _ready(self, timeout: float) -> list[Connection]:
        from multiprocessing.connection import wait

        ready = wait(self._ends, timeout)
        return [end for end in self._ends if end in ready]

    def close(self) -> None:
        for end in self._ends:
            end.close()
        self._ends = []
