"""`gamegym bench peer openspiel`: our search ceiling beside OpenSpiel's Python MCTSBot.

Both sides play whole games against themselves on the same game, with the same searches
(simulations) per move and the same exploration constant, with no network: our `Search` with
the uniform stub evaluator (the bench's search ceiling), OpenSpiel's `MCTSBot` with an evaluator
that returns uniform priors and the value 0 (no rollouts) and PUCT child selection, on
OpenSpiel's own C++ implementation of the game.  The time is split into slices that alternate
between the sides, so a machine whose load changes during the run slows all alike; each slice
plays whole games.  Rates are per second of this process's CPU time, which on a loaded machine
leaves out the time other processes held the core (the wall-clock rates are reported too).  OpenSpiel is the optional extra `pip install -e ".[openspiel]"`.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

from gamegym.bench.legacy import has, take
from gamegym.config import GymConfig
from gamegym.game.graph import load_game
from gamegym.search.mcts import Search, SearchParams, uniform_evaluator
from gamegym.search.play import selfplay_game

__all__ = ["PEER_GAMES", "run_peer_bench", "print_peer_report", "add_parser"]

# our bundled game (spec, arguments) -> OpenSpiel's name for the same game (None: it has none)
PEER_GAMES: tuple[tuple[str, dict[str, Any], str | None], ...] = (
    ("games.tictactoe:TicTacToe", {}, "tic_tac_toe"),
    ("games.connectfour:ConnectFour", {"rows": 6, "columns": 7}, "connect_four"),
    ("games.santorini:Santorini", {"dimension": 3, "units_per_player": 1}, None),
    ("games.santorini:Santorini", {"dimension": 5, "units_per_player": 2}, None),
)
EXTRA_MESSAGE = (
    'gamegym bench peer openspiel needs OpenSpiel: pip install -e ".[openspiel]" '
    "(the optional extra; the package is open_spiel)"
)


def _import_openspiel():
    try:
        import pyspiel
        from open_spiel.python.algorithms import mcts
    except ImportError as error:
        raise ValueError(f"{EXTRA_MESSAGE} ({error})") from error
    return pyspiel, mcts


class _OursSide:
    """Self-play games with our search and the uniform stub evaluator."""

    def __init__(
        self, game: str, game_args: dict, searchcount: int, threads: int, c: float, seed: int
    ):
        self.graph = load_game(game, game_args)
        self.cfg = GymConfig.from_dict(
            {
                "game": game,
                "game_args": game_args,
                "selfplay": {
                    "searchcount": searchcount,
                    "searchthreadcount": threads,
                    "exploration_const": c,
                },
            }
        ).selfplay
        self.search = Search(
            self.graph,
            uniform_evaluator(self.graph.action_space_size),
            SearchParams.from_selfplay(self.cfg),
        )
        self.rng = np.random.default_rng(seed)
        self.games = 0

    @property
    def searches(self) -> int:
        return self.search.searches_done

    def play_game(self) -> None:
        selfplay_game(self.graph, self.search, self.cfg, self.rng)
        self.games += 1


class _OpenSpielSide:
    """Self-play games with OpenSpiel's MCTSBot, uniform priors, value 0, PUCT."""

    def __init__(self, name: str, searchcount: int, c: float, seed: int):
        pyspiel, mcts = _import_openspiel()

        class Uniform(mcts.Evaluator):  # type: ignore[name-defined]  # OpenSpiel's, imported at run time
            def evaluate(self, state):
                return np.zeros(2)

            def prior(self, state):
                legal = state.legal_actions(state.current_player())
                return [(action, 1.0 / len(legal)) for action in legal]

        self.game = pyspiel.load_game(name)
        self.bot = mcts.MCTSBot(
            self.game,
            c,
            searchcount,
            Uniform(),
            solve=False,
            random_state=np.random.RandomState(seed),
            child_selection_fn=mcts.SearchNode.puct_value,
        )
        self.searches = self.games = 0

    def play_game(self) -> None:
        state = self.game.new_initial_state()
        while not state.is_terminal():
            root = self.bot.mcts_search(state)
            self.searches += root.explore_count
            state.apply_action(root.best_child().action)
        self.games += 1


