"""A model on the CPU fast path as data: its nets (NumPy step programs), how to run them, and
its file, so a process can evaluate a model without TensorFlow.

A *fast form* is what a learner's evaluator needs of one model iteration, TensorFlow aside:
  form  the name of the evaluator class that runs it (registered here with `register_form`)
  nets  name -> `gamegym.nets.numpynet.NumpyNet` (AlphaZero: "evaluate"; MuZero: "initial",
        "recurrent"; Bootstrapped: "q")
  meta  small JSON-able facts (shapes, action count)
A learner makes it from a Keras model (`Learner.fast_form`); the evaluator classes make their
runnable evaluator from it (`from_form`), in any process.

The file (`to_bytes` / `from_bytes`, an .npz): "header" holds UTF-8 JSON
  {"format": "gamegym-fast-model", "version": 1, "form": ..., "meta": {...},
   "nets": {name: {"inputs": [[name, shape], ...], "outputs": [...],
                   "steps": [{"name", "op", "inputs", "params": {key: value | {"array": id}}}]}}}
and every weight array is an entry of its own ("a0", "a1", ...), stored as float32.  A net with
an int8 form (`gamegym.nets.quantize`) also has the ONNX model of that form as an entry
"int8/<net name>" (bytes as uint8), listed in the header's optional "int8": [net names]; that
model runs only when made of the operators gamegym writes (`gamegym.nets.onnxnet.check_graph`).
A published file also records the sha256 of its model file ("keras_sha256",
`gamegym.data.session.stamped_fast_form`), which this module does not read.
`choose_runner` picks how a net runs: ONNX Runtime when installed, else NumPy for nets without
convolutions (NumPy convolutions lose to TensorFlow's); None otherwise.
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any, ClassVar, NamedTuple, Protocol

import numpy as np

from gamegym.nets.numpynet import NumpyNet, Step
from gamegym.nets.onnxnet import OnnxGraphError

__all__ = [
    "FastForm",
    "FastModelError",
    "FORMS",
    "register_form",
    "to_bytes",
    "from_bytes",
    "evaluator_from_bytes",
    "choose_runner",
    "FAST_PATH_MAX_PARAMS",
]

FORMAT, VERSION = "gamegym-fast-model", 1
FAST_PATH_MAX_PARAMS = 2_000_000  # larger models stay on TensorFlow
FORMS: dict[str, type[FormRunner]] = {}  # form name -> the evaluator class that runs it
OPS = (
    "dense",
    "conv",
    "einsum",
    "scale",
    "add",
    "act",
    "flatten",
    "reshape",
    "concat",
    "minmax",
)  # the steps of gamegym.nets.numpynet


class FastModelError(ValueError):
    """A fast-path model file that is damaged, foreign or of an unknown form."""


class FastForm(NamedTuple):
    form: str
    nets: dict  # name -> NumpyNet
    meta: dict
    int8: dict | None = None  # net name -> ONNX model bytes of its int8 form (None: none)


class FormRunner(Protocol):
    """An evaluator class that runs the fast forms called `form` (`register_form`)."""

    form: ClassVar[str]

    @classmethod
    def from_form(cls, form: FastForm, iteration: int) -> Any:
        """The runnable evaluator of one model iteration's fast form."""
        ...


def register_form(name: str):
    """Class decorator: the evaluator class that runs fast forms called `name`."""

    def register(cls):
        cls.form = name
        FORMS[name] = cls
        return cls

    return register


def choose_runner(net: NumpyNet, conv: bool = True, int8: bytes | None = None):
    """How `net` runs on the CPU fast path: an OnnxNet when ONNX Runtime is installed (running
    `int8`, the ONNX model of the net's int8 form, when given), else the NumpyNet itself for nets
    without convolutions; None when it has convolutions and either `conv` is False (TensorFlow
    has a GPU) or ONNX Runtime is missing."""
    from gamegym.nets import onnxnet

    if net.has_conv and not conv:
        return None
    if onnxnet.available():
        return onnxnet.OnnxNet(net, quantized=int8)
    return None if net.has_conv else net


