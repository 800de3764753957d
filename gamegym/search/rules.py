"""The root rules of the tree search (`selfplay.search.rule`), registered by name.

One tree core (`gamegym.search.core.TreeCore`: AlphaZero's `gamegym.search.mcts.Search` and
MuZero's `gamegym.search.latent.LatentSearch` are steps on it) runs every rule; a rule decides
what differs between them:

  begin        how a move's search starts at the root (root noise, Gumbel-Top-k)
  selectors    the two selection functions the core's one walk takes
               (gamegym.search.core.TreeCore._walk): at the root (a child index, or None
               while the root must wait for the simulations in flight to be backed up) and
               below it
  policy       the policy target of the searched root, float32 [action_space_size]
  choose       the move played (a root child index)
  keeps_subtree  whether the next move's search starts from the played child's subtree
  compiled     whether the compiled core (gamegym.search.flat) runs it: PUCT's walk is
               compiled whole; a rule with `root_child` (Gumbel) picks each simulation's root
               child in Python and the compiled core walks on below with Gumbel's rule
  forces_playouts  whether it can force playouts at the root (`selfplay.search.
               forced_playouts`, gamegym.search.forced): a rule that leaves the root child to
               PUCT can; one that picks it itself (Gumbel) cannot, and refuses the setting

Rules:
- "puct" (AlphaZero): PUCT at every node, Dirichlet noise at the root, the visit counts as
  the policy target, the move ~ visits^(1/temperature); the played child's subtree is kept.
  Where the step maps Q to [0, 1] (MuZero's, `TreeCore.normalise_q`), Q is min-max normalised
  by the values backed up so far (once they differ); with the solver, a proven child's exact
  value replaces its mean.  With `forced_playouts` k > 0, a full self-play search forces
  playouts at the root and the policy target is pruned of them (KataGo's;
  `gamegym.search.forced`); the move is still drawn from the unpruned counts.
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

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from gamegym.registry import SEARCHES
from gamegym.search.forced import forced_child, pruned_visits
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
    "Select",
    "RootSelect",
    "puct_selector",
    "among_proven",
    "search_rule",
    "SearchRule",
    "PuctRule",
    "GumbelRule",
    "visit_policy",
    "choose_action",
    "add_root_noise",
]


# the selection functions of the core's walk: a node -> the child index a walk takes there;
# the root's may answer None (wait for the simulations in flight to be backed up)
Select = Callable[["Node"], int]
RootSelect = Callable[["Node"], "int | None"]


class RuleSearch(Protocol):
    """What a rule uses of the tree search it steers (gamegym.search.core.TreeCore)."""

    params: SearchParams
    normalise_q: bool
    low: float
    high: float

    @property
    def searches_done(self) -> int: ...


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
    compiled = False  # the compiled core (gamegym.search.flat) runs this rule
    forces_playouts = False  # the rule can force playouts at the root (gamegym.search.forced)
    forcing = 0.0  # k of the forced playouts of the search begun last (0: none)

    def __init__(self, params: SearchParams) -> None:
        if params.forced_playouts and not self.forces_playouts:
            raise ValueError(
                f"selfplay.search.forced_playouts ({params.forced_playouts}): the "
                f"{self.name!r} rule picks every root child itself, so no playout can be "
                "forced; set it to 0 or use the 'puct' rule"
            )
        self.params = params

    def begin(
        self,
        search: RuleSearch,
        root: Node,
        rng: np.random.Generator,
        count: int,
        explore: bool = True,
    ) -> None:
        """Start a move's search of `count` simulations at the expanded `root`: Dirichlet
        noise mixed into its priors where configured, and forced playouts where configured
        (`explore=False`, a fast search: neither), then the rule's own start (`start`)."""
        self.forcing = self.params.forced_playouts if explore else 0.0
        fraction = self.params.dirichlet_fraction if explore else 0.0
        add_root_noise(root, rng, self.params.dirichlet_alpha, fraction)
        self.start(search, root, rng, count)

    def start(self, search: RuleSearch, root: Node, rng: np.random.Generator, count: int) -> None:
        """What the rule draws at a noised root before its `count` simulations (nothing)."""

    def selectors(self, search: RuleSearch) -> tuple[RootSelect, Select]:
        """(root selection, interior selection) for the core's walk over `search`'s tree."""
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
    """AlphaZero's rule: PUCT everywhere (`puct_selector`), Dirichlet noise at the root, visit
    counts as the target, visits^(1/T) as the move; with `forced_playouts`, forced playouts
    at the root and the target pruned of them (gamegym.search.forced)."""

    name = "puct"
    default_dirichlet_fraction = 0.25
    compiled = True
    forces_playouts = True

    def __init__(self, params: SearchParams) -> None:
        super().__init__(params)
        self._search: RuleSearch | None = None  # the search begun last (its Q bounds)

    def start(self, search: RuleSearch, root: Node, rng: np.random.Generator, count: int) -> None:
        self._search = search

    def selectors(self, search: RuleSearch) -> tuple[RootSelect, Select]:
        """PUCT at every node; where playouts may be forced, at the root the first child
        `forced_child` names, while the search begun forces them (`forcing`)."""
        select = puct_selector(search)
        if not self.params.forced_playouts:
            return select, select

        def select_root(node: Node) -> int:
            k = self.forcing
            if k:
                i = forced_child(node, k)
                if i >= 0:
                    return i
            return select(node)

        return select_root, select

    def policy(self, root: Node, size: int) -> NDArray[np.float32]:
        """The root's visit counts, normalised; after a search that forced playouts, pruned
        of them first (`pruned_visits`)."""
        if not self.forcing or self._search is None:
            return visit_policy(root, size)
        search = self._search
        low, high = search.low, search.high
        span = high - low if search.normalise_q and high > low else 0.0
        counts = pruned_visits(root, self.forcing, self.params.exploration_const, low, span)
        return visit_policy(root, size, counts)

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

    def start(self, search: RuleSearch, root: Node, rng: np.random.Generator, count: int) -> None:
        """Gumbel-Top-k of the (noised) root's actions and the halving of `count` over them."""
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

    def selectors(self, search: RuleSearch) -> tuple[RootSelect, Select]:
        """The halving's root child (`root_child`), then `interior_index` below the root."""
        p = self.gumbel_params
        scale, init, epsilon, rescale = p.value_scale, p.maxvisit_init, p.epsilon, p.rescale

        def select_root(root: Node) -> int | None:
            return self.root_child(search, root)

        def select(node: Node) -> int:
            return interior_index(
                node.priors, node.value, node.values, node.visits, scale, init, epsilon, rescale
            )

        return select_root, select

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


