"""Players: something that picks an action id at a vertex of any GameGraph.

A player's `choose(graph, vertex, rng)` returns an *action id* (not a child index): the same
integer names the same move in every position, and `graph.child_by_action` (or `Player.move`)
turns it into the child.  Randomness comes only from the `rng` passed in
(`numpy.random.Generator`), so the same seed replays the same game.

  RandomPlayer     a uniformly random legal action
  AlphaBetaPlayer  depth-limited negamax with alpha-beta and a transposition table, with the
                   game's heuristic at its leaves (`game_heuristic`) or without one
  SolverPlayer     a random optimal action from the exact solver (`solve`)
  (gamegym.search.uct.UCTPlayer: plain UCT with random rollouts, on the tree search)

A *player spec* (gamegym.game.playerspecs) names a player on the command line and in the config:
random, solver, alphabeta:D (depth D, the game's heuristic at the leaves), alphabeta0:D (depth
D, no heuristic: past D plies every position looks even), mcts:N (UCT, N rollouts a move) and
iteration:K (a model iteration of a session).  `gamegym.evaluation.arena.make_player` builds them.

Values are negamax values: always from the view of the player to move at that vertex.

The exact solver assumes the graph is *acyclic* (every game ends: Santorini, tic-tac-toe and
Connect Four all make progress on every ply).  A vertex met again on its own search path raises
GameGraphError, and so does a search deeper than `max_plies`.
"""

from __future__ import annotations

import gc
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from gamegym.game.graph import GameGraph, GameGraphError, VertexError

__all__ = [
    "Player",
    "RandomPlayer",
    "AlphaBetaPlayer",
    "SearchResult",
    "Solver",
    "Solution",
    "solve",
    "SolverPlayer",
    "GameRecord",
    "play_game",
    "game_heuristic",
]

Vertex = Hashable
# heuristic(graph, vertex) -> estimated value in [-1, 1] from the view of the player to move
Heuristic = Callable[[GameGraph, Vertex], float]

EXACT, LOWER, UPPER = 0, 1, 2  # what a transposition-table value is: exact, a lower/upper bound
_TIE = 1e-9  # values closer than this are equally good (float search only)


def _legal_actions(graph: GameGraph, vertex: Vertex) -> tuple:
    actions = graph.actions_at(vertex)
    if not actions:
        raise VertexError("no legal action: the game is over", vertex)
    return actions


def game_heuristic(graph: GameGraph, vertex: Vertex) -> float:
    """The game's own leaf evaluation (`graph.heuristic_at`) when it has one, else its score
    (0 at every vertex where the game goes on)."""
    return graph.heuristic_at(vertex) if graph.has_heuristic else graph.score_at(vertex)


class Player(ABC):
    """Picks the move to play at a vertex."""

    @abstractmethod
    def choose(self, graph: GameGraph, vertex: Vertex, rng: np.random.Generator) -> int:
        """The action id to play at a non-terminal `vertex` (one of graph.actions_at(vertex))."""

    def move(self, graph: GameGraph, vertex: Vertex, rng: np.random.Generator) -> Vertex:
        """The child reached by the chosen action id."""
        return graph.child_by_action(vertex, self.choose(graph, vertex, rng))


class RandomPlayer(Player):
    """A uniformly random legal action."""

    def choose(self, graph: GameGraph, vertex: Vertex, rng: np.random.Generator) -> int:
        actions = _legal_actions(graph, vertex)
        return int(actions[rng.integers(len(actions))])


# ----- depth-limited alpha-beta ----------------------------------------------------------------
@dataclass(frozen=True)
class SearchResult:
    """What one AlphaBetaPlayer search found at its root."""

    value: float  # discounted negamax value, active player's view
    best_actions: tuple[int, ...]  # every action id within _TIE of that value, in child order
    nodes: int  # vertices searched


