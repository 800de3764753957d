"""A Keras model as a small program of NumPy steps: the CPU fast path's network.

For the small networks of board games a TensorFlow call costs far more in per-call overhead than
in arithmetic.  `NumpyNet.from_keras` reads a functional model made of known layers (InputLayer,
Flatten, Dense, Conv2D, BatchNormalization, Activation, ReLU, Add) into steps, folding each
batch normalisation into the convolution or dense layer before it and each activation into the
step that feeds it; anything else returns None and the caller keeps TensorFlow.  Calling the net
runs the steps with NumPy float32 (a convolution is one matrix product over its input patches);
`gamegym.nets.onnxnet` runs the same steps in ONNX Runtime.  Tests check both against the Keras model.

A step is (name, op, inputs, params):
  "dense"    params w [K, F], b [F], act             x [..., K] -> [..., F]
  "conv"     params w [kh, kw, C, F], b [F], pads (top, bottom, left, right), act
                                                     x [B, H, W, C] -> [B, H', W', F]
  "scale"    params mul [C], add [C], act            a batch normalisation kept apart
  "add"      params act                              the sum of the inputs
  "act"      params act
  "flatten"                                          x [B, ...] -> [B, prod(...)]
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

__all__ = ["NumpyNet", "ACTIVATIONS"]


def _sigmoid(x):
    # exp(-x) overflows to inf below about -88 in float32, which gives the right limit (0)
    # but a RuntimeWarning.  Silencing it adds about 1 µs a call on a 32x128 batch; the
    # overflow-free form 0.5 * (1 + tanh(x / 2)) would add about 10.
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def _swish(x):
    with np.errstate(over="ignore"):
        return x / (1.0 + np.exp(-x))


def _relu(x):
    return np.maximum(x, 0.0, out=x)   # in place: every step makes a new array first


ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "linear": lambda x: x, "swish": _swish, "silu": _swish, "relu": _relu,
    "tanh": np.tanh, "sigmoid": _sigmoid}


class Step(NamedTuple):
    name: str
    op: str
    inputs: tuple
    params: dict


class NumpyNet:
    """The outputs of a Keras model, computed by NumPy float32 steps (see the module doc)."""

    def __init__(self, steps: list[Step], input_name: str, outputs: list[str],
                 input_shape: tuple):
        self.steps = steps
        self.input_name = input_name
        self.outputs = outputs
        self.input_shape = input_shape

    @property
    def has_conv(self) -> bool:
        return any(step.op == "conv" for step in self.steps)

    @classmethod
    def from_keras(cls, model) -> NumpyNet | None:
        """Read a model, or None when it has a layer or an option this fast path does not know."""
        if len(model.inputs) != 1:
            return None
        steps: list[Step] = []
        input_name = None
        for layer in model.layers:
            if type(layer).__name__ == "InputLayer":
                input_name = layer.name
                continue
            inputs = _inbound(layer)
            step = _step(layer, inputs) if inputs else None
            if step is None:
                return None
            steps.append(step)
        produced = [_producer(t) for t in model.outputs]
        known = {s.name for s in steps} | {input_name}
        outputs = [o for o in produced if o is not None and o in known]
        if input_name is None or len(outputs) != len(produced):
            return None
        shape = tuple(int(d) for d in model.inputs[0].shape[1:])
        return cls(_fuse(steps, outputs), input_name, outputs, shape)

    def __call__(self, x: np.ndarray) -> list[np.ndarray]:
        """The model's outputs, in order, for inputs x [B, *input_shape]."""
        values = {self.input_name: np.asarray(x, np.float32)}
        for step in self.steps:
            values[step.name] = _run(step, [values[i] for i in step.inputs])
        return [values[name] for name in self.outputs]


def _run(step: Step, xs: list) -> np.ndarray:
    p = step.params
    if step.op == "flatten":
        return xs[0].reshape(len(xs[0]), -1)
    if step.op == "dense":
        h = xs[0] @ p["w"]
        h += p["b"]
    elif step.op == "conv":
        h = _conv(xs[0], p["w"], p["pads"])
        h += p["b"]
    elif step.op == "scale":
        h = xs[0] * p["mul"]
        h += p["add"]
    elif step.op == "add":
        h = xs[0] + xs[1]
        for more in xs[2:]:
            h += more
    else:   # "act"
        h = xs[0].copy() if p["act"] == "relu" else xs[0]
    return ACTIVATIONS[p["act"]](h)


def _conv(x: np.ndarray, w: np.ndarray, pads: tuple) -> np.ndarray:
    """Stride-1 convolution of x [B, H, W, C] by w [kh, kw, C, F] with zero padding `pads`:
    one matrix product of the kh*kw shifted copies of x (im2col) with the kernel."""
    kh, kw, c, f = w.shape
    top, bottom, left, right = pads
    if any(pads):
        padded = np.zeros((x.shape[0], x.shape[1] + top + bottom, x.shape[2] + left + right, c),
                          np.float32)
        padded[:, top:top + x.shape[1], left:left + x.shape[2]] = x
        x = padded
    b, h, wd = x.shape[0], x.shape[1] - kh + 1, x.shape[2] - kw + 1
    if kh == kw == 1:
        return (x.reshape(-1, c) @ w.reshape(c, f)).reshape(b, h, wd, f)
    cols = np.empty((b, h, wd, kh * kw, c), np.float32)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, :, i * kw + j] = x[:, i:i + h, j:j + wd]
    return (cols.reshape(-1, kh * kw * c) @ w.reshape(-1, f)).reshape(b, h, wd, f)