def _race(sides: dict, seconds: float, slices: int) -> dict:
    """Alternate `slices` time slices per side (whole games each); searches per second of this
    process's CPU time per side (on a quiet machine the same as per second of wall time; on a
    loaded one it leaves out the time other processes had the core), and per wall second."""
    wall = {name: 0.0 for name in sides}
    cpu = {name: 0.0 for name in sides}
    for _ in range(slices):
        for name, side in sides.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            while time.perf_counter() - start < seconds / slices:
                side.play_game()
            wall[name] += time.perf_counter() - start
            cpu[name] += time.process_time() - start_cpu
    return {
        name: {
            "searches_per_s": round(side.searches / cpu[name], 1),
            "searches_per_wall_s": round(side.searches / wall[name], 1),
            "games": side.games,
            "seconds": round(wall[name], 2),
            "cpu_seconds": round(cpu[name], 2),
        }
        for name, side in sides.items()
    }


def run_peer_bench(
    seconds: float = 10.0,
    searchcount: int = 100,
    threads: int = 24,
    c: float = 1.5,
    slices: int = 5,
    seed: int = 0,
) -> dict:
    """For every bundled game: our search ceiling (one search at a time, and `threads`
    concurrent searches) and OpenSpiel's MCTSBot, `seconds` each, in alternating slices."""
    _import_openspiel()
    rows = []
    for game, game_args, peer in PEER_GAMES:
        row = {"game": game, "game_args": game_args, "openspiel_game": peer}
        if peer is None:
            row["note"] = "OpenSpiel has no such game"
            rows.append(row)
            continue
        sides = {
            "ours_1": _OursSide(game, game_args, searchcount, 1, c, seed),
            f"ours_{threads}": _OursSide(game, game_args, searchcount, threads, c, seed),
            "openspiel": _OpenSpielSide(peer, searchcount, c, seed),
        }
        figures = _race(sides, seconds, slices)
        peer_rate = figures["openspiel"]["searches_per_s"]
        row.update(figures)
        row["ratio_1"] = round(figures["ours_1"]["searches_per_s"] / peer_rate, 2)
        row["ratio_threads"] = round(figures[f"ours_{threads}"]["searches_per_s"] / peer_rate, 2)
        rows.append(row)
    return {
        "searchcount": searchcount,
        "threads": threads,
        "exploration_const": c,
        "seconds": seconds,
        "slices": slices,
        "games": rows,
    }


def print_peer_report(figures: dict) -> None:
    t = figures["threads"]
    print(
        f"search ceiling vs OpenSpiel's Python MCTSBot: {figures['searchcount']} searches per "
        f"move, c {figures['exploration_const']}, uniform evaluator, {figures['seconds']:g} s "
        f"per side in {figures['slices']} alternating slices; searches per CPU second"
    )
    print(
        f"{'game':40} {'ours, 1':>9} {f'ours, {t}':>9} {'OpenSpiel':>9} {'ratio 1':>8} "
        f"{f'ratio {t}':>8}"
    )
    for row in figures["games"]:
        arguments = ", ".join(f"{k}={v}" for k, v in row["game_args"].items())
        name = f"{row['game'].split(':')[1]}({arguments})"
        if "note" in row:
            print(f"{name:40} {row['note']}")
            continue
        print(
            f"{name:40} {row['ours_1']['searches_per_s']:>9.0f} "
            f"{row[f'ours_{t}']['searches_per_s']:>9.0f} "
            f"{row['openspiel']['searches_per_s']:>9.0f} {row['ratio_1']:>7.2f}x "
            f"{row['ratio_threads']:>7.2f}x"
        )


COMMAND = "peer"
EXAMPLE = """example:
  gamegym bench peer openspiel --seconds 10 --searchcount 100 --threads 24
"""


def add_parser(sub) -> None:
    """`gamegym bench peer openspiel`: our search ceiling beside the peer's, game by game."""
    p = sub.add_parser(
        COMMAND,
        help="our search ceiling beside a peer's MCTS on every bundled game",
        description=__doc__,
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("peer", choices=["openspiel"], help="the peer (OpenSpiel's MCTSBot)")
    p.add_argument("--seconds", type=float, default=20.0, help="time per side and game")
    p.add_argument("--searchcount", type=int, default=100, help="searches per move")
    p.add_argument("--threads", type=int, default=24, help="concurrent searches of our second side")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=cmd_peer)


def cmd_peer(args) -> int:
    figures = run_peer_bench(args.seconds, args.searchcount, args.threads)
    if args.json:
        print(json.dumps(figures, sort_keys=True))
    else:
        print_peer_report(figures)
    return 0


def legacy_argv(tail: list[str]) -> list[str] | None:
    """`gamegym bench --peer openspiel ...` was this bench."""
    if not has(tail, "--peer"):
        return None
    peer = take(tail, "--peer") or []
    return [COMMAND, *peer, *tail]
