"""An int8 form of a (policy, value) network on the CPU fast path, checked against float32.

ONNX Runtime's static quantization (`onnxruntime.quantization.quantize_static`) rewrites the
float graph of `gamegym.nets.onnxnet` with int8 weights (one scale per output channel) and
uint8 activations whose ranges come from calibration positions; ONNX Runtime fuses the
quantize/dequantize pairs into integer convolutions.  On a processor with AVX-512 VNNI that ran
the Connect Four network 2.8-3.2 times as fast as float32 (docs/guides/performance.md), where
dynamic quantization (ConvInteger) and int8 activations ran slower than float32, so this is the
only recipe offered.  On another processor, `scripts/int8_bench.py` says whether it pays.

The int8 model is made once per model iteration, where the fast form is made (the Trainer,
`gamegym.nets.fastmodels.fast_model_bytes`), and stored in the fast-path file; a Predictor
or Selfplayer that reads the file runs it.  Before it is stored it is checked against the
float32 model on the check positions: it is kept only when

    max |value_int8 - value_float32|            <= VALUE_TOLERANCE  (0.15, values in [-1, 1])
    max TV(policy_int8, policy_float32)          <= POLICY_TOLERANCE (0.1; TV = half the L1
                                                    distance of the two move distributions)

over every check position (a session sets both: `predict.int8_value_tolerance` and
`predict.int8_policy_tolerance`); otherwise the model stays float32 and one log line says why.  The
worst position sets the figure: a search averages many values, so the tolerance on one is a
bound on what a move choice can see, not the typical error.  (`scripts/int8_bench.py` prints the
agreement and the speed ratio of a model; the Trainer's log prints the agreement of every
iteration it quantizes.)
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from gamegym.config import PRECISIONS, PredictConfig

__all__ = [
    "PRECISIONS",
    "VALUE_TOLERANCE",
    "POLICY_TOLERANCE",
    "Agreement",
    "quantized_model",
    "agreement",
    "checked_int8",
    "random_positions",
    "compare_precisions",
]

log = logging.getLogger("gamegym.nets.quantize")

# largest |value difference| from float32 an int8 model may show, and largest total-variation
# distance of its policy from float32's: the defaults of the session's predict settings
VALUE_TOLERANCE = PredictConfig.int8_value_tolerance
POLICY_TOLERANCE = PredictConfig.int8_policy_tolerance
CALIBRATION_BATCH = 64  # positions per calibration batch


class Agreement(NamedTuple):
    """How far an int8 model's outputs are from the float32 model's, over check positions."""

    max_value_diff: float  # max over positions of |value_int8 - value_float32|
    max_policy_tv: float  # max over positions of the total-variation distance of the policies
    positions: int  # how many positions were compared

    def within(self, value_tolerance: float, policy_tolerance: float) -> bool:
        """Both distances at most their tolerance."""
        return self.max_value_diff <= value_tolerance and self.max_policy_tv <= policy_tolerance


def quantized_model(model_bytes: bytes, calibration: np.ndarray) -> bytes:
    """The int8 ONNX model of a float32 ONNX model with one input "x": weights int8 per output
    channel, activations uint8 with ranges from `calibration` ([N, *input shape] positions)."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    if len(calibration) == 0:
        raise ValueError("int8 quantization needs at least one calibration position")
    x = np.ascontiguousarray(calibration, np.float32)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.batches = iter(
                [{"x": x[i : i + CALIBRATION_BATCH]} for i in range(0, len(x), CALIBRATION_BATCH)]
            )

        def get_next(self):
            return next(self.batches, None)

    with tempfile.TemporaryDirectory(prefix="gamegym-int8-") as folder, _without_advice():
        source, target = Path(folder, "float32.onnx"), Path(folder, "int8.onnx")
        source.write_bytes(model_bytes)
        quantize_static(
            str(source),
            str(target),
            Reader(),
            quant_format=QuantFormat.QDQ,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            per_channel=True,
        )
        return target.read_bytes()


def agreement(float_net, int8_net, positions: np.ndarray) -> Agreement:
    """The distances between two (logits, value) runners' outputs on `positions`."""
    diffs, tvs = [], []
    for i in range(0, len(positions), 256):
        x = positions[i : i + 256]
        (logits_f, value_f), (logits_q, value_q) = float_net(x), int8_net(x)
        diffs.append(np.abs(np.reshape(value_q, -1) - np.reshape(value_f, -1)))
        tvs.append(0.5 * np.abs(_softmax(logits_q) - _softmax(logits_f)).sum(axis=1))
    return Agreement(
        float(np.concatenate(diffs).max()), float(np.concatenate(tvs).max()), len(positions)
    )


