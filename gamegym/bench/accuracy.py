"""`gamegym bench accuracy`: how often a model's move is optimal on a game's solved-position
benchmark (gamegym.game.positions; Connect Four's: 1,000 solved positions in each of three
bands by the discs on the board).

For each band it reports the share of positions where the move is *optimal* (it keeps the
position's exact value: a win stays a win, a draw a draw) and *exactly optimal* (also the
fastest win or the slowest loss, over the positions whose exact scores are all known): once for
the raw policy (the network's most probable legal move, no search; for learners whose player
asks a policy network) and once with the model's search (`--searchcount`, the move it plays in a
match).  The learning bench reports the same shares at every curve point of a game with a
benchmark.

    gamegym bench accuracy sessions/c4                      # the newest iteration
    gamegym bench accuracy sessions/c4 --iteration 40 --searchcount 400 --json
    gamegym bench accuracy gamegym/initialmodels/connectfour.keras --game games.connectfour:ConnectFour
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from gamegym.console import ProgressBars, json_object
from gamegym.game.graph import GameGraph, load_game
from gamegym.game.positions import PositionBenchmark, load_positions, policy_moves

__all__ = [
    "COMMAND",
    "AccuracySettings",
    "accuracy_text",
    "add_parser",
    "benchmark_of",
    "measure_accuracy",
    "run_accuracy",
]

COMMAND = "accuracy"
SEARCHES = 100  # the model's searches a move, as the learning bench's matches
EXAMPLE = """examples:
  gamegym bench accuracy sessions/c4
  gamegym bench accuracy sessions/c4 --iteration 40 --searchcount 400 --seed 1 --json
  gamegym bench accuracy gamegym/initialmodels/connectfour.keras --game games.connectfour:ConnectFour"""


def benchmark_of(graph: GameGraph) -> tuple[PositionBenchmark, list] | None:
    """The game's solved-position benchmark and its positions' vertices, or None."""
    path = graph.benchmark_positions
    if path is None:
        return None
    benchmark = load_positions(path)
    return benchmark, benchmark.vertices(graph)


def _shares(chosen: list[int], positions) -> dict:
    optimal = [a in p.optimal for a, p in zip(chosen, positions)]
    exact = [a in p.exactly_optimal for a, p in zip(chosen, positions) if p.scores is not None]
    figures = {"optimal": round(float(np.mean(optimal)), 4) if optimal else None}
    figures["exactly_optimal"] = round(float(np.mean(exact)), 4) if exact else None
    figures["exact_positions"] = len(exact)
    return figures


def measure_accuracy(
    graph: GameGraph,
    player,
    benchmark: PositionBenchmark,
    vertices: list,
    rng: np.random.Generator,
    per_band: int | None = None,
    bars: ProgressBars | None = None,
    sample_seed: int = 0,
) -> dict:
    """{band: {positions, policy: {optimal, exactly_optimal, exact_positions} (when the player
    has a policy network), search: {...}}}.  `per_band`: a random sample of that many
    positions a band, drawn with `sample_seed` (None: all); `rng`: the searches'."""
    bars = bars or ProgressBars(enabled=False)
    evaluate = getattr(player, "evaluate", None)
    from gamegym.nets.inference import NetworkPositionValuer

    has_policy = isinstance(evaluate, NetworkPositionValuer)
    figures: dict = {}
    for band in benchmark.bands:
        indices = [i for i, p in enumerate(benchmark.positions) if p.band == band]
        if per_band is not None and per_band < len(indices):
            sample = np.random.default_rng(sample_seed).choice(indices, per_band, replace=False)
            indices = sorted(sample.tolist())
        positions = [benchmark.positions[i] for i in indices]
        band_vertices = [vertices[i] for i in indices]
        row: dict = {"positions": len(positions)}
        if has_policy:
            assert isinstance(evaluate, NetworkPositionValuer)
            probs = (
                np.concatenate(
                    [
                        evaluate(band_vertices[i : i + 256])[0]
                        for i in range(0, len(band_vertices), 256)
                    ]
                )
                if band_vertices
                else np.zeros((0, graph.action_space_size))
            )
            legal = [graph.actions_at(v) for v in band_vertices]
            row["policy"] = _shares(policy_moves(probs, legal), positions)
        bar = bars.add(f"{band} positions with the search", len(positions), "positions")
        chosen = []
        for vertex in band_vertices:
            chosen.append(player.choose(graph, vertex, rng))
            bars.update(bar, completed=len(chosen))
        bars.remove(bar)
        row["search"] = _shares(chosen, positions)
        figures[band] = row
    return figures


def accuracy_text(figures: dict, searches: int | None = None) -> list[str]:
    """One line a band: '  middle  1000 positions: policy 81.2% optimal (64.0% exactly), ...'."""

    def pct(x) -> str:
        return "-" if x is None else f"{x:.1%}"

    lines = []
    for band, row in figures.items():
        parts = []
        searched = "with search" if searches is None else f"{searches} searches"
        for kind, label in (("policy", "raw policy"), ("search", searched)):
            if kind in row:
                r = row[kind]
                parts.append(
                    f"{label} {pct(r['optimal'])} optimal ({pct(r['exactly_optimal'])} exactly, "
                    f"of {r['exact_positions']})"
                )
        lines.append(f"  {band:7s} {row['positions']:5d} positions: " + "; ".join(parts))
    return lines


