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
(`selfplay.search.core`, gamegym.search.cores): each run's search ceiling and self-play run on
its core.
"""

import dataclasses
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from gamegym.bench.capabilities import network_paths, selfplay_searches
from gamegym.bench.ceiling import search_ceiling
from gamegym.bench.endtoend import (
    end_to_end,
    on_backend,
    ray_figures,
    session_network_path,
)
from gamegym.bench.networks import network_ceiling, sample_positions
from gamegym.bench.presets import preset_config
from gamegym.bench.throughputreport import ORIGINAL, print_report
from gamegym.config import PRECISIONS, GymConfig, learner_config_class
from gamegym.config.search import CORES
from gamegym.console import ProgressBars, comma_list, json_object
from gamegym.game.ref import GameRef
from gamegym.presets import initial_model_path, learner_presets, preset_for, preset_learner
from gamegym.registry import SEARCHES

__all__ = ["COMMAND", "ThroughputSettings", "add_parser", "print_report", "run_bench"]

DEFAULT_GAME = "games.santorini:Santorini"


@dataclass(frozen=True)
class ThroughputSettings:
    """One throughput run's settings: the flags of `gamegym bench throughput`, with one
    learner preset, precision, search rule and search core of those it lists."""

    game: str = DEFAULT_GAME  # the game's spec
    game_args: dict[str, Any] = dataclasses.field(default_factory=dict)  # its arguments
    seconds: float = 20.0  # end-to-end measuring time
    selfplayers: int = 4
    threads: int = 24  # search threads per Selfplayer
    searchcount: int = 100  # searches per move
    batchsize: int = 64  # the Predictor's batch size
    batch_timeout_ms: float = 2.0
    fastpath: bool = True  # predict.numpy_fastpath (False: evaluate with TensorFlow)
    in_selfplayers: bool = True  # predict.evaluate_in_selfplayers
    network_seconds: float = 8.0  # time for the network paths side by side (0: skip them)
    network: dict[str, Any] | None = None  # network config fields replacing the preset's
    batch_sizes: tuple[int, ...] | None = None  # --network-batchsize (None: 1 to 64, the mean)
    # "processes", "ray" (actors on a Ray started here) or "both", in turn `repeat` times each,
    # the ratio the median of the pairs' (on a busy machine a single pair says little)
    backend: str = "processes"
    repeat: int = 1
    learner: str = "alphazero"  # the learner preset (a learner, or a variant such as "dqn")
    precision: str = "float32"  # predict.precision: the fast path's int8 model or not
    core: str | None = None  # selfplay.search.core of the run and its ceiling (None: preset's)
    search: str | None = None  # selfplay.search.rule, the root rule (None: the preset's)

    @property
    def label(self) -> str:
        """The run's name in a report: its learner preset, and what differs from the
        defaults of precision, search rule and core."""
        return " ".join(
            [self.learner]
            + ([self.precision] if self.precision != "float32" else [])
            + ([self.search] if self.search is not None else [])
            + ([self.core] if self.core is not None else [])
        )


def run_bench(settings: ThroughputSettings, bars: ProgressBars | None = None) -> dict:
    """All figures of one bench run (see the module docstring) with a learner preset; its
    phases drawn on `bars` (none by default)."""
    from gamegym.runtime.gym import GameGym

    s = settings
    bars = bars or ProgressBars(enabled=False)
    graph = GameRef(s.game, s.game_args).build()
    config = bench_config(s)
    searches = selfplay_searches(config.train.learner)
    measured: dict[str, Any] = {"searches": searches, "ceiling": None}
    if searches:
        with bars.timed(f"{s.learner}: search ceiling (one core)", min(s.seconds, 10.0)):
            measured["ceiling"] = search_ceiling(
                graph, config.selfplay, min(s.seconds, 10.0), learner=config.train.learner
            )
    with tempfile.TemporaryDirectory(prefix="gamegym-bench-") as folder:
        path = Path(folder) / "bench"
        gym = GameGym(
            path,
            config=config,
            initial_model=initial_model_path(
                s.game, graph.game_args, config.network_options(), s.learner
            ),
        )
        names = ("processes", "ray") if s.backend == "both" else (s.backend,)
        pairs = [
            {name: end_to_end(path, on_backend(config, name), s.seconds, bars) for name in names}
            for _ in range(max(1, s.repeat) if s.backend == "both" else 1)
        ]
        runs = pairs[len(pairs) // 2]
        e2e = measured["e2e"] = runs["processes" if s.backend == "both" else s.backend]
        measured["network_path"] = session_network_path(config, gym.session)
        paths = bars.add(f"{s.learner}: network paths", None) if s.network_seconds > 0 else None
        measured["network"] = _network_figures(s, gym.session, graph, config, e2e["mean_batch"])
        bars.remove(paths)
    figures = _figures(s, graph, config, measured)
    if s.backend == "both":
        figures.update(ray_figures(pairs, runs["ray"]))
        figures["config"]["repeat"] = len(pairs)
    return figures


def bench_config(s: ThroughputSettings) -> GymConfig:
    """The run's config: the learner preset's for the game and its arguments, the defaults
    filled in (the learner's defaults for a game with no preset), with the run's self-play
    and predict settings (`s.network` replaces the preset's network whole), no status line,
    and Selfplayers that never wait for a Trainer."""
    from gamegym.learners import get_learner

    game_args = GameRef(s.game, s.game_args).complete().args
    found = preset_for(s.game, game_args, s.learner)
    if found is None:
        try:
            get_learner(s.learner)  # a learner has settings for every game; a variant does not
        except ValueError:
            raise ValueError(
                f"the learner preset {s.learner!r} is only defined for the bundled games"
            ) from None
    preset = found[1] if found else {"game": s.game, "train": {"learner": s.learner}}
    trains = preset_learner(preset)
    changes: dict[str, Any] = {
        "game_args": game_args,
        "status_interval": 0.0,
        "selfplay": {
            "selfplayprocesses": s.selfplayers,
            "search": {
                "threads": s.threads,
                "searchcount": s.searchcount,
                **({"core": s.core} if s.core is not None else {}),
                **({"rule": s.search} if s.search is not None else {}),
            },
        },
        "predict": {
            "batchsize": s.batchsize,
            "batch_timeout_ms": s.batch_timeout_ms,
            "numpy_fastpath": s.fastpath,
            "evaluate_in_selfplayers": s.in_selfplayers,
            "precision": s.precision,
        },
    }
    if hasattr(learner_config_class(trains), "positions_per_iteration"):
        changes[trains] = {"positions_per_iteration": 0}  # no Trainer: never wait for one
    if s.network is not None:  # the whole network, not a change of the preset's
        preset = {key: value for key, value in preset.items() if key != "network"}
        changes["network"] = s.network
    return preset_config(preset, changes)


def _network_figures(s: ThroughputSettings, session, graph, config, mean_batch: float) -> dict:
    """Evaluations per CPU-second of the session's first model at each batch size: on each
    network path (gamegym.bench.networks), or through the learner's own evaluator; {} when
    `s.network_seconds` is 0."""
    if s.network_seconds <= 0:
        return {}
    sizes = list(s.batch_sizes or [1, 8, 16, 32, 64, max(1, round(mean_batch))])
    if not network_paths(config.train.learner):
        from gamegym.nets.tfsetup import load_model

        return network_ceiling(
            load_model(session.model_path(0)),
            graph,
            sizes,
            s.network_seconds / len(sizes),
            config.train.learner,
        )
    from gamegym.bench.networks import compare_paths

    return compare_paths(
        session.model_path(0),
        sample_positions(graph, 64),
        sizes,
        s.network_seconds,
        config.predict.use_gpu,
    )


def _figures(s: ThroughputSettings, graph, config: GymConfig, measured: dict) -> dict:
    """A run's figures: the rates of its end-to-end run (`measured["e2e"]`) beside the search
    ceiling's and the network's, and what ran."""
    e2e, ceiling, searches = measured["e2e"], measured["ceiling"], measured["searches"]
    cores = min(s.selfplayers, psutil.cpu_count(logical=True) or 1)
    efficiency = e2e["searches_per_s"] / (ceiling["searches_per_s"] * cores) if ceiling else None
    cores_used = sum(e2e["cpu_by_role"].values()) / 100.0
    per_cpu_s = e2e["searches_per_s"] / cores_used if cores_used else 0.0
    return {
        "game": s.game,
        "game_args": graph.game_args,
        "learner": s.learner,
        "label": s.label,
        "backend": s.backend,
        "searches_per_s": round(e2e["searches_per_s"], 1),
        "positions_per_s": round(e2e["positions_per_s"], 2),
        "games_per_s": round(e2e["games_per_s"], 3),
        "mean_batch": round(e2e["mean_batch"], 2),
        "predictor_busy_fraction": round(e2e["predictor_busy"], 3),
        "ceiling_searches_per_s_per_core": _rounded(ceiling, "searches_per_s"),
        "ceiling_searches_per_cpu_s": _rounded(ceiling, "searches_per_cpu_s"),
        "network_path": measured["network_path"],
        "network_evals_per_cpu_s": measured["network"],
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
            "seconds": s.seconds,
            "selfplayers": s.selfplayers,
            "threads": s.threads,
            "searchcount": s.searchcount if searches else 0,
            "concurrent_games": 0
            if searches
            else config.learner_options().get("concurrent_games", 0),
            "batchsize": s.batchsize,
            "batch_timeout_ms": s.batch_timeout_ms,
            "numpy_fastpath": s.fastpath,
            "evaluate_in_selfplayers": s.in_selfplayers,
            "precision": s.precision,
            "search_core": config.selfplay.search.core,
            "search_core_run": ceiling["core"] if ceiling else None,  # the learner's search
            "network": dataclasses.asdict(config.network),
            "cores": psutil.cpu_count(logical=True),
        },
    }


def cmd_throughput(args) -> int:
    """`gamegym bench throughput`: one run per learner preset, a report or one JSON object."""
    if args.backend != "processes":
        from gamegym.runtime.ray.cluster import import_ray

        import_ray(local=True)
    cores: list[str | None] = args.core or [None]  # (None: the preset's)
    searches: list[str | None] = args.search or [None]
    if args.network_batchsize and min(args.network_batchsize) < 1:
        raise ValueError(
            f"--network-batchsize {args.network_batchsize}: a batch holds at least 1 position"
        )
    common = ThroughputSettings(
        game=args.game,
        game_args=args.game_args,
        seconds=args.seconds,
        selfplayers=args.selfplayers,
        threads=args.threads,
        searchcount=args.searchcount,
        batchsize=args.batchsize,
        batch_timeout_ms=args.batch_timeout_ms,
        fastpath=not args.tensorflow,
        in_selfplayers=not args.predictor_only,
        network_seconds=args.network_seconds,
        network=args.network,
        batch_sizes=tuple(args.network_batchsize) if args.network_batchsize else None,
        backend=args.backend,
        repeat=args.repeat,
    )
    choices = [
        dataclasses.replace(common, learner=learner, precision=precision, core=core, search=search)
        for learner in args.learner
        for precision in args.precision
        for search in searches
        for core in cores
    ]
    runs = []
    with ProgressBars() as bars:
        overall = bars.add("runs", len(choices), "runs") if len(choices) > 1 else None
        for settings in choices:
            runs.append(run_bench(settings, bars))
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
        type=comma_list(choices=learner_presets()),
        metavar="NAME,NAME",
        default="alphazero",
        help="learner preset(s), comma-separated: "
        + ", ".join(learner_presets())
        + " (the throughput of each, with ratios to the first)",
    )
    p.add_argument(
        "--core",
        type=comma_list(choices=CORES),
        metavar="CORE,CORE",
        help="selfplay.search.core(s), comma-separated: auto, python, compiled (one run each, "
        "with ratios to the first; default: the preset's)",
    )
    p.add_argument(
        "--search",
        type=comma_list(choices=SEARCHES.names()),
        metavar="RULE,RULE",
        help="selfplay.search.rule(s), comma-separated: "
        + ", ".join(SEARCHES.names())
        + " (one run each, with ratios to the first; default: the preset's)",
    )
    p.add_argument(
        "--precision",
        type=comma_list(choices=PRECISIONS),
        metavar="PRECISION,PRECISION",
        default="float32",
        help="the fast path's precision(s), comma-separated: float32, int8 (predict.precision; "
        "one run each, with ratios to the first)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=cmd_throughput)