class AlphaBetaPlayer(Player):
    """Negamax with alpha-beta pruning to `depth` plies, with a transposition table.

    A leaf at depth 0 is worth heuristic(graph, vertex) if a heuristic is given, else
    graph.score_at(vertex); a terminal vertex is worth its score.  Every ply multiplies a value
    by `-discount`, so a win in fewer plies beats a win in more plies and a loss in more plies
    beats a loss in fewer (the player does not dawdle).  Equally good moves are chosen between
    with the rng.  The table lives for one search.
    """

    def __init__(self, depth: int, heuristic: Heuristic | None = None, discount: float = 0.999):
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"AlphaBetaPlayer depth must be an integer >= 1, got {depth!r}")
        if not 0.0 < discount <= 1.0:
            raise ValueError(f"AlphaBetaPlayer discount must be in (0, 1], got {discount!r}")
        self.depth = depth
        self.heuristic = heuristic
        self.discount = discount

    def choose(self, graph: GameGraph, vertex: Vertex, rng: np.random.Generator) -> int:
        best = self.search(graph, vertex).best_actions
        return int(best[rng.integers(len(best))])

    def search(self, graph: GameGraph, vertex: Vertex) -> SearchResult:
        """Search `depth` plies from a non-terminal vertex."""
        return _AlphaBeta(graph, self.heuristic, self.discount).root(vertex, self.depth)


@dataclass
class _Entry:
    depth: int  # remaining depth the value was searched to
    value: float
    flag: int  # EXACT, LOWER or UPPER
    best_index: int  # child index of the best move found (searched first next time)


class _AlphaBeta:
    """One depth-limited search; values are discounted negamax values."""

    def __init__(self, graph: GameGraph, heuristic: Heuristic | None, discount: float):
        self.graph, self.heuristic, self.discount = graph, heuristic, discount
        self.table: dict = {}
        self.nodes = 0

    def root(self, vertex: Vertex, depth: int) -> SearchResult:
        """Exact values for every child that could be best; bounds suffice for the others."""
        actions = _legal_actions(self.graph, vertex)
        children, d = self.graph.children_at(vertex), self.discount
        best, best_actions = -np.inf, []
        for child, action in zip(children, actions):
            floor = best - 2 * _TIE  # a child worth <= floor cannot tie the best one
            value = -d * self.negamax(child, depth - 1, -np.inf, -floor / d)
            if value > best + _TIE:
                best, best_actions = value, [action]
            elif value >= best - _TIE:
                best_actions.append(action)
        return SearchResult(float(best) + 0.0, tuple(int(a) for a in best_actions), self.nodes)

    def negamax(self, vertex: Vertex, depth: int, alpha: float, beta: float) -> float:
        """Fail-soft alpha-beta value of `vertex` searched `depth` plies."""
        self.nodes += 1
        entry = self.table.get(vertex)
        if (
            entry is not None
            and entry.depth >= depth
            and _usable(entry.value, entry.flag, alpha, beta)
        ):
            return entry.value
        graph = self.graph
        children = graph.children_at(vertex)
        if not children:
            return float(graph.score_at(vertex))
        if depth <= 0:
            h = self.heuristic
            return float(h(graph, vertex) if h is not None else graph.score_at(vertex))
        alpha0, best, best_index, d = alpha, -np.inf, 0, self.discount
        for i in _ordered(len(children), entry.best_index if entry else 0):
            value = -d * self.negamax(children[i], depth - 1, -beta / d, -alpha / d)
            if value > best:
                best, best_index = value, i
                alpha = max(alpha, best)
                if alpha >= beta:
                    break
        self.table[vertex] = _Entry(depth, best, _flag(best, alpha0, beta), best_index)
        return best


def _usable(value: float, flag: int, alpha: float, beta: float) -> bool:
    """Whether a stored value answers a search with window (alpha, beta)."""
    return flag == EXACT or (flag == LOWER and value >= beta) or (flag == UPPER and value <= alpha)


def _flag(value: float, alpha0: float, beta: float) -> int:
    """What a fail-soft search with window (alpha0, beta) that returned `value` proved."""
    return UPPER if value <= alpha0 else LOWER if value >= beta else EXACT


def _ordered(count: int, first: int) -> list:
    """Child indices with `first` (the best move of an earlier search) moved to the front."""
    return [first] + [i for i in range(count) if i != first]


# ----- the exact solver ----------------------------------------------------------------------
@dataclass(frozen=True)
class Solution:
    """The exact value of a vertex under perfect play."""

    value: float  # active player's view: 1 win, 0 draw, -1 loss
    optimal_actions: tuple[int, ...]  # action ids whose child keeps that value (child order)
    action_values: dict = field(default_factory=dict)  # action id -> value after it, mover's view
    nodes: int = 0  # vertices searched for this solution


