"""MuZero's latent search on the compiled core (`selfplay.search_core` "auto" or "compiled"):
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
callable that gives (probs, values, rewards or None, hidden): `LatentEvaluator` and
`UniformLatentEvaluator` do.  Batches are pipelined where the evaluator has `submit`, as in the
Python search.

May import: what `gamegym.search` may; numba only through gamegym.search._arena_kernels.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from typing import Protocol

import numpy as np

from gamegym.game.graph import GameGraph
from gamegym.nets.inference import StaleIteration
from gamegym.search.arena import ArenaNode, ArenaSearch, core_for
from gamegym.search.arena_layout import (
    ACTION,
    COUNT,
    FIRST,
    NEW,
    PARENT,
    PARENT_EDGE,
    PENDING,
    STATE,
    TERMINAL,
    VALUE,
)
from gamegym.search.latent import RESTARTS, LatentSearch, require_alternating
from gamegym.search.tree import SearchParams

__all__ = ["LatentArenaSearch", "LatentModel", "make_latent_search"]


class LatentModel(Protocol):
    """What the compiled latent search asks of its evaluator: each call sends now and returns
    the answer (probs [B, A], values [B], rewards [B] or None, hidden [B, ...]) when called."""

    def initial(self, vertices: list) -> Callable[[], tuple]: ...

    def recurrent(self, hidden: np.ndarray, actions: np.ndarray) -> Callable[[], tuple]: ...


def make_latent_search(graph: GameGraph, evaluate, params: SearchParams):
    """MuZero's latent search over `graph` on the core `params.core` asks for
    (`gamegym.search.arena.core_for`): a `LatentArenaSearch` or the Python `LatentSearch`."""
    if core_for(params) == "compiled":
        return LatentArenaSearch(graph, evaluate, params)
    return LatentSearch(graph, evaluate, params)


def _latent_kernels():
    from gamegym.search import _arena_kernels as k

    return k.latent_gather, k.latent_backup_all, k.latent_apply, k.apply_batch


class LatentArenaSearch(ArenaSearch):
    """The PUCT latent search of `LatentSearch` on the compiled core; one instance per
    Selfplayer, reused across moves and games.  Every root starts a new tree (the hidden
    states below an old root are the model's, not the game's)."""

    def __init__(self, graph: GameGraph, evaluate: LatentModel, params: SearchParams):
        require_alternating(graph)
        super().__init__(graph, evaluate, params)  # type: ignore[arg-type]  # a LatentModel
        self.model = evaluate
        self._lgather, self._lbackup_all, self._lapply, self._apply_root = _latent_kernels()
        self.action_count = graph.action_space_size
        self.restarts = 0
        self.bounds = np.array([math.inf, -math.inf])  # of the values backed up in this tree
        self.hidden: np.ndarray | None = None  # [nodes, ...] once the first answer came
        self.n_edges = 0

    # ----- the tree --------------------------------------------------------------------------
    def new_root(self, vertex: Hashable) -> ArenaNode:
        self._clear_edges()
        return super().new_root(vertex)

    def next_root(self, root: ArenaNode, index: int) -> ArenaNode:
        """A new tree at the position played: each move is searched from its real
        observation."""
        self._check(root)
        return self.new_root(self.edge_vertices[int(self.ni[FIRST, root.index]) + index])

    def _clear_edges(self) -> None:
        """Zero every edge of the tree (the root's and the hidden states'), whose statistics
        and child links the next tree's root edges start from."""
        used = max(self.n_edges, len(self.edge_vertices))
        self.ef[:, :used] = 0.0
        self.ei[:, :used] = -1
        self.n_edges = 0

    def _restart(self, root: ArenaNode) -> None:
        """Forget the search below `root` (node 0 of its tree), which stays the caller's and is
        opened and evaluated again, its noise-free priors forgotten too."""
        self._clear_edges()
        vertex = self.vertices[root.index]
        self.vertices.clear()
        self.actions.clear()
        self.edge_vertices.clear()
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
                return self._run(root, rng, searchcount, explore)
            except StaleIteration:
                if attempt == RESTARTS:
                    raise
                self._restart(root)
                self.restarts += 1
        raise AssertionError("unreachable")

    def _run(self, root: ArenaNode, rng, searchcount: int | None, explore: bool) -> ArenaNode:
        count = self.params.searchcount if searchcount is None else searchcount
        if root.state == NEW:
            self.bounds[:] = (math.inf, -math.inf)
            first, edges, value = self._expand(root.index)
            self.n_edges = first + edges
            if edges:
                self.ni[[FIRST, COUNT, STATE], root.index] = (first, edges, PENDING)
                self._answer_roots([root.index], self.model.initial([root.vertex])())
            else:
                self.ni[STATE, root.index] = TERMINAL
                self.nf[VALUE, root.index] = value
        if root.state == TERMINAL:
            return root
        self.rule.begin(self, root, rng, count, explore)  # type: ignore[arg-type]
        slots = min(self.params.threads, count)
        vl = self.params.virtualloss if slots > 1 else 0.0
        self._collect(root.index, slots, count, vl)
        return root

    # ----- the searches ----------------------------------------------------------------------
    def _collect(self, root: int, slots: int, remaining: int, vl: float) -> None:
        """Gather up to `slots` waiting searches in one kernel call, evaluate their new nodes
        as one recurrent batch, back them up; with a submitting evaluator the next batch is
        gathered while one is in flight."""
        pipelined = slots > 1 and hasattr(self.evaluate, "submit")
        c = float(self.params.exploration_const)
        gather, backup_all = self._lgather, self._lbackup_all
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
            answer = self._send(batch) if n_batch else None
            if not pipelined:
                if answer is not None:
                    self._answer_hidden(batch, answer())
                backup_all(self.nf, self.ni, self.ef, root, waiting, n_waiting, vl, self.bounds)
                self.searches_done += n_waiting
                continue
            if in_flight is not None:
                self._complete(root, vl, *in_flight)
            in_flight = (batch, waiting, n_waiting, answer) if n_batch or n_waiting else None

    def _send(self, batch: np.ndarray):
        """The recurrent inference of the new nodes `batch`, sent now: their parents' hidden
        states and the action ids of their edges."""
        assert self.hidden is not None  # the root's answer came first
        parents = self.ni[PARENT, batch]
        actions = self.ei[ACTION, self.ni[PARENT_EDGE, batch]]
        return self.model.recurrent(self.hidden[parents], actions)

    def _complete(self, root: int, vl: float, batch, waiting, n_waiting, answer) -> None:
        if answer is not None:
            self._answer_hidden(batch, answer())
        self._lbackup_all(self.nf, self.ni, self.ef, root, waiting, n_waiting, vl, self.bounds)
        self.searches_done += n_waiting

    def _answer_roots(self, roots: list[int], answer: tuple) -> None:
        probs, values, _, hidden = answer
        batch = np.asarray(roots, np.int64)
        self.evaluations += len(roots)
        self._apply_root(
            self.nf, self.ni, self.ef, self.ei, batch, np.asarray(probs), np.asarray(values)
        )
        self._keep_hidden(batch, np.asarray(hidden))

    def _answer_hidden(self, batch: np.ndarray, answer: tuple) -> None:
        probs, values, rewards, hidden = answer
        self.evaluations += len(batch)
        self._lapply(
            self.nf,
            self.ni,
            self.ef,
            batch,
            np.asarray(probs),
            np.asarray(values),
            np.asarray(rewards),
        )
        self._keep_hidden(batch, np.asarray(hidden))
