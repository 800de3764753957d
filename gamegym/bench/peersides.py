"""The sides of `gamegym bench peer openspiel` and their race: whole self-play games with no
network, each side counting its searches (simulations) and games; `race` alternates time slices
between the sides and tallies what each did.

- `OursSide`: our search with the uniform stub evaluator (the bench's search ceiling), on the
  core asked for (`selfplay.search.core`: the pure-Python reference, or the compiled core).
- `OpenSpielPythonSide`: OpenSpiel's Python `MCTSBot` with an evaluator that returns uniform
  priors and the value 0 (no rollouts), PUCT child selection: the same evaluator as ours.
- `OpenSpielCppSide`: OpenSpiel's C++ `pyspiel.MCTSBot` with PUCT child selection and the only
  evaluator its Python API can build, the C++ `pyspiel.RandomRolloutEvaluator`, at 1 rollout.
  Its priors are uniform, as ours, but its value is one random playout to the end of the game
  instead of 0, so each leaf costs a playout the other sides do not make: its rate is a lower
  bound on compiled search with our evaluator.  `pyspiel.Evaluator` cannot be subclassed from
  Python (no constructor is bound), and a Python evaluator would put a call into Python in every
  leaf, which is what the C++ side is there to leave out.

All play on OpenSpiel's own C++ implementation of the game, except ours, which plays our bundled
game.  OpenSpiel is the optional extra `pip install -e ".[openspiel]"`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import numpy as np

from gamegym.bench.presets import preset_config
from gamegym.data.samples import GameRecord
from gamegym.game.graph import load_game
from gamegym.search.cores import make_search
from gamegym.search.mcts import SearchParams, uniform_evaluator
from gamegym.search.play import selfplay_game

__all__ = [
    "CPP_EVALUATOR",
    "EXTRA_MESSAGE",
    "OpenSpielCppSide",
    "OpenSpielPythonSide",
    "OursSide",
    "Tally",
    "cpp_missing",
    "import_openspiel",
    "race",
]

EXTRA_MESSAGE = (
    'gamegym bench peer openspiel needs OpenSpiel: pip install -e ".[openspiel]" '
    "(the optional extra; the package is open_spiel)"
)
# what the C++ side's evaluator is, and why it is not the other sides' (printed with its rate)
CPP_EVALUATOR = (
    "C++ MCTSBot, PUCT, RandomRolloutEvaluator with 1 rollout: uniform priors as ours, but the "
    "value of one random playout instead of 0 (pyspiel binds no evaluator that returns 0), so "
    "each leaf also plays a game to its end"
)
# the names the C++ side needs from pyspiel
CPP_NAMES = ("MCTSBot", "RandomRolloutEvaluator", "ChildSelectionPolicy")
# the C++ bot's tree memory budget; a search of a few hundred simulations stays far below it
CPP_MAX_MEMORY_MB = 1024


def import_openspiel():
    """pyspiel and OpenSpiel's Python MCTS module, or a ValueError naming the extra."""
    try:
        import pyspiel
        from open_spiel.python.algorithms import mcts
    except ImportError as error:
        raise ValueError(f"{EXTRA_MESSAGE} ({error})") from error
    return pyspiel, mcts


def cpp_missing(pyspiel) -> str | None:
    """Why this pyspiel cannot run the C++ side (None: it can)."""
    missing = [name for name in CPP_NAMES if not hasattr(pyspiel, name)]
    policy = getattr(pyspiel, "ChildSelectionPolicy", None)
    if policy is not None and not hasattr(policy, "PUCT"):
        missing.append("ChildSelectionPolicy.PUCT")
    if not missing:
        return None
    return (
        f"skipped: this pyspiel has no {', '.join(missing)}, so OpenSpiel's C++ MCTS cannot run "
        "from Python; an open_spiel release with them (2.0 or later) adds the C++ rate"
    )


