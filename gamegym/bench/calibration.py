"""`gamegym bench calibrate`: the yardsticks against each other, so every figure can be placed.

Each pair of player specs (each `--player` against each `--opponent`) plays a match (sides
alternating, one seeded rng per pair) and the table gives the first player's wins, draws and
losses, its score, and each player's mean thinking time per move.  The default pairs place
Connect Four's yardsticks: UCT with random rollouts (`mcts:N`), alpha-beta with the game's
heuristic (`alphabeta:D`) and without (`alphabeta0:D`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gamegym.console import comma_list, json_object
from gamegym.evaluation.arena import make_player, run_match
from gamegym.game.graph import GameGraph, load_game
from gamegym.game.players import Player

__all__ = [
    "CALIBRATION_PAIRS",
    "CalibrationSettings",
    "add_parser",
    "print_calibration",
    "run_calibration",
]

CALIBRATION_GAME = "games.connectfour:ConnectFour"
CALIBRATION_PAIRS = (
    ("mcts:1000", "alphabeta:5"),
    ("alphabeta:5", "alphabeta0:5"),
    ("mcts:200", "mcts:1000"),
    ("mcts:1000", "alphabeta0:4"),
    ("alphabeta:5", "alphabeta0:4"),
)


class _Timed(Player):
    """A player that adds up the time it spends choosing."""

    def __init__(self, inner: Player):
        self.inner, self.seconds, self.moves = inner, 0.0, 0

    def choose(self, graph: GameGraph, vertex, rng: np.random.Generator) -> int:
        started = time.perf_counter()
        action = self.inner.choose(graph, vertex, rng)
        self.seconds += time.perf_counter() - started
        self.moves += 1
        return action

    @property
    def per_move(self) -> float:
        return self.seconds / self.moves if self.moves else 0.0


@dataclass(frozen=True)
class CalibrationSettings:
    """One calibration's settings (the flags of `gamegym bench calibrate`)."""

    game: str = CALIBRATION_GAME  # the game's spec
    game_args: dict[str, Any] = field(default_factory=dict)  # its arguments
    pairs: tuple[tuple[str, str], ...] = CALIBRATION_PAIRS  # (first, second) player specs
    games: int = 40  # games per pair
    seed: int = 0  # the matches' seed (one rng per pair)


def run_calibration(settings: CalibrationSettings, progress=print) -> dict:
    """A match of `settings.games` games for each (first, second) pair of player specs;
    `progress` prints each pair's line as it ends (None: nothing)."""
    games, seed, pairs = settings.games, settings.seed, settings.pairs
    if isinstance(games, bool) or not isinstance(games, int) or games < 1:
        raise ValueError(f"--games must be a whole number >= 1, got {games!r}")
    graph = load_game(settings.game, settings.game_args)
    players = [(make_player(a), make_player(b)) for a, b in pairs]
    rows = []
    for (first, second), (a, b) in zip(pairs, players):
        timed = (_Timed(a), _Timed(b))
        started = time.perf_counter()
        result = run_match(graph, *timed, games, np.random.default_rng(seed), (first, second))
        row = {
            **result.to_dict(),
            "seconds": round(time.perf_counter() - started, 1),
            "seconds_per_move": [round(t.per_move, 4) for t in timed],
        }
        rows.append(row)
        if progress is not None:
            progress(_row_text(row))
    return {
        "game": settings.game,
        "game_args": graph.game_args,
        "games": games,
        "seed": seed,
        "pairs": rows,
    }


def _row_text(row: dict) -> str:
    a, b = row["seconds_per_move"]
    return (
        f"{row['player']:>14} vs {row['opponent']:<14} +{row['wins']:<3} ={row['draws']:<3} "
        f"-{row['losses']:<3} score {row['score']:.3f}   {a:.3f} / {b:.3f} s per move   "
        f"({row['seconds']:.0f} s)"
    )


def print_calibration(figures: dict) -> None:
    print(
        f"calibration on {figures['game']} {figures['game_args']}: {figures['games']} games "
        f"per pair, sides alternating, seed {figures['seed']}; results from the first "
        "player's view"
    )
    for row in figures["pairs"]:
        print(_row_text(row))


COMMAND = "calibrate"
EXAMPLE = """examples:
  gamegym bench calibrate                      # Connect Four's yardsticks, 40 games a pair
  gamegym bench calibrate --game games.tictactoe:TicTacToe --player mcts:100,solver \\
      --opponent random,alphabeta0:2 --games 10
"""


def add_parser(sub) -> None:
    """`gamegym bench calibrate`: matches between player specs, with their time per move."""
    p = sub.add_parser(
        COMMAND,
        help="the yardsticks against each other (matches of player specs)",
        description=__doc__,
        epilog=EXAMPLE,
    )
    p.add_argument("--game", default=CALIBRATION_GAME, metavar="MODULE:CLASS", help="the game")
    p.add_argument("--game-args", type=json_object, default={}, help="the game's arguments (JSON)")
    p.add_argument(
        "--player",
        type=comma_list(),
        metavar="SPEC,SPEC",
        help="player specs, each to play a match against each --opponent (default: "
        "Connect Four's mcts:N / alphabeta:D / alphabeta0:D pairs)",
    )
    p.add_argument(
        "--opponent",
        type=comma_list(),
        metavar="SPEC,SPEC",
        help="player specs, the second player of each match (with --player)",
    )
    p.add_argument("--games", type=int, default=40, help="games per pair")
    p.add_argument("--seed", type=int, default=0, help="the matches' seed")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=cmd_calibrate)


def cmd_calibrate(args) -> int:
    if (args.player is None) != (args.opponent is None):
        raise ValueError("give --player and --opponent together (or neither: the default pairs)")
    settings = CalibrationSettings(
        game=args.game,
        game_args=args.game_args,
        pairs=tuple((a, b) for a in args.player for b in args.opponent)
        if args.player
        else CALIBRATION_PAIRS,
        games=args.games,
        seed=args.seed,
    )
    figures = run_calibration(settings, progress=None if args.json else print)
    if args.json:
        print(json.dumps(figures, sort_keys=True))
    else:
        print()
        print_calibration(figures)
    return 0
