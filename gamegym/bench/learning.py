"""`gamegym bench learning --game GAME`: train from scratch with the game's preset and measure it.

The gym runs in a temporary session (or the `--keep` folder); every `--interval-seconds` of
training the newest iteration is evaluated in this process against the game's benchmark
opponents: the exact solver where the game is small; for Connect Four the two yardsticks of the
AlphaZero literature, UCT with 1,000 random rollouts a move (`mcts:1000`) and alpha-beta to
depth 5 with the game's heuristic (`alphabeta:5`), and heuristic-free alpha-beta to depth 4
(`alphabeta0:4`).  For solvable games the curve also records the share of positions of the
model's own games where it played a solver-optimal move.  Several learner presets
(`--learner bootstrapped,dqn`) run one after the other with the same seeds and budget, and their
curves share one plot, written beside the kept session, or to `--plot`, or to the temporary
folder; the command prints where.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from gamegym.bench.accuracy import accuracy_text, benchmark_of, measure_accuracy
from gamegym.bench.training import trainer_share
from gamegym.cli.progress import ProgressBars
from gamegym.cli.util import comma_list, json_object
from gamegym.config import GymConfig, merged_settings
from gamegym.evaluation.arena import make_player, model_player, run_match
from gamegym.game.graph import GameGraph, load_game
from gamegym.game.players import Player, Solver, SolverPlayer
from gamegym.game.playerspecs import check_player_spec
from gamegym.learners import get_learner
from gamegym.presets import initial_model_path, learner_presets, preset_for
from gamegym.runtime.fastmodels import int8_share
from gamegym.search.mcts import choose_action

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
    (`loss`, `val_loss`, ...), the samples it trained on and its learning rate ({}: no report,
    as for the starting model)."""
    if not report:
        return {}
    figures = {
        name: round(float(value), 4)
        for name, value in (report.get("losses") or {}).items()
        if isinstance(value, (int, float))
    }
    for name in ("samples", "learning_rate"):
        if isinstance(report.get(name), (int, float)):
            figures[name] = report[name]
    return figures


def measure(
    session,
    graph,
    opponents: tuple,
    games: int,
    searchcount: int,
    rng,
    solver=None,
    explore_plies: int = 0,
    bars: ProgressBars | None = None,
    config: GymConfig | None = None,
    benchmark: tuple | None = None,
) -> dict:
    """One curve point for the newest iteration: a match of `games` games against each
    opponent and, with a solver, the optimal-move rate over half as many self-play games;
    with `benchmark` (gamegym.bench.accuracy.benchmark_of: a solved-position benchmark and
    its vertices), the share of optimal moves a band on every position of it (`accuracy`).
    `config`: the session's (None: read from its folder).
    Each opponent's figures include `by_side` (the results with the model moving first, and
    second); the first opponent's are also the point's own `wins`, `draws`, `losses`, `score`."""
    bars = bars or ProgressBars(enabled=False)
    started = time.monotonic()
    iteration = session.current_iteration()
    player = model_player(session, graph, iteration, searchcount, EVAL_THREADS, config)
    point: dict = {"iteration": iteration, "by_opponent": {}}
    training = training_figures(session.train_report(iteration))
    if training:
        point["training"] = training
    for spec in opponents:
        opponent: Player
        if spec == "solver" and solver is not None:
            opponent = SolverPlayer(hurry=False, solver=solver)
        else:
            opponent = make_player(spec, session, graph)
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
    if benchmark is not None:
        point["accuracy"] = measure_accuracy(
            graph, player, benchmark[0], benchmark[1], rng, bars=bars
        )
    point["eval_seconds"] = round(time.monotonic() - started, 1)
    return point


