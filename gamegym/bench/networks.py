"""The network paths side by side: positions evaluated per CPU-second by one model at several
batch sizes, through each way this machine can run it.

  tensorflow  the traced TensorFlow function (the Predictor's path without the fast path, and
              its path on a GPU)
  xla         the same function compiled with XLA (`jit_compile=True`)
  numpy       the CPU fast path's steps in NumPy (`gamegym.nets.numpynet`)
  onnx        the same steps in ONNX Runtime (`gamegym.nets.onnxnet`), when installed

Each path runs in one child process set up as the Predictor is (TensorFlow and BLAS on one
thread), on the same positions, in interleaved rounds; a path's figure is its best round, in
CPU time, so that other programs on the machine move it less than they move wall time.  Every
path's answers are checked against TensorFlow's on the way (within 1e-4).
"""

from __future__ import annotations

import multiprocessing
import os
import time

import numpy as np

__all__ = ["compare_paths", "PATHS"]

PATHS = ("tensorflow", "xla", "numpy", "onnx")
TOLERANCE = 1e-4


def compare_paths(
    model_path, positions: np.ndarray, batch_sizes, seconds: float = 8.0, use_gpu: bool = False
) -> dict:
    """{path: {batch size: evaluations per CPU-second}} for the model file at `model_path`,
    measured in a child process on `positions` [N, *input_shape] (cycled to each batch size);
    `seconds` is the total measuring time, shared by the paths, batch sizes and rounds."""
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    child = ctx.Process(
        target=_measure,
        args=(
            str(model_path),
            positions,
            sorted(set(int(b) for b in batch_sizes if b >= 1)),
            seconds,
            use_gpu,
            results,
        ),
    )
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    child.start()
    try:
        figures = results.get(timeout=300 + 4 * seconds)
    finally:
        child.join(30)
        if child.is_alive():
            child.kill()
    if isinstance(figures, str):
        raise RuntimeError(f"measuring the network paths failed: {figures}")
    return figures


def _measure(
    model_path: str, positions: np.ndarray, sizes: list, seconds: float, use_gpu: bool, results
) -> None:
    try:
        results.put(_paths(model_path, positions, sizes, seconds, use_gpu))
    except Exception as error:  # the parent reports it
        results.put(f"{type(error).__name__}: {error}")


def _paths(model_path, positions, sizes, seconds, use_gpu) -> dict:
    from gamegym.nets.tfsetup import configure_tensorflow, load_model

    tf = configure_tensorflow(use_gpu, threads=1)
    model = load_model(model_path)
    calls = _calls(tf, model)
    rounds = 5
    share = seconds / (rounds * len(calls) * len(sizes))
    batches = {n: np.resize(positions, (n, *positions.shape[1:])).astype(np.float32) for n in sizes}
    best = {path: {n: float("inf") for n in sizes} for path in calls}
    for n, x in batches.items():
        want = calls["tensorflow"](x)
        for path, call in calls.items():
            error = max(float(np.abs(a - b).max()) for a, b in zip(call(x), want))
            if error > TOLERANCE:
                raise ValueError(f"the {path} path is {error:.2g} from TensorFlow at batch {n}")
    for _ in range(rounds):
        for n, x in batches.items():
            for path, call in calls.items():
                calls_made, start = 0, time.process_time()
                while True:
                    call(x)
                    calls_made += 1
                    used = time.process_time() - start
                    if used >= share:
                        break
                best[path][n] = min(best[path][n], used / calls_made)
    return {path: {str(n): round(n / t) for n, t in per.items()} for path, per in best.items()}


def _calls(tf, model) -> dict:
    """path -> a function of positions returning (logits, values) as NumPy arrays."""
    from gamegym.nets import onnxnet
    from gamegym.nets.numpynet import NumpyNet

    shape = tuple(int(d) for d in model.inputs[0].shape[1:])
    signature = [tf.TensorSpec([None, *shape], tf.float32)]

    def traced(jit: bool):
        @tf.function(input_signature=signature, reduce_retracing=True, jit_compile=jit)
        def run(x):
            logits, value = model(x, training=False)[:2]
            return logits, tf.reshape(value, [-1])

        return lambda x: [t.numpy() for t in run(x)]

    calls = {"tensorflow": traced(False), "xla": traced(True)}
    steps = NumpyNet.from_keras(model)
    if steps is not None:
        calls["numpy"] = _pair(steps)
        if onnxnet.available():
            calls["onnx"] = _pair(onnxnet.OnnxNet(steps))
    return calls


def _pair(net):
    """A fast-path net's call returning (logits, values [B])."""

    def run(x):
        logits, values = net(x)[:2]
        return [logits, values.reshape(-1)]

    return run
