"""A Keras model as a small program of NumPy steps: the CPU fast path's network.

For the small networks of board games a TensorFlow call costs far more in per-call overhead than
in arithmetic.  `NumpyNet.from_keras` reads a functional model made of known layers (InputLayer,
Flatten, Reshape, Dense, EinsumDense "bkh,kha->bka", Conv2D, BatchNormalization, Rescaling,
Activation, ReLU, Add, Concatenate, gamegym's MinMaxScale, and functional models nested in it)
into steps, folding each batch normalisation into the convolution or dense layer before it and
each activation into the step that feeds it; anything else returns None and the caller keeps
TensorFlow.  `NetBuilder` puts several models into one net (MuZero's representation followed by
its prediction).  Calling the net runs the steps with NumPy float32 (a convolution is one matrix
product over its input patches); `gamegym.nets.onnxnet` runs the same steps in ONNX Runtime.
Tests check both against the Keras model.

A step is (name, op, inputs, params):
  "dense"    params w [K, F], b [F], act             x [..., K] -> [..., F]
  "conv"     params w [kh, kw, C, F], b [F], pads (top, bottom, left, right), act
                                                     x [B, H, W, C] -> [B, H', W', F]
  "einsum"   params w [K, H, A], b [K, A], act       x [B, K, H] -> [B, K, A], per head k
  "scale"    params mul [C] or [], add [C] or [], act   a batch normalisation or a rescaling
  "add"      params act                              the sum of the inputs
  "act"      params act
  "flatten"                                          x [B, ...] -> [B, prod(...)]
  "reshape"  params shape                            x [B, ...] -> [B, *shape]
  "concat"                                           the inputs joined on the last axis
  "minmax"   params epsilon                          each sample scaled to [0, 1]:
                                                     (x - min) / (max - min + epsilon)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

__all__ = ["NumpyNet", "NetBuilder", "ACTIVATIONS"]


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
    return np.maximum(x, 0.0, out=x)  # in place: every step makes a new array first


ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "linear": lambda x: x,
    "swish": _swish,
    "silu": _swish,
    "relu": _relu,
    "tanh": np.tanh,
    "sigmoid": _sigmoid,
}


class Step(NamedTuple):
    name: str
    op: str
    inputs: tuple
    params: dict


class NumpyNet:
    """The outputs of a Keras model, computed by NumPy float32 steps (see the module doc).

    `inputs` are (name, shape without the batch axis) pairs, in the order the net is called
    with; `outputs` name the steps (or inputs) whose values it returns, in order."""

    def __init__(self, steps: list[Step], inputs: list[tuple[str, tuple]], outputs: list[str]):
        self.steps = steps
        self.inputs = [(name, tuple(int(d) for d in shape)) for name, shape in inputs]
        self.outputs = outputs

    @property
    def input_name(self) -> str:
        return self.inputs[0][0]

    @property
    def input_shape(self) -> tuple:
        """The shape of the first input (the position), without the batch axis."""
        return self.inputs[0][1]

    @property
    def has_conv(self) -> bool:
        return any(step.op == "conv" for step in self.steps)

    @classmethod
    def from_keras(cls, model) -> NumpyNet | None:
        """Read a model, or None when it has a layer or an option this fast path does not know."""
        builder = NetBuilder()
        sources = [
            builder.input(_producer(t) or f"input_{k}", t.shape[1:])
            for k, t in enumerate(model.inputs)
        ]
        outputs = builder.add_model(model, sources)
        return builder.build(outputs) if outputs is not None else None

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        """The model's outputs, in order, for its inputs in order (each [B, *shape])."""
        values = {name: np.asarray(a, np.float32) for (name, _), a in zip(self.inputs, arrays)}
        for step in self.steps:
            values[step.name] = _run(step, [values[i] for i in step.inputs])
        return [values[name] for name in self.outputs]


