"""The one tree search: one tree, one walk, one backup, one virtual-loss rule, one driver.

In the manner of mctx's `search()`: the walk takes a *root selection* and an *interior
selection* function (the rule's, `gamegym.search.rules`: PUCT at both, or Gumbel's sequential
halving at the root and its deterministic rule below), and the model enters through the *step*
a subclass provides: what a new node's children are (`_open`), what the evaluator is asked for
a batch of new nodes (`_inputs`) and how its answer fills them (`_apply`).  AlphaZero's step is
the GameGraph (`gamegym.search.mcts.Search`: the children are the legal moves, the reward of
every edge is 0, a terminal vertex has its final score); MuZero's is the dynamics network
(`gamegym.search.latent.LatentSearch`: a hidden state's children are every action id, each
edge has the reward the model predicts).  Every line below is shared by both.

A *search* is one simulation: walk a path from the root, evaluate its leaf, back the value up.
`SearchParams.threads` concurrent searches share one tree, driven by one thread: the walks of a
round go down under virtual loss, so they take different paths; their new leaves go to the
evaluator as ONE batch (one message to the Predictor); then all of them are backed up.  When
the evaluator can `submit` a batch and answer it later (the Predictor client), the next round
is walked while the last one is being evaluated.  With one concurrent search there is no
virtual loss and the search is exactly the sequential one (`reference_search` in the tests).
A root selection may hold a simulation back until those in flight are backed up (Gumbel's
sequential halving ranks the root's actions between phases): the round then ends early.

The backup: the value a parent sees of an edge is `reward + DISCOUNT * value below` with
DISCOUNT -1 (negamax: every node's statistics are from the view of the player to move there,
and the turn passes at every ply).  Where the step normalises Q (`normalise_q`: MuZero's), the
smallest and largest value backed up are kept (`low`, `high`; its PUCT maps Q to [0, 1] by
them); where its edges carry rewards (`edge_rewards`: MuZero's), they are added.  Virtual loss
`vl`: a walk adds `vl` visits of value -1 on each edge it takes; its backup takes them off as it
adds the real visit.

With `solver=True` (off by default) the search is also an MCTS-solver (Winands, Bjornsson and
Saito, 2008): terminal scores are exact, and a node is *proven* once one child is a proven loss
for the player to move there (so the node is a win) or all its children are proven (its value is
then the best of theirs).  Walks stop at proven nodes instead of evaluating below them, and the
search stops once the root is proven.  The rules keep the move and the policy target to the
proven-best moves, so the end of every game is played and labelled exactly.

The compiled core (`gamegym.search.flat`) runs the same walk, backup and virtual-loss rule on
flat arrays; this module is the reference it is tested against, move for move.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from typing import TypeVar

import numpy as np
from numpy.random import Generator

from gamegym.nets.inference import StaleIteration
from gamegym.search.rules import SearchRule, search_rule
from gamegym.search.tree import DISCOUNT, Evaluator, Node, SearchParams

__all__ = ["DISCOUNT", "TreeCore", "SearchPath", "restarting"]

EXPANDED, PENDING, TERMINAL, NEW = Node.EXPANDED, Node.PENDING, Node.TERMINAL, Node.NEW

SearchPath = list[tuple[Node, int]]  # (node, child index) from the root down
R = TypeVar("R")


def restarting(search, run: Callable[..., R], root, *args) -> R:
    """`run(root, *args)`; where the model no longer holds the iteration that made the tree
    (StaleIteration: two reloads at the Predictor during one search of MuZero's hidden
    states), the tree is forgotten (`search._restart(root)`) and the search started again
    from the root, at most `search.restarts_allowed` times (`search.restarts` counts them)."""
    for attempt in range(search.restarts_allowed + 1):
        try:
            return run(root, *args)
        except StaleIteration:
            if attempt == search.restarts_allowed:
                raise
            search._restart(root)
            search.restarts += 1
    raise AssertionError("unreachable")


class TreeCore:
    """Runs searches from a root node; one instance per Selfplayer (reused across moves).  A
    subclass is a step (see the module docstring): `new_root`, `next_root`, `_open`,
    `_make_child`, `_inputs` and `_apply` (and `_restart` where its model can go stale)."""

    core = "python"  # selfplay.search.core (gamegym.search.flat.FlatSearch: "compiled")
    normalise_q = False  # PUCT maps Q to [0, 1] by the values backed up (MuZero's step)
    edge_rewards = False  # the step's edges carry rewards (MuZero's); else every one is 0
    restarts_allowed = 0  # searches started again from the root on a StaleIteration
    # the step's `_apply(batch, *answer)`: the evaluator's answer (its own shape: AlphaZero's
    # probs and values, MuZero's also rewards and hidden states) written into the nodes of
    # `batch`: priors, value (and reward), state EXPANDED
    _apply: Callable[..., None]

    def __init__(
        self, graph, evaluate: Evaluator, params: SearchParams, rule: SearchRule | None = None
    ) -> None:
        if params.os_threads:
            raise ValueError(
                "selfplay.search.os_threads: the search has one driver thread (OS threads "
                "only added a context switch per search under CPython's GIL); set it to false "
                "and run more Selfplayer processes for parallelism"
            )
        self.graph = graph
        self.evaluate = evaluate
        self.params = params
        self.rule = search_rule(params.rule)(params) if rule is None else rule
        self._select_root, self._select = self.rule.selectors(self)
        self.searches_done = 0  # total searches run (for throughput figures)
        self.evaluations = 0  # leaves sent to the evaluator
        self.restarts = 0  # searches started again from the root (`restarting`)
        self.low, self.high = math.inf, -math.inf  # bounds of the values backed up
        self._tree: Node | None = None  # the root those bounds belong to
        self._queue: list[Node] = []  # opened leaves waiting to be sent to the evaluator
        self._virtualloss = 0.0
        self._remaining = 0

    # ----- the step (a subclass's) -------------------------------------------------------------
    def new_root(self, vertex: Hashable) -> Node:
        """A root node for a search from `vertex`."""
        raise NotImplementedError

    def next_root(self, root: Node, index: int) -> Node:
        """The root of the next move after child `index` of `root` is played."""
        raise NotImplementedError

    def _open(self, node: Node) -> None:
        """First visit of a node: its children, then PENDING in the queue (or TERMINAL)."""
        raise NotImplementedError

    def _make_child(self, node: Node, i: int) -> Node:
        """A new node for child `i` of `node`."""
        raise NotImplementedError

    def _inputs(self, batch: list[Node]) -> list:
        """What the evaluator is called with for a batch of new nodes."""
        raise NotImplementedError

    def _restart(self, root: Node) -> None:
        """Forget the tree below `root` before a search starts again (`restarting`)."""
        raise NotImplementedError

    # ----- public ---------------------------------------------------------------------------
    def policy_target(self, root: Node) -> np.ndarray:
        """float32 [action_space_size]: the searched root's policy target (the rule's)."""
        return self.rule.policy(root, self.graph.action_space_size)

    def choose(self, root: Node, temperature: float, rng: np.random.Generator) -> int:
        """The child index to play from the searched root (the rule's choice)."""
        return self.rule.choose(root, temperature, rng)

    def run(
        self, root: Node, rng: Generator, searchcount: int | None = None, explore: bool = True
    ) -> Node:
        """Run `searchcount` searches from `root` (expanded first, then begun by the rule:
        noised if configured; `explore=False` leaves the root noise out, for the fast searches
        of playout-cap randomization)."""
        return restarting(self, self._run, root, rng, searchcount, explore)

    def _run(
        self, root: Node, rng: np.random.Generator, searchcount: int | None, explore: bool
    ) -> Node:
        count = self.params.searchcount if searchcount is None else searchcount
        if root is not self._tree or root.state == NEW:
            self._tree, self.low, self.high = root, math.inf, -math.inf
        if root.state == NEW:
            self._open(root)
            batch, self._queue = self._queue, []
            if batch:
                self._flush(batch)
        if root.state == TERMINAL or root.proven is not None:
            return root
        self.rule.begin(self, root, rng, count, explore)
        self._remaining = count
        slots = min(self.params.threads, count)
        # virtual loss only matters between concurrent searches
        self._virtualloss = self.params.virtualloss if slots > 1 else 0.0
        self._collect(root, slots)
        return root

    # ----- the driver -----------------------------------------------------------------------
    def _collect(self, root: Node, slots: int) -> None:
        """Rounds of up to `slots` concurrent searches: walk to up to `slots` leaves under
        virtual loss, evaluate the new ones in one batch, back them all up; with a submitting
        evaluator the next round is walked while the last one is evaluated (the leaves in
        flight keep their virtual loss)."""
        submit = getattr(self.evaluate, "submit", None) if slots > 1 else None
        walk = self._walk
        in_flight = None  # (batch, waiting searches, answer) sent and not yet backed up
        while (self._remaining > 0 and root.proven is None) or in_flight is not None:
            waiting: list[tuple[SearchPath, Node]] = []
            held = False  # the root selection holds the next search until others are backed up
            while len(waiting) < slots and self._remaining > 0 and root.proven is None:
                path, leaf = walk(root)
                if path is None:
                    held = True
                    break
                self._remaining -= 1
                new = leaf.state == NEW
                if new:
                    self._open(leaf)
                if leaf.state == PENDING:
                    waiting.append((path, leaf))
                else:
                    self._backup_settled(path, leaf, new)
                    self.searches_done += 1
            batch, self._queue = self._queue, []
            if held and not waiting and in_flight is None:
                raise RuntimeError("the search rule waits for searches in flight, but none is")
            if submit is None:
                if batch:
                    self._flush(batch)
                self._back_up_all(waiting)
                continue
            answer = submit(self._inputs(batch)) if batch else None
            if in_flight is not None:
                self._complete(*in_flight)
            in_flight = (batch, waiting, answer) if batch or waiting else None

    def _complete(self, batch: list, waiting: list, answer) -> None:
        if answer is not None:
            self._apply(batch, *answer())
        self._back_up_all(waiting)

    def _back_up_all(self, waiting: list) -> None:
        for path, leaf in waiting:
            self._backup(path, leaf.value)
            self.searches_done += 1

    def _flush(self, batch: list[Node]) -> None:
        """Evaluate new nodes now."""
        self._apply(batch, *self.evaluate(self._inputs(batch)))

    # ----- the walk and the backup ----------------------------------------------------------
    def _walk(self, root: Node) -> tuple[SearchPath | None, Node]:
        """One walk from the (expanded) root: the root selection picks the first edge, the
        interior selection every next one, down to a node that is not expanded or is proven;
        virtual loss on every edge taken.  (None, root) while the root selection holds."""
        i = self._select_root(root)
        if i is None:
            return None, root
        vl = self._virtualloss
        select = self._select
        path: SearchPath = []
        node = root
        while True:
            if vl:
                node.visits[i] += vl
                node.values[i] -= vl
                node.total += vl
            path.append((node, i))
            child = node.children[i]
            if child is None:
                child = node.children[i] = self._make_child(node, i)
            node = child
            if node.state != EXPANDED or node.proven is not None:
                return path, node
            i = select(node)

    def _backup_settled(self, path: SearchPath, leaf: Node, new: bool) -> None:
        """Back up a leaf that needs no evaluation: terminal, or proven (its exact value)."""
        if leaf.proven is None:
            self._backup(path, leaf.value)
        else:
            self._backup(path, leaf.proven, proven=new)

    def _backup(self, path: SearchPath, value: float, proven: bool = False) -> None:
        """Back up a leaf value (the leaf mover's view): each parent sees the edge's reward
        plus DISCOUNT times the value below, and the walk's virtual loss is taken off.
        `proven`: the leaf has just been proven, so its parent may now be proven too."""
        vl = self._virtualloss
        bounds = self.normalise_q  # only a step whose PUCT normalises Q reads them
        rewards = self.edge_rewards
        low, high = self.low, self.high
        for node, i in reversed(path):
            value = node.children[i].reward + DISCOUNT * value if rewards else DISCOUNT * value
            if bounds:
                if value < low:
                    low = value
                if value > high:
                    high = value
            if vl:
                node.visits[i] += 1 - vl
                node.values[i] += value + vl
                node.total += 1 - vl
            else:
                node.visits[i] += 1
                node.values[i] += value
                node.total += 1
            if proven:
                proven = self._prove(node, i)
        self.low, self.high = low, high

    @staticmethod
    def _prove(node: Node, i: int) -> bool:
        """Child `i` of `node` has just been proven; True if that proves `node` as well."""
        node.solved += 1
        if node.proven is not None:
            return False
        if node.children[i].proven <= -1.0:
            node.proven = 1.0  # a move to a lost position for the opponent: a win
            return True
        if node.solved < len(node.children):
            return False
        node.proven = max(-child.proven for child in node.children)
        return True