class Solver:
    """Exact negamax with alpha-beta over the whole game tree of one graph.

    The transposition table maps a vertex to its value and a bound flag.  With `use_symmetry`
    the key is the smallest image of the vertex under the game's symmetries (the frozenset of
    its images if vertices do not compare): values are invariant under symmetries, so a whole
    equivalence class shares one entry.  The table is kept between calls (solving many vertices
    of one game gets cheaper as it fills) and is not bounded: this is for games small enough to
    solve.  The search expands with `graph.expansion`, bypassing the graph's cache, and pauses
    the cyclic garbage collector (millions of long-lived tuples make it crawl).
    """

    def __init__(self, graph: GameGraph, use_symmetry: bool = True, max_plies: int = 1000):
        self.graph = graph
        self.use_symmetry = use_symmetry and graph.symmetry_count > 1
        self.max_plies = max_plies
        self.table: dict = {}
        self.nodes = 0  # vertices searched so far
        self._path: set = set()
        self._plies: dict = {}

    def _key(self, vertex: Vertex) -> Hashable:
        if not self.use_symmetry:
            return vertex
        images = self.graph.equivalenceclass_of(vertex)
        try:
            return min(images)
        except TypeError:
            return frozenset(images)

    def value(self, vertex: Vertex) -> float:
        """The exact negamax value of a vertex (active player's view)."""
        with _deep_search(self.max_plies):
            return self._negamax(vertex, -1.0, 1.0, 0) + 0.0  # + 0.0 turns -0.0 into 0.0

    def solve(self, vertex: Vertex) -> Solution:
        """Value and optimal actions; each child is solved exactly (full window)."""
        graph, nodes0 = self.graph, self.nodes
        children, actions = graph.children_at(vertex), graph.actions_at(vertex)
        if not children:
            return Solution(float(graph.score_at(vertex)), (), {}, 0)
        values = {int(a): 0.0 - self.value(child) for child, a in zip(children, actions)}
        best = max(values.values())
        optimal = tuple(a for a, v in values.items() if v == best)
        return Solution(best, optimal, values, self.nodes - nodes0)

    def plies_to_end(self, vertex: Vertex) -> int:
        """Plies until the game ends at a won or lost vertex when the winner hurries and the
        loser delays (0 at a terminal vertex).  Not for drawn vertices."""
        key = self._key(vertex)
        plies = self._plies.get(key)
        if plies is None:
            plies = self._plies[key] = self._count_plies(vertex)
        return plies

    def _count_plies(self, vertex: Vertex) -> int:
        children = self.graph.children_at(vertex)
        if not children:
            return 0
        value = self.value(vertex)
        if value == 1:
            return 1 + min(self.plies_to_end(c) for c in children if self.value(c) == -1)
        if value == -1:
            return 1 + max(self.plies_to_end(c) for c in children)
        raise VertexError("plies_to_end needs a won or lost vertex, this one is not", vertex)

    def _negamax(
        self, vertex: Vertex, alpha: float, beta: float, ply: int, key: Hashable = None
    ) -> float:
        """Fail-soft alpha-beta value; the table stores exact values and bounds."""
        self.nodes += 1
        key = self._key(vertex) if key is None else key
        entry = self.table.get(key)
        if entry is not None and _usable(entry[0], entry[1], alpha, beta):
            return entry[0]
        graph = self.graph
        children = graph.expansion(vertex)[0]
        if not children:
            return self._store(key, float(graph.score_at(vertex)), EXACT)
        keys = self._child_keys(children)
        if keys is None:
            return self._store(key, 1.0, EXACT)
        self._enter(vertex, ply)
        try:
            alpha0, best = alpha, -np.inf
            for child, child_key in zip(children, keys):
                best = max(best, -self._negamax(child, -beta, -alpha, ply + 1, child_key))
                alpha = max(alpha, best)
                if alpha >= beta:
                    break
        finally:
            self._path.discard(vertex)
        return self._store(key, best, _flag(best, alpha0, beta))

    def _store(self, key: Hashable, value: float, flag: int) -> float:
        self.table[key] = (value, flag)
        return value

    def _child_keys(self, children: Sequence) -> list | None:
        """The table keys of the children, or None when a move wins at once: it ends the game
        with the opponent lost (a score of -1 is terminal-only), or the table already knows
        the child is lost (an 'enhanced transposition cutoff')."""
        graph, table = self.graph, self.table
        for child in children:
            if graph.score_at(child) <= -1.0 and not graph.expansion(child)[0]:
                return None
        keys = [self._key(child) for child in children]
        for key in keys:
            entry = table.get(key)
            if entry is not None and entry[0] <= -1.0 and entry[1] != LOWER:
                return None
        return keys

    def _enter(self, vertex: Vertex, ply: int) -> None:
        if ply >= self.max_plies:
            raise GameGraphError(
                f"solver went deeper than max_plies={self.max_plies}: the "
                f"game is too long or has a cycle (vertex {vertex!r})"
            )
        if vertex in self._path:
            raise VertexError(
                "the solver met a vertex again on its own path: the graph has a "
                "cycle and cannot be solved by negamax",
                vertex,
            )
        self._path.add(vertex)