class NetBuilder:
    """Puts the steps of one or more Keras models into one net: models nested in a model (a
    Functional layer) are inlined with their name as a prefix ("torso/dense_0"), and a model's
    inputs can be fed from the outputs of one added before (MuZero's h then f)."""

    def __init__(self):
        self.steps: list[Step] = []
        self.inputs: list[tuple[str, tuple]] = []
        self.names: set = set()

    def input(self, name: str, shape) -> str:
        """Add an input of the net; returns its name."""
        self.inputs.append((name, tuple(int(d) for d in shape)))
        self.names.add(name)
        return name

    def add_model(self, model, sources: list[str], prefix: str = "") -> list[str] | None:
        """Add the steps of functional `model` fed by `sources` (names of inputs or steps, one
        per model input); returns the names of its outputs, or None when a layer is unknown."""
        refs = {}  # (layer name, output index) in this model -> step or input name
        for tensor, source in zip(model.inputs, sources):
            refs[_key(tensor)] = source
        for layer in model.layers:
            kind = type(layer).__name__
            if kind == "InputLayer":
                continue
            tensors = _inbound(layer)
            if tensors is None or any(_key(t) not in refs for t in tensors):
                return None
            inputs = [refs[_key(t)] for t in tensors]
            if kind in ("Functional", "Model", "Sequential") and hasattr(layer, "layers"):
                outputs = self.add_model(layer, inputs, f"{prefix}{layer.name}/")
                if outputs is None:
                    return None
                refs.update({(layer.name, k): name for k, name in enumerate(outputs)})
                continue
            step = _step(layer, prefix + layer.name, inputs, [len(t.shape) for t in tensors])
            if step is None or step.name in self.names:
                return None
            self.steps.append(step)
            self.names.add(step.name)
            refs[(layer.name, 0)] = step.name
        keys = [_key(t) for t in model.outputs]
        return [refs[k] for k in keys] if all(k in refs for k in keys) else None

    def build(self, outputs: list[str]) -> NumpyNet:
        """The net of the steps added so far, returning `outputs` (batch norms and activations
        folded, see `_fuse`)."""
        return NumpyNet(_fuse(self.steps, outputs), self.inputs, list(outputs))


def _run(step: Step, xs: list) -> np.ndarray:
    p = step.params
    if step.op in _SHAPE_OPS:
        return _SHAPE_OPS[step.op](xs, p)
    if step.op == "dense":
        h = xs[0] @ p["w"]
        h += p["b"]
    elif step.op == "conv":
        h = _conv(xs[0], p["w"], p["pads"])
        h += p["b"]
    elif step.op == "einsum":  # "bkh,kha->bka": one product per head
        h = np.matmul(xs[0].transpose(1, 0, 2), p["w"]).transpose(1, 0, 2)
        h += p["b"]
    elif step.op == "scale":
        h = xs[0] * p["mul"]
        h += p["add"]
    elif step.op == "add":
        h = xs[0] + xs[1]
        for more in xs[2:]:
            h += more
    else:  # "act"
        h = xs[0].copy() if p["act"] == "relu" else xs[0]
    return ACTIVATIONS[p["act"]](h)


def _minmax(xs: list, p: dict) -> np.ndarray:
    x = xs[0]
    axes = tuple(range(1, x.ndim))
    low = x.min(axis=axes, keepdims=True)
    high = x.max(axis=axes, keepdims=True)
    return (x - low) / (high - low + np.float32(p["epsilon"]))


_SHAPE_OPS = {  # steps without weights nor activation
    "flatten": lambda xs, p: xs[0].reshape(len(xs[0]), -1),
    "reshape": lambda xs, p: xs[0].reshape(len(xs[0]), *p["shape"]),
    "concat": lambda xs, p: np.concatenate(xs, axis=-1),
    "minmax": _minmax,
}


def _conv(x: np.ndarray, w: np.ndarray, pads: tuple) -> np.ndarray:
    """Stride-1 convolution of x [B, H, W, C] by w [kh, kw, C, F] with zero padding `pads`:
    one matrix product of the kh*kw shifted copies of x (im2col) with the kernel."""
    kh, kw, c, f = w.shape
    top, bottom, left, right = pads
    if any(pads):
        padded = np.zeros(
            (x.shape[0], x.shape[1] + top + bottom, x.shape[2] + left + right, c), np.float32
        )
        padded[:, top : top + x.shape[1], left : left + x.shape[2]] = x
        x = padded
    b, h, wd = x.shape[0], x.shape[1] - kh + 1, x.shape[2] - kw + 1
    if kh == kw == 1:
        return (x.reshape(-1, c) @ w.reshape(c, f)).reshape(b, h, wd, f)
    cols = np.empty((b, h, wd, kh * kw, c), np.float32)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, :, i * kw + j] = x[:, i : i + h, j : j + wd]
    return (cols.reshape(-1, kh * kw * c) @ w.reshape(-1, f)).reshape(b, h, wd, f)


