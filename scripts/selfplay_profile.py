"""Where one Selfplayer's time goes, per search: self-play in this process with the game's preset
network on the fast path (as a Selfplayer runs it) against the same search with a uniform
evaluator, both in CPU time, with the network and numpify calls timed apart; then what the
network costs a position at several batch sizes (`gamegym.bench.networks.evaluator_rates`).  The search runs
on the core a Selfplayer would pick (`--core`: selfplay.search.core; "auto" is the compiled one
where numba is installed).

    python scripts/selfplay_profile.py games.connectfour:ConnectFour '{"rows": 6, "columns": 7}'
    python scripts/selfplay_profile.py games.connectfour:ConnectFour --precision int8 \
        --network '{"width": 24}'     # the preset's network changed, in int8

`--precision int8` plays the network's int8 form (calibrated on random-play positions, as a new
session's first model is; float32 where it has none or it disagrees); `--network` changes fields
of the preset's network (an untrained network costs what a trained one of its shape does).

The "with model / ceiling" ratio is what the bench's efficiency approaches on a quiet machine
whose cores the Selfplayers keep busy (the README's "Each bundled game" table).
"""

import argparse
import json
import sys
import time

import numpy as np

from gamegym.bench.networks import evaluator_rates
from gamegym.config import PRECISIONS, GymConfig
from gamegym.config.search import CORES
from gamegym.data.samples import GameRecord
from gamegym.game.graph import load_game
from gamegym.learners import get_learner
from gamegym.nets.builders import network_for_game
from gamegym.nets.fastmodels import fast_model_bytes, int8_inputs
from gamegym.nets.inference import LocalService, NetworkPositionValuer, PolicyValueCall
from gamegym.nets.portable import evaluator_from_bytes
from gamegym.nets.tfsetup import configure_tensorflow
from gamegym.presets import preset_for
from gamegym.search.cores import core_for, make_search
from gamegym.search.mcts import SearchParams, uniform_evaluator
from gamegym.search.play import selfplay_game

BATCHES = (1, 4, 8, 16, 32, 64)  # the batch sizes of the network's cost by batch


class Timed:
    """An evaluator that adds its CPU time and positions to `totals`."""

    def __init__(self, evaluator, totals):
        self.evaluator, self.totals = evaluator, totals
        self.kinds, self.iteration = evaluator.kinds, evaluator.iteration

    def run(self, kind, inputs):
        start = time.process_time()
        outputs = self.evaluator.run(kind, inputs)
        self.totals["network"] += time.process_time() - start
        self.totals["positions"] += len(inputs["x"])
        self.totals["calls"] += 1
        return outputs


def play(graph, cfg, evaluate, seconds):
    """(searches, CPU seconds) of whole self-play games for about `seconds` of CPU."""
    search = make_search(graph, evaluate, SearchParams.from_selfplay(cfg))
    rng = np.random.default_rng(0)
    selfplay_game(graph, search, cfg, rng, GameRecord())  # not timed: loads the kernels
    search.searches_done = 0
    start = time.process_time()
    while time.process_time() - start < seconds:
        selfplay_game(graph, search, cfg, rng, GameRecord())
    return search.searches_done, time.process_time() - start


def fast_evaluator(model, graph, precision: str):
    """The model's fast-path evaluator in `precision`, as a Selfplayer loads it from the
    model's fast-path file."""
    if precision == "float32":
        evaluator = PolicyValueCall(model).portable()
    else:
        inputs = int8_inputs(graph, np.random.default_rng(0))
        data = fast_model_bytes(get_learner("alphazero"), model, precision, inputs)
        evaluator = None if data is None else evaluator_from_bytes(data, 0, "profile")
    if evaluator is None:
        raise SystemExit("this network has no fast path here (is onnxruntime installed?)")
    return evaluator


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("game")
    parser.add_argument("game_args", nargs="?", default="{}")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--threads", type=int, default=24, help="concurrent searches")
    parser.add_argument("--precision", choices=PRECISIONS, default="float32")
    parser.add_argument(
        "--core", choices=CORES, default="auto", help="the search core (selfplay.search.core)"
    )
    parser.add_argument(
        "--network", type=json.loads, default={}, help="changes to the preset's network (JSON)"
    )
    args = parser.parse_args()
    configure_tensorflow(use_gpu=False, threads=1)
    graph = load_game(args.game, json.loads(args.game_args))
    found = preset_for(args.game, graph.game_args)
    network = {**(found[1]["network"] if found else {}), **args.network}
    model = network_for_game(graph, network or None, seed=0)
    evaluator = fast_evaluator(model, graph, args.precision)
    cfg = GymConfig(
        game=args.game,
        game_args=graph.game_args,
        selfplay={"search": {"threads": args.threads, "core": args.core}},
    ).selfplay
    totals = {"network": 0.0, "positions": 0, "calls": 0, "numpify": 0.0}
    numpify_many = graph.numpify_many  # what the evaluator calls for a batch of leaves

    def timed_numpify_many(vertices):
        start = time.process_time()
        x = numpify_many(vertices)
        totals["numpify"] += time.process_time() - start
        return x

    searches, cpu = play(graph, cfg, uniform_evaluator(graph.action_space_size), args.seconds)
    ceiling = cpu / searches
    graph.numpify_many = timed_numpify_many
    service = LocalService(Timed(evaluator, totals))
    searches, cpu = play(
        graph, cfg, NetworkPositionValuer(graph, service, cfg.evaluation_cache), args.seconds
    )
    per = {k: totals[k] / searches * 1e6 for k in ("network", "numpify")}
    total = cpu / searches * 1e6
    print(
        f"{args.game} {graph.game_args}, {model.name} on {evaluator.path} "
        f"({evaluator.precision}), the {core_for(SearchParams.from_selfplay(cfg))} search core, "
        f"{args.threads} concurrent searches, {model.count_params()} parameters"
    )
    print(f"  with model / ceiling   {ceiling * 1e6 / total:.2f}")
    print(
        f"  per search             {total:.1f} µs: search and game {ceiling * 1e6:.1f}, network "
        f"{per['network']:.1f}, numpify {per['numpify']:.1f}, rest "
        f"{total - ceiling * 1e6 - per['network'] - per['numpify']:.1f}"
    )
    print(
        f"  network                {totals['positions'] / searches:.2f} positions per search, "
        f"{totals['network'] / max(1, totals['positions']) * 1e6:.1f} µs per position, "
        f"{totals['positions'] / max(1, totals['calls']):.1f} positions per call"
    )
    by_batch = evaluator_rates(evaluator, graph, BATCHES, seconds_each=0.5)
    print(
        "  network by batch       "
        + ", ".join(f"{n}: {1e6 / rate:.1f}" for n, rate in by_batch.items())
        + " µs per position"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
