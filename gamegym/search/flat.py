"""The compiled search core (`selfplay.search.core`: "auto", the default, where numba is
installed, or "compiled"): the tree core of `gamegym.search.core` with the PUCT or the Gumbel
rule, with the tree in flat arrays and its hot loops compiled by numba.

What is compiled: the one walk with the rules' selection functions (and PUCT's forced playouts
at the root, gamegym.search.forced) and virtual loss, the one backup, the loop that gathers a
round's leaves, and writing an evaluated batch's priors (gamegym.search._flat_kernels).  What
stays Python: the GameGraph (`children_at`, `actions_at`, `score_at` of each new leaf), the
evaluator, the root's noise, Gumbel's sequential halving, the policy target (pruned of the
forced playouts where they were on) and the move.  The searches run in the same order, with
the same float64 arithmetic and the same tie-breaking as the Python core, so from the same
root, evaluator and random generator both cores visit the same leaves and play the same games;
the Python core is the reference the tests hold this one to.

The tree lives in flat arrays, one set per search: node `i` has a state, a value, a visit total,
its first edge and edge count, its parent edge and parent node; edge `e` has a prior, visits, a
value sum, its child node (-1 until made) and its action id.  A node is made when a walk first
takes its edge.  `new_root` starts a new tree (the nodes of the old one are then invalid);
`next_root` keeps the played child's subtree where the rule does, as the Python core does.

Under the Gumbel rule each simulation's root child comes from the rule's sequential halving in
Python (`GumbelRule.root_child`), and the walk below it, by the deterministic non-root rule, is
compiled.  The MCTS-solver uses the Python core (gamegym.search.cores picks the core).  MuZero's latent search
runs on the same flat tree, walk and backup (gamegym.search.latent_flat).  numba is an
optional dependency (`pip install 'gamegym[fast]'`); without it `gamegym.search.cores` falls
back to the Python core where the config says "auto" and names the missing package where it
says "compiled".

May import: what `gamegym.search` may; numba only through gamegym.search._flat_kernels, which it
imports when it makes its first compiled search.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, cast

import numpy as np
from numpy.random import Generator

from gamegym.game.graph import SCORE_RANGE, GameGraph
from gamegym.search.core import restarting
from gamegym.search.flat_layout import (
    ACTION,
    CHILD,
    COUNT,
    FIRST,
    FORCED,
    GUMBEL,
    NEW,
    PARENT_EDGE,
    PENDING,
    PRIOR,
    PUCT,
    PUCT_NORMALISED,
    STATE,
    TERMINAL,
    TOTAL,
    VALUE,
    VALUES,
    VISITS,
)
from gamegym.search.gumbel import _TINY
from gamegym.search.gumbel import DEFAULT as GUMBEL_DEFAULTS
from gamegym.search.rules import search_rule
from gamegym.search.tree import Evaluator, SearchParams

__all__ = ["FlatSearch", "FlatNode"]


# ----- the compiled kernels ----------------------------------------------------------------------
def _kernels():
    """The numba-compiled kernels (compiled, or loaded from numba's cache, on first use)."""
    from gamegym.search import _flat_kernels as k

    return k


# ----- the search -----------------------------------------------------------------------------
class FlatNode:
    """A view of one node of a `FlatSearch`'s tree with the attributes of `Node` that the
    PUCT rule, self-play and the players read (its statistics are read from the arrays)."""

    __slots__ = ("search", "index", "generation", "raw_priors")

    proven = None  # the compiled core proves nothing (no MCTS-solver)
    solved = 0

    def __init__(self, search: FlatSearch, index: int):
        self.search = search
        self.index = index
        self.generation = search.generation
        self.raw_priors: list[float] | None = None  # priors before root noise

    def _edges(self) -> slice:
        ni = self.search.ni
        first = int(ni[FIRST, self.index])
        return slice(first, first + int(ni[COUNT, self.index]))

    @property
    def vertex(self) -> Hashable:
        return self.search.vertices[self.index]

    @property
    def state(self) -> int:
        return int(self.search.ni[STATE, self.index])

    @property
    def value(self) -> float:
        return float(self.search.nf[VALUE, self.index])

    @property
    def total(self) -> float:
        return float(self.search.nf[TOTAL, self.index])

    @property
    def actions(self) -> tuple:
        return self.search.actions[self.index]

    @property
    def child_vertices(self) -> tuple:
        s = self._edges()
        return tuple(self.search.edge_vertices[s])

    @property
    def visits(self) -> list[float]:
        return self.search.ef[VISITS, self._edges()].tolist()

    @property
    def values(self) -> list[float]:
        return self.search.ef[VALUES, self._edges()].tolist()

    @property
    def priors(self) -> list[float]:
        return self.search.ef[PRIOR, self._edges()].tolist()

    @priors.setter
    def priors(self, priors: list[float]) -> None:
        self.search.ef[PRIOR, self._edges()] = priors

    @property
    def children(self) -> list[FlatNode | None]:
        search = self.search
        return [
            None if child < 0 else FlatNode(search, int(child))
            for child in search.ei[CHILD, self._edges()]
        ]

    def mean_value(self) -> float:
        """Search value of this node from its mover's view."""
        total = self.total
        return sum(self.values) / total if total else self.value

    def proven_best(self) -> None:
        """Nothing is proven in the compiled core (see `Node.proven_best`)."""
        return None


class FlatSearch:
    """The tree core of `gamegym.search.core` (one driver thread, batches to the evaluator,
    the next batch selected while one is in flight where the evaluator can `submit`) on flat
    arrays with compiled kernels: AlphaZero's step, the GameGraph; one instance per
    Selfplayer, reused across moves and games."""

    core = "compiled"  # selfplay.search.core
    restarts_allowed = 0  # searches started again from the root on a StaleIteration
    normalise_q = False  # PUCT maps Q to [0, 1] by the values backed up (MuZero's step)
    hidden_actions = 0  # a new node's edges opened in the kernel (MuZero's: every action id)

    def __init__(self, graph: GameGraph, evaluate: Evaluator, params: SearchParams):
        self.graph = graph
        self.evaluate = evaluate
        self.params = params
        self.rule = search_rule(params.rule)(params)
        self.kernels = _kernels()
        # the selection functions of the walk (gamegym.search.flat_layout) and their constants
        self.rooted = hasattr(self.rule, "root_child")  # the root child from Python (Gumbel)
        normalised = PUCT_NORMALISED if self.normalise_q else PUCT
        self.selection = GUMBEL if self.rooted else normalised
        self.knobs = np.array(
            [
                params.exploration_const,
                params.gumbel_value_scale,
                params.gumbel_maxvisit_init,
                GUMBEL_DEFAULTS.epsilon,
                1.0 if params.gumbel_rescale == "score" else 0.0,
                *SCORE_RANGE,
                _TINY,
                0.0,  # FORCED: set by each search the rule begins (`_run`)
            ],
            np.float64,
        )
        # the smallest and largest value backed up (MuZero's PUCT maps Q by them)
        self.bounds = np.array([np.inf, -np.inf])
        self.searches_done = 0
        self.evaluations = 0
        self.restarts = 0
        self.generation = 0
        self.n_edges = 0  # edges the kernels opened (MuZero's hidden states'), after the root's
        self.nf = np.zeros((3, 0), np.float64)
        self.ni = np.zeros((5, 0), np.int64)
        self.ef = np.zeros((3, 0), np.float64)
        self.ei = np.zeros((2, 0), np.int64)
        self.vertices: list = []  # per node
        self.actions: list = []  # per node: its children's action ids (a tuple once opened)
        self.edge_vertices: list = []  # per edge: the child's vertex
        self._grow_nodes(1024)
        self._grow_edges(8192)

    @property
    def low(self) -> float:
        """The smallest value backed up (`TreeCore.low`: the rules read it by this name)."""
        return float(self.bounds[0])

    @property
    def high(self) -> float:
        """The largest value backed up (`TreeCore.high`)."""
        return float(self.bounds[1])

    # ----- the flat tree -------------------------------------------------------------------------
    def _grow_nodes(self, need: int) -> None:
        size = max(need, 2 * self.nf.shape[1])
        nf, ni = np.zeros((3, size), np.float64), np.zeros((5, size), np.int64)
        nf[:, : self.nf.shape[1]] = self.nf
        ni[:, : self.ni.shape[1]] = self.ni
        self.nf, self.ni = nf, ni

    def _grow_edges(self, need: int) -> None:
        size = max(need, 2 * self.ef.shape[1])
        ef, ei = np.zeros((3, size), np.float64), np.full((2, size), -1, np.int64)
        ef[:, : self.ef.shape[1]] = self.ef
        ei[:, : self.ei.shape[1]] = self.ei
        self.ef, self.ei = ef, ei

    def _node(self, vertex: Hashable) -> int:
        """A new node (state NEW) of `vertex` with no parent, made in Python."""
        index = len(self.vertices)
        if index >= self.nf.shape[1]:
            self._grow_nodes(index + 1)
        self.ni[:, index] = (NEW, 0, 0, -1, -1)
        self.nf[:, index] = 0.0
        self.vertices.append(vertex)
        self.actions.append(())
        return index

    def _expand(self, index: int) -> tuple[int, int, float]:
        """Read the children of node `index` (just made) from the GameGraph into new edges:
        (first edge, edge count, 0.0), or (0, 0, its final score) where the game is over."""
        graph = self.graph
        vertex = self.vertices[index]
        children = graph.children_at(vertex)
        if not children:
            return 0, 0, float(graph.score_at(vertex))
        first, count = len(self.edge_vertices), len(children)
        if first + count > self.ef.shape[1]:
            self._grow_edges(first + count)
        moves = graph.actions_at(vertex)
        self.ei[ACTION, first : first + count] = moves
        self.edge_vertices.extend(children)
        self.actions[index] = moves
        return first, count, 0.0

    # ----- public ----------------------------------------------------------------------------
    def new_root(self, vertex: Hashable) -> FlatNode:
        """The root of a new tree from `vertex`; the nodes of the previous tree are given up."""
        self._clear()
        self.generation += 1
        return FlatNode(self, self._node(vertex))

    def _edges_used(self) -> int:
        """How many edges from the first the tree has made: those with a child vertex (read
        from the GameGraph) and those the kernels opened after them (MuZero's)."""
        return max(self.n_edges, len(self.edge_vertices))

    def _clear(self) -> None:
        """Forget every node and zero every edge the tree used, whose statistics and child
        links the next tree's edges start from."""
        used = self._edges_used()
        self.ef[:, :used] = 0.0
        self.ei[:, :used] = -1
        self.vertices.clear()
        self.actions.clear()
        self.edge_vertices.clear()
        self.n_edges = 0

    def next_root(self, root: FlatNode, index: int) -> FlatNode:
        """The root of the next move after child `index` of `root` is played: the searched
        child with its subtree (a new tree when the search never made it)."""
        self._check(root)
        edge = int(self.ni[FIRST, root.index]) + index
        child = int(self.ei[CHILD, edge])
        if child < 0 or not self.rule.keeps_subtree:
            return self.new_root(self.edge_vertices[edge])
        return FlatNode(self, child)

    def policy_target(self, root: FlatNode) -> np.ndarray:
        """float32 [action_space_size]: the visit counts of the searched root, normalised."""
        return self.rule.policy(root, self.graph.action_space_size)  # type: ignore[arg-type]

    def choose(self, root: FlatNode, temperature: float, rng: np.random.Generator) -> int:
        """The child index to play: visits^(1/temperature), the most visited at 0."""
        return self.rule.choose(root, temperature, rng)  # type: ignore[arg-type]

    def run(
        self, root: FlatNode, rng: Generator, searchcount: int | None = None, explore: bool = True
    ) -> FlatNode:
        """Run `searchcount` searches from `root` (see `gamegym.search.core.TreeCore.run`)."""
        self._check(root)
        return restarting(self, self._run, root, rng, searchcount, explore)

    def _restart(self, root: FlatNode) -> None:
        """Forget the tree below `root` before a search starts again (`restarting`)."""
        raise NotImplementedError

    def _run(
        self, root: FlatNode, rng: np.random.Generator, searchcount: int | None, explore: bool
    ) -> FlatNode:
        count = self.params.searchcount if searchcount is None else searchcount
        if root.state == NEW:
            first, edges, value = self._expand(root.index)
            if edges:
                self.ni[[FIRST, COUNT, STATE], root.index] = (first, edges, PENDING)
                self._flush([root.index])
            else:
                self.ni[STATE, root.index] = TERMINAL
                self.nf[VALUE, root.index] = value
        if root.state == TERMINAL:
            return root
        self.rule.begin(self, root, rng, count, explore)  # type: ignore[arg-type]
        self.knobs[FORCED] = self.rule.forcing  # k of this search's forced playouts, or 0
        slots = min(self.params.threads, count)
        vl = self.params.virtualloss if slots > 1 else 0.0
        if self.rooted:
            self._collect_rooted(root, slots, count, vl)
        else:
            self._collect(root.index, slots, count, vl)
        return root

    def _check(self, root: FlatNode) -> None:
        if root.search is not self or root.generation != self.generation:
            raise ValueError(
                "this root is not in the search's current tree (new_root started another)"
            )

    # ----- the searches ----------------------------------------------------------------------
    def _reserve(self, nodes: int, edges: int) -> None:
        if nodes > self.nf.shape[1]:
            self._grow_nodes(nodes)
        if edges > self.ef.shape[1]:
            self._grow_edges(edges)

    def _collect(self, root: int, slots: int, remaining: int, vl: float) -> None:
        """`TreeCore._collect` on the flat tree: gather up to `slots` waiting searches in the
        kernel (opening, for AlphaZero, the new nodes it hands back through the GameGraph),
        evaluate their new nodes as one batch, back them up; with a submitting evaluator the
        next batch is gathered while one is in flight."""
        submit = getattr(self.evaluate, "submit", None) if slots > 1 else None
        gather, hidden_actions = self.kernels.gather, self.hidden_actions
        rule, knobs = self.selection, self.knobs
        vertices, actions, edge_vertices = self.vertices, self.actions, self.edge_vertices
        in_flight = None  # (batch, waiting, n_waiting, answer) sent and not yet backed up
        while remaining > 0 or in_flight is not None:
            waiting = np.empty(slots, np.int64)
            batch = np.empty(slots, np.int64)  # the new nodes that wait for the evaluator
            n_waiting = n_batch = 0
            opened, first, count, value = -1, 0, 0, 0.0  # the node opened last, for gather
            while True:
                nodes = len(vertices)
                self._reserve(nodes + slots, self.n_edges + slots * hidden_actions)
                leaf, nodes, self.n_edges, remaining, n_waiting, n_batch, done = gather(
                    self.nf, self.ni, self.ef, self.ei, nodes, self.n_edges, root, vl, rule,
                    knobs, slots, remaining, waiting, n_waiting, batch, n_batch,
                    hidden_actions, opened, first, count, value, self.bounds,
                )  # fmt: skip
                self.searches_done += done
                grown = nodes - len(vertices)  # opened in the kernel: hidden states
                vertices.extend([None] * grown)
                actions.extend([()] * grown)
                if leaf < 0:
                    break
                vertices.append(edge_vertices[self.ni[PARENT_EDGE, leaf]])
                actions.append(())
                opened = leaf
                first, count, value = self._expand(leaf)
            in_flight = self._round(
                root, vl, submit, in_flight, batch[:n_batch], waiting, n_waiting
            )

    def _collect_rooted(self, root_node: FlatNode, slots: int, remaining: int, vl: float) -> None:
        """`_collect` for a rule that picks each simulation's root child itself (Gumbel's
        sequential halving, in Python): one compiled walk per simulation below that child; a
        round also ends where the rule waits for the simulations in flight."""
        submit = getattr(self.evaluate, "submit", None) if slots > 1 else None
        root = root_node.index
        rule = cast(Any, self.rule)  # a rule with root_child (see run)
        walk, backup = self.kernels.walk, self.kernels.backup
        vertices, actions = self.vertices, self.actions
        in_flight = None  # (batch, waiting, n_waiting, answer) sent and not yet backed up
        while remaining > 0 or in_flight is not None:
            waiting = np.empty(slots, np.int64)
            n_waiting = 0
            batch: list[int] = []
            held = False
            while n_waiting < slots and remaining > 0:
                index = rule.root_child(self, root_node)
                if index is None:
                    held = True
                    break
                nodes = len(vertices)
                self._reserve(nodes + 1, 0)
                ni, nf = self.ni, self.nf
                leaf = walk(
                    nf, ni, self.ef, self.ei, nodes, root, index, vl, self.selection,
                    self.knobs, self.bounds,
                )  # fmt: skip
                remaining -= 1
                if leaf == nodes:  # made by this walk: open it
                    vertices.append(self.edge_vertices[ni[PARENT_EDGE, leaf]])
                    actions.append(())
                    first, count, value = self._expand(leaf)
                    if count:
                        ni[FIRST, leaf], ni[COUNT, leaf], ni[STATE, leaf] = first, count, PENDING
                        batch.append(leaf)
                    else:
                        ni[STATE, leaf] = TERMINAL
                        nf[VALUE, leaf] = value
                if ni[STATE, leaf] == PENDING:
                    waiting[n_waiting] = leaf
                    n_waiting += 1
                else:
                    backup(nf, ni, self.ef, root, leaf, nf[VALUE, leaf], vl, self.bounds)
                    self.searches_done += 1
            if held and not n_waiting and in_flight is None:
                raise RuntimeError("the search rule waits for searches in flight, but none is")
            in_flight = self._round(root, vl, submit, in_flight, batch, waiting, n_waiting)

    def _ask(self, batch, submit):
        """The evaluator's answer for the new nodes `batch`: sent now (`submit`), or asked
        now where the evaluator cannot answer later; either way a callable that gives it."""
        inputs = self._inputs(batch)
        if submit is not None:
            return submit(inputs)
        answer = self.evaluate(inputs)
        return lambda: answer

    def _round(self, root: int, vl: float, submit, in_flight, batch, waiting, n_waiting):
        """End a round of searches, whose new nodes `batch` are asked of the evaluator here:
        backed up now, or, with a `submit`ting evaluator, the round in flight is backed up and
        this one takes its place (returned)."""
        sent = (batch, waiting, n_waiting, self._ask(batch, submit) if len(batch) else None)
        if submit is None:
            self._complete(root, vl, *sent)
            return None
        if in_flight is not None:
            self._complete(root, vl, *in_flight)
        return sent if len(batch) or n_waiting else None

    def _complete(self, root: int, vl: float, batch, waiting, n_waiting, answer) -> None:
        if answer is not None:
            self._apply_answer(batch, *answer())
        self.kernels.backup_all(
            self.nf, self.ni, self.ef, root, waiting, n_waiting, vl, self.bounds
        )
        self.searches_done += n_waiting

    def _inputs(self, batch: list[int]) -> list:
        vertices = self.vertices
        return [vertices[i] for i in batch]

    def _flush(self, batch: list[int]) -> None:
        self._apply_answer(batch, *self.evaluate(self._inputs(batch)))

    def _apply_answer(self, batch: list[int], probs, values) -> None:
        self.evaluations += len(batch)
        self.kernels.apply_batch(
            self.nf,
            self.ni,
            self.ef,
            self.ei,
            np.asarray(batch, np.int64),
            np.asarray(probs),
            np.asarray(values),
        )