# ----- PUCT's selection, target and move -------------------------------------------------------
def puct_selector(search: RuleSearch) -> Select:
    """PUCT's selection at a node of `search`'s tree: argmax Q + c sqrt(N + 1) P / (1 + n),
    an unvisited child's Q counted 0; where `search.normalise_q`, Q mapped to [0, 1] by the
    values backed up so far once they differ; where the solver proved children, `among_proven`."""
    c = search.params.exploration_const
    normalise = search.normalise_q
    sqrt = math.sqrt

    def select(node: Node) -> int:
        scale = c * sqrt(node.total + 1)
        if node.solved:
            return among_proven(node, scale)
        best, best_score, i = 0, -1e30, 0
        if normalise and search.high > search.low:  # (two loops: no test per child)
            low = search.low
            span = search.high - low
            for n, w, p in zip(node.visits, node.values, node.priors):
                score = ((w / n - low) / span + scale * p / (1 + n)) if n else scale * p
                if score > best_score:
                    best, best_score = i, score
                i += 1  # noqa: SIM113 - faster than enumerate over zip here
            return best
        for n, w, p in zip(node.visits, node.values, node.priors):  # floats as Q + U
            score = (w / n + scale * p / (1 + n)) if n else scale * p
            if score > best_score:
                best, best_score = i, score
            i += 1  # noqa: SIM113 - faster than enumerate over zip here
        return best

    return select


def among_proven(node: Node, scale: float) -> int:
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


# ----- PUCT's target and move ------------------------------------------------------------------
def visit_policy(
    root: Node, action_space_size: int, counts: list[float] | None = None
) -> NDArray[np.float32]:
    """float32 [A]: the root's visit counts (or `counts`, one per child: the pruned ones) over
    action ids, normalised; with the solver, over the proven-best children only
    (`Node.proven_best`)."""
    visits = root.visits if counts is None else counts
    pi = np.zeros(action_space_size, np.float32)
    allowed = root.proven_best()
    indices = range(len(root.actions)) if allowed is None else allowed
    total = sum(visits[i] for i in indices)
    if total <= 0:
        pi[[root.actions[i] for i in indices]] = 1.0 / max(1, len(indices))
        return pi
    for i in indices:
        pi[root.actions[i]] = visits[i] / total
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