def _step(layer, name: str, inputs: list[str], ranks: list[int]) -> Step | None:
    """The step of one layer (None when this fast path does not know it); `ranks` are those of
    its input tensors, batch axis included."""
    kind = type(layer).__name__
    config = layer.get_config()
    act = getattr(layer, "activation", None)
    act = getattr(act, "__name__", None) if act is not None else "linear"
    if act not in ACTIVATIONS:
        return None
    if kind == "Add":
        return Step(name, "add", tuple(inputs), {"act": "linear"})
    if kind == "Concatenate":
        axis = config.get("axis", -1)
        return Step(name, "concat", tuple(inputs), {}) if axis in (-1, ranks[0] - 1) else None
    if len(inputs) != 1:
        return None
    if kind in _SIMPLE:
        return _SIMPLE[kind](layer, name, inputs, config, act)
    if kind in ("Dense", "Conv2D"):
        weights = layer.get_weights()
        w = weights[0].astype(np.float32)
        b = (weights[1] if len(weights) > 1 else np.zeros(w.shape[-1])).astype(np.float32)
        if kind == "Dense":
            return Step(name, "dense", tuple(inputs), {"w": w, "b": b, "act": act})
        if (
            tuple(config["strides"]) != (1, 1)
            or tuple(config["dilation_rate"]) != (1, 1)
            or config.get("groups", 1) != 1
            or config["data_format"] != "channels_last"
            or config["padding"] not in ("same", "valid")
        ):
            return None
        return Step(
            name,
            "conv",
            tuple(inputs),
            {"w": w, "b": b, "pads": _pads(config["padding"], w.shape), "act": act},
        )
    if kind == "EinsumDense":
        return _einsum_step(layer, name, inputs, config, act)
    if kind == "BatchNormalization" and config["axis"] in (-1, ranks[0] - 1, [-1], [ranks[0] - 1]):
        mean, variance = (
            np.asarray(v, np.float64) for v in (layer.moving_mean, layer.moving_variance)
        )
        gamma = np.asarray(layer.gamma, np.float64) if layer.gamma is not None else 1.0
        beta = np.asarray(layer.beta, np.float64) if layer.beta is not None else 0.0
        mul = gamma / np.sqrt(variance + config["epsilon"])
        return Step(
            name, "scale", tuple(inputs), {"mul": mul, "add": beta - mean * mul, "act": "linear"}
        )
    return None


def _einsum_step(layer, name, inputs, config, act) -> Step | None:
    """EinsumDense "bkh,kha->bka" (one dense layer per head k), with a bias over "ka" or none."""
    if config["equation"] != "bkh,kha->bka" or config.get("bias_axes") not in (None, "", "ka"):
        return None
    weights = layer.get_weights()
    w = weights[0].astype(np.float32)
    b = weights[1] if len(weights) > 1 else np.zeros(w.shape[::2])
    return Step(name, "einsum", tuple(inputs), {"w": w, "b": b.astype(np.float32), "act": act})


def _relu_step(layer, name, inputs, config, act) -> Step | None:
    plain = (
        config.get("max_value") is None
        and not config.get("negative_slope")
        and not config.get("threshold")
    )
    return Step(name, "act", tuple(inputs), {"act": "relu"}) if plain else None


def _flatten_step(layer, name, inputs, config, act) -> Step | None:
    if config.get("data_format") not in (None, "channels_last"):
        return None
    return Step(name, "flatten", tuple(inputs), {})


def _rescaling_step(layer, name, inputs, config, act) -> Step | None:
    mul = np.asarray(config["scale"], np.float64)
    add = np.asarray(config["offset"], np.float64)
    if mul.ndim > 1 or add.ndim > 1:
        return None
    return Step(name, "scale", tuple(inputs), {"mul": mul, "add": add, "act": "linear"})


_SIMPLE = {  # layer kind -> its step, for layers of one input
    "Flatten": _flatten_step,
    "Activation": lambda layer, name, inputs, config, act: Step(
        name, "act", tuple(inputs), {"act": act}
    ),
    "ReLU": _relu_step,
    "Reshape": lambda layer, name, inputs, config, act: Step(
        name, "reshape", tuple(inputs), {"shape": tuple(int(d) for d in config["target_shape"])}
    ),
    "MinMaxScale": lambda layer, name, inputs, config, act: Step(
        name, "minmax", tuple(inputs), {"epsilon": float(getattr(layer, "EPSILON", 1e-6))}
    ),
    "Rescaling": _rescaling_step,
}


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
    return [
        Step(
            s.name,
            s.op,
            s.inputs,
            {
                key: np.asarray(v, np.float32) if isinstance(v, np.ndarray) else v
                for key, v in s.params.items()
            },
        )
        for s in steps
    ]


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


def _key(tensor) -> tuple | None:
    """(layer name, output index) of the layer that made a symbolic tensor."""
    history = getattr(tensor, "_keras_history", None)
    return (history[0].name, history[2]) if history is not None else None


def _inbound(layer) -> list | None:
    """The tensors feeding `layer` (None when it is called more than once)."""
    nodes = getattr(layer, "_inbound_nodes", [])
    if len(nodes) != 1:
        return None
    tensors = list(nodes[0].input_tensors)
    return tensors if tensors and None not in (_key(t) for t in tensors) else None
