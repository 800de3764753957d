"""TensorFlow set-up in one place: a quiet import, device and thread options, model loading.

Only the Trainer, the Predictor, the process that makes a session's first model and the
in-process players (evaluate, play, the benchmarks) come here; the gym's own process and the
Selfplayers never import TensorFlow.  Every module that needs TensorFlow or Keras gets it from
here (`import_tensorflow`, `import_keras`), never by a plain `import`, so the first import in a
process is always the quiet one.

TensorFlow's C++ start-up writes to the process's stderr before Python can configure anything
(absl's "All log messages before absl::InitializeLog()", the CUDA stub and cuInit errors on a
machine without a GPU, oneDNN notes).  `configure_tensorflow` imports it with file descriptor 2
pointed at a temporary file and hands what was written to the process's log at INFO, so the
console stays clean and the log keeps everything.  TensorFlow's and absl's Python loggers are
kept off the console too: their records go to the process's log (the root logger's handlers).

Keras and TensorFlow's own bundled Keras import a few libraries only for features gamegym never
calls (IPython for notebook display, matplotlib for an image gallery, SciPy for sparse inputs to
the old training loop), each inside `try: ... except ImportError`.  `configure_tensorflow`
imports TensorFlow with those three hidden (`without_optional_extras`) unless the process has
them already: the import then costs about a quarter less CPU (2.8 instead of 3.8 CPU-seconds on
a 2-core Intel Xeon), in every Trainer and every process that makes or converts a model.  They
import normally afterwards, and in other threads meanwhile.

What is a real problem still gets one line: a GPU that should be there but that TensorFlow does
not see (`gpu_problem`), and a model file that does not load (`load_model`).
"""

from __future__ import annotations

import contextlib
import importlib.abc
import logging
import os
import sys
import tempfile
import threading
import zipfile
from pathlib import Path

__all__ = [
    "configure_tensorflow",
    "import_tensorflow",
    "import_keras",
    "load_model",
    "quiet_stderr",
    "gpu_problem",
    "tensorflow_imported",
    "without_optional_extras",
]

log = logging.getLogger("gamegym.tensorflow")
_configured: dict = {}


@contextlib.contextmanager
def quiet_stderr(logger: logging.Logger = log):
    """Send whatever this process writes to stderr (C++ libraries included) to `logger` at INFO
    for the duration of the block."""
    try:
        fd = sys.stderr.fileno() if sys.stderr is not None else 2
    except (AttributeError, ValueError, OSError):  # a replaced sys.stderr (pytest's capture)
        fd = 2
    sys.stderr and sys.stderr.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), fd)
        try:
            yield
        finally:
            if sys.stderr is not None:
                sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)
            capture.seek(0)
            for line in capture.read().decode("utf-8", "replace").splitlines():
                if line.strip():
                    logger.info("%s", line)


# imported by TensorFlow or Keras only under `try: ... except ImportError`, for features gamegym
# does not use (see the module docstring)
OPTIONAL_EXTRAS = ("IPython", "matplotlib", "scipy")


class _Hidden(importlib.abc.MetaPathFinder):
    """An import finder under which the named top-level packages (and their modules) cannot be
    found by the thread that made it; other threads import them as usual."""

    def __init__(self, names: tuple[str, ...]):
        self.names = frozenset(names)
        self.thread = threading.get_ident()

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in self.names and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"{fullname} is not imported with TensorFlow", name=fullname)
        return None


@contextlib.contextmanager
def without_optional_extras(names: tuple[str, ...] = OPTIONAL_EXTRAS):
    """Within the block, `import` of these packages in this thread fails with
    ModuleNotFoundError, unless the process has imported them already (then they stay as they
    are); afterwards, and in other threads, they import as usual."""
    finder = _Hidden(tuple(name for name in names if name not in sys.modules))
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


def tensorflow_imported() -> bool:
    """Whether this process has imported TensorFlow (the gym and Selfplayers must not)."""
    return "tensorflow" in sys.modules


