"""Network evaluations as a service: what a search asks of a model, and who answers.

A *model service* takes requests of a kind (the learner names its kinds: AlphaZero asks
"evaluate" of positions, MuZero "initial" and "recurrent", Bootstrapped "q") with named input
arrays, and answers each with named output arrays and the model iteration that made them:

    answer = service.submit("evaluate", {"x": x})      # sent now
    outputs, iteration = answer()                      # waits for the answer

Two services, one protocol, so the same self-play and player code runs in every setting:
- `LocalService` (here): the model evaluator called in this process (players,
  debug_single_process);
- `gamegym.runtime.pipes.PipeService`: a Selfplayer's end of its pipe to the batching Predictor
  (no TensorFlow).

`PolicyValueCall` is AlphaZero's model call (softmax policy and value of positions), used by the
Predictor and by `LocalService`; `NetworkPositionValuer` turns vertices into the "evaluate"
requests an MCTS needs, with an evaluation cache per model iteration.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import ClassVar, TypeVar

import numpy as np

from gamegym.nets.numpynet import NumpyNet
from gamegym.nets.portable import FAST_PATH_MAX_PARAMS, FastForm, choose_runner, register_form

__all__ = [
    "StaleIteration",
    "LocalService",
    "NetworkPositionValuer",
    "PolicyValueCall",
    "PolicyValueFastCall",
    "fast_net",
    "evaluate_form",
    "softmax",
]

Answer = Callable[[], tuple[dict, int]]  # () -> (outputs by name, model iteration)


class StaleIteration(RuntimeError):
    """A request asked for a model iteration the Predictor no longer holds."""


class LocalService:
    """The same protocol answered in this process by a model evaluator (no batching)."""

    def __init__(self, evaluator):
        self.evaluator = evaluator
        self.requests = 0

    def submit(self, kind: str, inputs: dict, iteration: int = -1) -> Answer:
        if iteration not in (-1, self.evaluator.iteration):
            raise StaleIteration(
                f"iteration {iteration} asked of a service holding {self.evaluator.iteration}"
            )
        self.requests += 1
        outputs = self.evaluator.run(kind, inputs)
        result = (outputs, self.evaluator.iteration)
        return lambda: result


class NetworkPositionValuer:
    """An MCTS evaluator over a model service: numpify, cache, one "evaluate" request per batch.

    Calling it with vertices returns (probs float32 [B, A], values float32 [B]); `submit` sends
    now and answers later, so the search can select its next batch meanwhile.  Answers are
    remembered per model iteration (`cache_size` entries, oldest out first, and no more than
    `CACHE_BYTES` of policies: a large action space holds fewer); a new iteration clears them.
    The answers live in arrays used as a ring (a vertex's row in `_row`), so a batch's hits
    and new answers are copied in one step each, whatever their number.
    """

    CACHE_BYTES = 64 * 2**20

    def __init__(self, graph, service, cache_size: int = 0):
        self.graph = graph
        self.service = service
        self.cache_size = min(cache_size, self.CACHE_BYTES // (4 * graph.action_space_size + 200))
        self.iteration = -1  # model iteration of the latest answer
        self.cache_hits = 0
        self._row: dict = {}  # vertex -> its row in the ring, for self.iteration
        size = self.cache_size
        self._vertex_at: list = [None] * size  # row -> the vertex it holds
        self._probs = np.empty((size, graph.action_space_size), np.float32)
        self._values = np.empty(size, np.float32)
        self._next_row = 0  # the row written next: the oldest one, once all are used

    @property
    def requests(self) -> int:
        return self.service.requests

    def cached(self) -> list:
        """The vertices whose answers are held, oldest first."""
        start, size = self._next_row, self.cache_size
        return sorted(self._row, key=lambda vertex: (self._row[vertex] - start) % size)

    def __call__(self, vertices: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray]:
        return self.submit(vertices)()

    def probe(self) -> int:
        """The model iteration that answers now: one request of the game's first root, past
        the cache (which it leaves as it is)."""
        x = self.graph.numpify(self.graph.roots[0])[None]
        return self.service.submit("evaluate", {"x": x})()[1]

    def submit(self, vertices: Sequence[Hashable]) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
        get = self._row.get
        rows = [get(vertex, -1) for vertex in vertices]
        misses = [i for i, row in enumerate(rows) if row < 0]
        hits = len(rows) - len(misses)
        self.cache_hits += hits
        if not misses:  # (copies: a later answer may overwrite these rows)
            return _answered(self._probs[rows], self._values[rows])
        probs = np.empty((len(rows), self.graph.action_space_size), np.float32)
        values = np.empty(len(rows), np.float32)
        if hits:
            found = [i for i, row in enumerate(rows) if row >= 0]
            held = [rows[i] for i in found]
            probs[found], values[found] = self._probs[held], self._values[held]
        missed = [vertices[i] for i in misses]
        answer = self.service.submit("evaluate", {"x": self.graph.numpify_many(missed)})

        def collect() -> tuple[np.ndarray, np.ndarray]:
            outputs, iteration = answer()
            if iteration != self.iteration:
                self._clear()
                self.iteration = iteration
            got_probs, got_values = outputs["probs"], outputs["values"]
            probs[misses], values[misses] = got_probs, got_values
            if self.cache_size:
                self._remember(missed, got_probs, got_values)
            return probs, values

        return collect

    def _remember(self, missed: list, probs: np.ndarray, values: np.ndarray) -> None:
        """Write new answers over the oldest rows (of more answers than rows, the last)."""
        size, start = self.cache_size, self._next_row
        if len(missed) > size:
            missed, probs, values = missed[-size:], probs[-size:], values[-size:]
        row_of, vertex_at = self._row, self._vertex_at
        written = [(start + j) % size for j in range(len(missed))]
        for row, vertex in zip(written, missed):
            old = vertex_at[row]
            if old is not None and row_of.get(old) == row:
                del row_of[old]
            vertex_at[row] = vertex
            row_of[vertex] = row
        self._probs[written], self._values[written] = probs, values
        self._next_row = (start + len(missed)) % size

    def _clear(self) -> None:
        self._row.clear()
        self._vertex_at = [None] * self.cache_size
        self._next_row = 0


def _answered(probs: np.ndarray, values: np.ndarray) -> Callable[[], tuple]:
    return lambda: (probs, values)


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax of float32 [B, A] logits."""
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def evaluate_form(model) -> FastForm | None:
    """AlphaZero's model as a fast form (gamegym.nets.portable): the net "evaluate" (positions
    -> logits, value); None when the model has a layer the fast path does not know, is not a
    (policy, value) model, or has more than FAST_PATH_MAX_PARAMS weights."""
    if model.count_params() > FAST_PATH_MAX_PARAMS:
        return None
    net = NumpyNet.from_keras(model)
    if net is None or len(net.outputs) != 2 or len(net.inputs) != 1:
        return None
    return FastForm(PolicyValueFastCall.form, {"evaluate": net}, {})


def fast_net(model, conv: bool = True):
    """The model on the CPU fast path (`gamegym.nets.portable.choose_runner`: an ONNX Runtime
    session when onnxruntime is installed, else NumPy for models without convolutions); None
    when the model has no fast form or has convolutions and `conv` is False."""
    form = evaluate_form(model)
    return choose_runner(form.nets["evaluate"], conv) if form is not None else None


_OneNet = TypeVar("_OneNet", bound="OneNetFastCall")


class OneNetFastCall:
    """A model call on the CPU fast path that runs the one network `form_net` of a fast form,
    without TensorFlow.  It pickles, so a Selfplayer can run it itself
    (`gamegym.runtime.pipes.PipeService`)."""

    # the fast form it runs, set by gamegym.nets.portable.register_form: also the name of its
    # one network in that form
    form: ClassVar[str]

    def __init__(self, net, iteration: int):
        self.net = net
        self.iteration = iteration
        self.input_shape = tuple(net.input_shape)

    @classmethod
    def from_form(
        cls: type[_OneNet], form: FastForm, iteration: int, conv: bool = True
    ) -> _OneNet | None:
        """The evaluator of a fast form, or None when its net cannot run here."""
        net = choose_runner(form.nets[cls.form], conv, (form.int8 or {}).get(cls.form))
        return cls(net, iteration) if net is not None else None

    @property
    def path(self) -> str:
        """ "onnx" or "numpy"."""
        return "numpy" if isinstance(self.net, NumpyNet) else "onnx"

    @property
    def precision(self) -> str:
        """ "float32", or "int8" when it runs its net's int8 form (gamegym.nets.quantize)."""
        return getattr(self.net, "precision", "float32")

    def portable(self):
        """Itself: it runs in any process (a Predictor that loaded it from a fast-path file
        hands it out as it is)."""
        return self


@register_form("evaluate")
class PolicyValueFastCall(OneNetFastCall):
    """AlphaZero's model call on the CPU fast path (`fast_net`)."""

    kinds = ("evaluate",)

    def run(self, kind: str, inputs: dict) -> dict:
        """{"x": positions} -> {"probs": [B, A], "values": [B]}."""
        _check_kind(kind)
        probs, values = self(inputs["x"])
        return {"probs": probs, "values": values}

    def search_request(self, x: np.ndarray) -> tuple[str, dict]:
        """The request a search makes for its leaves, for positions x (benchmarks)."""
        return "evaluate", {"x": x}

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        _check_shape(x, self.input_shape)
        logits, values = self.net(x)
        return softmax(logits), values.reshape(-1)


def take_weights(target, source) -> bool:
    """Copy the weights of Keras model `source` into `target`, the same network of another
    iteration (a traced function over `target` stays valid); False when the shapes differ."""
    new = source.get_weights()
    if [w.shape for w in new] != [w.shape for w in target.get_weights()]:
        return False
    target.set_weights(new)
    return True


def _check_kind(kind: str) -> None:
    if kind != "evaluate":
        raise ValueError(f"this model answers 'evaluate' requests, not {kind!r}")


def _check_shape(x: np.ndarray, input_shape: tuple) -> None:
    if x.shape[1:] != input_shape:
        raise ValueError(
            f"positions of shape {x.shape[1:]} do not fit the model's input shape {input_shape}"
        )


class PolicyValueCall:
    """AlphaZero's model call: positions x [B, *input_shape] -> softmax policy [B, A] and value
    [B] in [-1, 1].  Answers the "evaluate" kind of request.

    Unless `fast` is False, models the CPU fast path knows run there (`fast_net`: ONNX Runtime,
    or NumPy for dense models), except convolutional ones when TensorFlow has a GPU; everything
    else runs through one traced TensorFlow function.  `portable()` is the fast path's evaluator,
    which another process can run without TensorFlow.
    """

    kinds = ("evaluate",)

    def __init__(self, model, iteration: int = 0, fast: bool = True):
        from gamegym.nets.tfsetup import import_tensorflow

        tf = import_tensorflow()
        self.iteration = iteration
        self.model = model
        shape = model.inputs[0].shape[1:]
        self.input_shape = tuple(int(d) for d in shape)
        self.fast = None
        self._conv = not tf.config.list_logical_devices("GPU")  # the GPU path stays TensorFlow
        if fast:
            net = fast_net(model, self._conv)
            self.fast = PolicyValueFastCall(net, iteration) if net is not None else None
        if self.fast is not None:
            self.model = None  # the weights live in the fast path's copy
            return

        @tf.function(
            input_signature=[tf.TensorSpec([None, *self.input_shape], tf.float32)],
            reduce_retracing=True,
        )
        def predict(x):
            outputs = model(x, training=False)
            if isinstance(outputs, dict):
                logits, value = outputs["policy"], outputs["value"]
            else:
                logits, value = outputs[0], outputs[1]
            return tf.nn.softmax(logits, axis=-1), tf.reshape(value, [-1])

        self._predict = predict

    @property
    def path(self) -> str:
        """Where the model runs: "onnx", "numpy" or "tensorflow"."""
        return self.fast.path if self.fast is not None else "tensorflow"

    def portable(self) -> PolicyValueFastCall | None:
        """This iteration's evaluator in a form a process without TensorFlow runs (None when
        the model runs in TensorFlow)."""
        return self.fast

    def update(self, model, iteration: int) -> bool:
        """Take the weights of a new iteration of the same network, keeping the traced function
        (a new trace per reload would grow memory).  False when the shapes differ."""
        if self.fast is not None:
            net = fast_net(model, self._conv)
            if net is None:
                return False
            self.fast, self.iteration = PolicyValueFastCall(net, iteration), iteration
            return True
        if not take_weights(self.model, model):
            return False
        self.iteration = iteration
        return True

    def run(self, kind: str, inputs: dict) -> dict:
        """The Predictor's entry: {"x": positions} -> {"probs": [B, A], "values": [B]}."""
        _check_kind(kind)
        probs, values = self(inputs["x"])
        return {"probs": probs, "values": values}

    def search_request(self, x: np.ndarray) -> tuple[str, dict]:
        """The request a search makes for its leaves, for positions x (benchmarks)."""
        return "evaluate", {"x": x}

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = np.asarray(x, np.float32)
        if self.fast is not None:
            return self.fast(x)
        _check_shape(x, self.input_shape)
        probs, values = self._predict(x)
        return probs.numpy(), values.numpy()
