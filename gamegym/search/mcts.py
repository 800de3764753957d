"""AlphaZero's search: the tree core (`gamegym.search.core.TreeCore`) over a GameGraph (no
TensorFlow here).

The step is the game itself: a node's children are the legal moves of its vertex
(`children_at`, their action ids `actions_at`), the reward of every edge is 0, and a vertex where
the game is over is a leaf with its final score (`score_at`, exact: a proven value under the
MCTS-solver).  The evaluator answers a batch of vertices with priors over action ids, renormalised
over the legal ones, and a value from the mover's view.  Everything else -- the walk by the root
rule's selection functions (`gamegym.search.rules`: PUCT or Gumbel), the backup, virtual loss,
one batch per round, the pipelined Predictor round trip, the MCTS-solver -- is the core's.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from gamegym.search.core import TreeCore
from gamegym.search.rules import choose_action, visit_policy
from gamegym.search.tree import Evaluator, Node, SearchParams, uniform_evaluator

__all__ = [
    "Node",
    "SearchParams",
    "Search",
    "Evaluator",
    "uniform_evaluator",
    "visit_policy",
    "choose_action",
]


class Search(TreeCore):
    """The tree search over a GameGraph; one instance per Selfplayer (reused across moves)."""

    def new_root(self, vertex: Hashable) -> Node:
        """A root node for a search from `vertex`."""
        return Node(vertex)

    def next_root(self, root: Node, index: int) -> Node:
        """The root of the next move after child `index` of `root` is played: the searched
        child itself, so its subtree is kept; a fresh node when the rule starts every move
        afresh (Gumbel)."""
        child = root.children[index]
        if child is None or not self.rule.keeps_subtree:
            return self.new_root(root.child_vertices[index])
        return child

    def _open(self, node: Node) -> None:
        """First visit of a node: read its children; terminal nodes get their final score."""
        graph = self.graph
        vertex = node.vertex
        children = graph.children_at(vertex)
        if not children:
            node.state = Node.TERMINAL
            node.value = float(graph.score_at(vertex))
            if self.params.solver:
                node.proven = node.value
            return
        n = len(children)
        node.child_vertices = children
        node.actions = graph.actions_at(vertex)
        node.children = [None] * n
        node.visits = [0] * n
        node.values = [0.0] * n
        node.state = Node.PENDING
        self._queue.append(node)

    def _make_child(self, node: Node, i: int) -> Node:
        return Node(node.child_vertices[i])

    def _inputs(self, batch: list[Node]) -> list:
        """The evaluator is asked about the leaves' vertices."""
        return [node.vertex for node in batch]

    def _apply(self, batch: list[Node], probs: np.ndarray, values: np.ndarray) -> None:
        self.evaluations += len(batch)
        rows, leaf_values = np.asarray(probs).tolist(), np.asarray(values).tolist()
        for node, row, value in zip(batch, rows, leaf_values):  # Python floats, read once
            p = [row[a] for a in node.actions]
            s = sum(p)
            node.priors = [x / s for x in p] if s > 0 else [1.0 / len(p)] * len(p)
            node.value = float(value)
            node.state = Node.EXPANDED
