"""Model iterations on the CPU fast path without TensorFlow: the files that make it possible.

Whoever publishes a model (the Trainer, the process that makes a session's first model) also
writes its fast form next to it, models/<it>.fast.npz (`fast_model_bytes`, gamegym.nets.portable;
`Session.publish_model` writes it atomically, before the model file).  A Predictor that needs no
GPU (`cpu_fast_path`) then loads each iteration from that file (`load_fast_model`) and never
imports TensorFlow, which keeps it small.  The file records the sha256 of the model file it was
made from (`Session.publish_model`); a fast-path file that is missing, unreadable, records
another model file's digest or none (a session from before such files, a file swapped in), or
holds an ONNX graph that gamegym's converters could not have written
(gamegym.nets.onnxnet.check_graph) is never run: the model file is converted again by a
short-lived child process that imports TensorFlow and exits (or here, when this process has
imported TensorFlow anyway), in Keras' safe mode.  A model with no fast form leaves no file, and
the Predictor falls back to TensorFlow.

With `predict.precision` "int8", the publisher also stores an int8 form of an AlphaZero conv
network in the file (gamegym.nets.quantize: calibrated on recent samples or random-play
positions, checked against float32, left out when they disagree), and every reader of the file
runs it.  A file made by a converting child is float32.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
from pathlib import Path

import numpy as np

from gamegym.data.fileio import atomic_write_bytes
from gamegym.data.session import (
    fast_form_digest,
    fast_model_file,
    file_sha256,
    stamped_fast_form,
)
from gamegym.nets.portable import (
    FastForm,
    FastModelError,
    evaluator_from_bytes,
    from_bytes,
    to_bytes,
)
from gamegym.nets.tfsetup import tensorflow_imported

__all__ = [
    "fast_model_bytes",
    "with_int8",
    "int8_inputs",
    "int8_share",
    "cpu_fast_path",
    "gpu_may_be_present",
    "load_fast_model",
    "load_fast_model_or_none",
    "convert_model_file",
]

log = logging.getLogger("gamegym.nets.fastmodels")
CONVERT_TIMEOUT_S = 600.0
INT8_POSITIONS = 256  # calibration positions, and as many random-play check positions


def fast_model_bytes(
    learner,
    model,
    precision: str = "float32",
    int8_inputs=None,
    tolerances: tuple[float, float] | None = None,
) -> bytes | None:
    """The fast-path file of `model` (a Keras model of `learner`), or None when it has no fast
    form.  `precision` "int8" adds the int8 form of its (policy, value) conv network when it
    agrees with float32 within `tolerances` (value, policy; None: gamegym.nets.quantize's);
    `int8_inputs()` then gives (calibration, check) positions (`int8_inputs`).
    A failure to convert is logged with its traceback, not raised: the model itself is still
    published, and its readers fall back to TensorFlow."""
    try:
        form = learner.fast_form(model)
        if form is None:
            return None
        if precision == "int8" and int8_inputs is not None:
            form = _with_int8_or_not(form, int8_inputs, tolerances)
        return to_bytes(form)
    except Exception:
        log.exception("could not write the fast form of model %r", getattr(model, "name", model))
        return None


def with_int8(
    form: FastForm,
    calibration: np.ndarray,
    check: np.ndarray,
    tolerances: tuple[float, float] | None = None,
) -> FastForm:
    """`form` with the int8 form of its "evaluate" network (AlphaZero's; other learners' nets
    stay float32) when it has convolutions and agrees with float32 on `check` within
    `tolerances` (value, policy; None: gamegym.nets.quantize's)."""
    from gamegym.nets import onnxnet
    from gamegym.nets.quantize import checked_int8

    net = form.nets.get("evaluate")
    if form.form != "evaluate" or net is None or not net.has_conv or not onnxnet.available():
        return form
    model = checked_int8(net, calibration, check, *(tolerances or (None, None)))
    return form if model is None else form._replace(int8={"evaluate": model})


def _with_int8_or_not(form: FastForm, int8_inputs, tolerances) -> FastForm:
    """`with_int8`, or `form` as it is (float32) when its positions cannot be made."""
    try:
        calibration, check = int8_inputs()
        return with_int8(form, calibration, check, tolerances)
    except Exception as error:  # noqa: BLE001 (int8 is an optimisation: float32 stays)
        log.warning("int8 model not made, staying float32: %s: %s", type(error).__name__, error)
        return form


def int8_inputs(graph, rng: np.random.Generator, recent: np.ndarray | None = None):
    """A function giving (calibration, check) positions for `fast_model_bytes`: calibration on
    INT8_POSITIONS of `recent` (the samples just trained on) drawn at random from all of them
    when there are any, else on random-play positions; the check on as many other random-play
    positions of `graph`.

    The draw spreads the calibration over the whole sample window: INT8_POSITIONS positions in a
    row come from a handful of games, whose activation ranges miss much of what the model meets
    (on a trained Connect Four residual 16x3, 5 of 15 models passed the check calibrated on
    positions in a row, 9-10 of 15 with the draw; docs/guides/performance.md)."""
    from gamegym.nets.quantize import random_positions

    def positions() -> tuple[np.ndarray, np.ndarray]:
        if recent is not None and len(recent):
            check = random_positions(graph, INT8_POSITIONS, rng)
            rows = rng.choice(len(recent), min(INT8_POSITIONS, len(recent)), replace=False)
            return np.asarray(recent[np.sort(rows)], np.float32), check
        played = random_positions(graph, 2 * INT8_POSITIONS, rng)
        return played[:INT8_POSITIONS], played[INT8_POSITIONS:]

    return positions


def int8_share(session) -> tuple[int, int]:
    """(models whose fast-path file carries an int8 form, models with a readable fast-path
    file) of a session: how many iterations passed the int8 check and ran int8."""
    int8 = readable = 0
    for iteration in session.model_iterations():
        try:
            form = from_bytes(session.fast_model_path(iteration).read_bytes())
        except (FastModelError, OSError):
            continue
        readable += 1
        int8 += form.int8 is not None
    return int8, readable


def gpu_may_be_present() -> bool:
    """Whether TensorFlow might see a GPU here, judged without importing it: an NVIDIA driver
    or nvidia-smi."""
    return os.path.exists("/proc/driver/nvidia/version") or shutil.which("nvidia-smi") is not None


def cpu_fast_path(predict_config) -> bool:
    """Whether a Predictor with these options loads models from their fast-path files (no
    TensorFlow): the fast path is on and no GPU is wanted, or none can be there."""
    return bool(predict_config.numpy_fastpath) and not (
        predict_config.use_gpu and gpu_may_be_present()
    )


def load_fast_model(learner, model_path: Path, iteration: int, plugins=()):
    """The fast-path evaluator of a model file, from its fast-path file (converting the model
    first when that file is missing or was not made from this model file; `plugins`: the
    config's, which a converting child imports); None when the model has no fast form or its
    nets cannot run here.  FastModelError when the file stays unreadable or refused."""
    model_path = Path(model_path)
    path = fast_model_file(model_path)
    for attempt in range(2):
        data = _matching(path, model_path) if not attempt else None
        if data is None:
            if not convert_model_file(learner.name, model_path, plugins):
                return None
            data = _matching(path, model_path)
        try:
            if data is None:
                raise FastModelError(f"{path} does not record the sha256 of {model_path.name}")
            return evaluator_from_bytes(data, iteration, str(path))
        except (FastModelError, OSError) as error:
            if attempt:
                raise FastModelError(
                    f"{path} is unreadable even when made again: {error}"
                ) from None
            log.warning("%s; converting %s again", error, model_path)
    return None


def load_fast_model_or_none(learner, model_path: Path, iteration: int, plugins=()):
    """`load_fast_model`, with a file that stays unreadable logged and taken as no fast form:
    None means the caller loads the model with TensorFlow."""
    try:
        return load_fast_model(learner, model_path, iteration, plugins)
    except FastModelError as error:
        log.error("%s; loading the model with TensorFlow", error)
        return None


def _matching(path: Path, model_path: Path) -> bytes | None:
    """The bytes of a fast-path file made from this model file (the sha256 it records is the
    model file's), else None (missing, unreadable, another model's, or none recorded)."""
    try:
        data = path.read_bytes()
        if fast_form_digest(data) == file_sha256(model_path):
            return data
    except OSError:
        return None
    log.info("%s was not made from %s (its sha256 differs); converting it", path, model_path.name)
    return None


def convert_model_file(learner_name: str, model_path: Path, plugins=()) -> bool:
    """Write the fast-path file of a model file; False when the model has no fast form (or the
    conversion failed: the log says why).  Runs here when this process has TensorFlow already,
    in a short-lived child otherwise (which imports the config's `plugins` first)."""
    if tensorflow_imported():
        return _convert(learner_name, Path(model_path))
    ctx = multiprocessing.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(
        target=_convert_main,
        args=(learner_name, str(model_path), list(plugins), send),
        name="fast-model",
        daemon=True,
    )
    child.start()
    send.close()
    try:
        if not receive.poll(CONVERT_TIMEOUT_S):
            raise EOFError
        written, error = receive.recv()
    except EOFError:
        written, error = False, f"the converting process died (exit code {child.exitcode})"
    finally:
        receive.close()
        child.join(10)
        if child.is_alive():
            child.kill()
    if error:
        log.error("could not convert %s to the fast path: %s", model_path, error)
    log.info(
        "converted %s to the fast path in a child process: %s",
        model_path,
        "done" if written else "no fast form",
    )
    return written


def _convert(learner_name: str, model_path: Path) -> bool:
    from gamegym.nets.tfsetup import import_keras, load_model
    from gamegym.registry import LEARNERS

    import_keras().backend.clear_session()  # Keras' global name state grows with every load
    digest = file_sha256(model_path)  # before it is read: a file replaced meanwhile mismatches
    data = fast_model_bytes(LEARNERS.get(learner_name)(), load_model(model_path))
    path = fast_model_file(model_path)
    if data is None:
        path.unlink(missing_ok=True)
        return False
    atomic_write_bytes(path, stamped_fast_form(data, digest))
    return True


def _convert_main(learner_name: str, model_path: str, plugins: list, answer) -> None:
    """The child of `convert_model_file`: answers (written, error text or None).  It leaves at
    once when its parent dies (no one would read the answer; the file is written whole or not)."""
    from gamegym.config import import_plugins
    from gamegym.nets.tfsetup import configure_tensorflow
    from gamegym.parentwatch import watch_parent

    watch_parent(lambda: os._exit(3))
    try:
        import_plugins(plugins)
        configure_tensorflow(use_gpu=False, threads=1)
        answer.send((_convert(learner_name, Path(model_path)), None))
    except Exception as error:  # noqa: BLE001 (the parent logs it and goes on with TensorFlow)
        answer.send((False, f"{type(error).__name__}: {error}"))