def run_learning_bench(
    game: str,
    game_args: dict,
    minutes: float,
    interval: float,
    games: int,
    searchcount: int,
    plot_path: Path | None,
    final_factor: int = 4,
    keep: Path | None = None,
    opponents: tuple | None = None,
    overrides: dict | None = None,
    seed: int = 0,
    learner: str = "alphazero",
    graph: GameGraph | None = None,
    solver: Solver | None = None,
) -> dict:
    """Train `game` from scratch for `minutes` with the preset of `learner` and return its
    curve (see the module doc); `graph`: the game, when the caller has built it from `game`
    and `game_args` already; `solver`: its exact solver, when the caller has solved it.
    With `keep`, the session is made there and kept (e.g. to `gamegym play` it afterwards);
    `opponents` (player specs) replaces the game's benchmark opponents.  `overrides` change
    the preset's config (as GymConfig.updated takes them); `seed` is the session's seed and
    the evaluation's."""
    from gamegym.runtime.gym import GameGym

    if graph is None:
        graph = load_game(game, game_args)
    found = bundled_preset(game, graph, learner)
    if keep is not None and Path(keep).exists():
        raise ValueError(
            f"--keep {keep}: that folder exists; the benchmark trains from scratch in a new session"
        )
    opponents, solver = bench_opponents(game, graph, opponents, solver)
    # the game, the config and the solver are built once here and passed down
    config = GymConfig.from_dict(
        merged_settings({**found[1], "status_interval": 30.0, "seed": seed}, overrides or {})
    )
    rng = np.random.default_rng(seed)
    trains = get_learner(config.train.learner)
    searches = trains.player_searches(config)
    if searches:
        print(
            f"[bench] {learner}: the newest iteration plays with {searchcount} searches per "
            f"move ({EVAL_THREADS} concurrent); self-play uses {_selfplay_searches(config)}",
            flush=True,
        )
    else:
        print(
            f"[bench] {learner}: the newest iteration plays {trains.play_rule(config)}, no "
            "search (nor in self-play)",
            flush=True,
        )
    with tempfile.TemporaryDirectory(prefix="gamegym-learn-") as folder, ProgressBars() as bars:
        gym = GameGym(
            Path(keep) if keep is not None else Path(folder) / "learn",
            graph=graph,
            config=config,
            initial_model=initial_model_path(
                game, graph.game_args, config.network_options(), learner, graph
            ),
        )
        curve, final, peak_rss = train_and_measure(
            gym,
            graph,
            opponents,
            solver,
            minutes,
            interval,
            games,
            searchcount,
            rng,
            final_factor,
            bars,
        )
        positions = gym.monitor.totals.get("selfplayer.positions", 0.0)
        trainer = trainer_share(gym.session.train_reports())
        int8 = int8_share(gym.session) if config.predict.precision == "int8" else None
    figures = {
        "game": game,
        "game_args": graph.game_args,
        "learner": learner,
        "minutes": minutes,
        "opponent": opponents[0],
        "opponents": list(opponents),
        "curve": curve,
        "final": final,
        "eval_searchcount": searchcount if searches else 0,
        "eval_threads": EVAL_THREADS if searches else 0,
        "eval_player": "search" if searches else "vote",
        "selfplay_searchcount": _selfplay_searches(config),
        # over the training clock (the gym ran `minutes`; the evaluations pause nothing)
        "selfplay_positions_per_s": round(positions / max(1e-9, minutes * 60), 1),
        "replay": config.train.replay,
        # training against waiting for samples (gamegym.bench.training.trainer_share)
        "trainer_share": trainer,
        "seed": seed,
        "peak_rss_mib_by_role": peak_rss,
    }
    if int8 is not None:
        figures["int8_models"] = {"int8": int8[0], "models": int8[1]}
        print(
            f"[bench] int8: {int8[0]} of {int8[1]} models passed the int8 check and ran int8 "
            "(the others float32)",
            flush=True,
        )
    if plot_path is not None and curve:
        plot_curves([figures], plot_path)
        figures["plot"] = str(plot_path)
    return figures


def _selfplay_searches(config) -> int:
    """Searches per move in self-play (0: the learner's self-play does not search)."""
    searches = get_learner(config.train.learner).searches_in_selfplay
    return config.selfplay.searchcount if searches else 0


