"""A Selfplayer's end of its pipe to the batching Predictor: `PipeService`, the model service
(gamegym.nets.protocols.ModelService) that sends a search's requests to the Predictor as
messages (gamegym.runtime.messages) and answers them itself when the Predictor hands out a model
it can run (the CPU fast path), and the errors of a Predictor that is gone or does not answer.
No TensorFlow: a Selfplayer imports it.
"""

from __future__ import annotations

import time
from multiprocessing.connection import Connection

from gamegym.nets.inference import StaleIteration
from gamegym.nets.protocols import Answer, PortableCall
from gamegym.runtime.messages import (
    EvalRequest,
    EvalResponse,
    EvaluatorRequest,
    EvaluatorUpdate,
    Reload,
)

__all__ = ["PipeService", "PredictorTimeout", "PredictorGone"]


class PredictorTimeout(RuntimeError):
    """The Predictor did not answer in time (it died or hangs)."""


class PredictorGone(RuntimeError):
    """The Predictor's end of the pipe is closed (it stopped or died)."""


_GONE = "the Predictor's end of the pipe is closed: it stopped or died (its log says why)"


class PipeService:
    """Requests to the Predictor over a pipe; answers are matched to requests by id.

    When the Predictor hands out its evaluator in a form this process can run itself (the
    model on the CPU fast path, `predict.evaluate_in_selfplayers`), requests that evaluator
    answers (its kinds, for its iteration or the newest) are answered here, with no round trip;
    the newest `HOLD` such evaluators are kept.  The Predictor announces an iteration with a
    small `Reload` (when it loads one, and when a request shows this end lacks it), read here
    at most every `CHECK_S`; the evaluator itself comes only as the answer to an
    `EvaluatorRequest`, while this end reads, so a large message never meets a full pipe in
    both directions.
    """

    HOLD = 2  # the Predictor's rule: the newest iteration and the one before it
    CHECK_S = 0.05  # how often `submit` looks for a Reload on the pipe

    def __init__(self, conn: Connection, timeout: float = 120.0):
        self.conn = conn
        self.timeout = timeout
        self.requests = 0  # requests sent to the Predictor
        self.local_batches = 0  # requests answered in this process
        self.local_positions = 0
        self.local: dict[int, PortableCall] = {}  # iteration -> evaluator, oldest first
        self._next_id = 0
        self._inbox: dict[int, EvalResponse] = {}  # answers read before they were collected
        self._wanted: int | None = None  # an iteration announced by a Reload, to fetch
        self._next_check = 0.0

    def submit(self, kind: str, inputs: dict, iteration: int = -1) -> Answer:
        """Send a request now (or answer it here); the returned function waits for its answer.
        Answers must be collected in the order submitted."""
        now = time.monotonic()
        if now >= self._next_check:
            self._next_check = now + self.CHECK_S
            self._read_pending()
        if self._wanted is not None:
            self._fetch(self._wanted)
        evaluator = self._local_for(kind, iteration)
        if evaluator is not None:
            self.local_batches += 1
            self.local_positions += len(next(iter(inputs.values()))) if inputs else 0
            result = (evaluator.run(kind, inputs), evaluator.iteration)
            return lambda: result
        self._next_id += 1
        self.requests += 1
        request_id = self._next_id
        self._send(EvalRequest(request_id, kind, inputs, iteration))

        def collect() -> tuple[dict, int]:
            response = self._receive(request_id)
            if response.error:
                raise StaleIteration(response.error)
            return response.outputs, response.iteration

        return collect

    def _local_for(self, kind: str, iteration: int):
        if not self.local:
            return None
        evaluator = self.local.get(iteration if iteration >= 0 else next(reversed(self.local)))
        return evaluator if evaluator is not None and kind in evaluator.kinds else None

    def _fetch(self, iteration: int) -> None:
        """Ask the Predictor for its evaluator of `iteration` and wait for it."""
        self._wanted = None
        self._send(EvaluatorRequest(iteration))
        while True:
            message = self._next_message(time.monotonic() + self.timeout)
            if isinstance(message, EvaluatorUpdate):
                break
        if message.evaluator is not None:
            self.local.pop(message.iteration, None)
            self.local[message.iteration] = message.evaluator
            for old in sorted(self.local)[: -self.HOLD]:
                del self.local[old]
        if self._wanted in self.local:
            self._wanted = None  # announced again while this one was on its way

    def _send(self, message) -> None:
        try:
            self.conn.send(message)
        except ConnectionError as error:  # a broken pipe: no one reads the other end
            raise PredictorGone(_GONE) from error

    def _recv(self):
        try:
            return self.conn.recv()
        except (EOFError, ConnectionError) as error:
            raise PredictorGone(_GONE) from error

    def _read_pending(self) -> None:
        while self.conn.poll(0):
            self._take(self._recv())

    def _take(self, message) -> None:
        if isinstance(message, EvalResponse):
            self._inbox[message.request_id] = message
        elif isinstance(message, Reload) and self._would_hold(message.iteration):
            self._wanted = message.iteration

    def _would_hold(self, iteration: int) -> bool:
        """True for an iteration not held here that would be kept among the newest HOLD."""
        return iteration not in self.local and (
            len(self.local) < self.HOLD or iteration > min(self.local)
        )

    def _next_message(self, deadline: float):
        left = deadline - time.monotonic()
        if left <= 0 or not self.conn.poll(left):
            raise PredictorTimeout(f"no answer from the Predictor within {self.timeout:g} s")
        message = self._recv()
        self._take(message)
        return message

    def _receive(self, request_id: int) -> EvalResponse:
        deadline = time.monotonic() + self.timeout
        for old in [k for k in self._inbox if k < request_id]:
            del self._inbox[old]  # answers to requests given up (before a restart)
        while request_id not in self._inbox:
            self._next_message(deadline)
        return self._inbox.pop(request_id)