def to_bytes(form: FastForm) -> bytes:
    """The file's bytes of a fast form."""
    arrays: dict[str, np.ndarray] = {}
    header = {
        "format": FORMAT,
        "version": VERSION,
        "form": form.form,
        "meta": form.meta,
        "nets": {name: _net_header(net, arrays) for name, net in form.nets.items()},
    }
    if form.int8:
        header["int8"] = sorted(form.int8)
        for name, model in form.int8.items():
            arrays[f"int8/{name}"] = np.frombuffer(model, np.uint8)
    arrays["header"] = np.frombuffer(json.dumps(header).encode("utf-8"), np.uint8)
    buffer = io.BytesIO()
    # numpy's stub takes **arrays for its allow_pickle keyword
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    return buffer.getvalue()


def from_bytes(data: bytes, source: str = "fast-path model") -> FastForm:
    """The fast form in a file's bytes; FastModelError naming `source` when they are not one."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            arrays = {key: archive[key] for key in archive.files}
        header = json.loads(arrays.pop("header").tobytes().decode("utf-8"))
    except (
        OSError,
        ValueError,
        KeyError,
        EOFError,
        zipfile.BadZipFile,
        UnicodeDecodeError,
    ) as error:
        raise FastModelError(f"{source} is not a readable fast-path model file ({error})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise FastModelError(f"{source} is not a gamegym fast-path model file")
    if header.get("version") != VERSION:
        raise FastModelError(
            f"{source} has fast-path format version {header.get('version')}; "
            f"this gamegym reads version {VERSION}"
        )
    try:
        nets = {name: _net_from(spec, arrays) for name, spec in header["nets"].items()}
        int8 = {str(name): arrays[f"int8/{name}"].tobytes() for name in header.get("int8", ())}
        if any(name not in nets for name in int8):
            raise ValueError("an int8 model names an unknown net")
        return FastForm(str(header["form"]), nets, dict(header["meta"]), int8 or None)
    except (KeyError, TypeError, ValueError) as error:
        raise FastModelError(f"{source} is damaged: {type(error).__name__} {error}") from None


def evaluator_from_bytes(data: bytes, iteration: int, source: str = "fast-path model"):
    """The runnable evaluator of a fast-path model file, or None when its nets cannot run here
    (convolutions without ONNX Runtime)."""
    form = from_bytes(data, source)
    cls = FORMS.get(form.form)
    if cls is None:
        raise FastModelError(
            f"{source} holds a model of form {form.form!r}, which no loaded "
            f"learner runs (known: {', '.join(sorted(FORMS))})"
        )
    try:
        return cls.from_form(form, iteration)
    except OnnxGraphError as error:
        raise FastModelError(f"{source} is refused: {error}") from None
    except (KeyError, TypeError, ValueError) as error:
        raise FastModelError(f"{source} is damaged: {type(error).__name__} {error}") from None


def _net_header(net: NumpyNet, arrays: dict) -> dict:
    steps = []
    for step in net.steps:
        params: dict[str, Any] = {}
        for key, value in step.params.items():
            if isinstance(value, np.ndarray):
                ref = f"a{len(arrays)}"
                arrays[ref] = np.asarray(value, np.float32)
                params[key] = {"array": ref}
            else:
                params[key] = list(value) if isinstance(value, tuple) else value
        steps.append(
            {"name": step.name, "op": step.op, "inputs": list(step.inputs), "params": params}
        )
    return {
        "inputs": [[name, list(shape)] for name, shape in net.inputs],
        "outputs": list(net.outputs),
        "steps": steps,
    }


def _net_from(spec: dict, arrays: dict) -> NumpyNet:
    steps = []
    for item in spec["steps"]:
        params = {}
        for key, value in item["params"].items():
            if isinstance(value, dict):
                params[key] = arrays[value["array"]]
            else:
                params[key] = tuple(value) if isinstance(value, list) else value
        steps.append(Step(str(item["name"]), str(item["op"]), tuple(item["inputs"]), params))
    known = {s.name for s in steps} | {name for name, _ in spec["inputs"]}
    for step in steps:
        if step.op not in OPS:
            raise ValueError(f"step {step.name!r} has an unknown op {step.op!r}")
        if any(i not in known for i in step.inputs):
            raise ValueError(f"step {step.name!r} reads an unknown tensor")
    if any(o not in known for o in spec["outputs"]):
        raise ValueError("an output names an unknown tensor")
    return NumpyNet(
        steps, [(name, tuple(shape)) for name, shape in spec["inputs"]], list(spec["outputs"])
    )