def checked_int8(
    net,
    calibration: np.ndarray,
    check: np.ndarray,
    value_tolerance: float | None = None,
    policy_tolerance: float | None = None,
) -> bytes | None:
    """The int8 ONNX model of `net` (a NumpyNet with outputs (logits, value)) when it agrees with
    the float32 model on `check` positions within the tolerances (None: VALUE_TOLERANCE,
    POLICY_TOLERANCE); None, with one log line saying why, when it does not or cannot be made
    (the caller keeps float32)."""
    from gamegym.nets.onnxnet import OnnxNet

    value_tolerance = VALUE_TOLERANCE if value_tolerance is None else value_tolerance
    policy_tolerance = POLICY_TOLERANCE if policy_tolerance is None else policy_tolerance

    try:
        float_net = OnnxNet(net)
        int8_net = OnnxNet(net, quantized=quantized_model(float_net.model_bytes, calibration))
        found = agreement(float_net, int8_net, check)
    except Exception as error:  # noqa: BLE001 (quantization is an optimisation: float32 stays)
        log.warning("int8 model not made, staying float32: %s: %s", type(error).__name__, error)
        return None
    if not found.within(value_tolerance, policy_tolerance):
        log.warning(
            "int8 model disagrees with float32 on %d positions (max |dvalue| %.4f, tolerance "
            "%.4f; max policy TV %.4f, tolerance %.4f): staying float32",
            found.positions,
            found.max_value_diff,
            value_tolerance,
            found.max_policy_tv,
            policy_tolerance,
        )
        return None
    log.info(
        "int8 model agrees with float32 on %d positions (max |dvalue| %.4f, max policy TV %.4f)",
        found.positions,
        found.max_value_diff,
        found.max_policy_tv,
    )
    return int8_net.model_bytes


def random_positions(graph, count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` numpified positions of uniformly random games of `graph` (all positions of each
    game, from a random root on), float32 [count, *input shape]."""
    roots = graph.roots
    positions: list[np.ndarray] = []
    while len(positions) < count:
        vertex = roots[rng.integers(len(roots))]
        while len(positions) < count:
            positions.append(graph.numpify(vertex))
            children, _ = graph.expansion(vertex)
            if not children:
                break
            vertex = children[rng.integers(len(children))]
    return np.asarray(positions, np.float32)


def compare_precisions(
    float_net, int8_net, positions: np.ndarray, batch_sizes, seconds: float = 6.0, slices: int = 6
) -> dict[int, dict[str, float]]:
    """{batch size: {"float32": evaluations per CPU-second, "int8": ..., "ratio": int8 /
    float32}} of two runners on `positions` (cycled to each batch size), timed in `slices`
    alternating slices each so that a change in the machine's load moves both alike; `seconds`
    is the total time, shared by the batch sizes, slices and runners."""
    runners = {"float32": float_net, "int8": int8_net}
    share = seconds / (2 * slices * max(1, len(batch_sizes)))
    figures = {}
    for n in batch_sizes:
        x = np.resize(positions, (n, *positions.shape[1:])).astype(np.float32)
        used = {name: [0.0, 0] for name in runners}  # CPU seconds, calls
        for run in runners.values():
            run(x)  # a first call opens the session
        for _ in range(slices):
            for name, run in runners.items():
                start, calls = time.process_time(), 0
                while time.process_time() - start < share:
                    run(x)
                    calls += 1
                used[name][0] += time.process_time() - start
                used[name][1] += calls
        rates = {name: n * calls / cpu for name, (cpu, calls) in used.items()}
        figures[n] = {**rates, "ratio": rates["int8"] / rates["float32"]}
    return figures


class _Advice(logging.Filter):
    """Drops ONNX Runtime's advice to pre-process the model (its shape inference and graph
    optimisation changed neither the int8 model's outputs nor its speed on these networks),
    which it logs on the root logger at every quantization."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Please consider")


@contextlib.contextmanager
def _without_advice():
    advice = _Advice()
    logging.getLogger().addFilter(advice)
    try:
        yield
    finally:
        logging.getLogger().removeFilter(advice)


def _softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
