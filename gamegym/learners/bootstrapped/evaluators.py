"""The model call behind "q" requests (the bootstrapped learner): positions -> Q of every head.

A "q" request has inputs {"x": float32 [B, *input_shape]} and answers {"q": float32 [B, K, A]},
the value of each action id for the mover at each position, per head, in [-1, 1]; only the
container's online Q-network answers (gamegym.learners.bootstrapped.qnetwork).

  QValuesCall      the Predictor's call: on the CPU fast path when the online network's layers
                   are known to it (ONNX Runtime, or NumPy for dense networks without it),
                   except convolutional ones when TensorFlow has a GPU; a traced TensorFlow
                   function otherwise.  Imports TensorFlow.
  QValuesFastCall  the fast path's call, without TensorFlow: what `portable()` hands to the
                   Selfplayers and what the Predictor reads from a fast-path model file
  q_form           the online network as a fast form (gamegym.nets.portable)
"""

from __future__ import annotations

import numpy as np

from gamegym.nets.inference import OneNetFastCall, take_weights
from gamegym.nets.numpynet import NumpyNet
from gamegym.nets.portable import FAST_PATH_MAX_PARAMS, FastForm, register_form

__all__ = ["QValuesCall", "QValuesFastCall", "q_form"]


def q_form(model) -> FastForm | None:
    """The online Q-network of a bootstrapped container as a fast form, or None when it has a
    layer the fast path does not know or more than FAST_PATH_MAX_PARAMS weights."""
    try:
        online = model.get_layer("online")
    except ValueError:
        return None
    if online.count_params() > FAST_PATH_MAX_PARAMS:
        return None
    net = NumpyNet.from_keras(online)
    if net is None or len(net.inputs) != 1 or len(net.outputs) != 1:
        return None
    return FastForm(QValuesFastCall.form, {"q": net}, {})


def _check(kind: str, x: np.ndarray, input_shape: tuple) -> None:
    if kind != "q":
        raise ValueError(f"this model answers 'q' requests, not {kind!r}")
    if x.shape[1:] != input_shape:
        raise ValueError(
            f"positions of shape {x.shape[1:]} do not fit the model's input shape {input_shape}"
        )


@register_form("q")
class QValuesFastCall(OneNetFastCall):
    """The online Q-network on the CPU fast path; pickles without TensorFlow."""

    kinds = ("q",)

    def search_request(self, x: np.ndarray) -> tuple[str, dict]:
        """The request self-play makes for positions x (benchmarks)."""
        return "q", {"x": x}

    def run(self, kind: str, inputs: dict) -> dict:
        x = np.asarray(inputs["x"], np.float32)
        _check(kind, x, self.input_shape)
        return {"q": self.net(x)[0]}


class QValuesCall:
    """The Predictor's model call for "q" requests (see the module docstring)."""

    kinds = ("q",)

    def __init__(self, model, iteration: int = 0, fast: bool = True):
        from gamegym.nets.tfsetup import import_tensorflow

        tf = import_tensorflow()
        self.iteration = iteration
        self.online = model.get_layer("online")
        self.input_shape = tuple(int(d) for d in self.online.inputs[0].shape[1:])
        self._conv = not tf.config.list_logical_devices("GPU")  # the GPU path stays TensorFlow
        self.fast = self._fast_path(model, iteration) if fast else None
        if self.fast is not None:
            self.online = None  # the weights live in the fast path's copy
            return
        online = self.online

        @tf.function(
            input_signature=[tf.TensorSpec([None, *self.input_shape], tf.float32)],
            reduce_retracing=True,
        )
        def predict(x):
            return online(x, training=False)

        self._predict = predict

    def _fast_path(self, model, iteration: int) -> QValuesFastCall | None:
        form = q_form(model)
        return QValuesFastCall.from_form(form, iteration, self._conv) if form else None

    @property
    def path(self) -> str:
        """Where the model runs: "onnx", "numpy" or "tensorflow" (the Predictor's log, the
        bench)."""
        return self.fast.path if self.fast is not None else "tensorflow"

    def portable(self) -> QValuesFastCall | None:
        """The fast path's evaluator for a process without TensorFlow, or None."""
        return self.fast

    def search_request(self, x: np.ndarray) -> tuple[str, dict]:
        """The request self-play makes for positions x (benchmarks)."""
        return "q", {"x": x}

    def update(self, model, iteration: int) -> bool:
        """Take a new iteration's online weights (same network); False when the shapes differ."""
        if self.fast is not None:
            fast = self._fast_path(model, iteration)
            if fast is None:
                return False
            self.fast, self.iteration = fast, iteration
            return True
        if not take_weights(self.online, model.get_layer("online")):
            return False
        self.iteration = iteration
        return True

    def run(self, kind: str, inputs: dict) -> dict:
        if self.fast is not None:
            return self.fast.run(kind, inputs)
        x = np.asarray(inputs["x"], np.float32)
        _check(kind, x, self.input_shape)
        return {"q": self._predict(x).numpy()}