def configure_tensorflow(
    use_gpu: bool = True, gpu_memorylimit: int = 0, threads: int = 0, announce: bool = False
):
    """Import TensorFlow quietly and set device and thread options; returns the module.
    Options can only be set before TensorFlow initialises: later calls keep the first ones.
    With `announce`, a GPU problem (see `gpu_problem`) is also printed as one line on stderr."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with quiet_stderr():
        with without_optional_extras():
            import tensorflow as tf

        if _configured:
            return tf
        _keep_python_loggers_off_the_console()
        gpus = []
        try:
            gpus = tf.config.list_physical_devices("GPU")
            if not use_gpu:
                tf.config.set_visible_devices([], "GPU")
            else:
                for gpu in gpus:
                    if gpu_memorylimit:
                        tf.config.set_logical_device_configuration(
                            gpu,
                            [tf.config.LogicalDeviceConfiguration(memory_limit=gpu_memorylimit)],
                        )
                    else:
                        tf.config.experimental.set_memory_growth(gpu, True)
            if threads:
                tf.config.threading.set_intra_op_parallelism_threads(threads)
                tf.config.threading.set_inter_op_parallelism_threads(threads)
        except RuntimeError as error:  # already initialised in this process
            log.debug("tensorflow already configured: %s", error)
        _configured.update(use_gpu=use_gpu, threads=threads)
        with without_optional_extras():
            import keras  # (its first import also talks; keep it in the log)

        _numpy2_array_protocol(keras)
    problem = gpu_problem(use_gpu, gpu_memorylimit, len(gpus), _nvidia_driver_present())
    if problem:
        log.warning("%s", problem)
        if announce:
            print(f"[gamegym] warning: {problem}", file=sys.stderr, flush=True)
    log.info("TensorFlow %s, %d GPU(s) visible, use_gpu=%s", tf.__version__, len(gpus), use_gpu)
    return tf


def import_tensorflow():
    """The tensorflow module, imported quietly (with the default options when this process has
    not configured it yet)."""
    return configure_tensorflow()


def import_keras():
    """The keras module, imported quietly (see `import_tensorflow`)."""
    configure_tensorflow()
    import keras

    return keras


def gpu_problem(
    use_gpu: bool, gpu_memorylimit: int, gpus_found: int, driver_present: bool
) -> str | None:
    """One line when a GPU was asked for or is installed but TensorFlow sees none; None on a
    machine without a GPU (the CPU is then simply used, with nothing to say)."""
    if not use_gpu or gpus_found:
        return None
    if gpu_memorylimit:
        return (
            f"predict.gpu_memorylimit is {gpu_memorylimit} MiB but TensorFlow sees no GPU; "
            "training and prediction run on the CPU"
        )
    if driver_present:
        return (
            "this machine has an NVIDIA driver but TensorFlow sees no GPU (a CPU-only "
            "TensorFlow, or a CUDA version it cannot use; see the TensorFlow line in the "
            "trainer's and predictor's logs); training and prediction run on the CPU"
        )
    return None


def _nvidia_driver_present() -> bool:
    return os.path.exists("/proc/driver/nvidia/version")


def _keep_python_loggers_off_the_console() -> None:
    """TensorFlow's logger writes to stderr itself when the root logger had no handler at its
    first use; absl's falls back to Python's last-resort stderr handler.  Both now only
    propagate: to the process's log where there is one, nowhere otherwise."""
    for name in ("tensorflow", "absl"):
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            if type(handler) is logging.StreamHandler:
                logger.removeHandler(handler)
        if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
            logger.addHandler(logging.NullHandler())
        logger.propagate = True


def _numpy2_array_protocol(keras) -> None:
    """Give Keras variables the `copy` keyword NumPy 2 passes to `__array__`.

    Keras 3 (up to 3.15 at least) defines `Variable.__array__(self, dtype=None)`; NumPy 2 calls
    it with `copy=` first and, when that fails, warns "__array__ implementation doesn't accept a
    copy keyword" and calls again without it.  Every `model.save` converts each weight that way
    (the DeprecationWarnings the test suite used to show by the hundred).  The method below is
    the one NumPy's migration guide asks for; it stands aside once Keras has its own."""
    import inspect

    import numpy as np

    variable = keras.Variable
    original = variable.__array__
    if "copy" in inspect.signature(original).parameters:
        return

    def __array__(self, dtype=None, copy=None):
        array = original(self, dtype)
        return np.array(array, copy=True) if copy else array

    variable.__array__ = __array__


def load_model(path: Path):
    """Load a Keras model file for inference; a one-line error when it does not load.

    Only the Keras v3 format (a `.keras` zip archive) is read, always in Keras' safe mode: a
    model that carries code (a Lambda layer, a function named by module) is refused rather
    than run.  A legacy file (HDF5 `.h5`, a SavedModel folder) is refused, naming the file:
    convert it once with a Keras you trust (`keras.models.load_model(old).save("m.keras")`)."""
    path = Path(path)
    if path.suffix != ".keras" or not zipfile.is_zipfile(path):
        what = (
            "a folder"
            if path.is_dir()
            else ("not a .keras file" if path.suffix != ".keras" else "not a .keras zip archive")
        )
        raise ValueError(
            f"cannot load model file {path}: {what}; gamegym reads only the Keras "
            "format (.keras); a legacy .h5 or SavedModel model can be converted "
            "with a Keras you trust: keras.models.load_model(old).save('m.keras')"
        )
    keras = import_keras()
    import gamegym.nets.layers  # noqa: F401  (registers gamegym's own layers with Keras)

    try:
        return keras.models.load_model(path, compile=False, safe_mode=True)
    except Exception as error:
        first = next(
            (line.strip() for line in str(error).splitlines() if line.strip()), type(error).__name__
        )
        log.info("loading %s failed", path, exc_info=True)
        raise ValueError(f"cannot load model file {path}: {first}") from error