class OursSide:
    """Self-play games with our search and the uniform stub evaluator."""

    def __init__(
        self,
        game: str,
        game_args: dict,
        searchcount: int,
        threads: int,
        c: float,
        seed: int,
        core: str = "python",
    ):
        self.graph = load_game(game, game_args)
        self.cfg = preset_config(
            {
                "game": game,
                "game_args": game_args,
                "selfplay": {
                    "search": {
                        "searchcount": searchcount,
                        "threads": threads,
                        "exploration_const": c,
                        "core": core,
                    },
                },
            }
        ).selfplay
        self.search = make_search(
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
        selfplay_game(self.graph, self.search, self.cfg, self.rng, GameRecord())
        self.games += 1


class _OpenSpielBotSide:
    """Whole games of one OpenSpiel MCTS bot against itself: the most visited move each time."""

    game: object
    bot: object

    def __init__(self) -> None:
        self.searches = self.games = 0

    def play_game(self) -> None:
        state = self.game.new_initial_state()  # type: ignore[attr-defined]  # a pyspiel.Game
        while not state.is_terminal():
            root = self.bot.mcts_search(state)  # type: ignore[attr-defined]  # either MCTSBot
            self.searches += root.explore_count
            state.apply_action(root.best_child().action)
        self.games += 1


class OpenSpielPythonSide(_OpenSpielBotSide):
    """OpenSpiel's Python MCTSBot, uniform priors, value 0, PUCT."""

    def __init__(self, name: str, searchcount: int, c: float, seed: int):
        super().__init__()
        pyspiel, mcts = import_openspiel()

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


class OpenSpielCppSide(_OpenSpielBotSide):
    """OpenSpiel's C++ MCTSBot, PUCT, its C++ random-rollout evaluator at 1 rollout (see the
    module docstring for why that is the closest to ours).  A ValueError says why a pyspiel
    without it cannot run this side."""

    def __init__(self, name: str, searchcount: int, c: float, seed: int):
        super().__init__()
        pyspiel, _ = import_openspiel()
        reason = cpp_missing(pyspiel)
        if reason is not None:
            raise ValueError(f"OpenSpiel's C++ MCTSBot: {reason}")
        self.game = pyspiel.load_game(name)
        self.evaluator = pyspiel.RandomRolloutEvaluator(1, seed)  # the bot keeps no reference
        self.bot = pyspiel.MCTSBot(
            self.game,
            self.evaluator,
            c,
            searchcount,
            CPP_MAX_MEMORY_MB,
            False,  # solve
            seed,
            False,  # verbose
            pyspiel.ChildSelectionPolicy.PUCT,
        )


@dataclasses.dataclass
class Tally:
    """What one side did in some slices: searches, whole games, wall and CPU seconds."""

    searches: int = 0
    games: int = 0
    wall: float = 0.0
    cpu: float = 0.0

    def __add__(self, other: Tally) -> Tally:
        return Tally(
            self.searches + other.searches,
            self.games + other.games,
            self.wall + other.wall,
            self.cpu + other.cpu,
        )

    @property
    def per_cpu_s(self) -> float:
        return self.searches / max(self.cpu, 1e-9)

    @property
    def per_wall_s(self) -> float:
        return self.searches / max(self.wall, 1e-9)

    def figures(self) -> dict:
        return {
            "searches_per_s": round(self.per_cpu_s, 1),
            "searches_per_wall_s": round(self.per_wall_s, 1),
            "games": self.games,
            "seconds": round(self.wall, 2),
            "cpu_seconds": round(self.cpu, 2),
        }


def race(
    sides: dict, slice_seconds: float, slices: int, after_slice: Callable[[], None] | None = None
) -> dict[str, Tally]:
    """`slices` slices of `slice_seconds` per side, alternating between the sides, whole games
    each; what each side did, in this process's CPU time and in wall time.  Each side plays one
    game first, not counted (a compiled search loads its kernels on its first search).
    `after_slice` is called after each side's slice (progress)."""
    for side in sides.values():
        side.play_game()
    tally = {name: Tally() for name in sides}
    for _ in range(slices):
        for name, side in sides.items():
            searches, games = side.searches, side.games
            start, start_cpu = time.perf_counter(), time.process_time()
            while time.perf_counter() - start < slice_seconds:
                side.play_game()
            tally[name] += Tally(
                side.searches - searches,
                side.games - games,
                time.perf_counter() - start,
                time.process_time() - start_cpu,
            )
            if after_slice is not None:
                after_slice()
    return tally
