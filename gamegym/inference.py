"""Network evaluations as a service: what a search asks of a model, and who answers.

A *model service* takes requests of a kind (the learner names its kinds: AlphaZero asks
"evaluate" of positions, MuZero "initial" and "recurrent", Bootstrapped "q") with named input
arrays, and answers each with named output arrays and the model iteration that made them:

    answer = service.submit("evaluate", {"x": x})      # sent now
    outputs, iteration = answer()                      # waits for the answer

Two services, one protocol, so the same self-play and player code runs in every setting:
- `PipeService`: a Selfplayer's end of its pipe to the batching Predictor (no TensorFlow);
- `LocalService`: the model evaluator called in this process (players, debug_single_process).

`ModelEvaluator` is AlphaZero's model call (softmax policy and value of positions), used by the
Predictor and by `LocalService`; `PositionEvaluator` turns vertices into the "evaluate" requests
an MCTS needs, with an evaluation cache per model iteration.
"""
from __future__ import annotations

import time
from multiprocessing.connection import Connection
from typing import Callable, Hashable, Sequence

import numpy as np

from gamegym.messages import EvalRequest, EvalResponse
from gamegym.numpynet import NumpyDenseModel

__all__ = ["PredictorTimeout", "StaleIteration", "PipeService", "LocalService",
           "PositionEvaluator", "ModelEvaluator", "softmax"]

Answer = Callable[[], tuple[dict, int]]   # () -> (outputs by name, model iteration)


class PredictorTimeout(RuntimeError):
    """The Predictor did not answer in time (it died or hangs)."""


class StaleIteration(RuntimeError):
    """A request asked for a model iteration the Predictor no longer holds."""


class PipeService:
    """Requests to the Predictor over a pipe; answers are matched to requests by id."""

    def __init__(self, conn: Connection, timeout: float = 120.0):
        self.conn = conn
        self.timeout = timeout
        self.requests = 0
        self._next_id = 0

    def submit(self, kind: str, inputs: dict, iteration: int = -1) -> Answer:
        """Send a request now; the returned function waits for its answer.  Answers must be
        collected in the order submitted."""
        self._next_id += 1
        self.requests += 1
        request_id = self._next_id
        self.conn.send(EvalRequest(request_id, kind, inputs, iteration))

        def collect() -> tuple[dict, int]:
            response = self._receive(request_id)
            if response.error:
                raise StaleIteration(response.error)
            return response.outputs, response.iteration

        return collect

    def _receive(self, request_id: int) -> EvalResponse:
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self.conn.poll(left):
                raise PredictorTimeout(f"no answer from the Predictor within {self.timeout:g} s")
            response = self.conn.recv()
            if isinstance(response, EvalResponse) and response.request_id == request_id:
                return response
            # an answer to an earlier request (given up before a restart): skip it


class LocalService:
    """The same protocol answered in this process by a model evaluator (no batching)."""

    def __init__(self, evaluator):
        self.evaluator = evaluator
        self.requests = 0

    def submit(self, kind: str, inputs: dict, iteration: int = -1) -> Answer:
        if iteration not in (-1, self.evaluator.iteration):
            raise StaleIteration(f"iteration {iteration} asked of a service holding "
                                 f"{self.evaluator.iteration}")
        self.requests += 1
        outputs = self.evaluator.run(kind, inputs)
        result = (outputs, self.evaluator.iteration)
        return lambda: result


