"""MuZero's latent search on the compiled core (`selfplay.search.core` "auto" or "compiled"):
`gamegym.search.latent.LatentSearch` with the tree in the flat arrays of `gamegym.search.flat`,
on its compiled walk, backup and gathering.

Below the root every node is a hidden state expanded over every action id, so a walk that makes
a new node opens it inside the compiled kernel without coming back to Python: one kernel call
gathers a whole batch.  Python keeps the root (its legal moves from the GameGraph, its initial
inference, the rule's noise, the policy target and the move) and the model calls: each batch of
new nodes goes to the evaluator as one array of their parents' hidden states and one of action
ids, and the hidden states it answers are kept in one array indexed by node.  What differs
from AlphaZero's flat search is the step only: the root's opening, the model calls, the
rewards on the edges and PUCT's Q normalised by the values backed up.

The searches run in the Python latent search's order with its float64 arithmetic and
tie-breaking, so from the same root, model answers and random generator both play the same
games (tests/search/test_compiled_core.py); restarts after a StaleIteration are the same too.

The evaluator answers `initial(vertices)` and `recurrent(hidden, actions)`, each returning a
callable that gives (probs, values, rewards or None, hidden): `NetworkLatentValuer` and
`UniformLatentValuer` do.  Batches are pipelined where the evaluator has `submit`, as in the
Python search.

May import: what `gamegym.search` may; numba only through gamegym.search._flat_kernels.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

import numpy as np

from gamegym.game.graph import GameGraph
from gamegym.search.flat import FlatNode, FlatSearch
from gamegym.search.flat_layout import (
    ACTION,
    FIRST,
    PARENT,
    PARENT_EDGE,
)
from gamegym.search.latent import RESTARTS, require_alternating
from gamegym.search.tree import SearchParams

__all__ = ["LatentFlatSearch", "LatentModel"]


class LatentModel(Protocol):
    """What the compiled latent search asks of its evaluator: each call sends now and returns
    the answer (probs [B, A], values [B], rewards [B] or None, hidden [B, ...]) when called."""

    def initial(self, vertices: list) -> Callable[[], tuple]: ...

    def recurrent(self, hidden: np.ndarray, actions: np.ndarray) -> Callable[[], tuple]: ...


class LatentFlatSearch(FlatSearch):
    """The PUCT latent search of `LatentSearch` on the compiled core; one instance per
    Selfplayer, reused across moves and games.  Every root starts a new tree (the hidden
    states below an old root are the model's, not the game's)."""

    normalise_q = True  # PUCT's Q by the bounds of the values backed up (the paper's)
    restarts_allowed = RESTARTS

    def __init__(self, graph: GameGraph, evaluate: LatentModel, params: SearchParams):
        require_alternating(graph)
        super().__init__(graph, evaluate, params)  # type: ignore[arg-type]  # a LatentModel
        self.model = evaluate
        self.hidden_actions = graph.action_space_size  # a hidden state's edges: every action id
        self.hidden: np.ndarray | None = None  # [nodes, ...] once the first answer came

    # ----- the tree --------------------------------------------------------------------------
    def next_root(self, root: FlatNode, index: int) -> FlatNode:
        """A new tree at the position played: each move is searched from its real
        observation."""
        self._check(root)
        return self.new_root(self.edge_vertices[int(self.ni[FIRST, root.index]) + index])

    def _restart(self, root: FlatNode) -> None:
        """Forget the search below `root` (node 0 of its tree), which stays the caller's and is
        opened and evaluated again, its noise-free priors forgotten too."""
        vertex = self.vertices[root.index]
        self._clear()
        self._node(vertex)
        root.raw_priors = None

    def _keep_hidden(self, batch: np.ndarray, hidden: np.ndarray) -> None:
        """Keep the hidden states the model answered for the nodes `batch`."""
        kept = self.hidden
        if kept is None or kept.shape[1:] != hidden.shape[1:] or kept.dtype != hidden.dtype:
            kept = np.zeros((self.nf.shape[1], *hidden.shape[1:]), hidden.dtype)
        elif len(kept) < self.nf.shape[1]:
            kept = np.concatenate(
                [kept, np.zeros_like(kept, shape=(self.nf.shape[1] - len(kept), *kept.shape[1:]))]
            )
        kept[batch] = hidden
        self.hidden = kept

    def _expand(self, index: int) -> tuple[int, int, float]:
        """Open a root (below it no node asks the game): its legal moves from the GameGraph;
        a new tree's bounds of the values backed up start empty."""
        self.bounds[:] = (math.inf, -math.inf)
        first, count, value = super()._expand(index)
        self.n_edges = first + count
        return first, count, value

    def _flush(self, batch: list[int]) -> None:
        """The root's initial inference."""
        self._apply_answer(batch, *self.model.initial(self._inputs(batch))())

    # ----- the model ----------------------------------------------------------------------------
    def _ask(self, batch, submit):
        """The recurrent inference of the new nodes `batch`, sent now: their parents' hidden
        states and the action ids of their edges (`submit` or not, the model's calls send
        now and answer when called)."""
        assert self.hidden is not None  # the root's answer came first
        parents = self.ni[PARENT, batch]
        actions = self.ei[ACTION, self.ni[PARENT_EDGE, batch]]
        return self.model.recurrent(self.hidden[parents], actions)

    def _apply_answer(self, batch, probs, values, rewards=None, hidden=None) -> None:
        """The model's answer for the nodes `batch`: the initial inference's for a root (no
        rewards; priors over its legal moves), the recurrent inference's for hidden states."""
        batch = np.asarray(batch, np.int64)
        self.evaluations += len(batch)
        probs, values = np.asarray(probs), np.asarray(values)
        if rewards is None:
            self.kernels.apply_batch(self.nf, self.ni, self.ef, self.ei, batch, probs, values)
        else:
            self.kernels.latent_apply(
                self.nf, self.ni, self.ef, batch, probs, values, np.asarray(rewards)
            )
        self._keep_hidden(batch, np.asarray(hidden))