def _step(layer, inputs: list[str]) -> Step | None:
    """The step of one layer (None when this fast path does not know it)."""
    kind = type(layer).__name__
    config = layer.get_config()
    act = getattr(layer, "activation", None)
    act = getattr(act, "__name__", None) if act is not None else "linear"
    if act not in ACTIVATIONS:
        return None
    if kind == "Add":
        return Step(layer.name, "add", tuple(inputs), {"act": "linear"})
    if len(inputs) != 1:
        return None
    if kind == "Flatten" and config.get("data_format") in (None, "channels_last"):
        return Step(layer.name, "flatten", tuple(inputs), {})
    if kind == "Activation":
        return Step(layer.name, "act", tuple(inputs), {"act": act})
    if kind == "ReLU":
        plain = (config.get("max_value") is None and not config.get("negative_slope")
                 and not config.get("threshold"))
        return Step(layer.name, "act", tuple(inputs), {"act": "relu"}) if plain else None
    if kind in ("Dense", "Conv2D"):
        weights = layer.get_weights()
        w = weights[0].astype(np.float32)
        b = (weights[1] if len(weights) > 1 else np.zeros(w.shape[-1])).astype(np.float32)
        if kind == "Dense":
            return Step(layer.name, "dense", tuple(inputs), {"w": w, "b": b, "act": act})
        if (tuple(config["strides"]) != (1, 1) or tuple(config["dilation_rate"]) != (1, 1)
                or config.get("groups", 1) != 1 or config["data_format"] != "channels_last"
                or config["padding"] not in ("same", "valid")):
            return None
        return Step(layer.name, "conv", tuple(inputs),
                    {"w": w, "b": b, "pads": _pads(config["padding"], w.shape), "act": act})
    if kind == "BatchNormalization" and config["axis"] in (-1, len(layer.input.shape) - 1):
        mean, variance = (np.asarray(v, np.float64) for v in
                          (layer.moving_mean, layer.moving_variance))
        gamma = np.asarray(layer.gamma, np.float64) if layer.gamma is not None else 1.0
        beta = np.asarray(layer.beta, np.float64) if layer.beta is not None else 0.0
        mul = gamma / np.sqrt(variance + config["epsilon"])
        return Step(layer.name, "scale", tuple(inputs),
                    {"mul": mul, "add": beta - mean * mul, "act": "linear"})
    return None


def _pads(padding: str, shape: tuple) -> tuple:
    """(top, bottom, left, right) zero padding; "same" puts the odd one at the bottom/right, as
    TensorFlow does."""
    if padding == "valid":
        return (0, 0, 0, 0)
    kh, kw = shape[0], shape[1]
    return ((kh - 1) // 2, kh // 2, (kw - 1) // 2, kw // 2)


def _fuse(steps: list[Step], outputs: list[str]) -> list[Step]:
    """Fold each batch normalisation into the conv/dense step before it, and each activation
    into the step that feeds it, where that step has no other consumer and no activation yet.
    Weights end as float32; the folding itself is done in float64."""
    steps = list(steps)
    changed = True
    while changed:
        changed = False
        consumers: dict = {}
        for step in steps:
            for name in step.inputs:
                consumers[name] = consumers.get(name, 0) + 1
        for name in outputs:
            consumers[name] = consumers.get(name, 0) + 1
        by_name = {step.name: k for k, step in enumerate(steps)}
        for k, step in enumerate(steps):
            source = by_name.get(step.inputs[0]) if len(step.inputs) == 1 else None
            if source is None or consumers[step.inputs[0]] != 1 or step.op not in ("scale", "act"):
                continue
            before = steps[source]
            if before.params.get("act", "") != "linear":
                continue
            merged = _merge(before, step)
            if merged is not None:
                steps[source] = merged
                del steps[k]
                changed = True
                break
    return [Step(s.name, s.op, s.inputs, {key: np.asarray(v, np.float32)
                                          if isinstance(v, np.ndarray) else v
                                          for key, v in s.params.items()}) for s in steps]


def _merge(before: Step, step: Step) -> Step | None:
    """`before` followed by `step` (a scale or an activation) as one step named after `step`."""
    params = dict(before.params)
    if step.op == "act":
        params["act"] = step.params["act"]
    elif before.op in ("dense", "conv"):
        w = np.asarray(params["w"], np.float64)
        params["w"] = w * step.params["mul"]
        params["b"] = params["b"] * step.params["mul"] + step.params["add"]
    else:
        return None
    return Step(step.name, before.op, before.inputs, params)


def _producer(tensor) -> str | None:
    history = getattr(tensor, "_keras_history", None)
    return history[0].name if history is not None else None


def _inbound(layer) -> list[str] | None:
    """The names of the layers feeding `layer` (None when it is called more than once)."""
    nodes = getattr(layer, "_inbound_nodes", [])
    if len(nodes) != 1:
        return None
    produced = [_producer(t) for t in nodes[0].input_tensors]
    names = [n for n in produced if n is not None]
    return names if names and len(names) == len(produced) else None