class PositionEvaluator:
    """An MCTS evaluator over a model service: numpify, cache, one "evaluate" request per batch.

    Calling it with vertices returns (probs float32 [B, A], values float32 [B]); `submit` sends
    now and answers later, so the search can select its next batch meanwhile.  Answers are
    remembered per model iteration (`cache_size` entries, oldest out first); a new iteration
    clears them.
    """

    def __init__(self, graph, service, cache_size: int = 0):
        self.graph = graph
        self.service = service
        self.cache_size = cache_size
        self.iteration = -1            # model iteration of the latest answer
        self._cache: dict = {}         # vertex -> (probs [A], value), for self.iteration
        self.cache_hits = 0

    @property
    def requests(self) -> int:
        return self.service.requests

    def __call__(self, vertices: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray]:
        return self.submit(vertices)()

    def submit(self, vertices: Sequence[Hashable]) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
        n = len(vertices)
        probs = np.empty((n, self.graph.action_space_size), np.float32)
        values = np.empty(n, np.float32)
        cache = self._cache
        misses = []
        for i, vertex in enumerate(vertices):
            hit = cache.get(vertex)
            if hit is None:
                misses.append(i)
            else:
                probs[i], values[i] = hit
        self.cache_hits += n - len(misses)
        if not misses:
            return lambda: (probs, values)
        x = np.stack([self.graph.numpify(vertices[i]) for i in misses])
        answer = self.service.submit("evaluate", {"x": x})

        def collect() -> tuple[np.ndarray, np.ndarray]:
            outputs, iteration = answer()
            if iteration != self.iteration:
                cache.clear()
                self.iteration = iteration
            got_probs, got_values = outputs["probs"], outputs["values"]
            for j, i in enumerate(misses):
                probs[i], values[i] = got_probs[j], got_values[j]
                if self.cache_size:
                    if len(cache) >= self.cache_size:
                        del cache[next(iter(cache))]
                    cache[vertices[i]] = (got_probs[j], float(got_values[j]))
            return probs, values

        return collect


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax of float32 [B, A] logits."""
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


class ModelEvaluator:
    """AlphaZero's model call: positions x [B, *input_shape] -> softmax policy [B, A] and value
    [B] in [-1, 1].  Answers the "evaluate" kind of request.

    Small dense models run through the NumPy fast path (`gamegym.numpynet`) unless `fast` is
    False; everything else through one traced TensorFlow function.
    """

    FAST_PATH_MAX_PARAMS = 2_000_000
    kinds = ("evaluate",)

    def __init__(self, model, iteration: int = 0, fast: bool = True):
        import tensorflow as tf
        self.iteration = iteration
        self.model = model
        shape = model.inputs[0].shape[1:]
        self.input_shape = tuple(int(d) for d in shape)
        self.numpy = None
        if fast and model.count_params() <= self.FAST_PATH_MAX_PARAMS:
            self.numpy = NumpyDenseModel.from_keras(model)
        if self.numpy is not None:
            self.model = None  # the weights live in the NumPy copy
            return

        @tf.function(input_signature=[tf.TensorSpec([None, *self.input_shape], tf.float32)],
                     reduce_retracing=True)
        def predict(x):
            outputs = model(x, training=False)
            if isinstance(outputs, dict):
                logits, value = outputs["policy"], outputs["value"]
            else:
                logits, value = outputs[0], outputs[1]
            return tf.nn.softmax(logits, axis=-1), tf.reshape(value, [-1])

        self._predict = predict

    def update(self, model, iteration: int) -> bool:
        """Take the weights of a new iteration of the same network, keeping the traced function
        (a new trace per reload would grow memory).  False when the shapes differ."""
        if self.numpy is not None:
            fast = NumpyDenseModel.from_keras(model)
            if fast is None:
                return False
            self.numpy, self.iteration = fast, iteration
            return True
        new = model.get_weights()
        if [w.shape for w in new] != [w.shape for w in self.model.get_weights()]:
            return False
        self.model.set_weights(new)
        self.iteration = iteration
        return True

    def run(self, kind: str, inputs: dict) -> dict:
        """The Predictor's entry: {"x": positions} -> {"probs": [B, A], "values": [B]}."""
        if kind != "evaluate":
            raise ValueError(f"this model answers 'evaluate' requests, not {kind!r}")
        probs, values = self(inputs["x"])
        return {"probs": probs, "values": values}

    def search_request(self, x: np.ndarray) -> tuple[str, dict]:
        """The request a search makes for its leaves, for positions x (benchmarks)."""
        return "evaluate", {"x": x}

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = np.asarray(x, np.float32)
        if x.shape[1:] != self.input_shape:
            raise ValueError(f"positions of shape {x.shape[1:]} do not fit the model's input "
                             f"shape {self.input_shape}")
        if self.numpy is not None:
            logits, values = self.numpy(x)
            return softmax(logits), values
        probs, values = self._predict(x)
        return probs.numpy(), values.numpy()
