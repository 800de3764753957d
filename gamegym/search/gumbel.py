"""The Gumbel rule (Danihelka, Guez, Schrittwieser and Silver, ICLR 2022) and playout-cap
randomization (Wu, 2019): pure NumPy, no tree code.  A tree search calls these at its nodes.

At the root of a search with a budget of n simulations:
1. `gumbel_top_k` draws Gumbel(0, 1) noise g over the legal actions and keeps the m =
   min(max_considered, legal) actions with the largest g + logits (sampling without
   replacement from the prior);
2. `SequentialHalving` spends exactly n simulations on them: phases in which every surviving
   action gets the same number of simulations, the survivors halved between phases by
   g + logits + sigma(q) (`gumbel_scores`); several simulations of one phase may be in flight
   together (virtual loss), a new phase waits until they are all backed up;
3. the move played is `SequentialHalving.choose`: the best g + logits + sigma(q) among the
   actions that got the most simulations, and the policy target is `improved_policy`:
   softmax(logits + sigma(completed q)).
Below the root, `interior_action` picks the child whose visit share lags furthest behind the
improved policy (the paper's section 5); no noise there.  `interior_index` is the same choice
on a node's plain lists, the tree search's hot loop (checked against `interior_action`).

sigma(q) = (maxvisit_init + max_b N(b)) * value_scale * q_hat, where q_hat is the completed q
rescaled to [0, 1] by its smallest and largest entries, and the completed q of an unvisited
action is the mixed value (`mixed_value`, the paper's appendix D).  This is mctx's
`qtransform_completed_by_mix_value` with its defaults (`GumbelParams(rescale="node")`).  With
`rescale` "score" (the default, `selfplay.search.gumbel_rescale`) q_hat is (q + 1) / 2 instead,
q clipped to the score range [-1, 1]: a spread of 0.01 between children then stays small in
sigma, where the node's own min and max would stretch it to the full scale.

Every array is over one node's children (at a GameGraph node: its legal actions, in the
order of `actions_at`); `to_action_space` puts a policy over action ids.  Values are negamax,
in [-1, 1] from the view of the player to move at the node: q(a) is the mean value of child a
as that player sees it (`gamegym.mcts.Node.values[a] / visits[a]`), `value` the network's
value of the node itself.  Randomness is always a passed-in `numpy.random.Generator`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from gamegym.config.search import GUMBEL_RESCALES as RESCALES
from gamegym.config.search import SearchConfig as DEFAULTS
from gamegym.game.graph import SCORE_RANGE

__all__ = [
    "GumbelParams",
    "logits_from_priors",
    "mean_values",
    "gumbel_top_k",
    "mixed_value",
    "completed_q",
    "transformed_q",
    "qtransform",
    "gumbel_scores",
    "improved_policy",
    "interior_action",
    "interior_index",
    "to_action_space",
    "halving_phases",
    "SequentialHalving",
    "PlayoutCap",
    "PlayoutChoice",
]

TINY = np.finfo(np.float64).tiny  # the smallest prior a logit is taken of
_TINY = float(TINY)
Vector = np.ndarray  # float64 [A]: one entry per child of a node


@dataclass(frozen=True)
class GumbelParams:
    """The Gumbel rule's constants: those a config sets default to the search section's
    (gamegym.config.search.SearchConfig: mctx's, but for `rescale`)."""

    max_considered: int = DEFAULTS.gumbel_considered  # root actions sampled by Gumbel-Top-k
    #                                                   (m = min(this, legal))
    value_scale: float = DEFAULTS.gumbel_value_scale  # sigma's scale of the rescaled q (c_scale)
    maxvisit_init: float = DEFAULTS.gumbel_maxvisit_init  # sigma's offset to the largest
    #                                                       visit count (c_visit)
    gumbel_scale: float = 1.0  # scale of the root's Gumbel noise (0: no noise, for matches)
    epsilon: float = 1e-8  # smallest denominator when q is rescaled to [0, 1]
    rescale: str = DEFAULTS.gumbel_rescale  # q to [0, 1] by: "node" its children's min and
    #                                         max (mctx), "score" the score range [-1, 1] (q
    #                                         clipped to it)

    def __post_init__(self) -> None:
        if not (isinstance(self.max_considered, int) and self.max_considered >= 1):
            raise ValueError(f"max_considered must be an int >= 1, got {self.max_considered!r}")
        for name in ("value_scale", "maxvisit_init", "gumbel_scale"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if not self.epsilon > 0:
            raise ValueError(f"epsilon must be > 0, got {self.epsilon!r}")
        if self.rescale not in RESCALES:
            raise ValueError(f"rescale must be one of {RESCALES}, got {self.rescale!r}")


DEFAULT = GumbelParams()


# ----- values --------------------------------------------------------------------------------
def logits_from_priors(priors: Sequence[float]) -> np.ndarray:
    """float64 [A]: log of the priors (a zero prior counts as the smallest positive float, so
    no logit is -inf)."""
    logits: np.ndarray = np.log(np.maximum(np.asarray(priors, np.float64), TINY))
    return logits


def mean_values(sums: ArrayLike, visits: ArrayLike) -> np.ndarray:
    """float64 [A]: q = sums / visits, and 0 where a child has no visits."""
    w, n = np.asarray(sums, np.float64), np.asarray(visits, np.float64)
    return np.divide(w, n, out=np.zeros_like(w), where=n > 0)


def _softmax(logits: np.ndarray) -> np.ndarray:
    z: np.ndarray = np.exp(logits - logits.max())
    p: np.ndarray = z / z.sum()
    return p


def mixed_value(value: float, logits: np.ndarray, q: np.ndarray, visits: np.ndarray) -> float:
    """The value an unvisited child is credited with (the paper's appendix D):
    v_mix = (value + N / P * sum_{b visited} pi(b) q(b)) / (1 + N), where pi = softmax(logits),
    N = sum_b N(b) and P = sum_{b visited} pi(b); the network's `value` while nothing is
    visited.  q [A] is ignored where visits [A] is 0."""
    visits = np.asarray(visits, np.float64)
    visited = visits > 0
    total = float(visits.sum())
    if not visited.any():
        return float(value)
    pi = np.maximum(_softmax(np.asarray(logits, np.float64)), TINY)  # [A]
    weighted = float(np.sum(np.where(visited, pi * np.asarray(q, np.float64), 0.0)))
    return (float(value) + total * weighted / float(pi[visited].sum())) / (1.0 + total)


def completed_q(value: float, logits: np.ndarray, q: np.ndarray, visits: np.ndarray) -> np.ndarray:
    """float64 [A]: q where a child was visited, the mixed value where it was not."""
    visits = np.asarray(visits, np.float64)
    fill = mixed_value(value, logits, q, visits)
    return np.where(visits > 0, np.asarray(q, np.float64), fill)


def transformed_q(
    completed: np.ndarray, visits: np.ndarray, params: GumbelParams = DEFAULT
) -> np.ndarray:
    """float64 [A]: sigma(q_hat) = (maxvisit_init + max_b N(b)) * value_scale * q_hat, with
    q_hat = (completed - min) / max(max - min, epsilon) over the children (so in [0, 1]); with
    `params.rescale` "score", min and max are the score range's bounds and q is clipped to
    them (a difference between children weighs the same whatever their spread)."""
    completed = np.asarray(completed, np.float64)
    if params.rescale == "score":
        low, high = SCORE_RANGE
        completed = np.clip(completed, low, high)
    else:
        low, high = completed.min(), completed.max()
    q_hat: np.ndarray = (completed - low) / max(high - low, params.epsilon)
    scale = (params.maxvisit_init + float(np.max(visits))) * params.value_scale
    return scale * q_hat


def qtransform(
    value: float, logits: Vector, q: Vector, visits: Vector, params: GumbelParams = DEFAULT
) -> np.ndarray:
    """float64 [A]: sigma(completed q), what the Gumbel rule adds to the logits (mctx's
    `qtransform_completed_by_mix_value`)."""
    return transformed_q(completed_q(value, logits, q, visits), visits, params)


def gumbel_scores(
    gumbel: np.ndarray,
    logits: np.ndarray,
    value: float,
    q: np.ndarray,
    visits: np.ndarray,
    params: GumbelParams = DEFAULT,
) -> np.ndarray:
    """float64 [A]: g + logits + sigma(completed q), the root's ranking of its actions."""
    logits = np.asarray(logits, np.float64)
    scores: np.ndarray = (
        np.asarray(gumbel, np.float64) + logits + qtransform(value, logits, q, visits, params)
    )
    return scores


def improved_policy(
    logits: Vector, value: float, q: Vector, visits: Vector, params: GumbelParams = DEFAULT
) -> np.ndarray:
    """float64 [A]: softmax(logits + sigma(completed q)), the policy target (no noise in it)."""
    logits = np.asarray(logits, np.float64)
    return _softmax(logits + qtransform(value, logits, q, visits, params))


def interior_action(
    logits: Vector, value: float, q: Vector, visits: Vector, params: GumbelParams = DEFAULT
) -> int:
    """Index of the child a simulation enters below the root (the paper's section 5):
    argmax_a pi'(a) - N(a) / (1 + sum_b N(b)) with pi' the improved policy; repeated, the visit
    shares follow pi'.  Ties go to the lowest index."""
    visits = np.asarray(visits, np.float64)
    policy = improved_policy(logits, value, q, visits, params)
    return int(np.argmax(policy - visits / (1.0 + visits.sum())))


def interior_index(
    priors: Sequence[float],
    value: float,
    sums: Sequence[float],
    visits: Sequence[float],
    value_scale: float = DEFAULT.value_scale,
    maxvisit_init: float = DEFAULT.maxvisit_init,
    epsilon: float = DEFAULT.epsilon,
    rescale: str = DEFAULT.rescale,
) -> int:
    """`interior_action` on a node's lists (priors [A] summing to 1, value sums [A], visits
    [A], the network `value`), in plain Python floats: several times faster than the NumPy
    reference on a board game's few children.  softmax(log p + sigma) is computed as
    p * exp(sigma - max sigma), normalised, so no logarithm is taken per child; a zero prior
    counts as the smallest positive float, as in the reference, so the child of the largest q
    always has a weight (>= that float) even where every other weight underflows.
    Only the visited children are walked one by one: every unvisited child has the same
    completed q (the mixed value), so among them the largest prior scores best and their
    weights sum to their prior mass times one factor (MuZero's hidden states have a child
    per action id, most of them never visited)."""
    tiny = _TINY  # a Python float: comparisons with it cost a fraction of a NumPy scalar's
    visited = list(compress(range(len(visits)), visits))  # visits are never negative
    if not visited:  # nothing visited: every q is `value`, so the prior
        best_prior = max(priors)
        return priors.index(best_prior) if best_prior > tiny else 0  # (all below tiny: alike)
    floored: list[float] = []  # the visited children's priors (>= tiny) and q
    qs: list[float] = []
    total = weighted = mass = most = 0.0
    for i in visited:
        n, p = visits[i], priors[i]
        if p < tiny:
            p = tiny
        q = sums[i] / n
        floored.append(p)
        qs.append(q)
        if n > most:
            most = n
        total += n
        weighted += p * q
        mass += p
    unvisited = len(visited) < len(visits)
    if unvisited:  # the largest unvisited prior, at its lowest index
        rest = list(priors)
        for i in visited:
            rest[i] = -1.0
        best_prior = max(rest)
        best_rest = rest.index(best_prior)
    fill = (value + total * weighted / mass) / (1.0 + total)  # the unvisited children's q
    if rescale == "score":
        bottom, top = SCORE_RANGE
        qs = [bottom if q < bottom else top if q > top else q for q in qs]
        fill = bottom if fill < bottom else top if fill > top else fill
        span = top - bottom
        high = max(qs)
        if unvisited and fill > high:
            high = fill
    else:
        high, low = max(qs), min(qs)  # softmax is shift-free: the largest q's weight is its prior
        if unvisited:
            high, low = max(high, fill), min(low, fill)
        span = high - low
    factor = (maxvisit_init + most) * value_scale / (span if span > epsilon else epsilon)
    exp = math.exp
    weights = [p * exp(factor * (q - high)) for p, q in zip(floored, qs)]
    weight_sum = sum(weights)
    if unvisited:
        fill_weight = exp(factor * (fill - high))
        rest_mass = sum(priors) - mass  # mass: the visited priors, floored
        weight_sum += fill_weight * (rest_mass if rest_mass > 0.0 else 0.0)
    norm, share = 1.0 / weight_sum, 1.0 / (1.0 + total)
    best, best_score = -1, -math.inf
    for i, w in zip(visited, weights):
        score = w * norm - visits[i] * share
        if score > best_score:
            best, best_score = i, score
    if unvisited:
        score = (best_prior if best_prior > tiny else tiny) * fill_weight * norm
        if score > best_score or (score == best_score and best_rest < best):
            best = best_rest
    return best


def to_action_space(policy: np.ndarray, actions: Sequence[int], size: int) -> np.ndarray:
    """float32 [size]: `policy` [A] over a node's children put at their action ids (`actions`
    [A]); every other action id (the illegal ones) gets 0."""
    out = np.zeros(size, np.float32)
    out[np.asarray(actions, np.int64)] = policy
    return out


# ----- the root: Gumbel-Top-k and sequential halving ----------------------------------------
def gumbel_top_k(
    logits: np.ndarray, count: int, rng: np.random.Generator, scale: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Sample `count` children without replacement from softmax(logits): draw g ~ Gumbel(0, 1)
    [A] (times `scale`) and keep the min(count, A) largest g + logits.  Returns (g float64
    [A], the kept children int64 [m], best first; ties to the lower index)."""
    logits = np.asarray(logits, np.float64)
    gumbel = scale * rng.gumbel(size=logits.shape)
    order = np.argsort(-(gumbel + logits), kind="stable")
    return gumbel, order[: min(count, len(logits))]


def halving_phases(considered: int, simulations: int) -> list[tuple[int, int]]:
    """The phases of sequential halving as [(actions, simulations)], the simulations adding up
    to exactly `simulations`.  mctx's schedule (`get_sequence_of_considered_visits`): with
    L = ceil(log2(m)) for m considered actions, a phase with k actions gives each of them
    max(1, floor(n / (L * k))) more simulations, then k becomes max(2, floor(k / 2)); phases
    go on (with 2 actions) until the budget is spent, the last one cut short, round by round.
    One considered action gets the whole budget."""
    if considered < 1 or simulations < 0:
        raise ValueError(
            f"need considered >= 1 and simulations >= 0, got {considered}, {simulations}"
        )
    if considered == 1:
        return [(1, simulations)] if simulations else []
    halvings = math.ceil(math.log2(considered))
    phases: list[tuple[int, int]] = []
    actions, left = considered, simulations
    while left > 0:
        spent = min(left, actions * max(1, simulations // (halvings * actions)))
        if phases and phases[-1][0] == actions:  # no halving in between: one phase
            phases[-1] = (actions, phases[-1][1] + spent)
        else:
            phases.append((actions, spent))
        left -= spent
        actions = max(2, actions // 2)
    return phases


class SequentialHalving:
    """Which root child each simulation of a Gumbel search goes to.

    Made from the considered children (`gumbel_top_k`, best first) and the budget n; the
    search asks `next_action` before each simulation from the root.  Within a phase the
    simulations go round by round over the survivors, best first, so several can be in flight
    at once.  When a phase with fewer actions begins, the survivors are ranked again by
    `scores()` (`gumbel_scores` of the root, [A] over its children) and the best kept; that
    waits (`next_action` answers None) until no simulation of the last phase is in flight.
    """

    def __init__(self, considered: Sequence[int], simulations: int):
        self.survivors: list[int] = [int(a) for a in considered]  # still in the race, best first
        self.phases = halving_phases(len(self.survivors), simulations)
        self.simulations = simulations
        self.given: dict[int, int] = dict.fromkeys(self.survivors, 0)  # simulations per child
        self.issued = 0  # simulations handed out so far
        self._phase = 0  # index into phases
        self._step = 0  # simulations handed out in the current phase

    @property
    def remaining(self) -> int:
        """Simulations not yet handed out."""
        return self.simulations - self.issued

    def next_action(self, scores: Callable[[], np.ndarray], in_flight: int = 0) -> int | None:
        """The root child (index) of the next simulation, counted as handed out; None when the
        budget is spent, or when a halving is due while `in_flight` simulations have not been
        backed up (back them up, then ask again)."""
        if self.issued >= self.simulations:
            return None
        actions, count = self.phases[self._phase]
        if self._step == count:  # the phase is over: halve
            if in_flight > 0:
                return None
            self._phase += 1
            self._step = 0
            actions = self.phases[self._phase][0]
            self._keep_best(actions, scores())
        index = self.survivors[self._step % actions]
        self._step += 1
        self.issued += 1
        self.given[index] += 1
        return index

    def _keep_best(self, count: int, scores: np.ndarray) -> None:
        """Keep the `count` best survivors by `scores` [A] (ties: the earlier ranked)."""
        ranked = sorted(
            range(len(self.survivors)), key=lambda r: (-float(scores[self.survivors[r]]), r)
        )
        self.survivors = [self.survivors[r] for r in ranked[:count]]

    def finalists(self) -> list[int]:
        """The survivors that got the most simulations (all of them unless the last round was
        cut short), best ranked first; the move is one of them."""
        most = max(self.given[a] for a in self.survivors)
        return [a for a in self.survivors if self.given[a] == most]

    def choose(self, scores: np.ndarray) -> int:
        """The move played (a root child index): the finalist with the largest `scores` [A]
        (`gumbel_scores` after the search; ties: the better ranked)."""
        finalists = self.finalists()
        return max(finalists, key=lambda a: (float(scores[a]), -finalists.index(a)))


# ----- playout-cap randomization --------------------------------------------------------------
class PlayoutChoice(NamedTuple):
    """One move's search budget."""

    full: bool  # a full search: its position becomes a policy target
    searchcount: int  # simulations for this move


@dataclass(frozen=True)
class PlayoutCap:
    """Playout-cap randomization (KataGo; Wu 2019, section 3.1): each move is a full search
    with probability `full_probability`, else a fast one.  Only full searches are recorded as
    policy targets; KataGo also turns exploration (root noise) off in the fast ones, so they
    play as strongly as their budget allows."""

    full_searchcount: int  # simulations of a full search
    fast_searchcount: int  # simulations of a fast search (<= full_searchcount)
    full_probability: float = 0.25  # chance that a move gets the full search

    def __post_init__(self) -> None:
        if not (isinstance(self.full_searchcount, int) and self.full_searchcount >= 1):
            raise ValueError(f"full_searchcount must be an int >= 1, got {self.full_searchcount!r}")
        if not (
            isinstance(self.fast_searchcount, int)
            and 1 <= self.fast_searchcount <= self.full_searchcount
        ):
            raise ValueError(
                f"fast_searchcount must be an int in [1, full_searchcount="
                f"{self.full_searchcount}], got {self.fast_searchcount!r}"
            )
        if not 0.0 <= self.full_probability <= 1.0:
            raise ValueError(f"full_probability must be in [0, 1], got {self.full_probability!r}")

    def draw(self, rng: np.random.Generator) -> PlayoutChoice:
        """This move's budget; takes exactly one number from `rng` whatever the settings, so a
        seeded game draws the same sequence."""
        full = bool(rng.random() < self.full_probability)
        return PlayoutChoice(full, self.full_searchcount if full else self.fast_searchcount)