def run_learning_benches(
    learners: list[str],
    plot_path: Path | None,
    keep: Path | None = None,
    variants: dict[str, dict] | None = None,
    seeds: tuple[int, ...] = (0,),
    **options: Any,
) -> dict:
    """The learning bench of each learner preset, each config variant (name -> changes to the
    preset, as GymConfig.updated takes them) and each seed, in turn, with the same budget;
    one plot with all their curves, and the minutes each run took to reach each threshold."""
    runs = [
        (learner, name, changes, seed)
        for learner in learners
        for name, changes in (variants or {"": {}}).items()
        for seed in seeds
    ]
    # the game is built once for every run (`options` name it: game, game_args), and solved
    # once where the runs measure against the solver (about 2.5 minutes for Santorini 3×3-1)
    if options.get("graph") is None:  # (setdefault would build it even when it is given)
        options["graph"] = load_game(options["game"], options.get("game_args"))
    if len(runs) == 1:
        learner, name, changes, seed = runs[0]
        return run_learning_bench(
            learner=learner,
            plot_path=plot_path,
            keep=keep,
            overrides=changes or None,
            seed=seed,
            **options,
        )
    for learner in learners:  # a learner without a preset fails now, not after the solve
        bundled_preset(options["game"], options["graph"], learner)
    options["opponents"], options["solver"] = bench_opponents(
        options["game"], options["graph"], options.get("opponents"), options.get("solver")
    )
    results = []
    for learner, name, changes, seed in runs:
        label = " ".join(
            part
            for part in (
                learner if len(learners) > 1 else "",
                name,
                f"seed {seed}" if len(seeds) > 1 else "",
            )
            if part
        )
        folder = None if keep is None else Path(keep) / label.replace(" ", "-")
        result = run_learning_bench(
            learner=learner,
            plot_path=None,
            keep=folder,
            overrides=changes or None,
            seed=seed,
            **options,
        )
        result.update(label=label, variant=name, overrides=changes)
        results.append(result)
    figures: dict[str, Any] = {
        "runs": results,
        "minutes_to": {r["label"]: minutes_to(r["curve"]) for r in results},
    }
    if plot_path is not None:
        plot_curves(results, plot_path)
        figures["plot"] = str(plot_path)
    return figures


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


def bundled_preset(game: str, graph, learner: str) -> tuple[str, dict]:
    """The learner's bundled preset for the game (as `preset_for` gives it), or a ValueError
    that names the game: the learning benchmark runs on the bundled games."""
    found = preset_for(game, graph.game_args, learner)
    if found is None:
        raise ValueError(
            f"no bundled {learner} preset for {game} {graph.game_args}; the "
            "learning benchmark runs on the bundled games"
        )
    return found


def bench_opponents(
    game: str, graph, opponents: tuple | None = None, solver: Solver | None = None
) -> tuple[tuple, Solver | None]:
    """The benchmark's opponents for a game (player specs; `opponents` replaces the game's
    own), and the exact solver (solved now, before any training clock starts, unless `solver`
    has solved it already) when the game is measured against it.  A bad spec fails now, not
    after the training."""
    opponents = tuple(opponents or OPPONENTS.get(game, ("alphabeta:2",)))
    for spec in opponents:
        problem = check_player_spec(spec)
        if problem is not None:
            raise ValueError(f"--opponent: {problem}")
    if game not in SOLVABLE:
        return opponents, None
    if solver is not None:
        return opponents, solver
    started = time.monotonic()
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
    graph,
    opponents: tuple,
    solver,
    minutes: float,
    interval: float,
    games: int,
    searchcount: int,
    rng,
    final_factor: int = 4,
    bars: ProgressBars | None = None,
) -> tuple[list, dict, dict]:
    """Run `gym` for `minutes`, measuring its newest iteration at the start and every
    `interval` minutes; returns the curve, the final figure (on `final_factor` times the
    games, after the clock) and the peak resident memory (MiB) of each role."""
    bars = bars or ProgressBars(enabled=False)
    explore = gym.config.selfplay.temperature_drop_move
    benchmark = benchmark_of(graph)

    def point(games: int) -> dict:
        """A curve point of the newest iteration, `games` games against each opponent."""
        return measure(
            gym.session,
            graph,
            opponents,
            games,
            searchcount,
            rng,
            solver,
            explore,
            bars,
            gym.config,
            benchmark,
        )

    curve = [
        {
            **point(games),
            "minutes": 0.0,
        }
    ]  # where it starts
    show(curve[-1])
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
        figure = point(games)
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
    # the final figure: the last iteration again, on `final_factor` times the games (after
    # the training clock, so a cheap curve and a precise final number)
    final = point(games * final_factor)
    final.update(minutes=curve[-1]["minutes"], opponent=opponents[0])
    show(final, "final")
    return curve, final, peak_rss


