"""The steps of a `gamegym.nets.numpynet.NumpyNet` run by ONNX Runtime (the conv networks' CPU path).

Convolutions are where a residual network spends its time, and ONNX Runtime's kernels use the
processor's widest vector instructions whatever BLAS NumPy was built with; a call also costs a
few microseconds where a TensorFlow call costs hundreds.  The graph is written from the steps
(batch normalisation already folded into the convolutions), in NCHW inside: one transpose at
the input, and one back wherever a tensor leaves the convolutions (a Flatten keeps Keras' (h, w,
c) order).  The net pickles without its session, so a process that receives it (a Selfplayer)
opens its own, on one thread.  Given the bytes of an int8 form of that graph
(`gamegym.nets.quantize`), it runs those instead.

Every graph is checked before ONNX Runtime sees it (`check_graph`): the int8 graph comes from a
file in the session folder, and an ONNX model may do more than a network's arithmetic (custom
operator domains, functions, subgraphs, weights read from other files).  Only the operators
this module's writer and ONNX Runtime's static quantization of its graphs emit (`ALLOWED_OPS`,
standard domain) pass; anything else is refused with OnnxGraphError naming it.

Needs the `onnx` package to write the graph and `onnxruntime` to run it; `available()` says
whether both import.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["OnnxNet", "OnnxGraphError", "ALLOWED_OPS", "available", "check_graph"]

OPSET = 17
IR_VERSION = 8  # the IR of opset 17: runtimes older than the onnx package still read it


# the operators of the graphs written here (_WRITERS, activations, outputs) and of their int8
# forms (quantize_static, QDQ format): a graph with any other is not one of ours
ALLOWED_OPS = frozenset(
    {
        "Add",
        "Concat",
        "Conv",
        "Div",
        "Flatten",
        "Identity",
        "MatMul",
        "Mul",
        "ReduceMax",
        "ReduceMin",
        "Relu",
        "Reshape",
        "Shape",
        "Sigmoid",
        "Sub",
        "Tanh",
        "Transpose",
        "QuantizeLinear",
        "DequantizeLinear",
    }
)
STANDARD_DOMAINS = ("", "ai.onnx")


class OnnxGraphError(ValueError):
    """An ONNX model that gamegym's converters could not have written: it is not run."""


def check_graph(model_bytes: bytes) -> None:
    """Refuse (OnnxGraphError) an ONNX model that is not made of `ALLOWED_OPS` of the standard
    domain alone: one that imports another operator set, defines functions, has a subgraph
    (an If, a Loop), or reads tensors from files beside it."""
    import onnx

    try:
        model = onnx.load_from_string(model_bytes)
    except Exception as error:  # noqa: BLE001 (protobuf's DecodeError and kin)
        raise OnnxGraphError(f"not a readable ONNX model ({type(error).__name__})") from None
    other = sorted({o.domain for o in model.opset_import} - set(STANDARD_DOMAINS))
    if other:
        raise OnnxGraphError(f"the ONNX model imports operator sets {other}")
    if len(model.functions):
        raise OnnxGraphError("the ONNX model defines functions")
    graph = model.graph
    if len(graph.sparse_initializer):
        raise OnnxGraphError("the ONNX model has sparse initializers")
    for node in graph.node:
        if node.domain not in STANDARD_DOMAINS or node.op_type not in ALLOWED_OPS:
            op = f"{node.domain}:{node.op_type}" if node.domain else node.op_type
            raise OnnxGraphError(
                f"the ONNX model has a node {node.name or '(unnamed)'!r} of operator {op!r}, "
                f"which gamegym's converters never write (they write {', '.join(sorted(ALLOWED_OPS))})"
            )
        for attribute in node.attribute:
            if attribute.type not in _PLAIN_ATTRIBUTES:
                raise OnnxGraphError(
                    f"the ONNX model's node {node.name or node.op_type!r} has an attribute "
                    f"{attribute.name!r} of type {attribute.type} (a subgraph or tensor)"
                )
    for tensor in graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL or len(tensor.external_data):
            raise OnnxGraphError(
                f"the ONNX model reads tensor {tensor.name!r} from a file outside it"
            )


# attribute types a node of ours may carry: FLOAT, INT, STRING, FLOATS, INTS, STRINGS
_PLAIN_ATTRIBUTES = (1, 2, 3, 6, 7, 8)


