"""TensorFlow set-up in one place: a quiet import, device and thread options, model loading.

Only the Trainer, the Predictor and the in-process players (evaluate, play, the benchmarks) come
here; the gym's own process and the Selfplayers never import TensorFlow.

TensorFlow's C++ start-up writes to the process's stderr before Python can configure anything
(absl's "All log messages before absl::InitializeLog()", the CUDA stub and cuInit errors on a
machine without a GPU, oneDNN notes).  `configure_tensorflow` imports it with file descriptor 2
pointed at a temporary file and hands what was written to the process's log at INFO, so the
console stays clean and the log keeps everything.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from pathlib import Path

__all__ = ["configure_tensorflow", "load_model", "quiet_stderr"]

log = logging.getLogger("gamegym.tensorflow")
_configured: dict = {}


@contextlib.contextmanager
def quiet_stderr(logger: logging.Logger = log):
    """Send whatever this process writes to stderr (C++ libraries included) to `logger` at INFO
    for the duration of the block."""
    try:
        fd = sys.stderr.fileno() if sys.stderr is not None else 2
    except (AttributeError, ValueError, OSError):   # a replaced sys.stderr (pytest's capture)
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


def configure_tensorflow(use_gpu: bool = True, gpu_memorylimit: int = 0, threads: int = 0):
    """Import TensorFlow quietly and set device and thread options; returns the module.
    Options can only be set before TensorFlow initialises: later calls keep the first ones."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with quiet_stderr():
        import tensorflow as tf
        if _configured:
            return tf
        try:
            gpus = tf.config.list_physical_devices("GPU")
            if not use_gpu:
                tf.config.set_visible_devices([], "GPU")
            else:
                for gpu in gpus:
                    if gpu_memorylimit:
                        tf.config.set_logical_device_configuration(
                            gpu, [tf.config.LogicalDeviceConfiguration(
                                memory_limit=gpu_memorylimit)])
                    else:
                        tf.config.experimental.set_memory_growth(gpu, True)
            if threads:
                tf.config.threading.set_intra_op_parallelism_threads(threads)
                tf.config.threading.set_inter_op_parallelism_threads(threads)
        except RuntimeError as error:  # already initialised in this process
            log.debug("tensorflow already configured: %s", error)
        _configured.update(use_gpu=use_gpu, threads=threads)
        import keras  # noqa: F401  (its first import also talks; keep it in the log)
    return tf


def load_model(path: Path):
    """Load a Keras model file for inference; a clear error when the file is damaged."""
    configure_tensorflow()
    import keras
    import gamegym.networks  # noqa: F401  (registers gamegym's own layers with Keras)
    try:
        return keras.models.load_model(path, compile=False)
    except Exception as error:
        raise ValueError(f"cannot load model file {path}: {error}") from error
