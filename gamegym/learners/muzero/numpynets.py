"""MuZero's networks run with NumPy (no TensorFlow): the Predictor's fast path for small dense
networks, and the evaluator it hands to processes that run the model themselves (`portable()`).

`NumpyGraph` computes a functional Keras model made of Flatten, Dense (plain activations),
Concatenate and gamegym's MinMaxScale layers; `MuZeroNumpyEvaluator` answers MuZero's "initial"
and "recurrent" requests with the three networks of a container model (see
gamegym.learners.muzero.nets) and pickles without TensorFlow.
"""
from __future__ import annotations

import numpy as np

from gamegym.nets.inference import softmax
from gamegym.nets.numpynet import ACTIVATIONS

__all__ = ["MuZeroNumpyEvaluator", "NumpyGraph", "PARTS", "MINMAX_EPSILON"]

PARTS = ("representation", "dynamics", "prediction")   # the container's layers: h, g, f
MINMAX_EPSILON = 1e-6   # gamegym.nets.layers.MinMaxScale.EPSILON


class MuZeroNumpyEvaluator:
    """MuZero's model call in NumPy:
      "initial"    {"x": observations}                 -> {"hidden", "probs", "values"}
      "recurrent"  {"hidden": [B, ...], "action": [B]} -> {"hidden", "reward", "probs", "values"}
    """

    kinds = ("initial", "recurrent")

    def __init__(self, parts: tuple, iteration: int, input_shape: tuple, actions: int):
        self.parts = parts            # NumpyGraph of h, g, f
        self.iteration = iteration
        self.input_shape = input_shape
        self.actions = actions
        self._eye = np.eye(actions, dtype=np.float32)

    @classmethod
    def from_keras(cls, model, iteration: int = 0) -> MuZeroNumpyEvaluator | None:
        """The container's networks in NumPy, or None when a layer has no NumPy form."""
        layers = [model.get_layer(name) for name in PARTS]
        parts = tuple(NumpyGraph.from_keras(layer) for layer in layers)
        if None in parts:
            return None
        shape = tuple(int(d) for d in layers[0].inputs[0].shape[1:])
        return cls(parts, iteration, shape, int(layers[1].inputs[1].shape[-1]))

    def run(self, kind: str, inputs: dict) -> dict:
        h, g, f = self.parts
        if kind == "initial":
            x = np.asarray(inputs["x"], np.float32)
            if x.shape[1:] != self.input_shape:
                raise ValueError(f"positions of shape {x.shape[1:]} do not fit the model's "
                                 f"input shape {self.input_shape}")
            (hidden,) = h(x)
            logits, value = f(hidden)
            return {"hidden": hidden, "probs": softmax(logits), "values": value.reshape(-1)}
        if kind == "recurrent":
            action = np.asarray(inputs["action"], np.int64)
            hidden, reward = g(inputs["hidden"], self._eye[action])
            logits, value = f(hidden)
            return {"hidden": hidden, "reward": reward.reshape(-1), "probs": softmax(logits),
                    "values": value.reshape(-1)}
        raise ValueError(f"a MuZero model answers 'initial' and 'recurrent' requests, "
                         f"not {kind!r}")


class NumpyGraph:
    """A NumPy forward pass of a functional Keras model made of Flatten, Dense (plain
    activations), Concatenate and MinMaxScale layers; `from_keras` gives None for anything
    else.  Called with the model's inputs in order, returns its outputs as a list."""

    def __init__(self, steps: list, inputs: list, outputs: list):
        self.steps = steps      # (name, kind, input names, W, b, activation), in graph order
        self.inputs = inputs
        self.outputs = outputs

    @classmethod
    def from_keras(cls, model) -> NumpyGraph | None:
        steps = []
        for layer in model.layers:
            kind = type(layer).__name__
            if kind == "InputLayer":
                continue
            nodes = getattr(layer, "_inbound_nodes", [])
            if len(nodes) != 1:
                return None
            sources = [_producer(t) for t in nodes[0].input_tensors]
            if None in sources:
                return None
            if kind == "Dense":
                activation = getattr(layer.activation, "__name__", "")
                if activation not in ACTIVATIONS:
                    return None
                weights = layer.get_weights()
                bias = weights[1] if len(weights) > 1 else np.zeros(weights[0].shape[1])
                steps.append((layer.name, kind, sources, weights[0].astype(np.float32),
                              bias.astype(np.float32), activation))
            elif kind in ("Flatten", "MinMaxScale") or (
                    kind == "Concatenate" and layer.axis in (-1, 1)):
                steps.append((layer.name, kind, sources, None, None, None))
            else:
                return None
        inputs = [_producer(t) for t in model.inputs]
        outputs = [_producer(t) for t in model.outputs]
        known = {name for name, *_ in steps} | set(inputs)
        if None in inputs or any(o not in known for o in outputs):
            return None
        return cls(steps, inputs, outputs)

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        values = {name: np.asarray(a, np.float32) for name, a in zip(self.inputs, arrays)}
        for name, kind, sources, weights, bias, activation in self.steps:
            x = [values[s] for s in sources]
            if kind == "Dense":
                values[name] = ACTIVATIONS[activation](x[0] @ weights + bias)
            elif kind == "Flatten":
                values[name] = x[0].reshape(len(x[0]), -1)
            elif kind == "Concatenate":
                values[name] = np.concatenate(x, axis=-1)
            else:   # MinMaxScale
                axes = tuple(range(1, x[0].ndim))
                low = x[0].min(axis=axes, keepdims=True)
                high = x[0].max(axis=axes, keepdims=True)
                values[name] = (x[0] - low) / (high - low + MINMAX_EPSILON)
        return [values[name] for name in self.outputs]


def _producer(tensor) -> str | None:
    history = getattr(tensor, "_keras_history", None)
    return history[0].name if history is not None else None
