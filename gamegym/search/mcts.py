"""The tree search with virtual loss over a GameGraph (no TensorFlow here).

A *search* is one simulation: select a path (by the root rule, `SearchParams.rule`: PUCT or
Gumbel, see `gamegym.search.rules`), evaluate its leaf, back the value up.
`selfplay.search.threads` concurrent searches share one tree.  A search that reaches a new leaf
marks it pending and keeps virtual loss on its path, so the others take different paths; the
pending leaves of all concurrent searches go to the evaluator as ONE batch (one message to the
Predictor).  A search whose path ends at a leaf another search is evaluating waits for that
answer.

Two drivers run the same tree code:
- by default one thread drives all concurrent searches (select up to N leaves, one batch, back up);
- with `os_threads=True` N OS threads share the tree under one lock; the last thread to block
  sends the batch and the others wait on the tree's condition (never in a sleep loop).
Under CPython's GIL the threads cost a context switch per search and give no parallelism, so the
single driver is several times faster (see `gamegym bench` and the README).  With one concurrent
search both are exactly the sequential search (`reference_search` in the tests).  A rule may
hold a simulation back until those in flight are backed up (Gumbel's sequential halving
ranks the root's actions between phases): the single driver then sends its batch and backs it
up first, an OS thread waits on the tree's condition for a backup.

Values are negamax: every node's statistics are from the view of the player to move there.

A search over something other than the GameGraph's vertices (MuZero's, `gamegym.search.latent`)
subclasses `Search`: it overrides the tree operations (`_open`, `_select`, `_apply`, `_backup`),
what the evaluator is asked (`_inputs`) and the roots (`new_root`, `next_root`), and keeps the
drivers above, virtual loss and the root rules.

With `solver=True` (off by default) the search is also an MCTS-solver (Winands, Bjornsson and
Saito, 2008): terminal scores are exact, and a node is *proven* once one child is a proven loss
for the player to move there (so the node is a win) or all its children are proven (its value is
then the best of theirs).  Searches stop at proven nodes instead of evaluating below them,
never enter a child proven to lose while another is open, and stop altogether once the root is
proven.  The move choice and the policy target keep to the proven-best moves, and a proven root
reports its exact value, so the end of every game is played and labelled exactly.  Under the
Gumbel rule the proofs stop the walks and bound the move and the target the same way, but the
halving and the interior rule do not steer around proven losses.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Hashable

import numpy as np

from gamegym.game.graph import GameGraph
from gamegym.search.rules import SearchPath, choose_action, search_rule, visit_policy
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


class Search:
    """Runs searches from a root node; one instance per Selfplayer (reused across moves)."""

    core = "python"  # selfplay.search.core (gamegym.search.arena.ArenaSearch: "compiled")

    def __init__(self, graph: GameGraph, evaluate: Evaluator, params: SearchParams):
        self.graph = graph
        self.evaluate = evaluate
        self.params = params
        self.rule = search_rule(params.rule)(params)
        self._descend = self.rule.walker(self)  # root -> (path, leaf), or (None, root): wait
        self._cond = threading.Condition()
        self.searches_done = 0  # total searches run (for throughput figures)
        self.evaluations = 0  # leaves sent to the evaluator
        self._queue: list[Node] = []  # opened leaves waiting to be sent to the evaluator
        self._virtualloss = 0.0
        self._flushing = False

    # ----- public ---------------------------------------------------------------------------
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

    def policy_target(self, root: Node) -> np.ndarray:
        """float32 [action_space_size]: the searched root's policy target (the rule's)."""
        return self.rule.policy(root, self.graph.action_space_size)

    def choose(self, root: Node, temperature: float, rng: np.random.Generator) -> int:
        """The child index to play from the searched root (the rule's choice)."""
        return self.rule.choose(root, temperature, rng)

    def run(
        self,
        root: Node,
        rng: np.random.Generator,
        searchcount: int | None = None,
        explore: bool = True,
    ) -> Node:
        """Run `searchcount` searches from `root` (expanded first, then begun by the rule:
        noised if configured; `explore=False` leaves the root noise out, for the fast searches
        of playout-cap randomization)."""
        count = self.params.searchcount if searchcount is None else searchcount
        if root.state == Node.NEW:
            self._open(root)
            batch, self._queue = self._queue, []
            if batch:
                self._flush(batch)
        if root.state == Node.TERMINAL or root.proven is not None:
            return root
        self.rule.begin(self, root, rng, count, explore)
        self._remaining = count
        threads = min(self.params.threads, count)
        # virtual loss only matters between threads; one thread is the plain sequential search
        self._virtualloss = self.params.virtualloss if threads > 1 else 0.0
        self._active = threads
        self._blocked = 0
        self._halted = 0  # OS threads waiting for a backup before the rule goes on
        self._error: BaseException | None = None
        if not self.params.os_threads:
            self._collect(root, threads)
        elif threads == 1:
            self._worker(root)
        else:
            workers = [
                threading.Thread(target=self._worker, args=(root,), daemon=True)
                for _ in range(threads)
            ]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
        if self._error is not None:
            raise self._error
        return root

    # ----- the searches --------------------------------------------------------------------
    def _collect(self, root: Node, slots: int) -> None:
        """`slots` concurrent searches driven by this thread: select up to `slots` leaves under
        virtual loss, evaluate them in one batch, back them all up.  The same tree code as the
        OS threads, without their switching cost under the GIL (see `SearchParams.os_threads`).

        When the evaluator can `submit` a batch and answer it later (the Predictor client), the
        next batch is selected while the previous one is being evaluated, so the Selfplayer does
        not sit idle during the round trip; the leaves in flight keep their virtual loss.
        """
        submit = getattr(self.evaluate, "submit", None) if slots > 1 else None
        descend = self._descend
        in_flight = None  # (batch, waiting searches, answer) sent and not yet backed up
        while (self._remaining > 0 and root.proven is None) or in_flight is not None:
            waiting: list[tuple[SearchPath, Node]] = []
            held = False  # the rule holds the next search until the others are backed up
            while len(waiting) < slots and self._remaining > 0 and root.proven is None:
                path, leaf = descend(root)
                if path is None:
                    held = True
                    break
                self._remaining -= 1
                new = leaf.state == Node.NEW
                if new:
                    self._open(leaf)
                if leaf.state == Node.PENDING:
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

    def _worker(self, root: Node) -> None:
        cond = self._cond
        with cond:
            try:
                while self._remaining > 0 and self._error is None and root.proven is None:
                    path, leaf = self._descend(root)
                    if path is None:
                        self._wait_for_backup()
                        continue
                    self._remaining -= 1
                    new = leaf.state == Node.NEW
                    if new:
                        self._open(leaf)
                    if leaf.state == Node.PENDING:
                        self._wait_for(leaf)
                        self._backup(path, leaf.value)
                    else:
                        self._backup_settled(path, leaf, new)
                    self.searches_done += 1
                    if self._halted:
                        cond.notify_all()
            except BaseException as error:  # surfaced by run(); wake everyone
                self._error = error
                self._remaining = 0
                cond.notify_all()
            finally:
                self._active -= 1
                if self._active:
                    self._maybe_flush()

    def _wait_for(self, leaf: Node) -> None:
        """Block until `leaf` is evaluated; the last thread to block sends the batch."""
        self._blocked += 1
        try:
            self._maybe_flush()
            while leaf.state == Node.PENDING and self._error is None:
                self._cond.wait()
        finally:
            self._blocked -= 1
        if self._error is not None:
            raise self._error

    def _wait_for_backup(self) -> None:
        """Block until another thread backs a search up (the rule holds the next search until
        those in flight are backed up); counts as blocked, so the batch goes out."""
        done = self.searches_done
        self._blocked += 1
        self._halted += 1
        try:
            self._maybe_flush()
            while self.searches_done == done and self._error is None:
                self._cond.wait()
        finally:
            self._blocked -= 1
            self._halted -= 1
        if self._error is not None:
            raise self._error

    def _maybe_flush(self) -> None:
        """Send the queued leaves when every live thread is blocked (one batch in flight)."""
        if self._flushing:
            return  # the flushing thread looks at the queue again when its answer is in
        self._flushing = True
        try:
            while self._queue and self._blocked >= self._active and self._error is None:
                batch, self._queue = self._queue, []
                self._cond.release()
                try:
                    outputs = self.evaluate(self._inputs(batch))
                except BaseException as error:
                    self._cond.acquire()
                    self._error = error
                    self._cond.notify_all()
                    raise
                self._cond.acquire()
                self._apply(batch, *outputs)
                self._cond.notify_all()
        finally:
            self._flushing = False

    def _flush(self, batch: list[Node]) -> None:
        """Evaluate nodes directly (root expansion, outside the worker threads)."""
        self._apply(batch, *self.evaluate(self._inputs(batch)))

    def _inputs(self, batch: list[Node]) -> list:
        """What the evaluator is called with for a batch of leaves: their vertices."""
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

    # ----- tree operations (called with the lock held) --------------------------------------
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

    def _child(self, node: Node, i: int) -> Node:
        """Child `i` of `node`, made on first use."""
        child = node.children[i]
        if child is None:
            child = node.children[i] = Node(node.child_vertices[i])
        return child

    def _select(self, root: Node) -> tuple[list, Node]:
        """Walk down by PUCT, applying virtual loss; returns the path and the leaf."""
        c = self.params.exploration_const
        vl = self._virtualloss
        path: SearchPath = []
        node = root
        sqrt = math.sqrt
        while node.state == Node.EXPANDED:
            if node.proven is not None and path:
                break  # a proven node is a leaf with its exact value
            visits, values, priors = node.visits, node.values, node.priors
            scale = c * sqrt(node.total + 1)
            if node.solved:
                best = self._select_among_proven(node, scale)
            else:
                best, best_score, i = 0, -1e30, 0
                for n, w, p in zip(visits, values, priors):  # floats as Q + U
                    score = (w / n + scale * p / (1 + n)) if n else scale * p
                    if score > best_score:
                        best, best_score = i, score
                    i += 1  # noqa: SIM113 - faster than enumerate over zip here
            if vl:
                visits[best] += vl
                values[best] -= vl
                node.total += vl
            path.append((node, best))
            child = node.children[best]
            if child is None:
                child = node.children[best] = Node(node.child_vertices[best])
            node = child
        return path, node

    @staticmethod
    def _select_among_proven(node: Node, scale: float) -> int:
        """PUCT where some children are proven: their exact value replaces the mean, a proven
        win is taken at once, and a proven loss only when every child is one."""
        visits, values, priors, children = node.visits, node.values, node.priors, node.children
        best, best_score = 0, -1e30
        for i in range(len(priors)):
            n = visits[i]
            child = children[i]
            if child is not None and child.proven is not None:
                q = -child.proven
                if q >= 1.0:
                    return i
                if q <= -1.0:
                    continue
            else:
                q = values[i] / n if n else 0.0
            score = q + scale * priors[i] / (1 + n)
            if score > best_score:
                best, best_score = i, score
        return best

    def _backup_settled(self, path: list, leaf: Node, new: bool) -> None:
        """Back up a leaf that needs no evaluation: terminal, or proven (its exact value)."""
        if leaf.proven is None:
            self._backup(path, leaf.value)
        else:
            self._backup(path, leaf.proven, proven=new)

    def _backup(self, path: list, value: float, proven: bool = False) -> None:
        """Add the leaf value (leaf mover's view) along the path, removing virtual loss.
        `proven`: the leaf has just been proven, so its parent may now be proven too."""
        vl = self._virtualloss
        for node, i in reversed(path):
            value = -value
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
