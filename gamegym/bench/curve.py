"""A learning curve: a gym trained from scratch in a thread while its newest iteration is
measured in this process every `interval` minutes (`train_and_measure`), each curve point
against a `Yardstick`; the minutes a curve takes to reach each threshold (`minutes_to`) and one
plot of one or more curves (`plot_curves`).  The learning and replay benchmarks draw theirs here.

A game's yardstick: the exact solver where the game is small; for Connect Four the two
yardsticks of the AlphaZero literature, UCT with 1,000 random rollouts a move (`mcts:1000`)
and alpha-beta to depth 5 with the game's heuristic (`alphabeta:5`), and heuristic-free
alpha-beta to depth 4 (`alphabeta0:4`, the yardstick of earlier figures).  For solvable games
a point also records the share of positions of the model's own games where it played a
solver-optimal move, and for a game with a solved-position benchmark (gamegym.bench.accuracy)
the shares of optimal moves on it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gamegym.bench.accuracy import accuracy_text, benchmark_of, measure_accuracy
from gamegym.config import GymConfig
from gamegym.console import ProgressBars
from gamegym.evaluation.arena import make_player, model_player, run_match
from gamegym.game.graph import GameGraph
from gamegym.game.players import Player, Solver, SolverPlayer
from gamegym.game.playerspecs import check_player_spec
from gamegym.game.ref import GameRef
from gamegym.search.mcts import choose_action

__all__ = [
    "EVAL_THREADS",
    "OPPONENTS",
    "SOLVABLE",
    "Yardstick",
    "bench_opponents",
    "measure",
    "minutes_to",
    "optimal_move_rate",
    "plot_curves",
    "show",
    "train_and_measure",
    "training_figures",
]

# game spec -> its benchmark opponents (player specs; the first is the headline figure)
OPPONENTS = {
    "games.tictactoe:TicTacToe": ("solver",),
    "games.santorini:Santorini": ("solver",),
    "games.tictactoe:TicTacToeVariant": ("solver",),
    "games.connectfour:ConnectFour": ("mcts:1000", "alphabeta:5", "alphabeta0:4"),
    "gamegym.adapters.openspiel:OpenSpielGame": ("openspiel-mcts:1000",),
}
SOLVABLE = (
    "games.tictactoe:TicTacToe",
    "games.tictactoe:TicTacToeVariant",
    "games.santorini:Santorini",
)  # the optimal-move rate is measured
EVAL_THREADS = 8  # concurrent searches (virtual loss) of the evaluated player


@dataclass(frozen=True)
class Yardstick:
    """What a curve point measures the newest iteration with: a match of `games` games
    against each of `opponents` (player specs; the first is the headline figure), the model
    playing with `searchcount` searches a move; with the game's exact `solver`, the optimal-move
    rate of its own games; with a solved-position `benchmark` (gamegym.bench.accuracy.
    benchmark_of: the benchmark and its vertices), the share of optimal moves a band on every
    position of it.  Built once per game and passed down."""

    graph: GameGraph
    opponents: tuple[str, ...]
    games: int = 20
    searchcount: int = 100
    solver: Solver | None = None
    benchmark: tuple[Any, list] | None = None

    @classmethod
    def of(
        cls,
        game: GameRef,
        games: int,
        searchcount: int,
        opponents: tuple[str, ...] | None = None,
        solver: Solver | None = None,
    ) -> Yardstick:
        """The yardstick of `game` (on this process's graph of it): its opponents and solver
        as `bench_opponents` gives them (`opponents` replaces the game's own; the game is
        solved now unless `solver` has solved it), its solved-position benchmark read from
        the game."""
        opponents, solver = bench_opponents(game, opponents, solver)
        graph = game.build()
        return cls(graph, opponents, games, searchcount, solver, benchmark_of(graph))


def optimal_move_rate(
    graph, player, games: int, rng, solver, explore_plies: int = 0
) -> tuple[float, int]:
    """Share of the positions of `player`'s own games (against itself) where its move (the
    one it plays in a match) is optimal according to the exact solver.  For the first
    `explore_plies` plies of each game the move actually played is drawn from the search's
    visit counts, as in self-play (a uniformly random legal move for a player that does not
    search), so that the games differ; every position counts either way.
    Returns (rate, positions)."""
    optimal = total = 0
    for _ in range(games):
        vertex, ply = graph.roots[0], 0
        while graph.children_at(vertex):
            root = player.search(graph, vertex, rng) if hasattr(player, "search") else None
            if root is not None:
                action = int(root.actions[choose_action(root, 0.0, rng)])
            else:
                action = player.choose(graph, vertex, rng)
            optimal += action in solver.solve(vertex).optimal_actions
            total += 1
            if ply < explore_plies:
                if root is not None:
                    action = int(root.actions[choose_action(root, 1.0, rng)])
                else:
                    actions = graph.actions_at(vertex)
                    action = int(actions[rng.integers(len(actions))])
            vertex = graph.child_by_action(vertex, action)
            ply += 1
    return (optimal / total if total else 0.0), total


def training_figures(report: dict | None) -> dict:
    """What the Trainer reported for the iteration a point measures: its last epoch's losses
    (`loss`, `val_loss`, ...), the samples it trained on, how many of them with reanalysed
    targets (`reanalysed`, train.reanalyze) and its learning rate ({}: no report, as for the
    starting model)."""
    if not report:
        return {}
    figures = {
        name: round(float(value), 4)
        for name, value in (report.get("losses") or {}).items()
        if isinstance(value, (int, float))
    }
    for name in ("samples", "reanalysed", "learning_rate"):
        if isinstance(report.get(name), (int, float)):
            figures[name] = report[name]
    return figures


def measure(
    session,
    yardstick: Yardstick,
    rng,
    games: int | None = None,
    explore_plies: int = 0,
    bars: ProgressBars | None = None,
    config: GymConfig | None = None,
) -> dict:
    """One curve point for the newest iteration of `session` against `yardstick`: a match of
    `games` games (None: the yardstick's) against each opponent and, with a solver, the
    optimal-move rate over half as many self-play games (the first `explore_plies` plies of
    each drawn as in self-play); with a solved-position benchmark, the share of optimal moves
    a band on every position of it (`accuracy`).  `config`: the session's (None: read from
    its folder).
    Each opponent's figures include `by_side` (the results with the model moving first, and
    second); the first opponent's are also the point's own `wins`, `draws`, `losses`, `score`."""
    graph, solver, opponents = yardstick.graph, yardstick.solver, yardstick.opponents
    games = yardstick.games if games is None else games
    bars = bars or ProgressBars(enabled=False)
    started = time.monotonic()
    iteration = session.current_iteration()
    config = session.load_config() if config is None else config
    search = replace(
        config.evaluate.search, searchcount=yardstick.searchcount, threads=EVAL_THREADS
    )
    player = model_player(session, iteration, search, config)
    point: dict = {"iteration": iteration, "by_opponent": {}}
    training = training_figures(session.train_report(iteration))
    if training:
        point["training"] = training
    for spec in opponents:
        opponent: Player
        if spec == "solver" and solver is not None:
            opponent = SolverPlayer(hurry=False, solver=solver)
        else:
            opponent = make_player(spec, session, config=config)
        bar = bars.add(f"evaluating iteration {iteration} vs {spec}", games, "games")
        result = run_match(
            graph,
            player,
            opponent,
            games,
            rng,
            (f"iteration:{iteration}", spec),
            # called within run_match, while `bar` is this opponent's
            after_game=lambda so_far: bars.update(bar, completed=so_far.games),  # noqa: B023
        )
        bars.remove(bar)
        point["by_opponent"][spec] = {
            k: v
            for k, v in result.to_dict().items()
            if k in ("wins", "draws", "losses", "score", "by_side")
        }
    point.update(point["by_opponent"][opponents[0]])
    if solver is not None:
        rate, positions = optimal_move_rate(
            graph, player, max(2, games // 2), rng, solver, explore_plies
        )
        point["optimal_move_rate"], point["positions"] = round(rate, 4), positions
    if yardstick.benchmark is not None:
        benchmark, vertices = yardstick.benchmark
        point["accuracy"] = measure_accuracy(graph, player, benchmark, vertices, rng, bars=bars)
    point["eval_seconds"] = round(time.monotonic() - started, 1)
    return point


def bench_opponents(
    game: GameRef, opponents: tuple | None = None, solver: Solver | None = None
) -> tuple[tuple, Solver | None]:
    """The benchmark's opponents for a game (player specs; `opponents` replaces the game's
    own), and the exact solver (solved now, before any training clock starts, unless `solver`
    has solved it already) when the game is measured against it.  A bad spec fails now, not
    after the training."""
    opponents = tuple(opponents or OPPONENTS.get(game.spec, ("alphabeta:2",)))
    for spec in opponents:
        problem = check_player_spec(spec)
        if problem is not None:
            raise ValueError(f"--opponent: {problem}")
    if game.spec not in SOLVABLE:
        return opponents, None
    if solver is not None:
        return opponents, solver
    started = time.monotonic()
    graph = game.build()
    solver = Solver(graph)
    value = solver.value(graph.roots[0])
    print(
        f"[bench] solved the game exactly first: value {value:+.0f} for the first player, "
        f"{len(solver.table):,} table entries, {time.monotonic() - started:.0f} s",
        flush=True,
    )
    return opponents, solver


def train_and_measure(
    gym,
    yardstick: Yardstick,
    minutes: float,
    interval: float,
    rng,
    final_factor: int = 4,
    bars: ProgressBars | None = None,
) -> tuple[list, dict, dict]:
    """Run `gym` for `minutes`, measuring its newest iteration against `yardstick` at the start
    and every `interval` minutes; returns the curve, the final figure (on `final_factor` times
    the games, after the clock) and the peak resident memory (MiB) of each role."""
    bars = bars or ProgressBars(enabled=False)
    explore = gym.config.selfplay.temperature_drop_move

    def point(games: int | None = None) -> dict:
        """A curve point of the newest iteration (`games` against each opponent, None: the
        yardstick's)."""
        return measure(gym.session, yardstick, rng, games, explore, bars, gym.config)

    curve = [{**point(), "minutes": 0.0}]  # where it starts
    show(curve[-1])
    peak_rss = _train_measuring(gym, minutes, interval, curve, point, bars)
    # the final figure: the last iteration again, on `final_factor` times the games (after
    # the training clock, so a cheap curve and a precise final number)
    final = point(yardstick.games * final_factor)
    final.update(minutes=curve[-1]["minutes"], opponent=yardstick.opponents[0])
    show(final, "final")
    return curve, final, peak_rss


def _train_measuring(gym, minutes: float, interval: float, curve: list, point, bars) -> dict:
    """Run `gym` for `minutes` in a thread, adding a `point()` to `curve` every `interval`
    minutes; the peak resident memory (MiB) of each role.  A gym that fails or stops with an
    error raises RuntimeError (after its last point)."""
    outcome: dict = {}

    def train():
        try:
            outcome["code"] = gym.resume(max_seconds=minutes * 60, console=False)
        except BaseException as error:  # reported below, after the last point
            outcome["error"] = error

    runner = threading.Thread(target=train, daemon=True)
    training = bars.add("training", round(minutes * 60), "s")
    started = time.monotonic()
    next_point = started + interval * 60
    peak_rss: dict = {}
    runner.start()
    while runner.is_alive():
        runner.join(timeout=min(1.0, max(0.0, next_point - time.monotonic())))
        for role, rss in gym.monitor.memory().items():
            peak_rss[role] = max(rss, peak_rss.get(role, 0.0))
        bars.update(
            training,
            completed=min(minutes * 60, time.monotonic() - started),
            description=f"training, iteration {gym.session.current_iteration()}",
        )
        if runner.is_alive() and time.monotonic() < next_point:
            continue
        next_point += interval * 60
        elapsed = (time.monotonic() - started) / 60
        iteration = gym.session.current_iteration()
        if iteration < 0 or (
            not runner.is_alive()
            and iteration == curve[-1]["iteration"]
            and elapsed - curve[-1]["minutes"] < interval / 2
        ):
            continue  # the run ended just after the last point: nothing new to measure
        figure = point()
        figure["minutes"] = round(elapsed, 2)
        curve.append(figure)
        show(figure)
    bars.remove(training)
    if "error" in outcome:
        raise RuntimeError(
            f"the gym failed during the learning benchmark: {outcome['error']!r}"
        ) from outcome["error"]
    if outcome.get("code"):
        raise RuntimeError(
            f"the gym stopped with an error (exit code {outcome['code']}); see its output above"
        )
    return peak_rss


def show(point: dict, label: str = "") -> None:
    """Print a curve point on one line (`label`: e.g. "final"), and its accuracy bands."""
    optimal = point.get("optimal_move_rate")
    results = ", ".join(
        f"+{r['wins']} ={r['draws']} -{r['losses']} vs {spec}"
        for spec, r in point["by_opponent"].items()
    )
    print(
        f"[bench] {label + ': ' if label else ''}{point['minutes']:.1f} min, iteration "
        f"{point['iteration']}: {results}"
        + ("" if optimal is None else f", optimal moves {optimal:.1%} of {point['positions']}"),
        flush=True,
    )
    for line in accuracy_text(point.get("accuracy", {})):
        print(f"[bench]   {line.strip()}", flush=True)


def plot_curves(runs: list[dict], path: Path) -> None:
    """One picture of the curves of one or more runs (learner presets, variants, seeds) on the
    same game: the match scores (and the optimal-move rate) on top and, where the runs measured
    a solved-position benchmark, the share of optimal moves a band with search below it, each
    legend beside its panel so the curves stay visible."""
    from gamegym.data.figures import new_figure, save_figure

    banded = any("accuracy" in (f["curve"] or [{}])[0] for f in runs)
    figure, axes = new_figure((10, 7.5 if banded else 4.5), rows=2 if banded else 1)
    matches, bands = (axes[0], axes[1]) if banded else (axes, None)
    several = len(runs) > 1
    for n, figures in enumerate(runs):
        curve, final = figures["curve"], figures.get("final")
        minutes = [p["minutes"] for p in curve]
        name = f"{figures.get('label') or figures['learner']}: " if several else ""
        lines = [
            (
                matches,
                f"{name}score vs {spec}",
                [p["by_opponent"][spec]["score"] for p in curve],
                final["by_opponent"][spec]["score"] if final else None,
            )
            for spec in figures["opponents"]
        ]
        if "optimal_move_rate" in curve[0]:
            lines.append(
                (
                    matches,
                    f"{name}optimal-move rate",
                    [p["optimal_move_rate"] for p in curve],
                    final.get("optimal_move_rate") if final else None,
                )
            )
        known = ("early", "middle", "late")  # the bands in the order of a game
        for band in sorted(
            curve[0].get("accuracy", {}),
            key=lambda b: (b not in known, known.index(b) if b in known else 0, b),
        ):
            lines.append(
                (
                    bands,
                    f"{name}{band} positions",
                    [p["accuracy"][band]["search"]["optimal"] for p in curve],
                    final["accuracy"][band]["search"]["optimal"] if final else None,
                )
            )
        kinds: dict = {}
        for axis, label, values, last in lines:
            m = kinds[id(axis)] = kinds.get(id(axis), -1) + 1  # the line's kind on its panel
            colour = f"C{n}" if several else f"C{m}"
            style = ("-", "--", ":", "-.")[m % 4] if several else "-"
            axis.plot(
                minutes, values, marker="os^vDP"[m % 6], color=colour, linestyle=style, label=label
            )
            if last is not None and final and "minutes" in final:  # measured on more games
                axis.plot(
                    [final["minutes"]],
                    [last],
                    marker="*",
                    markersize=12,
                    color=colour,
                    linestyle="none",
                )
    first = runs[0]
    budget = (
        "majority vote, no search"
        if first.get("eval_player") == "vote"
        else f"{first['eval_searchcount']} searches per move"
    )
    name = first["game"].split(":")[1]
    shown = {k: v for k, v in (first["game_args"] or {}).items() if v is not None}
    if shown:  # e.g. OpenSpielGame name=connect_four
        name = f"{name} " + " ".join(f"{k}={v}" for k, v in shown.items())
    learners = "" if len(runs) > 1 else f"{first.get('learner', 'alphazero')}, "
    matches.set_title(f"{name}, {learners}{budget}", fontsize="medium")
    matches.set_ylabel("score (wins + draws / 2)")
    panels = [matches] if bands is None else [matches, bands]
    if bands is not None:
        bands.set_ylabel("optimal moves, with search")
    for axis in panels:
        if any(f.get("final") for f in runs):
            axis.plot(
                [], [], marker="*", color="grey", linestyle="none", label="final, on more games"
            )
        axis.set_ylim(0, 1.05)
        axis.grid(alpha=0.3)
        axis.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    panels[-1].set_xlabel("minutes of training (2-core CPU)")
    figure.tight_layout()
    save_figure(figure, path)


def minutes_to(
    curve: list[dict], score: float = 0.9, optimal: float = 0.9
) -> dict[str, float | None]:
    """The minutes of training after which a curve reaches each threshold and stays there at
    every later point (None: it never does): no losses against the solver, `optimal` of the
    moves solver-optimal, a `score` (wins + draws/2 per game) against each other opponent."""
    if not curve:
        return {}
    checks: dict[str, Any] = {}
    for spec in curve[0].get("by_opponent", {}):
        if spec == "solver":
            checks["no losses vs solver"] = lambda p, s=spec: p["by_opponent"][s]["losses"] == 0
        else:
            checks[f"{score:.0%} vs {spec}"] = lambda p, s=spec: (
                p["by_opponent"][s]["score"] >= score
            )
    if "optimal_move_rate" in curve[0]:
        checks[f"{optimal:.0%} optimal moves"] = lambda p: p["optimal_move_rate"] >= optimal
    out: dict[str, float | None] = {}
    for name, reached in checks.items():
        hits = [bool(reached(point)) for point in curve]
        since = next((k for k in range(len(curve)) if all(hits[k:])), None)
        out[name] = None if since is None else curve[since]["minutes"]
    return out