def show(point: dict, label: str = "") -> None:
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
    """One plot of the curves of one or more runs (learner presets) on the same game."""
    from gamegym.runtime.monitor import new_figure, save_figure

    figure, axis = new_figure((6.5, 4))
    several = len(runs) > 1
    for n, figures in enumerate(runs):
        curve, final = figures["curve"], figures.get("final")
        minutes = [p["minutes"] for p in curve]
        name = f"{figures.get('label') or figures['learner']}: " if several else ""
        lines = [
            (
                f"{name}score vs {spec}",
                [p["by_opponent"][spec]["score"] for p in curve],
                final["by_opponent"][spec]["score"] if final else None,
            )
            for spec in figures["opponents"]
        ]
        if "optimal_move_rate" in curve[0]:
            lines.append(
                (
                    f"{name}optimal-move rate",
                    [p["optimal_move_rate"] for p in curve],
                    final.get("optimal_move_rate") if final else None,
                )
            )
        for band in curve[0].get("accuracy", {}):
            lines.append(
                (
                    f"{name}optimal moves, {band} positions",
                    [p["accuracy"][band]["search"]["optimal"] for p in curve],
                    final["accuracy"][band]["search"]["optimal"] if final else None,
                )
            )
        for m, (label, values, last) in enumerate(lines):
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
    if any(f.get("final") for f in runs):
        axis.plot([], [], marker="*", color="grey", linestyle="none", label="final, on more games")
    first = runs[0]
    axis.set_ylim(0, 1.05)
    axis.set_xlabel("minutes of training (2-core CPU)")
    budget = (
        "majority vote, no search"
        if first.get("eval_player") == "vote"
        else f"{first['eval_searchcount']} searches per move"
    )
    name = first["game"].split(":")[1]
    shown = {k: v for k, v in (first["game_args"] or {}).items() if v is not None}
    if shown:  # e.g. OpenSpielGame {'name': 'connect_four'}
        name = f"{name} {shown}"
    learners = "" if len(runs) > 1 else f"{first.get('learner', 'alphazero')}, "
    axis.set_title(f"{name}, {learners}{budget}", fontsize="medium")
    axis.grid(alpha=0.3)
    axis.legend(fontsize="x-small")
    figure.tight_layout()
    save_figure(figure, path)


def cmd_learning(args) -> int:
    learners = [name.strip() for name in args.learner.split(",") if name.strip()]
    runs = len(learners) * len(args.variant or [None]) * len(args.seed)
    plot = plot_destination(args.plot, args.keep, runs, "learning")
    figures = run_learning_benches(
        learners,
        plot,
        keep=args.keep,
        variants=dict(args.variant) if args.variant else None,
        seeds=tuple(args.seed),
        game=args.game,
        game_args=args.game_args,
        minutes=args.seconds / 60,
        interval=args.interval_seconds / 60,
        games=args.eval_games,
        searchcount=args.eval_searchcount,
        opponents=tuple(args.opponent) if args.opponent else None,
    )
    if args.json:
        print(json.dumps(figures, sort_keys=True))
        return 0
    for run in figures.get("runs", [figures]):
        rss = ", ".join(f"{k} {v:.0f}" for k, v in sorted(run["peak_rss_mib_by_role"].items()))
        print(
            f"final ({run.get('label') or run['learner']}): {run['final']}; self-play "
            f"{run['selfplay_positions_per_s']} positions/s\npeak memory by role: {rss} MiB "
            "resident (the benchmark's own process, 'gym', also evaluates with TensorFlow)"
        )
        share = run.get("trainer_share")
        if share:
            print(
                f"Trainer: training {share['training_seconds']:,.0f} s of "
                f"{share['wall_seconds']:,.0f} s between its first and last iteration "
                f"({share['training_share']:.0%}), the rest waiting for samples"
            )
    for label, reached in figures.get("minutes_to", {}).items():
        print(
            f"minutes to ({label}): "
            + ", ".join(
                f"{name} {'never' if m is None else f'{m:.1f}'}" for name, m in reached.items()
            )
        )
    if figures.get("plot"):
        print(f"curves: {figures['plot']}")
    return 0


