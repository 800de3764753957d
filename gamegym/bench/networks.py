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

A learner whose model is not one such network (gamegym.bench.capabilities: `network_paths`)
is timed through its own evaluator instead, on the path the session uses (`network_ceiling`).
"""

from __future__ import annotations

import multiprocessing
import os
import time

import numpy as np

__all__ = [
    "PATHS",
    "compare_paths",
    "evaluator_rates",
    "network_ceiling",
    "paths_table",
    "sample_positions",
]

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


def network_ceiling(
    model, graph, batch_sizes, seconds_each: float = 1.0, learner: str = "alphazero"
) -> dict:
    """Evaluations per CPU-second of a learner's model call at each batch size, as
    {path: {batch size: rate}} like `gamegym.bench.networks.compare_paths` (the call a search makes
    for most leaves: MuZero's recurrent inference, Bootstrapped's Q values).  The learners
    whose models are not AlphaZero's are measured on the path the session uses."""
    from gamegym.learners import get_learner

    evaluator = get_learner(learner).make_evaluator(model, 0)
    path = evaluator.path  # "onnx", "numpy" or "tensorflow", as the Predictor's log says
    rates = evaluator_rates(evaluator, graph, batch_sizes, seconds_each)
    return {f"{learner} {path}": {size: round(rate) for size, rate in rates.items()}}


def evaluator_rates(evaluator, graph, batch_sizes, seconds_each: float) -> dict[int, float]:
    """Evaluations per CPU-second of `evaluator` (a learner's evaluator: `search_request` and
    `run`) on batches of the game's first root, for each batch size >= 1, each timed for about
    `seconds_each` after one untimed call (which traces or opens the network)."""
    x1 = graph.numpify(graph.roots[0])
    rates = {}
    for size in sorted(set(int(b) for b in batch_sizes if b >= 1)):
        kind, inputs = evaluator.search_request(np.repeat(x1[None], size, axis=0))
        evaluator.run(kind, inputs)  # trace
        count, start, cpu = 0, time.perf_counter(), time.process_time()
        while time.perf_counter() - start < seconds_each:
            evaluator.run(kind, inputs)
            count += size
        rates[size] = count / max(time.process_time() - cpu, 1e-9)
    return rates


def sample_positions(graph, count: int, seed: int = 0) -> np.ndarray:
    """numpify of `count` positions from random playouts (the network paths' test batch)."""
    rng = np.random.default_rng(seed)
    out: list[np.ndarray] = []
    vertex = graph.roots[0]
    while len(out) < count:
        children = graph.children_at(vertex)
        if not children:
            vertex = graph.roots[int(rng.integers(len(graph.roots)))]
            continue
        out.append(graph.numpify(vertex))
        vertex = children[int(rng.integers(len(children)))]
    return np.stack(out)


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


def paths_table(paths: dict, session_path: str) -> list[str]:
    """The lines of the throughput report that show `paths` ({path: {batch size: rate}}, as
    `compare_paths` or `network_ceiling` give them) with each path's ratio to TensorFlow's,
    and the path the session took (`session_path`); none without paths."""
    if not paths:
        return []
    sizes = list(next(iter(paths.values())))
    lines = [
        f"  network paths       evaluations per CPU-second; this session: {session_path}",
        "    batch     " + "".join(f"{n:>9}" for n in sizes),
    ]
    base = paths.get("tensorflow", {})
    for path, per in paths.items():
        ratio = ""
        if base and path != "tensorflow":
            ratio = "   x" + "/".join(f"{per[n] / base[n]:.1f}" for n in sizes)
        lines.append(f"    {path:<10}" + "".join(f"{per[n]:>9}" for n in sizes) + ratio)
    return lines
