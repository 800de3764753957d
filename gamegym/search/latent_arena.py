"""MuZero's latent search on the compiled core (`selfplay.search.core` "auto" or "compiled"):
`gamegym.search.latent.LatentSearch` with the tree in the arena of `gamegym.search.arena` and
its hot loops compiled by numba.

Below the root every node is a hidden state expanded over every action id, so a walk that makes
a new node opens it inside the compiled kernel without coming back to Python: one kernel call
gathers a whole batch.  Python keeps the root (its legal moves from the GameGraph, its initial
inference, the rule's noise, the policy target and the move) and the model calls: each batch of
new nodes goes to the evaluator as one array of their parents' hidden states and one of action
ids, and the hidden states it answers are kept in one array indexed by node.

The searches run in the Python latent search's order with its float64 arithmetic and
tie-breaking, so from the same root, model answers and random generator both play the same
games (tests/search/test_compiled_core.py); restarts after a StaleIteration are the same too.

The evaluator answers `initial(vertices)` and `recurrent(hidden, actions)`, each returning a
callable that gives (probs, values, rewards or None, hidden): `NetworkLatentValuer` and
`UniformLatentValuer` do.  Batches are pipelined where the evaluator has `submit`, as in the
Python search.

May import: what `gamegym.search` may; numba only through gamegym.search._arena_kernels.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

import numpy as np

from gamegym.game.graph import GameGraph
from gamegym.nets.inference import StaleIteration
from gamegym.search.arena import ArenaNode, ArenaSearch, core_for
from gamegym.search.arena_layout import (
    ACTION,
    FIRST,
    PARENT,
    PARENT_EDGE,
)
from gamegym.search.latent import RESTARTS, LatentSearch, require_alternating
from gamegym.search.rules import search_rule
from gamegym.search.tree import SearchParams

__all__ = ["LatentArenaSearch", "LatentModel", "make_latent_search"]


class LatentModel(Protocol):
    """What the compiled latent search asks of its evaluator: each call sends now and returns
    the answer (probs [B, A], values [B], rewards [B] or None, hidden [B, ...]) when called."""

    def initial(self, vertices: list) -> Callable[[], tuple]: ...

    def recurrent(self, hidden: np.ndarray, actions: np.ndarray) -> Callable[[], tuple]: ...


def compiled_latent_runs(rule: str) -> bool:
    """Whether the compiled latent search runs the search rule `rule`: a rule that leaves the
    root's child to the walk (PUCT) does; one that picks it itself (Gumbel's sequential
    halving) runs on the Python latent search only."""
    return not hasattr(search_rule(rule), "root_child")


def make_latent_search(graph: GameGraph, evaluate, params: SearchParams):
    """MuZero's latent search over `graph` on the core `params.core` asks for
    (`gamegym.search.arena.core_for`): a `LatentArenaSearch` or the Python `LatentSearch`."""
    core = core_for(params)
    if core == "compiled" and not compiled_latent_runs(params.rule):
        if params.core == "compiled":
            raise ValueError(
                "selfplay.search.core 'compiled': the compiled core runs MuZero's latent "
                f"search with the 'puct' rule only, not {params.rule!r}: use search.core "
                "'auto' or 'python'"
            )
        core = "python"  # "auto": the Python latent search runs the Gumbel rule
    if core == "compiled":
        return LatentArenaSearch(graph, evaluate, params)
    return LatentSearch(graph, evaluate, params)


def _latent_kernels():
    from gamegym.search import _arena_kernels as k

    return k.latent_gather, k.latent_apply, k.apply_batch


class LatentArenaSearch(ArenaSearch):
    """The PUCT latent search of `LatentSearch` on the compiled core; one instance per
    Selfplayer, reused across moves and games.  Every root starts a new tree (the hidden
    states below an old root are the model's, not the game's)."""

    def __init__(self, graph: GameGraph, evaluate: LatentModel, params: SearchParams):
        require_alternating(graph)
        super().__init__(graph, evaluate, params)  # type: ignore[arg-type]  # a LatentModel
        self.model = evaluate
        self._lgather, self._lapply, self._apply_root = _latent_kernels()
        self.action_count = graph.action_space_size
        self.restarts = 0
        self.hidden: np.ndarray | None = None  # [nodes, ...] once the first answer came
        self.n_edges = 0

    # ----- the tree --------------------------------------------------------------------------
    def next_root(self, root: ArenaNode, index: int) -> ArenaNode:
        """A new tree at the position played: each move is searched from its real
        observation."""
        self._check(root)
        return self.new_root(self.edge_vertices[int(self.ni[FIRST, root.index]) + index])

    def _edges_used(self) -> int:
        """The root's edges (which have child vertices) and the hidden states' after them."""
        return max(self.n_edges, len(self.edge_vertices))

    def _clear(self) -> None:
        super()._clear()
        self.n_edges = 0

    def _restart(self, root: ArenaNode) -> None:
        """Forget the search below `root` (node 0 of its tree), which stays the caller's and is
        opened and evaluated again, its noise-free priors forgotten too."""
        vertex = self.vertices[root.index]
        self._clear()
        self._node(vertex)
        root.raw_priors = None

    def _reserve(self, nodes: int, edges: int) -> None:
        if nodes > self.nf.shape[1]:
            self._grow_nodes(nodes)
        if edges > self.ef.shape[1]:
            self._grow_edges(edges)

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

    # ----- public ----------------------------------------------------------------------------
    def run(
        self,
        root: ArenaNode,
        rng: np.random.Generator,
        searchcount: int | None = None,
        explore: bool = True,
    ) -> ArenaNode:
        """Run `searchcount` searches from `root` (see `LatentSearch.run`): started again from
        the root when the Predictor no longer holds the tree's model iteration."""
        self._check(root)
        for attempt in range(RESTARTS + 1):
            try:
                return super().run(root, rng, searchcount, explore)
            except StaleIteration:
                if attempt == RESTARTS:
                    raise
                self._restart(root)
                self.restarts += 1
        raise AssertionError("unreachable")

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

    # ----- the searches ----------------------------------------------------------------------
    def _collect(self, root: int, slots: int, remaining: int, vl: float) -> None:
        """Gather up to `slots` waiting searches in one kernel call, evaluate their new nodes
        as one recurrent batch, back them up; with a submitting evaluator the next batch is
        gathered while one is in flight."""
        submit = getattr(self.evaluate, "submit", None) if slots > 1 else None
        c = float(self.params.exploration_const)
        gather = self._lgather
        actions = self.action_count
        in_flight = None  # (batch, waiting, n_waiting, answer) sent and not yet backed up
        while remaining > 0 or in_flight is not None:
            nodes = len(self.vertices)
            self._reserve(nodes + slots, self.n_edges + slots * actions)
            waiting = np.empty(slots, np.int64)
            batch = np.empty(slots, np.int64)
            nodes, self.n_edges, remaining, n_waiting, n_batch, done = gather(
                self.nf, self.ni, self.ef, self.ei, nodes, self.n_edges, root, c, vl, slots,
                remaining, waiting, 0, batch, actions, self.bounds,
            )  # fmt: skip
            self.searches_done += done
            grown = nodes - len(self.vertices)
            self.vertices.extend([None] * grown)
            self.actions.extend([()] * grown)
            batch = batch[:n_batch]
            in_flight = self._round(root, vl, submit, in_flight, batch, waiting, n_waiting)

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
            self._apply_root(self.nf, self.ni, self.ef, self.ei, batch, probs, values)
        else:
            self._lapply(self.nf, self.ni, self.ef, batch, probs, values, np.asarray(rewards))
        self._keep_hidden(batch, np.asarray(hidden))
