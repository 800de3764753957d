"""An exact Connect Four solver: the score of a position and of each of its moves under perfect
play, for boards of at most 64 bits (columns * (rows + 1) <= 64; the standard 6 x 7 board has 49).

The search is Pascal Pons's design ("Solving Connect 4: how to build a perfect AI", 2019):
bitboards in ConnectFour's own layout, negamax with alpha-beta, a transposition table (one slot
per key modulo a prime, upper and lower bounds), moves ordered by how many winning cells they
make and then centre first, moves that lose at once never searched, and the exact score found
by null-window searches that halve the interval it lies in.  It runs compiled by numba where
the `fast` extra is installed and as plain Python otherwise (the same code,
games._connectfour_kernels; the plain run is some hundred times slower and is there for
correctness, not for play).

Scores follow Pons: 0 is a draw; a position the player to move wins scores the number of its
own discs still in hand when it plays the winning one, plus one (so a faster win scores more);
a lost position scores the negative of the winner's.  `plies_to_end(score, discs)` turns a score
into the plies left until four in a row under perfect play.

How long a solve takes depends on the discs on the board: positions from the middle of a game
on take milliseconds, positions of the first dozen moves seconds to hours
(docs/guides/evaluation.md gives the measured times per band).  `seconds` bounds every call;
past it the call raises SolverTimeout, naming the position.

May import: numpy, numba (optional), gamegym.game and games.connectfour.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
from types import ModuleType

import numpy as np

from gamegym.game.players import Solution
from games.connectfour import ConnectFour

__all__ = [
    "ConnectFourSolver",
    "SolverTimeout",
    "SOLVER_SECONDS",
    "plies_to_end",
    "vertex_from_moves",
    "moves_of",
]

SOLVER_SECONDS = 60.0  # the `solver` player's time limit a move
TABLE_BITS = 23  # the transposition table: the largest prime below 2**23 slots, 9 bytes each
FULL = -1000  # move_scores' mark of a full column


class SolverTimeout(RuntimeError):
    """A solve that did not finish within the solver's time limit."""


def _primes_below(n: int) -> int:
    """The largest prime below n (n >= 3)."""
    candidate = n - 1
    while candidate > 2:
        if candidate % 2 and all(candidate % d for d in range(3, int(candidate**0.5) + 1, 2)):
            return candidate
        candidate -= 1
    return 2


def numba_available() -> bool:
    return importlib.util.find_spec("numba") is not None


_KERNELS: dict[bool, ModuleType] = {}


def kernels(compiled: bool) -> ModuleType:
    """The search's functions, compiled by numba or plain Python: each a separate copy of
    games._connectfour_kernels, so the two never mix."""
    found = _KERNELS.get(compiled)
    if found is not None:
        return found
    source = importlib.util.find_spec("games._connectfour_kernels")
    assert source is not None and source.origin is not None
    name = "games._connectfour_kernels_" + ("compiled" if compiled else "python")
    spec = importlib.util.spec_from_file_location(name, source.origin)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    if compiled:
        from numba import njit

        # every function, so that they call each other compiled (globals are looked up in
        # this copy's namespace when numba compiles a caller)
        for fname, value in list(vars(module).items()):
            if callable(value) and getattr(value, "__module__", None) == name:
                setattr(module, fname, njit(cache=True, nogil=True)(value))
    _KERNELS[compiled] = module
    return module


