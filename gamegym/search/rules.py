"""The root rules of the tree search (`selfplay.search.rule`), registered by name.

One tree core (`gamegym.search.mcts.Search`, and MuZero's `gamegym.search.latent.LatentSearch`
on it) runs every rule; a rule decides what differs between them:

  begin        how a move's search starts at the root (root noise, Gumbel-Top-k)
  walker       which child each simulation enters, at the root and below (a callable
               root -> (path, leaf), or (None, root) while the root must wait for the
               simulations in flight to be backed up)
  policy       the policy target of the searched root, float32 [action_space_size]
  choose       the move played (a root child index)
  keeps_subtree  whether the next move's search starts from the played child's subtree
  compiled     whether the compiled core (gamegym.search.arena) runs it: PUCT's walk is
               compiled whole; a rule with `root_child` (Gumbel) picks each simulation's root
               child in Python and the compiled core walks on below with Gumbel's rule

Rules:
- "puct" (AlphaZero): PUCT at every node, Dirichlet noise at the root, the visit counts as
  the policy target, the move ~ visits^(1/temperature); the played child's subtree is kept.
- "gumbel" (Danihelka et al., ICLR 2022; `gamegym.search.gumbel`): Gumbel-Top-k of the root's
  actions and sequential halving that spends exactly the move's simulations, the
  deterministic non-root rule, the policy target softmax(logits + sigma(completed q)), and
  the move argmax(g + logits + sigma(q)) of the survivors.  The temperature does nothing: the
  Gumbel noise already samples the move.  Root noise is off unless `dirichlet_fraction` is set
  (then it is mixed into the priors the Gumbel rule starts from).  Every move starts from a
  fresh root, as in mctx: the halving's budget, the considered actions and sigma's visit scale
  refer to this move's simulations only (the evaluation cache makes the re-expanded positions
  cheap).

The rules register in `gamegym.registry.SEARCHES` (this module is its provider): config
validation, the CLI and the benches ask it which names exist; a rule of your own registers the
same way (`@SEARCHES.register`, a class like these with a unique `name`).  This module imports
neither the tree nor the config.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from gamegym.registry import SEARCHES
from gamegym.search.gumbel import (
    GumbelParams,
    SequentialHalving,
    gumbel_scores,
    gumbel_top_k,
    improved_policy,
    interior_index,
    logits_from_priors,
    mean_values,
    to_action_space,
)

if TYPE_CHECKING:
    from gamegym.search.tree import Node, SearchParams

__all__ = [
    "search_rule",
    "SearchRule",
    "PuctRule",
    "GumbelRule",
    "visit_policy",
    "choose_action",
    "add_root_noise",
]


SearchPath = list[tuple["Node", int]]  # (node, child index) from the root down
# a search's walk: root -> (path, leaf), or (None, root) while the rule waits
Walk = Callable[["Node"], tuple[SearchPath | None, "Node"]]


class RuleSearch(Protocol):
    """What a rule uses of the tree search it steers (gamegym.search.mcts.Search)."""

    @property
    def searches_done(self) -> int: ...

    @property
    def _virtualloss(self) -> float: ...

    def _child(self, node: Node, i: int) -> Node: ...

    def _select(self, root: Node) -> tuple[list[Any], Node]: ...


def search_rule(name: str) -> type[SearchRule]:
    """The rule class registered as `name` (gamegym.registry.RegistryError naming the known
    ones otherwise)."""
    rule: type[SearchRule] = SEARCHES.get(name)
    return rule


class SearchRule:
    """What a root rule provides (see the module docstring); `params` is the search's
    `SearchParams`."""

    name = ""
    default_dirichlet_fraction = 0.0  # root noise when the config leaves it unset (None)
    keeps_subtree = True
    compiled = False  # the compiled core (gamegym.search.arena) runs this rule

    def __init__(self, params: SearchParams) -> None:
        self.params = params

    def begin(
        self,
        search: RuleSearch,
        root: Node,
        rng: np.random.Generator,
        count: int,
        explore: bool = True,
    ) -> None:
        raise NotImplementedError

    def walker(self, search: RuleSearch) -> Walk:
        raise NotImplementedError

    def policy(self, root: Node, size: int) -> NDArray[Any]:
        raise NotImplementedError

    def choose(self, root: Node, temperature: float, rng: np.random.Generator) -> int:
        raise NotImplementedError


def add_root_noise(root: Node, rng: np.random.Generator, alpha: float, fraction: float) -> None:
    """Mix Dirichlet(alpha) noise into the root's priors with weight `fraction` (the noise-free
    priors are kept in `raw_priors` and restored first, so a kept root is noised once)."""
    if root.raw_priors is not None:
        root.priors = root.raw_priors
        root.raw_priors = None
    if fraction <= 0 or len(root.priors) < 2:
        return
    noise = rng.dirichlet([alpha] * len(root.priors))
    root.raw_priors = root.priors
    root.priors = [(1 - fraction) * p + fraction * float(x) for p, x in zip(root.priors, noise)]


@SEARCHES.register
class PuctRule(SearchRule):
    """AlphaZero's rule: PUCT everywhere (the tree's own `_select`), Dirichlet noise at the
    root, visit counts as the target, visits^(1/T) as the move."""

    name = "puct"
    default_dirichlet_fraction = 0.25
    compiled = True

    def begin(
        self,
        search: RuleSearch,
        root: Node,
        rng: np.random.Generator,
        count: int,
        explore: bool = True,
    ) -> None:
        fraction = self.params.dirichlet_fraction if explore else 0.0
        add_root_noise(root, rng, self.params.dirichlet_alpha, fraction)

    def walker(self, search: RuleSearch) -> Walk:
        return search._select

    def policy(self, root: Node, size: int) -> NDArray[np.float32]:
        return visit_policy(root, size)

    def choose(self, root: Node, temperature: float, rng: np.random.Generator) -> int:
        return choose_action(root, temperature, rng)


@SEARCHES.register
class GumbelRule(SearchRule):
    """The Gumbel rule at the root, the deterministic rule below it (see the module)."""

    name = "gumbel"
    keeps_subtree = False
    compiled = True  # the root child from Python (`root_child`), the walk below compiled

    def __init__(self, params: SearchParams) -> None:
        super().__init__(params)
        self.gumbel_params = GumbelParams(
            max_considered=params.gumbel_considered,
            value_scale=params.gumbel_value_scale,
            maxvisit_init=params.gumbel_maxvisit_init,
            rescale=params.gumbel_rescale,
        )
        self._root: Node | None = None  # the root of the move being searched
        self.halving: SequentialHalving | None = None
        self.logits: NDArray[np.float64] | None = None  # [A] of the root
        self.gumbel: NDArray[np.float64] | None = None  # [A] of the root
        self._done = 0  # the search's searches_done when the move began

    def begin(
        self,
        search: RuleSearch,
        root: Node,
        rng: np.random.Generator,
        count: int,
        explore: bool = True,
    ) -> None:
        fraction = self.params.dirichlet_fraction if explore else 0.0
        add_root_noise(root, rng, self.params.dirichlet_alpha, fraction)
        self.logits = logits = logits_from_priors(root.priors)
        p = self.gumbel_params
        self.gumbel, considered = gumbel_top_k(logits, p.max_considered, rng, p.gumbel_scale)
        self.halving = SequentialHalving(considered.tolist(), count)
        self._root, self._done = root, search.searches_done

    def _drawn(self) -> tuple[NDArray[np.float64], NDArray[np.float64], SequentialHalving]:
        """The root's Gumbel noise, logits and halving; RuntimeError before `begin`."""
        if self.gumbel is None or self.logits is None or self.halving is None:
            raise RuntimeError("the Gumbel rule is asked about a root before begin()")
        return self.gumbel, self.logits, self.halving

    def scores(self, root: Node) -> NDArray[np.float64]:
        """float64 [A]: g + logits + sigma(completed q) of the root's children."""
        gumbel, logits, _ = self._drawn()
        visits = np.asarray(root.visits, np.float64)
        return gumbel_scores(
            gumbel, logits, root.value, mean_values(root.values, visits), visits, self.gumbel_params
        )

    def walker(self, search: RuleSearch) -> Walk:
        p = self.gumbel_params
        scale, init, epsilon, rescale = p.value_scale, p.maxvisit_init, p.epsilon, p.rescale

        def walk(root: Node) -> tuple[SearchPath | None, Node]:
            """The root child from the halving, then `interior_index` down to a leaf, with
            virtual loss on the path; (None, root) while a halving waits."""
            index = self.root_child(search, root)
            if index is None:
                return None, root
            vl = search._virtualloss
            child_of = search._child
            path: SearchPath = []
            node, i = root, index
            while True:
                if vl:
                    node.visits[i] += vl
                    node.values[i] -= vl
                    node.total += vl
                path.append((node, i))
                node = child_of(node, i)
                if node.state != node.EXPANDED or node.proven is not None:
                    return path, node
                i = interior_index(
                    node.priors, node.value, node.values, node.visits, scale, init, epsilon, rescale
                )

        return walk

    def root_child(self, search: RuleSearch, root: Node) -> int | None:
        """The root child the next simulation enters (the halving's), or None while a
        halving waits for the simulations in flight to be backed up."""
        _, _, halving = self._drawn()
        in_flight = halving.issued - (search.searches_done - self._done)
        return halving.next_action(lambda: self.scores(root), in_flight)

    def _check(self, root: Node) -> None:
        if root is not self._root:
            raise ValueError(
                "the Gumbel rule answers for the root it last searched; run the "
                "search from this root first"
            )

    def policy(self, root: Node, size: int) -> NDArray[np.float32]:
        """softmax(logits + sigma(completed q)) over action ids; where the solver proved
        something, only over the proven-best children."""
        self._check(root)
        _, logits, _ = self._drawn()
        visits = np.asarray(root.visits, np.float64)
        policy = improved_policy(
            logits, root.value, mean_values(root.values, visits), visits, self.gumbel_params
        )
        allowed = root.proven_best()
        if allowed is not None:
            kept = np.zeros_like(policy)
            kept[allowed] = policy[allowed]
            total = kept.sum()
            if total > 0:
                policy = kept / total
            else:
                policy = kept
                policy[allowed] = 1.0 / len(allowed)
        return to_action_space(policy, root.actions, size)

    def choose(self, root: Node, temperature: float, rng: np.random.Generator) -> int:
        """The halving's choice (temperature and rng are not used: the Gumbel noise sampled
        the move); where the solver proved something, the best-scored proven-best child."""
        self._check(root)
        scores = self.scores(root)
        allowed = root.proven_best()
        if allowed is None:
            return self._drawn()[2].choose(scores)
        return max(allowed, key=lambda a: (root.visits[a], float(scores[a])))


