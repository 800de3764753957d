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

from gamegym.arena import MCTSPlayer, make_player, run_match
from gamegym.config import GymConfig
from gamegym.graph import load_game
from gamegym.presets import initial_model_path, preset_for

# game spec -> (opponent, whether to measure the optimal-move rate)
OPPONENTS = {"games.tictactoe:TicTacToe": ("solver", True),
             "games.santorini:Santorini": ("solver", True),
             "games.connectfour:ConnectFour": ("alphabeta:4", False)}


def optimal_move_rate(graph, player, games: int, rng) -> float:
    """Share of the positions of `player`'s own games (against itself) where its move is
    optimal according to the exact solver."""
    from gamegym.players import Solver
    solver = Solver(graph)
    optimal = total = 0
    for _ in range(games):
        vertex = graph.roots[0]
        while graph.children_at(vertex):
            action = player.choose(graph, vertex, rng)
            optimal += action in solver.solve(vertex).optimal_actions
            total += 1
            vertex = graph.child_by_action(vertex, action)
    return optimal / total if total else 0.0


def measure(session, graph, opponent_spec: str, games: int, searchcount: int, rng,
            with_optimal: bool) -> dict:
    iteration = session.current_iteration()
    player = MCTSPlayer.from_session(session, graph, iteration, searchcount)
    opponent = make_player(opponent_spec, session, graph)
    result = run_match(graph, player, opponent, games, rng, (f"iteration:{iteration}",
                                                             opponent_spec))
    point = {"iteration": iteration, **{k: v for k, v in result.to_dict().items()
                                        if k in ("wins", "draws", "losses", "score")}}
    if with_optimal:
        point["optimal_move_rate"] = round(optimal_move_rate(graph, player, max(2, games // 4),
                                                             rng), 4)
    return point


def run_learning_bench(game: str, game_args: dict, minutes: float, interval: float,
                       games: int, searchcount: int, plot_path: Path | None) -> dict:
    from gamegym.gym import GameGym
    graph = load_game(game, game_args)
    found = preset_for(game, graph.game_args)
    if found is None:
        raise ValueError(f"no bundled preset for {game} {graph.game_args}; the learning "
                         "benchmark runs on the bundled games")
    opponent, with_optimal = OPPONENTS.get(game, ("alphabeta:2", False))
    config = GymConfig(**found[1], status_interval=30.0)
    rng = np.random.default_rng(0)
    curve = []
    with tempfile.TemporaryDirectory(prefix="gamegym-learn-") as folder:
        gym = GameGym(Path(folder) / "learn", config=config,
                      initial_model=initial_model_path(game, graph.game_args))
        curve.append({**measure(gym.session, graph, opponent, games, searchcount, rng,
                                with_optimal), "minutes": 0.0})  # the untrained start
        show(curve[-1], opponent)
        runner = threading.Thread(target=gym.resume, kwargs={
            "max_seconds": minutes * 60, "console": False}, daemon=True)
        started = time.monotonic()
        runner.start()
        while runner.is_alive():
            runner.join(timeout=interval * 60)
            elapsed = (time.monotonic() - started) / 60
            if gym.session.current_iteration() < 0:
                continue
            point = measure(gym.session, graph, opponent, games, searchcount, rng, with_optimal)
            point["minutes"] = round(elapsed, 2)
            curve.append(point)
            show(point, opponent)
    final = dict(curve[-1]) if curve else {}
    final["opponent"] = opponent
    figures = {"game": game, "game_args": graph.game_args, "minutes": minutes,
               "opponent": opponent, "curve": curve, "final": final}
    if plot_path is not None and curve:
        plot_curve(figures, plot_path)
        figures["plot"] = str(plot_path)
    return figures


def show(point: dict, opponent: str) -> None:
    optimal = point.get("optimal_move_rate")
    print(f"[bench] {point['minutes']:.1f} min, iteration {point['iteration']}: "
          f"+{point['wins']} ={point['draws']} -{point['losses']} vs {opponent}"
          + ("" if optimal is None else f", optimal moves {optimal:.1%}"), flush=True)


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
    axis.set_ylim(0, 1.05)
    axis.set_xlabel("minutes of training (2-core CPU)")
    axis.set_title(f"{figures['game'].split(':')[1]} {figures['game_args'] or ''}")
    axis.grid(alpha=0.3)
    axis.legend(fontsize="small")
    figure.tight_layout()
    save_figure(figure, path)


def cmd_learning(args) -> int:
    figures = run_learning_bench(args.learning, args.game_args,
                                 args.minutes, args.interval, args.eval_games,
                                 args.eval_searchcount, args.plot)
    print(json.dumps(figures, sort_keys=True) if args.json else
          f"final: {figures['final']}")
    return 0