def available() -> bool:
    """True when onnx and onnxruntime both import."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


class OnnxNet:
    """A NumpyNet's outputs computed by an ONNX Runtime session (one thread); `quantized`: the
    ONNX model of its int8 form, run instead of the float32 graph."""

    def __init__(self, net, quantized: bytes | None = None):
        self.inputs = list(net.inputs)
        self.input_shape = net.input_shape
        self.outputs = list(net.outputs)
        self.precision = "float32" if quantized is None else "int8"
        self.model_bytes = _graph(net) if quantized is None else quantized
        check_graph(self.model_bytes)  # OnnxGraphError: never given to ONNX Runtime
        self._session: Any = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_session": None}

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        """The model's outputs, in order, for its inputs in order (each [B, *shape])."""
        if self._session is None:
            self._session = _session(self.model_bytes)
        return self._session.run(
            None,
            {_input_name(k): np.ascontiguousarray(a, np.float32) for k, a in enumerate(arrays)},
        )


def _input_name(k: int) -> str:
    """The graph's name of the net's k-th input: "x", then "x1", "x2", ..."""
    return "x" if k == 0 else f"x{k}"


def _session(model_bytes: bytes):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # the processes already share the cores
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


class _Writer:
    """Nodes and weights of the graph, with each tensor's layout tracked."""

    def __init__(self):
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes, self.weights = [], []
        self.layout: dict = {}  # step name -> (onnx tensor name, "nhwc" | "nchw")
        self._count = 0

    def fresh(self, stem: str) -> str:
        self._count += 1
        return f"{stem}_{self._count}"

    def node(self, op: str, inputs: list, stem: str, **attributes) -> str:
        out = self.fresh(stem)
        self.nodes.append(self.helper.make_node(op, inputs, [out], **attributes))
        return out

    def weight(self, array: np.ndarray, stem: str, dtype=np.float32) -> str:
        name = self.fresh(stem)
        self.weights.append(self.numpy_helper.from_array(np.asarray(array, dtype), name))
        return name

    def get(self, name: str, layout: str) -> str:
        """Tensor `name` in `layout` ("nhwc" or "nchw"); a "flat" tensor (not rank 4) as it is."""
        tensor, have = self.layout[name]
        if have in (layout, "flat"):
            return tensor
        perm = [0, 3, 1, 2] if layout == "nchw" else [0, 2, 3, 1]
        return self.node("Transpose", [tensor], f"{name}_{layout}", perm=perm)

    def activation(self, tensor: str, act: str, stem: str) -> str:
        if act == "linear":
            return tensor
        if act in ("swish", "silu"):
            gate = self.node("Sigmoid", [tensor], stem)
            return self.node("Mul", [tensor, gate], stem)
        op = {"relu": "Relu", "tanh": "Tanh", "sigmoid": "Sigmoid"}[act]
        return self.node(op, [tensor], stem)


def _graph(net) -> bytes:
    """The serialized ONNX model of a NumpyNet: inputs "x", "x1", ... (NHWC, as in Keras),
    outputs in the net's order."""
    w = _Writer()
    helper = w.helper
    inputs = []
    for k, (name, shape) in enumerate(net.inputs):
        w.layout[name] = (_input_name(k), "nhwc" if len(shape) == 3 else "flat")
        inputs.append(helper.make_tensor_value_info(_input_name(k), 1, [None, *shape]))
    for step in net.steps:
        write = _WRITERS.get(step.op)
        if write is None:
            raise ValueError(f"no ONNX form for step {step.op!r}")
        out, layout = write(w, step)
        w.layout[step.name] = (
            w.activation(out, step.params.get("act", "linear"), step.name),
            layout,
        )
    outputs = []
    for k, name in enumerate(net.outputs):
        outputs.append(helper.make_tensor_value_info(f"output_{k}", 1, None))
        w.nodes.append(helper.make_node("Identity", [w.get(name, "nhwc")], [f"output_{k}"]))
    graph = helper.make_graph(w.nodes, "gamegym", inputs, outputs, initializer=w.weights)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="gamegym"
    )
    model.ir_version = IR_VERSION
    return model.SerializeToString()