class _deep_search:
    """For a long search: room for `plies` recursive calls, and the cyclic garbage collector
    paused; both restored afterwards (re-entrant: nested uses change nothing)."""

    def __init__(self, plies: int):
        self.needed = plies + 500

    def __enter__(self):
        self.saved_limit, self.gc_was_on = sys.getrecursionlimit(), gc.isenabled()
        if self.saved_limit < self.needed:
            sys.setrecursionlimit(self.needed)
        gc.disable()

    def __exit__(self, *exc):
        sys.setrecursionlimit(self.saved_limit)
        if self.gc_was_on:
            gc.enable()


def solve(graph: GameGraph, vertex: Vertex, use_symmetry: bool = True) -> Solution:
    """Solve one vertex exactly with a fresh Solver (see Solver)."""
    return Solver(graph, use_symmetry=use_symmetry).solve(vertex)


class SolverPlayer(Player):
    """Plays a uniformly random optimal action.  With `hurry` (the default), among winning moves
    only the fastest wins and among losing moves only the slowest losses are candidates.  Keeps
    one Solver (and its table) for the last graph it played; pass `solver` to share a table
    that is already filled."""

    def __init__(self, hurry: bool = True, use_symmetry: bool = True, solver: Solver | None = None):
        self.hurry, self.use_symmetry = hurry, use_symmetry
        self._solver: Solver | None = solver

    def solver_for(self, graph: GameGraph) -> Solver:
        """The solver for `graph`: the game's own (`GameGraph.exact_solver`) where it has
        one, else the generic Solver."""
        if self._solver is None or self._solver.graph is not graph:
            self._solver = graph.exact_solver() or Solver(graph, use_symmetry=self.use_symmetry)
        return self._solver

    def choose(self, graph: GameGraph, vertex: Vertex, rng: np.random.Generator) -> int:
        _legal_actions(graph, vertex)
        solver = self.solver_for(graph)
        solution = solver.solve(vertex)
        candidates = solution.optimal_actions
        if self.hurry and solution.value in (1.0, -1.0):
            plies = {a: solver.plies_to_end(graph.child_by_action(vertex, a)) for a in candidates}
            target = (min if solution.value == 1.0 else max)(plies.values())
            candidates = tuple(a for a in candidates if plies[a] == target)
        return int(candidates[rng.integers(len(candidates))])


# ----- playing a game --------------------------------------------------------------------------
@dataclass(frozen=True)
class GameRecord:
    """One finished game."""

    actions: tuple[int, ...]  # action ids in the order played
    vertices: tuple  # every vertex from the start to the terminal one
    outcome: float  # final score from the view of the player who moved first


def play_game(
    graph: GameGraph,
    players: Sequence[Player],
    rng: np.random.Generator,
    start: Vertex | None = None,
    max_moves: int = 10_000,
) -> GameRecord:
    """Play players[0] (moves first) against players[1] from `start` (default: the first root)."""
    vertex = graph.roots[0] if start is None else start
    vertices = [vertex]
    actions: list[int] = []
    while graph.children_at(vertex):
        if len(actions) >= max_moves:
            raise GameGraphError(f"game longer than max_moves={max_moves} (vertex {vertex!r})")
        action = players[len(actions) % 2].choose(graph, vertex, rng)
        vertex = graph.child_by_action(vertex, action)
        vertices.append(vertex)
        actions.append(action)
    score = float(graph.score_at(vertex))
    return GameRecord(tuple(actions), tuple(vertices), score if len(actions) % 2 == 0 else -score)
