"""Plain UCT with random rollouts: the `mcts:N` opponent, for any GameGraph.

No network and no session: each of N simulations walks down the tree by UCB1, adds one new
vertex (an untried move chosen at random), plays uniformly random moves from it to the end of
the game, and backs the result up.  This is the "vanilla MCTS" baseline of the AlphaZero
literature (AlphaZero.jl measures its Connect Four agent against it with 1,000 rollouts a move).

An MCTS-solver step (Winands, Bjornsson and Saito, 2008) uses what the tree proves: a vertex
whose move ends the game is scored exactly, a vertex with a move to a position lost for the
opponent is a proven win (so a winning move is taken), and one whose every move leads to a
proven win for the opponent is a proven loss (so a move that lets the opponent win at once is
avoided as soon as the opponent's reply has been tried).  The search stops early once the root
is proven.

Values are negamax: from the view of the player to move at a node.  All randomness comes from
the `rng` passed to `choose` (uniform floats drawn in blocks), so the same seed replays the
same game.  The tree lives for one move.
"""

from __future__ import annotations

import math
from collections.abc import Hashable

import numpy as np

from gamegym.game.graph import GameGraph, VertexError
from gamegym.game.players import Player

__all__ = ["UCTPlayer"]

_BLOCK = 4096  # uniform floats drawn from the rng at a time


class _Draws:
    """Uniform floats from an rng, drawn in blocks (one numpy call per block, not per move)."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.buffer: list = []

    def index(self, count: int) -> int:
        """A uniformly random integer in [0, count)."""
        if not self.buffer:
            self.buffer = self.rng.random(_BLOCK).tolist()
        return int(self.buffer.pop() * count)


class _Node:
    """A vertex in the tree with the statistics of its moves (from its mover's view)."""

    __slots__ = (
        "vertex",
        "child_vertices",
        "actions",
        "children",
        "untried",
        "visits",
        "values",
        "total",
        "proven",
    )

    def __init__(self, graph: GameGraph, vertex: Hashable):
        self.vertex = vertex
        self.child_vertices = graph.children_at(vertex)
        self.actions = graph.actions_at(vertex)
        count = len(self.child_vertices)
        self.children: list = [None] * count  # _Node per tried move
        self.untried = list(range(count))  # moves not tried yet
        self.visits = [0] * count  # simulations through each move
        self.values = [0.0] * count  # their summed results, this node's view
        self.total = 0
        # exact value once proven: the final score at a terminal vertex
        self.proven = None if count else float(graph.score_at(vertex))


class UCTPlayer(Player):
    """`simulations` UCT simulations with random rollouts per move; plays the most visited
    move that is not proven to lose (a proven winning move when there is one)."""

    def __init__(self, simulations: int, exploration: float = 1.0, max_rollout: int = 10_000):
        if isinstance(simulations, bool) or not isinstance(simulations, int) or simulations < 1:
            raise ValueError(f"UCTPlayer simulations must be an integer >= 1, got {simulations!r}")
        self.simulations = simulations
        self.exploration = exploration  # c in UCB1: mean + c * sqrt(ln N / n), values in [-1, 1]
        self.max_rollout = max_rollout  # a rollout longer than this counts as a draw

    def choose(self, graph: GameGraph, vertex: Hashable, rng: np.random.Generator) -> int:
        root = self.search(graph, vertex, rng)
        return int(root.actions[_best_move(root)])

    def search(self, graph: GameGraph, vertex: Hashable, rng: np.random.Generator) -> _Node:
        """The root after the simulations (its `visits` are per move, in child order)."""
        root = _Node(graph, vertex)
        if root.proven is not None:
            raise VertexError("no legal action: the game is over", vertex)
        draws = _Draws(rng)
        for _ in range(self.simulations):
            if root.proven is not None:
                break
            self._simulate(graph, root, draws)
        return root

    def _simulate(self, graph: GameGraph, root: _Node, draws: _Draws) -> None:
        path, node = [], root
        while True:
            if node.untried:  # add one new node and play out from it
                i = node.untried.pop(draws.index(len(node.untried)))
                child = node.children[i] = _Node(graph, node.child_vertices[i])
                path.append((node, i))
                value = (
                    child.proven
                    if child.proven is not None
                    else self._rollout(graph, child.vertex, draws)
                )
                break
            i = self._select(node)
            path.append((node, i))
            node = node.children[i]
            if node.proven is not None:
                value = node.proven
                break
        self._backup(path, value, proven=path[-1][0].children[path[-1][1]].proven is not None)

    def _select(self, node: _Node) -> int:
        """UCB1 among the tried moves; a move proven to lose only when all of them do."""
        log_total = self.exploration * math.sqrt(math.log(node.total))
        sqrt = math.sqrt
        best, best_score = 0, -math.inf
        for i, (child, visits, value) in enumerate(zip(node.children, node.visits, node.values)):
            proven = child.proven
            if proven is None:
                score = value / visits + log_total / sqrt(visits)
            elif proven >= 1.0:
                score = -10.0  # the opponent has won there: the last resort
            else:
                score = -proven + log_total / sqrt(visits)
            if score > best_score:
                best, best_score = i, score
        return best

    def _rollout(self, graph: GameGraph, vertex: Hashable, draws: _Draws) -> float:
        """Uniformly random moves to the end; the result from `vertex`'s mover's view."""
        expansion, sign = graph.expansion, 1.0
        for _ in range(self.max_rollout):
            children = expansion(vertex)[0]
            if not children:
                return sign * float(graph.score_at(vertex))
            vertex = children[draws.index(len(children))]
            sign = -sign
        return 0.0

    @staticmethod
    def _backup(path: list, value: float, proven: bool) -> None:
        """Add the leaf's value (leaf mover's view) along the path; while `proven`, prove the
        nodes above the newly proven leaf where that settles them."""
        for node, i in reversed(path):
            value = -value
            node.visits[i] += 1
            node.values[i] += value
            node.total += 1
            if proven:
                proven = _prove(node, i)


def _prove(node: _Node, i: int) -> bool:
    """Move `i` of `node` has just been proven; True if that proves `node` as well."""
    if node.proven is not None:
        return False
    if node.children[i].proven <= -1.0:
        node.proven = 1.0  # a move to a position lost for the opponent
        return True
    if node.untried or any(c.proven is None for c in node.children):
        return False
    node.proven = max(-c.proven for c in node.children)
    return True


def _best_move(root: _Node) -> int:
    """The most visited of the proven-best moves when the root is proven, else of the moves
    not proven to lose (the first in child order among equals)."""
    children = root.children
    if root.proven is not None:
        allowed = [
            i
            for i, c in enumerate(children)
            if c is not None and c.proven is not None and -c.proven == root.proven
        ]
    else:
        allowed = [
            i
            for i, c in enumerate(children)
            if c is not None and (c.proven is None or c.proven < 1.0)
        ]
    return max(allowed or range(len(children)), key=root.visits.__getitem__)