def _conv(w: _Writer, step) -> tuple[str, str]:
    p, name = step.params, step.name
    x = w.get(step.inputs[0], "nchw")
    kernel = w.weight(np.transpose(p["w"], (3, 2, 0, 1)), f"{name}_w")
    top, bottom, left, right = p["pads"]
    return w.node(
        "Conv",
        [x, kernel, w.weight(p["b"], f"{name}_b")],
        name,
        pads=[top, left, bottom, right],
        strides=[1, 1],
    ), "nchw"


def _dense(w: _Writer, step) -> tuple[str, str]:  # on the last axis, as Keras' Dense
    p, name = step.params, step.name
    x = w.get(step.inputs[0], "nhwc")
    out = w.node("MatMul", [x, w.weight(p["w"], f"{name}_w")], name)
    out = w.node("Add", [out, w.weight(p["b"], f"{name}_b")], name)
    return out, "flat" if w.layout[step.inputs[0]][1] == "flat" else "nhwc"


def _einsum(w: _Writer, step) -> tuple[str, str]:  # "bkh,kha->bka": [K, B, H] @ [K, H, A]
    p, name = step.params, step.name
    x = w.node("Transpose", [w.get(step.inputs[0], "nhwc")], name, perm=[1, 0, 2])
    out = w.node("MatMul", [x, w.weight(p["w"], f"{name}_w")], name)
    out = w.node("Transpose", [out], name, perm=[1, 0, 2])
    return w.node("Add", [out, w.weight(p["b"], f"{name}_b")], name), "flat"


def _flatten(w: _Writer, step) -> tuple[str, str]:  # Keras flattens in (h, w, c) order
    return w.node("Flatten", [w.get(step.inputs[0], "nhwc")], step.name, axis=1), "flat"


def _reshape(w: _Writer, step) -> tuple[str, str]:  # in Keras' (h, w, c) order
    shape = step.params["shape"]
    target = w.weight(np.array([0, *shape]), f"{step.name}_shape", np.int64)
    out = w.node("Reshape", [w.get(step.inputs[0], "nhwc"), target], step.name)
    return out, "nhwc" if len(shape) == 3 else "flat"


def _concat(w: _Writer, step) -> tuple[str, str]:  # on the channel (last Keras) axis
    layouts = [w.layout[i][1] for i in step.inputs]
    layout = "nchw" if "nchw" in layouts else layouts[0]
    xs = [w.get(i, layout) for i in step.inputs]
    return w.node("Concat", xs, step.name, axis=1 if layout == "nchw" else -1), layout


def _minmax(w: _Writer, step) -> tuple[str, str]:  # over every axis but the batch's
    tensor, layout = w.layout[step.inputs[0]]
    name = step.name
    flat = w.node("Flatten", [tensor], name, axis=1)
    low = w.node("ReduceMin", [flat], name, axes=[1], keepdims=1)
    high = w.node("ReduceMax", [flat], name, axes=[1], keepdims=1)
    span = w.node(
        "Add",
        [
            w.node("Sub", [high, low], name),
            w.weight(np.float32(step.params["epsilon"]), f"{name}_eps"),
        ],
        name,
    )
    scaled = w.node("Div", [w.node("Sub", [flat, low], name), span], name)
    return w.node("Reshape", [scaled, w.node("Shape", [tensor], name)], name), layout


def _elementwise(w: _Writer, step) -> tuple[str, str]:  # add, scale (on the channels), act
    p, name = step.params, step.name
    layouts = [w.layout[i][1] for i in step.inputs]
    layout = "nchw" if "nchw" in layouts else layouts[0]
    xs = [w.get(i, layout) for i in step.inputs]
    out = xs[0]
    if step.op == "scale":
        shape = (-1, 1, 1) if layout == "nchw" and np.ndim(p["mul"]) else (-1,)
        out = w.node("Mul", [out, w.weight(np.reshape(p["mul"], shape), f"{name}_m")], name)
        out = w.node("Add", [out, w.weight(np.reshape(p["add"], shape), f"{name}_a")], name)
    for more in xs[1:]:
        out = w.node("Add", [out, more], name)
    return out, layout


_WRITERS = {
    "conv": _conv,
    "dense": _dense,
    "einsum": _einsum,
    "flatten": _flatten,
    "reshape": _reshape,
    "concat": _concat,
    "minmax": _minmax,
    "add": _elementwise,
    "scale": _elementwise,
    "act": _elementwise,
}
