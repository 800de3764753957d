"""The CPU fast path's network in float32 and in int8, side by side in one run.

    python scripts/int8_bench.py [PRESET] [--model PATH.keras | --network JSON]
                                 [--batch B ...] [--seconds S]

Builds the preset's AlphaZero network (default connectfour; or --network, e.g.
'{"kind": "residual", "width": 16, "blocks": 3}'; seed 0, batch normalisation given
trained-looking statistics) or loads a session's model file (--model models/<it>.keras), makes
its int8 form as the Trainer does with predict.precision "int8" (gamegym.nets.quantize:
calibrated on random-play positions), and prints
  - its multiply-adds per position (convolutions and dense layers);
  - its agreement with float32 on other random-play positions (max |dvalue|, max policy TV) and
    the tolerances the Trainer holds it to;
  - the evaluations per CPU-second of each at every batch size, timed in alternating slices
    in one process on one thread (as a Selfplayer runs them), and their ratio int8 / float32.
The ratio is the figure to read: absolute rates move with the machine and its load.
"""

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")  # one BLAS thread per process, as the gym's children

import numpy as np  # noqa: E402

from gamegym.game.graph import load_game  # noqa: E402
from gamegym.nets import quantize  # noqa: E402
from gamegym.nets.inference import evaluate_form  # noqa: E402
from gamegym.nets.onnxnet import OnnxNet  # noqa: E402
from gamegym.presets import get_preset  # noqa: E402

POSITIONS = 256


def model_of(preset: dict, graph, path, network):
    """The Keras model: loaded from `path`, or the preset's network built with seed 0 and
    trained-looking batch-normalisation statistics."""
    from gamegym.learners import get_learner
    from gamegym.nets.tfsetup import configure_tensorflow, load_model

    configure_tensorflow(use_gpu=False, threads=1)
    if path:
        return load_model(path)
    model = get_learner("alphazero").build_model(graph, network or preset["network"], seed=0)
    rng = np.random.default_rng(0)
    for layer in model._flatten_layers():
        if type(layer).__name__ == "BatchNormalization":
            c = layer.gamma.shape[0]
            layer.set_weights(
                [
                    rng.uniform(0.5, 1.5, c),
                    rng.normal(0, 0.3, c),
                    rng.normal(0, 0.5, c),
                    rng.uniform(0.2, 2.0, c),
                ]
            )
    return model


def multiply_adds(net) -> int:
    """Multiply-adds of one position through the net's convolutions and dense layers."""
    cells = int(np.prod(net.input_shape[:-1]))  # convolutions keep the board's size
    total = 0
    for step in net.steps:
        if step.op == "conv":
            total += cells * int(np.prod(step.params["w"].shape))
        elif step.op in ("dense", "einsum"):
            total += int(np.prod(step.params["w"].shape))
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("preset", nargs="?", default="connectfour")
    parser.add_argument("--model", help="a model file (.keras) of the preset's game")
    parser.add_argument("--network", type=json.loads, help="a network config (JSON object)")
    parser.add_argument("--batch", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--seconds", type=float, default=12.0, help="total timing")
    args = parser.parse_args()
    preset = get_preset(args.preset)
    graph = load_game(preset["game"], preset["game_args"])
    form = evaluate_form(model_of(preset, graph, args.model, args.network))
    if form is None or not form.nets["evaluate"].has_conv:
        print("this model has no conv fast form: int8 applies to conv networks only")
        return 2
    net = form.nets["evaluate"]
    print(f"{args.preset}: {multiply_adds(net):,} multiply-adds per position")
    rng = np.random.default_rng(1)
    calibration = quantize.random_positions(graph, POSITIONS, rng)
    check = quantize.random_positions(graph, POSITIONS, rng)
    float_net = OnnxNet(net)
    int8_net = OnnxNet(net, quantize.quantized_model(float_net.model_bytes, calibration))
    found = quantize.agreement(float_net, int8_net, check)
    print(
        f"agreement on {found.positions} random-play positions: "
        f"max |dvalue| {found.max_value_diff:.4f} (tolerance {quantize.VALUE_TOLERANCE}), "
        f"max policy TV {found.max_policy_tv:.4f} (tolerance {quantize.POLICY_TOLERANCE})"
    )
    figures = quantize.compare_precisions(float_net, int8_net, check, args.batch, args.seconds)
    print(f"{'batch':>6} {'float32 evals/s':>16} {'int8 evals/s':>14} {'int8/float32':>13}")
    for n, row in figures.items():
        print(f"{n:>6} {row['float32']:>16,.0f} {row['int8']:>14,.0f} {row['ratio']:>13.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