COMMAND = "learning"
EXAMPLE = """examples:
  gamegym bench learning --game games.tictactoe:TicTacToe --seconds 600
  gamegym bench learning --game games.tictactoe:TicTacToe --learner bootstrapped,dqn --json
  gamegym bench learning --game games.connectfour:ConnectFour --opponent alphabeta0:4 \\
      --seconds 4500 --interval-seconds 900
  gamegym bench learning --game games.tictactoe:TicTacToe --seconds 300 --seed 0,1 \\
      --variant 'puct={}' --variant 'gumbel={"selfplay": {"search": "gumbel"}}'
"""


def add_training_flags(p: argparse.ArgumentParser) -> None:
    """The flags of a bench that trains a bundled game and measures it (learning, replay)."""
    p.add_argument(
        "--game",
        required=True,
        metavar="MODULE:CLASS",
        help="a bundled game, e.g. games.tictactoe:TicTacToe",
    )
    p.add_argument(
        "--game-args",
        type=json_object,
        default={},
        help="the game's arguments (JSON; they pick the preset)",
    )
    p.add_argument("--seconds", type=float, default=600.0, help="training time of a run")
    p.add_argument(
        "--interval-seconds",
        type=float,
        default=120.0,
        help="training time between two evaluations (points of the curve)",
    )
    p.add_argument(
        "--eval-games",
        type=int,
        default=20,
        help="games per curve point; the final point plays 4x as many",
    )
    p.add_argument(
        "--eval-searchcount",
        type=int,
        default=100,
        help="searches per move of the evaluated iteration",
    )
    p.add_argument(
        "--plot",
        type=Path,
        metavar="PATH",
        help="where to write the curves (PNG; default: the plots folder of the session --keep "
        "keeps, else a new file in the temporary folder; the command prints where)",
    )
    p.add_argument(
        "--seed",
        type=comma_list(int),
        default=[0],
        metavar="N,N",
        help="one run per seed, the same seeds for every learner, variant or mode",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")


def add_parser(sub) -> None:
    """`gamegym bench learning --game GAME`: train a bundled game from scratch and print its
    curve."""
    p = sub.add_parser(
        COMMAND,
        help="train a bundled game from scratch and print its curve",
        description=__doc__,
        epilog=EXAMPLE,
    )
    add_training_flags(p)
    p.add_argument(
        "--learner",
        default="alphazero",
        metavar="NAME,NAME",
        help="learner preset(s), comma-separated: "
        + ", ".join(learner_presets())
        + " (one run each, one plot)",
    )
    p.add_argument(
        "--opponent",
        type=comma_list(),
        metavar="SPEC,SPEC",
        help="player specs to measure against, instead of the game's benchmark opponents",
    )
    p.add_argument(
        "--keep",
        type=Path,
        metavar="SESSION",
        help="train in this new session folder and keep it (with several runs: "
        "one folder each inside it)",
    )
    p.add_argument(
        "--variant",
        type=variant,
        action="append",
        metavar="NAME=JSON",
        help="a run with these changes to the preset's config, e.g. "
        '\'gumbel={"selfplay": {"search": "gumbel"}}\' (repeat it: one run '
        "each, side by side in one plot; NAME={} is the preset as it is)",
    )
    p.set_defaults(run=cmd_learning)


def variant(text: str) -> tuple[str, dict]:
    """NAME=JSON of --variant: a name and config changes (a JSON object)."""
    name, sep, changes = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(
            f'{text!r} is not NAME=JSON, e.g. gumbel=\'{{"selfplay": {{"search": "gumbel"}}}}\''
        )
    return name.strip(), json_object(changes)


def plot_destination(plot: Path | None, keep: Path | None, runs: int, name: str) -> Path:
    """Where a bench that trains writes its curves: `plot` when given; else beside the kept
    session (its plots folder; with several runs, the folder that holds them); else a new file
    in the temporary folder (the runs' own sessions are gone by then), never the current
    folder.  The command prints the path it wrote."""
    if plot is not None:
        return plot
    if keep is not None:
        return Path(keep) / "plots" / f"{name}.png" if runs == 1 else Path(keep) / f"{name}.png"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path(tempfile.gettempdir()) / f"gamegym-bench-{name}-{stamp}-{os.getpid()}.png"