def plies_to_end(score: int, discs: int, cells: int = 42) -> int | None:
    """Plies from a position with `discs` discs and this score (player to move's view) until
    four in a row under perfect play: the winner hurries, the loser delays; None for a draw."""
    if score == 0:
        return None
    if score > 0:  # the mover wins with its k-th disc from now
        return 2 * ((cells + 1 - discs) // 2 - score + 1) - 1
    return 2 * ((cells - discs) // 2 + score + 1)  # the opponent wins with its k-th disc


def vertex_from_moves(game: ConnectFour, moves: str) -> int:
    """The vertex after the moves, written as Pons's position strings: one digit a move, the
    column counted from 1 (e.g. "4453")."""
    vertex = game.roots[0]
    for i, ch in enumerate(moves):
        if not ch.isdigit() or not 1 <= int(ch) <= game.columns:
            raise ValueError(f"move {i + 1} of {moves!r}: {ch!r} is not a column 1-{game.columns}")
        column = int(ch) - 1
        if column not in game.actions_at(vertex):
            raise ValueError(f"move {i + 1} of {moves!r}: column {ch} is full or the game is over")
        vertex = game.child_by_action(vertex, column)
    return vertex


def moves_of(actions) -> str:
    """A Pons position string from action ids (columns counted from 0)."""
    return "".join(str(int(a) + 1) for a in actions)


class ConnectFourSolver:
    """Exact scores of Connect Four positions (see the module doc); one transposition table
    kept between calls, so solving many positions of one game gets cheaper as it fills.

    compiled: True for numba, False for plain Python, None (default) for numba where installed.
    seconds: the time limit of each call (None: none); past it the call raises SolverTimeout.
    """

    def __init__(
        self,
        game: ConnectFour,
        compiled: bool | None = None,
        seconds: float | None = None,
        table_bits: int = TABLE_BITS,
    ) -> None:
        if not isinstance(game, ConnectFour):
            raise TypeError(f"ConnectFourSolver solves ConnectFour, not {type(game).__name__}")
        height = game.rows + 1
        if game.columns * height > 64:
            raise ValueError(
                f"the Connect Four solver works on boards of at most 64 bits (columns x "
                f"(rows + 1)); {game.rows} x {game.columns} needs {game.columns * height}"
            )
        if compiled and not numba_available():
            raise ValueError("the compiled solver needs numba: pip install -e '.[fast]'")
        self.game = self.graph = game  # (graph: as gamegym.game.players.Solver names it)
        self.compiled = numba_available() if compiled is None else bool(compiled)
        self.seconds = seconds
        self._k = kernels(self.compiled)
        width = game.columns
        column_masks = [((1 << game.rows) - 1) << (c * height) for c in range(width)]
        centre_first = sorted(range(width), key=lambda c: (abs(2 * c - (width - 1)), c))
        self.geometry = np.array(
            [
                sum(column_masks),  # board
                sum(1 << (c * height) for c in range(width)),  # bottom row
                height - 1,  # falling diagonal
                height,  # across
                height + 1,  # rising diagonal
                *[column_masks[c] for c in centre_first],
                *column_masks,
            ],
            dtype=np.uint64,
        )
        self.cells = game.rows * width
        size = _primes_below(1 << table_bits)
        self.keys = np.zeros(size, np.uint64)
        self.values = np.zeros(size, np.int8)
        self.ctl = np.array([0, 0, self.cells, width, 0], np.int64)  # the kernels' C_* rows
        self._span = width * height
        self._low = (1 << self._span) - 1

    @property
    def nodes(self) -> int:
        """Positions searched so far."""
        return int(self.ctl[0])

    def _split(self, vertex: int) -> tuple[np.uint64, np.uint64, int]:
        mine, discs = vertex & self._low, vertex >> self._span
        if not self.game.children_at(vertex):
            raise ValueError("the game is over at this position: there is nothing to solve")
        return np.uint64(mine), np.uint64(discs), discs.bit_count()

    def _run(self, vertex: int, call):
        """Run one search under the time limit (the flag set by a timer thread)."""
        self.ctl[1] = self.ctl[4] = 0  # the stop flag, and whether the search was cut short
        timer = None
        if self.seconds is not None:
            timer = threading.Timer(self.seconds, self.ctl.__setitem__, (1, 1))
            timer.daemon = True
            timer.start()
        started = time.monotonic()
        try:
            result = call()
        finally:
            if timer is not None:
                timer.cancel()
        self.ctl[1] = 0
        if self.ctl[4]:  # a flag set after the search's last check leaves its answer whole
            raise SolverTimeout(
                f"the Connect Four solver found no exact answer within {self.seconds:g} s "
                f"({time.monotonic() - started:.0f} s, {self.nodes:,} positions searched) at "
                f"the position with {(vertex >> self._span).bit_count()} discs:\n"
                f"{self.game.render(vertex)}\npositions nearer the start take longer "
                "(docs/guides/evaluation.md, 'The Connect Four solver and its solved positions')"
            )
        return result

    def score(self, vertex: int, weak: bool = False) -> int:
        """The exact score of a position that is not over (weak: only its sign)."""
        pos, mask, discs = self._split(vertex)
        k = self._k
        return int(
            self._run(
                vertex,
                lambda: k.solve(
                    pos, mask, discs, weak, self.geometry, self.keys, self.values, self.ctl
                ),
            )
        )

    def move_scores(self, vertex: int, weak: bool = False) -> dict[int, int]:
        """Column (action id) -> the exact score of playing it, in the mover's view (weak: only
        its sign), for every legal move of a position that is not over."""
        pos, mask, discs = self._split(vertex)
        out = np.zeros(self.game.columns, np.int64)
        k = self._k
        self._run(
            vertex,
            lambda: k.move_scores(
                pos, mask, discs, weak, self.geometry, self.keys, self.values, self.ctl, out
            ),
        )
        return {c: int(s) for c, s in enumerate(out) if s != FULL}

    # ----- the interface of gamegym.game.players.Solver (the `solver` player) --------------
    def value(self, vertex: int) -> float:
        """The game-theoretic value, -1, 0 or 1 (player to move's view)."""
        if not self.game.children_at(vertex):
            return float(self.game.score_at(vertex))
        return float(np.sign(self.score(vertex, weak=True)))

    def solve(self, vertex: int) -> Solution:
        """The value and the moves that keep it (a win, a draw or, lost, any move)."""
        if not self.game.children_at(vertex):
            return Solution(float(self.game.score_at(vertex)), (), {}, 0)
        nodes = self.nodes
        values = {a: float(np.sign(s)) for a, s in self.move_scores(vertex, weak=True).items()}
        best = max(values.values())
        optimal = tuple(a for a, v in values.items() if v == best)
        return Solution(best, optimal, values, self.nodes - nodes)

    def plies_to_end(self, vertex: int) -> int:
        """Plies until four in a row when the winner hurries and the loser delays (0 when the
        game is over); not for drawn positions (the `solver` player's `hurry`)."""
        if not self.game.children_at(vertex):
            return 0
        plies = plies_to_end(self.score(vertex), (vertex >> self._span).bit_count(), self.cells)
        if plies is None:
            raise ValueError("plies_to_end needs a won or lost position, this one is drawn")
        return plies
