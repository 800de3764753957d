"""`gamegym bench throughput`: self-play throughput, measured in one run.

- search ceiling: in-process MCTS with a uniform stub evaluator on one core (searches/s, and
  searches per CPU-second)
- network paths: the session's model through each way of running it, at several batch sizes
  (evaluations per CPU-second, `gamegym.bench.networks`), and the path the session uses
- end to end: a real Predictor and N real Selfplayers for N seconds, as processes or as Ray
  actors on a Ray started on this machine (`--backend ray`), or both one after the other
  (`--backend both`: the ratio of the two on the same cores); CPU and memory (RSS) of each role
- efficiency: end-to-end searches/s / (search ceiling x cores the Selfplayers had)
- CPU efficiency: end-to-end searches per CPU-second of all roles / the ceiling's searches per
  CPU-second.  On a quiet machine whose cores the roles keep busy it equals the efficiency; on
  a loaded one it says what the roles would do with the cores to themselves.
- beside a peer: `gamegym bench peer openspiel --end-to-end-seconds S` runs this end-to-end
  self-play between slices of OpenSpiel's bare search and prints their ratio per core.

`--learner` names a learner preset, or several comma-separated (`alphazero,muzero`,
`alphazero,bootstrapped`), measured in turn in one run with their ratios to the first.  MuZero's
search ceiling is its latent search (stub: uniform priors, zero values, rewards and hidden
states) and its network figures its recurrent call.  A learner whose self-play does not search
(bootstrapped: one Q request per move) has no search ceiling nor efficiency; its "searches" are
its moves.  `--core python,compiled` measures the search cores the same way
(`selfplay.search_core`, gamegym.search.arena): each run's search ceiling and self-play run on
its core.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from gamegym.bench.endtoend import end_to_end, on_backend, ray_figures
from gamegym.cli.progress import ProgressBars
from gamegym.cli.util import comma_list, json_object
from gamegym.config import PRECISIONS, GymConfig, learner_config_class
from gamegym.game.graph import load_game
from gamegym.presets import initial_model_path, learner_presets, preset_for, preset_learner
from gamegym.registry import SEARCHES
from gamegym.search.arena import CORES
from gamegym.search.mcts import SearchParams
from gamegym.search.play import selfplay_game

DEFAULT_GAME = "games.santorini:Santorini"
ORIGINAL = {
    "searches_per_s": 410,
    "positions_per_s": 4,
    "games_per_s": 0.24,
    "game": "Santorini 3x3-1, 2 Selfplayers, 25 threads, 100 searches/move, batch 16",
}


def search_ceiling(graph, cfg, seconds: float, seed: int = 0, learner: str = "alphazero") -> dict:
    """Searches/s of whole self-play games with a uniform evaluator (the learner's search with
    nothing to compute at its leaves), in this process.  One game is played first and not
    counted: the compiled core compiles or loads its kernels on its first search (about 2
    CPU-seconds the first time, which would lower the ceiling and raise the efficiency)."""
    from gamegym.learners import get_learner

    search = get_learner(learner).stub_search(graph, SearchParams.from_selfplay(cfg))
    rng = np.random.default_rng(seed)
    selfplay_game(graph, search, cfg, rng)
    search.searches_done = 0
    games = positions = 0
    start, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        record = selfplay_game(graph, search, cfg, rng)
        games += 1
        positions += len(record) if record is not None else 0  # None: stopped, never here
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {
        "core": getattr(search, "core", "python"),
        "searches_per_s": search.searches_done / elapsed,
        "searches_per_cpu_s": search.searches_done / max(cpu, 1e-9),
        "positions_per_s": positions / elapsed,
        "games_per_s": games / elapsed,
    }


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


def run_bench(
    game: str,
    game_args: dict,
    seconds: float,
    selfplayers: int,
    threads: int,
    searchcount: int,
    batchsize: int = 64,
    batch_timeout_ms: float = 2.0,
    fastpath: bool = True,
    in_selfplayers: bool = True,
    network_seconds: float = 8.0,
    network: dict | None = None,
    backend: str = "processes",
    repeat: int = 1,
    learner: str = "alphazero",
    precision: str = "float32",
    batch_sizes: list[int] | None = None,
    core: str | None = None,
    search: str | None = None,
    bars: ProgressBars | None = None,
) -> dict:
    """All figures of one bench run (see the module docstring) with a learner preset; its
    phases drawn on `bars` (none by default).
    `precision` is the session's predict.precision (the fast path's int8 model or not);
    `core` the selfplay.search_core of the run and of its search ceiling, `search` its root rule
    (selfplay.search; None: the preset's).
    `fastpath` and `in_selfplayers` are the session's predict.numpy_fastpath and
    predict.evaluate_in_selfplayers; `network_seconds` 0 skips the network paths; `network`
    (network config fields) replaces the preset's network; `batch_sizes` are those the network
    paths are measured at (default 1, 8, 16, 32, 64 and the run's mean batch).  With `backend`
    "both" the two backends run `repeat` times each, in turn, and the ratio is the median of the
    pairs' (on a busy machine a single pair says little)."""
    from gamegym.learners import get_learner
    from gamegym.runtime.gym import GameGym

    graph = load_game(game, game_args)
    found = preset_for(game, graph.game_args, learner)
    if found is None:
        try:
            get_learner(learner)  # a learner has settings for every game; a variant does not
        except ValueError:
            raise ValueError(
                f"the learner preset {learner!r} is only defined for the bundled games"
            ) from None
    preset = found[1] if found else {"train": {"learner": learner}}
    if network is None:
        network = preset.get("network", {})
    trains = preset_learner(preset)
    own = dict(preset.get(trains, {}))
    if hasattr(learner_config_class(trains), "positions_per_iteration"):
        own["positions_per_iteration"] = 0  # no Trainer: never wait for one
    config = GymConfig.from_dict(
        {
            "game": game,
            "game_args": graph.game_args,
            "status_interval": 0.0,
            "network": network,
            "selfplay": {
                **preset.get("selfplay", {}),
                "selfplayprocesses": selfplayers,
                "searchthreadcount": threads,
                "searchcount": searchcount,
                **({"search_core": core} if core is not None else {}),
                **({"search": search} if search is not None else {}),
            },
            "predict": {
                "batchsize": batchsize,
                "batch_timeout_ms": batch_timeout_ms,
                "numpy_fastpath": fastpath,
                "evaluate_in_selfplayers": in_selfplayers,
                "precision": precision,
            },
            "train": {"learner": trains},
            **({trains: own} if own else {}),
        }
    )
    searches = get_learner(trains).searches_in_selfplay
    bars = bars or ProgressBars(enabled=False)
    ceiling = None
    if searches:
        with bars.timed(f"{learner}: search ceiling (one core)", min(seconds, 10.0)):
            ceiling = search_ceiling(graph, config.selfplay, min(seconds, 10.0), learner=trains)
    with tempfile.TemporaryDirectory(prefix="gamegym-bench-") as folder:
        path = Path(folder) / "bench"
        gym = GameGym(
            path,
            config=config,
            initial_model=initial_model_path(
                game, graph.game_args, config.network_options(), learner
            ),
        )
        names = ("processes", "ray") if backend == "both" else (backend,)
        pairs = [
            {name: end_to_end(path, on_backend(config, name), seconds, bars) for name in names}
            for _ in range(max(1, repeat) if backend == "both" else 1)
        ]
        runs = pairs[len(pairs) // 2]
        e2e = runs["processes" if backend == "both" else backend]
        used_path = _session_path(config, gym.session)
        network = {}
        sizes = batch_sizes or [1, 8, 16, 32, 64, max(1, round(e2e["mean_batch"]))]
        paths = bars.add(f"{learner}: network paths", None) if network_seconds > 0 else None
        if network_seconds > 0 and not get_learner(trains).compares_network_paths:
            from gamegym.nets.tfsetup import load_model

            network = network_ceiling(
                load_model(gym.session.model_path(0)),
                graph,
                sizes,
                network_seconds / len(sizes),
                trains,
            )
        elif network_seconds > 0:
            from gamegym.bench.networks import compare_paths

            network = compare_paths(
                gym.session.model_path(0),
                sample_positions(graph, 64),
                sizes,
                network_seconds,
                config.predict.use_gpu,
            )
        bars.remove(paths)
    cores = min(selfplayers, psutil.cpu_count(logical=True) or 1)
    efficiency = e2e["searches_per_s"] / (ceiling["searches_per_s"] * cores) if ceiling else None
    cores_used = sum(e2e["cpu_by_role"].values()) / 100.0
    per_cpu_s = e2e["searches_per_s"] / cores_used if cores_used else 0.0
    figures = {
        "game": game,
        "game_args": graph.game_args,
        "learner": learner,
        "label": " ".join(
            [learner]
            + ([precision] if precision != "float32" else [])
            + ([search] if search is not None else [])
            + ([core] if core is not None else [])
        ),
        "backend": backend,
        "searches_per_s": round(e2e["searches_per_s"], 1),
        "positions_per_s": round(e2e["positions_per_s"], 2),
        "games_per_s": round(e2e["games_per_s"], 3),
        "mean_batch": round(e2e["mean_batch"], 2),
        "predictor_busy_fraction": round(e2e["predictor_busy"], 3),
        "ceiling_searches_per_s_per_core": _rounded(ceiling, "searches_per_s"),
        "ceiling_searches_per_cpu_s": _rounded(ceiling, "searches_per_cpu_s"),
        "network_path": used_path,
        "network_evals_per_cpu_s": network,
        "efficiency": round(efficiency, 3) if efficiency is not None else None,
        "cpu_efficiency": round(per_cpu_s / ceiling["searches_per_cpu_s"], 3) if ceiling else None,
        "cpu_by_role": e2e["cpu_by_role"],
        "rss_mb_by_role": e2e["rss_mb_by_role"],
        "searches_per_cpu_s": round(e2e["searches_per_cpu_s"], 1),
        **({"head": e2e["head"]} if e2e["head"] else {}),
        "vs_original": {
            "searches_per_s": round(e2e["searches_per_s"] / ORIGINAL["searches_per_s"], 1)
        },
        "config": {
            "seconds": seconds,
            "selfplayers": selfplayers,
            "threads": threads,
            "searchcount": searchcount if searches else 0,
            "concurrent_games": 0
            if searches
            else config.learner_options().get("concurrent_games", 0),
            "batchsize": batchsize,
            "batch_timeout_ms": batch_timeout_ms,
            "numpy_fastpath": fastpath,
            "evaluate_in_selfplayers": in_selfplayers,
            "precision": precision,
            "search_core": config.selfplay.search_core,
            "search_core_run": ceiling["core"] if ceiling else None,  # the learner's search
            "network": dataclasses.asdict(config.network),
            "cores": psutil.cpu_count(logical=True),
        },
    }
    if backend == "both":
        figures.update(ray_figures(pairs, runs["ray"]))
        figures["config"]["repeat"] = len(pairs)
    return figures


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


def _session_path(config: GymConfig, session) -> str:
    """The network path the session's Predictor took, from its log ("onnx", "onnx int8",
    "numpy", "tensorflow"), and where the Selfplayers evaluated."""
    from gamegym.runtime.process import log_path

    try:
        text = log_path(session.logs_dir, "predictor").read_text(encoding="utf-8")
    except OSError:
        return "unknown"
    found = re.findall(r"loaded model iteration \d+ from .* \((\w+(?: \w+)?)\)", text)
    path = found[-1] if found else "unknown"
    local = config.predict.evaluate_in_selfplayers and path.split()[0] in ("onnx", "numpy")
    return f"{path}, in the {'Selfplayers' if local else 'Predictor'}"


def print_report(figures: dict) -> None:
    c = figures["config"]
    play = (
        f"{c['threads']} threads, {c['searchcount']} searches/move"
        if c["searchcount"]
        else f"{c['concurrent_games']} games at once, no search"
    )
    print(
        f"game {figures['game']} {figures['game_args']}, {figures['label']}: "
        f"{c['selfplayers']} Selfplayers x {play}, {c['seconds']:g} s, {c['cores']} cores"
    )
    if figures["ceiling_searches_per_s_per_core"] is not None:
        print(
            f"  search ceiling      {figures['ceiling_searches_per_s_per_core']:>10.0f} "
            f"searches/s on one core (uniform evaluator; "
            f"{figures['ceiling_searches_per_cpu_s']:.0f} per CPU-second)"
        )
    print(
        f"  end to end          {figures['searches_per_s']:>10.0f} searches/s, "
        f"{figures['positions_per_s']:.1f} positions/s, {figures['games_per_s']:.2f} games/s, "
        f"mean batch {figures['mean_batch']:.1f}"
    )
    if figures["efficiency"] is not None:
        print(
            f"  efficiency          {figures['efficiency']:.2f}   (CPU efficiency "
            f"{figures['cpu_efficiency']:.2f}; x{figures['vs_original']['searches_per_s']} "
            f"the original's {ORIGINAL['searches_per_s']} searches/s)"
        )
    roles = sorted(figures["cpu_by_role"])
    print(
        "  by role             "
        + ", ".join(
            f"{r} {figures['cpu_by_role'][r]:.0f}% CPU {figures['rss_mb_by_role'].get(r, 0):.0f} MB"
            for r in roles
        )
        + " (CPU summed over a role's processes, RSS per process)"
    )
    paths = figures["network_evals_per_cpu_s"]
    if paths:
        sizes = list(next(iter(paths.values())))
        print(
            f"  network paths       evaluations per CPU-second; this session: "
            f"{figures['network_path']}"
        )
        print("    batch     " + "".join(f"{n:>9}" for n in sizes))
        base = paths.get("tensorflow", {})
        for path, per in paths.items():
            ratio = ""
            if base and path != "tensorflow":
                ratio = "   x" + "/".join(f"{per[n] / base[n]:.1f}" for n in sizes)
            print(f"    {path:<10}" + "".join(f"{per[n]:>9}" for n in sizes) + ratio)
    if "ray" in figures:
        ray_run = figures["ray"]
        cpu = ", ".join(f"{k} {v:.0f}%" for k, v in sorted(ray_run["cpu_by_role"].items()))
        pairs = ", ".join(f"{r:.2f}" for r in figures["ray_vs_processes_pairs"])
        print(
            f"  on Ray              {ray_run['searches_per_s']:>10.0f} searches/s, mean batch "
            f"{ray_run['mean_batch']:.1f}: x{figures['ray_vs_processes']:.2f} the processes' "
            f"(median of the pairs run in turn: {pairs}); per CPU-second used: "
            f"x{figures['ray_vs_processes_per_cpu']:.2f}"
        )
        print(f"  CPU by role on Ray  {cpu}")
    head = figures.get("ray", figures).get("head")
    if head:
        print(
            f"  the head on Ray     {head['takes_per_s']} takes/s and {head['files_per_s']} "
            f"sample files/s at {head['cpu_ms_per_take']} ms of CPU per take; "
            f"{head['write_ms_per_file'] or 0:.2f} ms to write a file, "
            f"{head['broadcast_ms']:.1f} ms to put a model; object store {head['object_store']}"
        )


def cmd_throughput(args) -> int:
    """`gamegym bench throughput`: one run per learner preset, a report or one JSON object."""
    if args.backend != "processes":
        from gamegym.runtime.ray.cluster import import_ray

        import_ray(local=True)
    learners = _choices("--learner", args.learner, learner_presets(), "learner presets")
    precisions = _choices("--precision", args.precision, PRECISIONS, "precisions")
    cores: list[str | None] = (
        list(_choices("--core", args.core, CORES, "search cores")) if args.core else [None]
    )
    searches: list[str | None] = (
        list(_choices("--search", args.search, SEARCHES.names(), "search rules"))
        if args.search
        else [None]
    )
    if args.network_batchsize and min(args.network_batchsize) < 1:
        raise ValueError(
            f"--network-batchsize {args.network_batchsize}: a batch holds at least 1 position"
        )
    choices = [
        (learner, precision, search, core)
        for learner in learners
        for precision in precisions
        for search in searches
        for core in cores
    ]
    runs = []
    with ProgressBars() as bars:
        overall = bars.add("runs", len(choices), "runs") if len(choices) > 1 else None
        for learner, precision, search, core in choices:
            runs.append(
                run_bench(
                    args.game,
                    args.game_args,
                    args.seconds,
                    args.selfplayers,
                    args.threads,
                    args.searchcount,
                    args.batchsize,
                    args.batch_timeout_ms,
                    fastpath=not args.tensorflow,
                    in_selfplayers=not args.predictor_only,
                    network_seconds=args.network_seconds,
                    network=args.network,
                    backend=args.backend,
                    repeat=args.repeat,
                    learner=learner,
                    precision=precision,
                    batch_sizes=args.network_batchsize,
                    core=core,
                    search=search,
                    bars=bars,
                )
            )
            bars.update(overall, completed=len(runs))
    figures: dict[str, Any] = (
        runs[0] if len(runs) == 1 else {"runs": runs, "vs_first": _ratios(runs)}
    )
    if args.json:
        print(json.dumps(figures, sort_keys=True))
        return 0
    for run in runs:
        print_report(run)
    if len(runs) > 1:
        print(
            f"relative to {runs[0]['label']}: "
            + "; ".join(
                f"{name} x{r['positions_per_s']} positions/s, x{r['searches_per_s']} searches/s"
                for name, r in figures["vs_first"].items()
            )
        )
    return 0


def _choices(flag: str, spec: str, known, what: str) -> list[str]:
    """The names of a comma-separated `flag` value; an empty list or an unknown name is named
    now, with the known ones (`what` they are)."""
    names = [name.strip() for name in spec.split(",") if name.strip()]
    if not names or any(name not in known for name in names):
        raise ValueError(f"{flag} {spec!r}: known {what} are {', '.join(known)}")
    return names


def _ratios(runs: list[dict]) -> dict:
    """Each later run's positions/s and searches/s as multiples of the first run's."""
    base = runs[0]
    return {
        run["label"]: {
            key: round(run[key] / base[key], 3) if base[key] else None
            for key in ("positions_per_s", "searches_per_s")
        }
        for run in runs[1:]
    }


def _rounded(figures: dict | None, key: str) -> float | None:
    return None if figures is None else round(figures[key], 1)


COMMAND = "throughput"
EXAMPLE = """examples:
  gamegym bench throughput --game games.tictactoe:TicTacToe --seconds 10
  gamegym bench throughput --learner alphazero,bootstrapped --selfplayers 2 --json
  gamegym bench throughput --backend both --repeat 3      # Ray beside the processes
  gamegym bench throughput --game games.connectfour:ConnectFour --precision float32,int8
  gamegym bench throughput --game games.connectfour:ConnectFour --core python,compiled
"""


def add_parser(sub) -> None:
    """`gamegym bench throughput`: self-play searches/s, the ceilings, the efficiency."""
    p = sub.add_parser(
        COMMAND,
        help="self-play throughput: searches/s, ceilings, efficiency",
        description=__doc__,
        epilog=EXAMPLE,
    )
    p.add_argument("--game", default=DEFAULT_GAME, metavar="MODULE:CLASS", help="the game")
    p.add_argument(
        "--game-args",
        type=json_object,
        default={},
        help="the game's arguments (JSON)",
    )
    p.add_argument("--seconds", type=float, default=20.0, help="end-to-end measuring time")
    p.add_argument("--selfplayers", type=int, default=4, help="Selfplayer processes")
    p.add_argument("--threads", type=int, default=24, help="search threads per Selfplayer")
    p.add_argument("--searchcount", type=int, default=100, help="searches per move")
    p.add_argument("--batchsize", type=int, default=64, help="the Predictor's batch size")
    p.add_argument(
        "--batch-timeout-ms",
        type=float,
        default=2.0,
        help="how long the Predictor waits for more requests (predict.batch_timeout_ms)",
    )
    p.add_argument(
        "--tensorflow",
        action="store_true",
        help="evaluate with TensorFlow, not the CPU fast path (predict.numpy_fastpath false)",
    )
    p.add_argument(
        "--predictor-only",
        action="store_true",
        help="every evaluation through the Predictor (predict.evaluate_in_selfplayers false)",
    )
    p.add_argument(
        "--network",
        type=json_object,
        default=None,
        help="network config fields instead of the preset's, e.g. "
        '\'{"kind": "residual", "width": 32, "blocks": 3}\'',
    )
    p.add_argument(
        "--network-seconds",
        type=float,
        default=8.0,
        help="time for the network paths side by side (0: skip them)",
    )
    p.add_argument(
        "--network-batchsize",
        type=comma_list(int),
        default=None,
        metavar="N,N",
        help="the batch sizes the network paths are measured at "
        "(default: 1,8,16,32,64 and the run's mean batch)",
    )
    p.add_argument(
        "--backend",
        choices=("processes", "ray", "both"),
        default="processes",
        help="where the Selfplayers run: processes, Ray actors on a Ray started here, "
        "or both one after the other (their ratio)",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="(--backend both) run each backend this many times, in turn",
    )
    p.add_argument(
        "--learner",
        metavar="NAME,NAME",
        default="alphazero",
        help="learner preset(s), comma-separated: "
        + ", ".join(learner_presets())
        + " (the throughput of each, with ratios to the first)",
    )
    p.add_argument(
        "--core",
        metavar="CORE,CORE",
        help="selfplay.search_core(s), comma-separated: auto, python, compiled (one run each, "
        "with ratios to the first; default: the preset's)",
    )
    p.add_argument(
        "--search",
        metavar="RULE,RULE",
        help="selfplay.search rule(s), comma-separated: "
        + ", ".join(SEARCHES.names())
        + " (one run each, with ratios to the first; default: the preset's)",
    )
    p.add_argument(
        "--precision",
        metavar="PRECISION,PRECISION",
        default="float32",
        help="the fast path's precision(s), comma-separated: float32, int8 (predict.precision; "
        "one run each, with ratios to the first)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=cmd_throughput)
