"""Plain UCT with random rollouts: the `mcts:N` opponent, for any GameGraph.

No network and no session: each of N simulations walks down the tree by UCB1, adds one new
vertex (an untried move chosen at random), plays uniformly random moves from it to the end of
the game, and backs the result up.  This is the "vanilla MCTS" baseline of the AlphaZero
literature (AlphaZero.jl measures its Connect Four agent against it with 1,000 rollouts a move).

It is the one tree core (`gamegym.search.core`, AlphaZero's step over the GameGraph in
`gamegym.search.mcts.Search`) with a rollout evaluator, as OpenSpiel's `MCTSBot` takes a
`RandomRolloutEvaluator`: `RolloutEvaluator` gives a new vertex the result of one random playout
as its value (uniform priors, which UCB1 never reads), and `UctRule` gives the core's walk its
selection function (an untried move at random while a node has one, else UCB1) and the move.
One search at a time (no virtual loss), so each rollout follows the walk that asked for it.

The core's MCTS-solver (Winands, Bjornsson and Saito, 2008) uses what the tree proves: a vertex
whose move ends the game is scored exactly, a vertex with a move to a position lost for the
opponent is a proven win (so a winning move is taken), and one whose every move leads to a
proven win for the opponent is a proven loss (so a move that lets the opponent win at once is
avoided as soon as the opponent's reply has been tried).  The search stops early once the root
is proven.

Values are negamax: from the view of the player to move at a node.  All randomness comes from
the `rng` passed to `choose` (uniform floats drawn in blocks, shared by the walks and the
rollouts in the order they need them), so the same seed replays the same game.  The tree lives
for one move.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np
from numpy.typing import NDArray

from gamegym.game.graph import GameGraph, VertexError
from gamegym.game.players import Player
from gamegym.search.mcts import Search
from gamegym.search.rules import RootSelect, RuleSearch, SearchRule, Select, visit_policy
from gamegym.search.tree import Node, SearchParams, uniform_evaluator

__all__ = ["UCTPlayer", "UctRule", "RolloutEvaluator"]

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


class RolloutEvaluator:
    """An evaluator for the tree core: uniform priors, and as value one uniformly random
    playout's result from the vertex's mover's view (a playout longer than `max_rollout`
    moves counts as a draw).  The first batch of a search is its root, whose value nothing
    reads: it is not played out (`root_pending`)."""

    def __init__(self, graph: GameGraph, draws: _Draws, max_rollout: int):
        self.graph, self.draws, self.max_rollout = graph, draws, max_rollout
        self.uniform = uniform_evaluator(graph.action_space_size)
        self.root_pending = True

    def __call__(self, vertices: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray]:
        probs, values = self.uniform(vertices)
        if self.root_pending:
            self.root_pending = False
            return probs, values
        return probs, np.array([self.rollout(v) for v in vertices], np.float64)

    def rollout(self, vertex: Hashable) -> float:
        """Uniformly random moves to the end; the result from `vertex`'s mover's view."""
        graph, draws = self.graph, self.draws
        expansion, sign = graph.expansion, 1.0
        for _ in range(self.max_rollout):
            children = expansion(vertex)[0]
            if not children:
                return sign * float(graph.score_at(vertex))
            vertex = children[draws.index(len(children))]
            sign = -sign
        return 0.0


class UctRule(SearchRule):
    """UCT's rule for the tree core (not a self-play rule: it is not registered): at every
    node an untried move at random while there is one, else UCB1 among the tried moves, a
    move proven to lose only when all of them do; the move played is the most visited one
    that is not proven to lose (a proven winning move when there is one)."""

    name = "uct"

    def __init__(self, params: SearchParams, exploration: float, draws: _Draws):
        super().__init__(params)
        self.exploration = exploration  # c in UCB1: mean + c * sqrt(ln N / n), values in [-1, 1]
        self.draws = draws

    def selectors(self, search: RuleSearch) -> tuple[RootSelect, Select]:
        draws, exploration = self.draws, self.exploration
        sqrt = math.sqrt

        def select(node: Node) -> int:
            children = node.children
            untried = [i for i, child in enumerate(children) if child is None]
            if untried:
                return untried[draws.index(len(untried))]
            log_total = exploration * sqrt(math.log(node.total))
            best, best_score = 0, -math.inf
            for i, (child, visits, value) in enumerate(zip(children, node.visits, node.values)):
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

        return select, select

    def policy(self, root: Node, size: int) -> NDArray[np.float32]:
        return visit_policy(root, size)

    def choose(self, root: Node, temperature: float, rng: np.random.Generator) -> int:
        """The most visited of the proven-best moves when the root is proven, else of the
        tried moves not proven to lose (the first in child order among equals)."""
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


class UCTPlayer(Player):
    """`simulations` UCT simulations with random rollouts per move; plays the most visited
    move that is not proven to lose (a proven winning move when there is one)."""

    def __init__(self, simulations: int, exploration: float = 1.0, max_rollout: int = 10_000):
        if isinstance(simulations, bool) or not isinstance(simulations, int) or simulations < 1:
            raise ValueError(f"UCTPlayer simulations must be an integer >= 1, got {simulations!r}")
        self.simulations = simulations
        self.exploration = exploration  # c in UCB1: mean + c * sqrt(ln N / n), values in [-1, 1]
        self.max_rollout = max_rollout  # a rollout longer than this counts as a draw
        self.params = SearchParams(searchcount=simulations, threads=1, solver=True)

    def choose(self, graph: GameGraph, vertex: Hashable, rng: np.random.Generator) -> int:
        search, root = self._search(graph, vertex, rng)
        return int(root.actions[search.choose(root, 0.0, rng)])

    def search(self, graph: GameGraph, vertex: Hashable, rng: np.random.Generator) -> Node:
        """The root after the simulations (its `visits` are per move, in child order)."""
        return self._search(graph, vertex, rng)[1]

    def _search(
        self, graph: GameGraph, vertex: Hashable, rng: np.random.Generator
    ) -> tuple[Search, Node]:
        if not graph.children_at(vertex):
            raise VertexError("no legal action: the game is over", vertex)
        draws = _Draws(rng)
        rule = UctRule(self.params, self.exploration, draws)
        search = Search(graph, RolloutEvaluator(graph, draws, self.max_rollout), self.params, rule)
        return search, search.run(search.new_root(vertex), rng)