@dataclass(frozen=True)
class AccuracySettings:
    """One accuracy measurement's settings (the flags of `gamegym bench accuracy`)."""

    target: Path  # a session folder or a .keras model file
    iteration: int | None = None  # the session's model iteration (None: the newest)
    game: str | None = None  # MODULE:CLASS, for a model file (a session names its own)
    game_args: dict[str, Any] = field(default_factory=dict)  # the game's arguments
    learner: str = "alphazero"  # the learner of a model file
    searches: int = SEARCHES  # searches a move (--searchcount)
    threads: int = 8  # concurrent searches
    per_band: int | None = None  # a random sample of this many positions a band (None: all)
    seed: int = 0  # the searches' and the sample's seed


def run_accuracy(settings: AccuracySettings, progress: bool = True) -> dict:
    """The shares of optimal moves of `settings.target`'s model on its game's solved-position
    benchmark, band by band (`progress`: with progress bars), what was measured, and the
    benchmark's file name (`positions_file`, for the report's heading)."""
    s = settings
    graph, player, what = _player_from(s)
    found = benchmark_of(graph)
    if found is None:
        raise ValueError(
            f"{type(graph).__name__} {graph.game_args} has no solved-position benchmark "
            "(GameGraph.benchmark_positions); Connect Four 6 x 7 has one"
        )
    benchmark, vertices = found
    started = time.monotonic()
    with ProgressBars(enabled=progress) as bars:
        figures = measure_accuracy(
            graph,
            player,
            benchmark,
            vertices,
            np.random.default_rng(s.seed),
            s.per_band,
            bars,
            s.seed,
        )
    return {
        "model": what,
        "searches": s.searches,
        "seed": s.seed,
        "bands": figures,
        "seconds": round(time.monotonic() - started, 1),
        "positions_file": graph.benchmark_positions.name,
    }


def _player_from(s: AccuracySettings):
    """(graph, player, what) for a session folder or a model file."""
    from gamegym.learners import get_learner
    from gamegym.nets.inference import LocalService

    target = Path(s.target)
    if target.is_dir():
        from gamegym.data.session import Session
        from gamegym.evaluation.arena import model_player

        if s.game is not None:
            raise ValueError("--game is for a model file; a session folder names its own game")
        session = Session(target)
        config = session.load_config()
        graph = config.game_ref.build()
        iteration = session.current_iteration() if s.iteration is None else s.iteration
        search = replace(config.evaluate.search, searchcount=s.searches, threads=s.threads)
        player = model_player(session, iteration, search, config)
        return graph, player, f"{target} iteration {iteration}"
    if not target.is_file():
        raise ValueError(f"{target} is neither a session folder nor a model file")
    if s.game is None:
        raise ValueError(f"a model file needs --game MODULE:CLASS (the game {target.name} plays)")
    if s.iteration is not None:
        raise ValueError("--iteration is for a session folder")
    from gamegym.nets.tfsetup import configure_tensorflow, load_model
    from gamegym.search.tree import SearchParams

    graph = load_game(s.game, s.game_args)
    configure_tensorflow(use_gpu=False)
    learner = get_learner(s.learner)
    evaluator = learner.make_evaluator(load_model(target), 0)
    params = SearchParams(searchcount=s.searches, threads=s.threads)  # PUCT, no noise
    player = learner.player(graph, LocalService(evaluator), params)
    return graph, player, str(target)


def cmd_accuracy(args) -> int:
    settings = AccuracySettings(
        target=Path(args.target),
        iteration=args.iteration,
        game=args.game,
        game_args=args.game_args,
        learner=args.learner,
        searches=args.searchcount,
        threads=args.threads,
        per_band=args.per_band,
        seed=args.seed,
    )
    record = run_accuracy(settings, progress=not args.json)
    positions_file = record.pop("positions_file")
    if args.json:
        print(json.dumps(record, sort_keys=True))
    else:
        print(f"{record['model']}: optimal moves on {positions_file} (seed {settings.seed})")
        print("\n".join(accuracy_text(record["bands"], settings.searches)))
    return 0


def add_parser(sub) -> None:
    """`gamegym bench accuracy`."""
    p = sub.add_parser(
        COMMAND,
        help="how often a model's move is optimal on a game's solved positions",
        description=__doc__.split("\n\n    gamegym")[0],
        epilog=EXAMPLE,
    )
    p.add_argument(
        "target", metavar="SESSION_OR_MODEL", help="a session folder or a .keras model file"
    )
    p.add_argument(
        "--iteration", type=int, help="the session's model iteration (default: the newest)"
    )
    p.add_argument(
        "--game", metavar="MODULE:CLASS", help="for a model file (a session names its own)"
    )
    p.add_argument("--game-args", type=json_object, default={}, help="the game's arguments (JSON)")
    p.add_argument("--learner", default="alphazero", help="the learner of a model file")
    p.add_argument("--searchcount", type=int, default=SEARCHES, help="searches a move")
    p.add_argument("--threads", type=int, default=8, help="concurrent searches")
    p.add_argument(
        "--per-band", type=int, help="a random sample of this many positions a band (none: all)"
    )
    p.add_argument("--seed", type=int, default=0, help="the searches' and the sample's seed")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=cmd_accuracy)