# ----- PUCT's target and move ------------------------------------------------------------------
def visit_policy(root: Node, action_space_size: int) -> NDArray[np.float32]:
    """float32 [A]: the root's visit counts over action ids, normalised; with the solver, over
    the proven-best children only (`Node.proven_best`)."""
    pi = np.zeros(action_space_size, np.float32)
    allowed = root.proven_best()
    indices = range(len(root.actions)) if allowed is None else allowed
    total = sum(root.visits[i] for i in indices)
    if total <= 0:
        pi[[root.actions[i] for i in indices]] = 1.0 / max(1, len(indices))
        return pi
    for i in indices:
        pi[root.actions[i]] = root.visits[i] / total
    return pi


def choose_action(root: Node, temperature: float, rng: np.random.Generator) -> int:
    """Index of the chosen child: visits^(1/T) sampling, or the most visited when T == 0.
    Where the search proved something, only the proven-best children (or those not proven to
    lose) are candidates."""
    allowed = root.proven_best()
    indices = np.arange(len(root.visits)) if allowed is None else np.asarray(allowed)
    visits = np.asarray(root.visits, dtype=np.float64)[indices]
    if temperature <= 0 or visits.sum() <= 0:
        best = np.flatnonzero(visits == visits.max())
        pick = best[0] if len(best) == 1 else rng.choice(best)
    else:
        weights = visits ** (1.0 / temperature)
        pick = rng.choice(len(visits), p=weights / weights.sum())
    return int(indices[pick])
