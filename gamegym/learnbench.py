"""`gamegym bench --learning GAME`: train from scratch with the game's preset and measure it.

The gym runs in a temporary session; every `interval` minutes the newest iteration is evaluated
in this process against the game's benchmark opponent (the exact solver where the game is small,
alpha-beta otherwise).  For solvable games the curve also records the share of positions of the
model's own games where it played a solver-optimal move.
"""
from __future__ import annotations

import json
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from gamegym.arena import make_player, model_player, run_match
from gamegym.config import GymConfig
from gamegym.graph import load_game
from gamegym.mcts import choose_action
from gamegym.players import Solver, SolverPlayer
from gamegym.presets import initial_model_path, preset_for

# game spec -> (opponent, whether to measure the optimal-move rate)
OPPONENTS = {"games.tictactoe:TicTacToe": ("solver", True),
             "games.santorini:Santorini": ("solver", True),
             "games.connectfour:ConnectFour": ("alphabeta:4", False)}
EVAL_THREADS = 8   # concurrent searches (virtual loss) of the evaluated player


def optimal_move_rate(graph, player, games: int, rng, solver,
                      explore_plies: int = 0) -> tuple[float, int]:
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


def measure(session, graph, opponent_spec: str, games: int, searchcount: int, rng,
            solver=None, explore_plies: int = 0) -> dict:
    """One curve point for the newest iteration: a match of `games` games against the
    opponent and, with a solver, the optimal-move rate over half as many self-play games."""
    started = time.monotonic()
    iteration = session.current_iteration()
    player = model_player(session, graph, iteration, searchcount, EVAL_THREADS)
    if opponent_spec == "solver" and solver is not None:
        opponent = SolverPlayer(hurry=False, solver=solver)
    else:
        opponent = make_player(opponent_spec, session, graph)
    result = run_match(graph, player, opponent, games, rng, (f"iteration:{iteration}",
                                                             opponent_spec))
    point = {"iteration": iteration, **{k: v for k, v in result.to_dict().items()
                                        if k in ("wins", "draws", "losses", "score")}}
    if solver is not None:
        rate, positions = optimal_move_rate(graph, player, max(2, games // 2), rng, solver,
                                            explore_plies)
        point["optimal_move_rate"], point["positions"] = round(rate, 4), positions
    point["eval_seconds"] = round(time.monotonic() - started, 1)
    return point


def run_learning_bench(game: str, game_args: dict, minutes: float, interval: float,
                       games: int, searchcount: int, plot_path: Path | None,
                       final_factor: int = 4, keep: Path | None = None,
                       learner: str = "alphazero") -> dict:
    """Train `game` from scratch for `minutes` with the preset of `learner` and return its
    curve (see the module doc).  With `keep`, the session is made there and kept (e.g. to
    `gamegym play` it afterwards)."""
    from gamegym.gym import GameGym
    graph = load_game(game, game_args)
    found = preset_for(game, graph.game_args, learner)
    if found is None:
        raise ValueError(f"no bundled {learner} preset for {game} {graph.game_args}; the "
                         "learning benchmark runs on the bundled games")
    if keep is not None and Path(keep).exists():
        raise ValueError(f"--keep {keep}: that folder exists; the benchmark trains from scratch "
                         "in a new session")
    opponent, with_optimal = OPPONENTS.get(game, ("alphabeta:2", False))
    config = GymConfig(**found[1], status_interval=30.0)
    rng = np.random.default_rng(0)
    curve = []
    solver = None
    if with_optimal:   # one table for the whole run, filled before the training clock starts
        started = time.monotonic()
        solver = Solver(graph)
        value = solver.value(graph.roots[0])
        print(f"[bench] solved the game exactly first: value {value:+.0f} for the first player, "
              f"{len(solver.table):,} table entries, {time.monotonic() - started:.0f} s",
              flush=True)
    explore = config.selfplay.temperature_drop_move
    print(f"[bench] {learner}: the newest iteration plays with {searchcount} searches per move "
          f"({EVAL_THREADS} concurrent); self-play uses {config.selfplay.searchcount}",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="gamegym-learn-") as folder:
        gym = GameGym(Path(keep) if keep is not None else Path(folder) / "learn", config=config,
                      initial_model=initial_model_path(game, graph.game_args, config.network,
                                                       learner))
        curve.append({**measure(gym.session, graph, opponent, games, searchcount, rng,
                                solver, explore), "minutes": 0.0})  # the untrained start
        show(curve[-1], opponent)
        outcome: dict = {}

        def train():
            try:
                outcome["code"] = gym.resume(max_seconds=minutes * 60, console=False)
            except BaseException as error:   # reported below, after the last point
                outcome["error"] = error

        runner = threading.Thread(target=train, daemon=True)
        started = time.monotonic()
        runner.start()
        while runner.is_alive():
            runner.join(timeout=interval * 60)
            elapsed = (time.monotonic() - started) / 60
            iteration = gym.session.current_iteration()
            if iteration < 0 or (not runner.is_alive() and iteration == curve[-1]["iteration"]
                                 and elapsed - curve[-1]["minutes"] < interval / 2):
                continue   # the run ended just after the last point: nothing new to measure
            point = measure(gym.session, graph, opponent, games, searchcount, rng, solver,
                            explore)
            point["minutes"] = round(elapsed, 2)
            curve.append(point)
            show(point, opponent)
        if "error" in outcome:
            raise RuntimeError(f"the gym failed during the learning benchmark: "
                               f"{outcome['error']!r}") from outcome["error"]
        if outcome.get("code"):
            raise RuntimeError(f"the gym stopped with an error (exit code {outcome['code']}); "
                               "see its output above")
        # the final figure: the last iteration again, on `final_factor` times the games (after
        # the training clock, so a cheap curve and a precise final number)
        final = measure(gym.session, graph, opponent, games * final_factor, searchcount, rng,
                        solver, explore)
        final.update(minutes=curve[-1]["minutes"], opponent=opponent)
        show(final, opponent, "final")
    figures = {"game": game, "game_args": graph.game_args, "learner": learner,
               "minutes": minutes,
               "opponent": opponent, "curve": curve, "final": final,
               "eval_searchcount": searchcount, "eval_threads": EVAL_THREADS,
               "selfplay_searchcount": config.selfplay.searchcount}
    if plot_path is not None and curve:
        plot_curve(figures, plot_path)
        figures["plot"] = str(plot_path)
    return figures


def show(point: dict, opponent: str, label: str = "") -> None:
    optimal = point.get("optimal_move_rate")
    print(f"[bench] {label + ': ' if label else ''}{point['minutes']:.1f} min, iteration "
          f"{point['iteration']}: +{point['wins']} ={point['draws']} -{point['losses']} vs "
          f"{opponent}" + ("" if optimal is None else
                           f", optimal moves {optimal:.1%} of {point['positions']}"),
          flush=True)


def plot_curve(figures: dict, path: Path) -> None:
    from gamegym.monitor import new_figure, save_figure
    curve = figures["curve"]
    figure, axis = new_figure((6, 3.5))
    minutes = [p["minutes"] for p in curve]
    axis.plot(minutes, [p["score"] for p in curve], marker="o",
              label=f"score vs {figures['opponent']}")
    if "optimal_move_rate" in curve[0]:
        axis.plot(minutes, [p["optimal_move_rate"] for p in curve], marker="s",
                  label="optimal-move rate")
    final = figures.get("final")
    if final and "minutes" in final:   # the final figure, measured on more games
        for key, colour in (("score", "C0"), ("optimal_move_rate", "C1")):
            if key in final:
                axis.plot([final["minutes"]], [final[key]], marker="*", markersize=12,
                          color=colour, linestyle="none")
        axis.plot([], [], marker="*", color="grey", linestyle="none",
                  label="final, on more games")
    axis.set_ylim(0, 1.05)
    axis.set_xlabel("minutes of training (2-core CPU)")
    name = figures["game"].split(":")[1]
    if figures["game_args"]:
        name = f"{name} {figures['game_args']}"
    axis.set_title(f"{name}, {figures.get('learner', 'alphazero')}, "
                   f"{figures['eval_searchcount']} searches per move", fontsize="medium")
    axis.grid(alpha=0.3)
    axis.legend(fontsize="small")
    figure.tight_layout()
    save_figure(figure, path)


def cmd_learning(args) -> int:
    figures = run_learning_bench(args.learning, args.game_args,
                                 args.minutes, args.interval, args.eval_games,
                                 args.eval_searchcount, args.plot, keep=args.keep,
                                 learner=args.learner)
    print(json.dumps(figures, sort_keys=True) if args.json else
          f"final: {figures['final']}")
    return 0
