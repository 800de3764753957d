"""The compiled search core's kernels (`gamegym.search.flat`), compiled by numba on first
import (or loaded from numba's cache): the one walk with its selection functions and virtual
loss, the one backup (reward + DISCOUNT * value, virtual loss taken off), the gathering of a
round's leaves and the writing of an evaluated batch, on the flat tree's arrays (their rows:
gamegym.search.flat_layout).  AlphaZero's and MuZero's searches (`gamegym.search.flat`,
`gamegym.search.latent_flat`) run the same walk, backup and gathering: a gathering that makes
a new node hands it back to AlphaZero's Python side, which asks the GameGraph for its children,
and opens it itself over every action id for MuZero (a hidden state needs no game).  The rules
are those of the Python core (gamegym.search.core), its reference, operation for operation.

May import: numba and gamegym.search.flat_layout; imported by gamegym.search.flat and
gamegym.search.latent_flat only, when they make their first search.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from gamegym.search.flat_layout import (
    ACTION,
    BOTTOM,
    BY_SCORE,
    C_PUCT,
    CHILD,
    COUNT,
    DISCOUNT,
    EPSILON,
    EXPANDED,
    FIRST,
    FORCED,
    GUMBEL,
    MAXVISIT_INIT,
    NEW,
    PARENT,
    PARENT_EDGE,
    PENDING,
    PRIOR,
    PUCT_NORMALISED,
    REWARD,
    STATE,
    TERMINAL,
    TINY,
    TOP,
    TOTAL,
    VALUE,
    VALUE_SCALE,
    VALUES,
    VISITS,
)

__all__ = [
    "gather",
    "backup_all",
    "apply_batch",
    "latent_apply",
    "walk",
    "forced_child",
    "select",
    "take",
    "backup",
    "interior_index",
]


# ----- the walk and the backup -------------------------------------------------------------------
@njit(cache=True, nogil=True)
def walk(nf, ni, ef, ei, n_nodes, root, index, vl, rule, knobs, bounds):
    """One walk from the (expanded) `root`: into its child `index` (a root selection made in
    Python: Gumbel's halving), or where `index` < 0 the one `forced_child` names (while
    knobs[FORCED] > 0) or else `select` picks, then by `select` down to a node that is not
    expanded, which it returns; virtual loss `vl` on every edge taken; a first step onto an
    edge makes its child, node `n_nodes` (state NEW)."""
    node = root
    k = index
    if k < 0 and knobs[FORCED] > 0.0:
        k = forced_child(nf, ni, ef, root, knobs[FORCED])
    if k < 0:
        k = select(nf, ni, ef, root, rule, knobs, bounds)
    while True:
        child = take(nf, ni, ef, ei, n_nodes, node, ni[FIRST, node] + k, vl)
        if child == n_nodes or ni[STATE, child] != EXPANDED:
            return child
        node = child
        k = select(nf, ni, ef, node, rule, knobs, bounds)


@njit(cache=True, nogil=True)
def forced_child(nf, ni, ef, node, k):
    """The first child (0-based among the node's edges) visited, virtual visits included, but
    fewer than sqrt(k * prior * the node's total) times, or -1: KataGo's forced playouts
    (`gamegym.search.forced.forced_child`, the same float operations in the same order)."""
    first = ni[FIRST, node]
    total = nf[TOTAL, node]
    for j in range(ni[COUNT, node]):
        n = ef[VISITS, first + j]
        if n > 0 and n < math.sqrt(k * ef[PRIOR, first + j] * total):
            return j
    return -1


@njit(cache=True, nogil=True)
def select(nf, ni, ef, node, rule, knobs, bounds):
    """The child (0-based among the node's edges) a walk takes at `node`, by the selection
    function `rule` (gamegym.search.flat_layout): PUCT, argmax Q + c sqrt(N + 1) P / (1 + n)
    with an unvisited child's Q 0 and, under PUCT_NORMALISED, Q mapped to [0, 1] by `bounds`
    (once they differ); GUMBEL, `interior_index`.  `gamegym.search.rules.puct_selector` and
    `GumbelRule.selectors` are the Python ones, the same float operations in the same order."""
    first = ni[FIRST, node]
    count = ni[COUNT, node]
    if rule == GUMBEL:
        return interior_index(
            ef, first, count, nf[VALUE, node], knobs[VALUE_SCALE], knobs[MAXVISIT_INIT],
            knobs[EPSILON], knobs[BY_SCORE] != 0.0, knobs[BOTTOM], knobs[TOP], knobs[TINY],
        )  # fmt: skip
    low = bounds[0]
    high = bounds[1]
    span = high - low if rule == PUCT_NORMALISED and high > low else 0.0
    scale = knobs[C_PUCT] * math.sqrt(nf[TOTAL, node] + 1)
    best = 0
    best_score = -1e30
    for k in range(count):
        e = first + k
        n = ef[VISITS, e]
        if n != 0:
            q = ef[VALUES, e] / n
            if span != 0.0:
                q = (q - low) / span
            score = q + scale * ef[PRIOR, e] / (1 + n)
        else:
            score = scale * ef[PRIOR, e]
        if score > best_score:
            best = k
            best_score = score
    return best


@njit(cache=True, nogil=True)
def take(nf, ni, ef, ei, n_nodes, node, e, vl):
    """Step from `node` onto its edge `e`, adding virtual loss `vl` there, and return the
    child; an edge taken for the first time makes it, node `n_nodes` (state NEW)."""
    if vl != 0:
        ef[VISITS, e] += vl
        ef[VALUES, e] -= vl
        nf[TOTAL, node] += vl
    child = ei[CHILD, e]
    if child < 0:
        child = n_nodes
        ei[CHILD, e] = child
        ni[STATE, child] = NEW
        ni[FIRST, child] = 0
        ni[COUNT, child] = 0
        ni[PARENT_EDGE, child] = e
        ni[PARENT, child] = node
        nf[VALUE, child] = 0.0
        nf[TOTAL, child] = 0.0
        nf[REWARD, child] = 0.0
    return child


@njit(cache=True, nogil=True)
def backup(nf, ni, ef, root, leaf, value, vl, bounds):
    """Back up a leaf value (the leaf mover's view) from `leaf` to `root`, taking the virtual
    loss `vl` off: each parent sees the reward of the edge (0 but in the latent search) plus
    DISCOUNT times the value below it; `bounds` [low, high] widen to every value backed up."""
    low = bounds[0]
    high = bounds[1]
    node = leaf
    while node != root:
        e = ni[PARENT_EDGE, node]
        value = nf[REWARD, node] + DISCOUNT * value
        node = ni[PARENT, node]
        if value < low:
            low = value
        if value > high:
            high = value
        if vl != 0:
            ef[VISITS, e] += 1 - vl
            ef[VALUES, e] += value + vl
            nf[TOTAL, node] += 1 - vl
        else:
            ef[VISITS, e] += 1
            ef[VALUES, e] += value
            nf[TOTAL, node] += 1
    bounds[0] = low
    bounds[1] = high


@njit(cache=True, nogil=True)
def backup_all(nf, ni, ef, root, waiting, n_waiting, vl, bounds):
    """Back up the searches that waited on `waiting[:n_waiting]` (now evaluated)."""
    for j in range(n_waiting):
        leaf = waiting[j]
        backup(nf, ni, ef, root, leaf, nf[VALUE, leaf], vl, bounds)


# ----- a round -----------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def gather(
    nf, ni, ef, ei, n_nodes, n_edges, root, vl, rule, knobs, slots, remaining, waiting,
    n_waiting, batch, n_batch, hidden_actions, opened, first, count, value, bounds,
):  # fmt: skip
    """Walk searches until `slots` of them wait on leaves being evaluated or none remain.  A
    walk that makes a new node: with `hidden_actions` > 0 (MuZero) it is opened here over
    that many action ids (edges from `n_edges`; the caller makes room for `slots` new nodes
    and their edges first), added to `batch` and waits; with 0 (AlphaZero) it is handed back
    and the caller, having read its children from the GameGraph, calls again with it as
    `opened`: `count` edges from `first` (it joins `batch` and waits), or `count` 0 and its
    final score `value` (terminal: backed up at once, as is every walk that ends on a
    terminal node).  Returns (the node handed back or -1, n_nodes, n_edges, remaining,
    n_waiting, n_batch, searches backed up)."""
    done = 0
    if opened >= 0:
        if count > 0:
            ni[FIRST, opened] = first
            ni[COUNT, opened] = count
            ni[STATE, opened] = PENDING
            batch[n_batch] = opened
            n_batch += 1
            waiting[n_waiting] = opened
            n_waiting += 1
        else:
            ni[STATE, opened] = TERMINAL
            nf[VALUE, opened] = value
            backup(nf, ni, ef, root, opened, value, vl, bounds)
            done += 1
    while n_waiting < slots and remaining > 0:
        leaf = walk(nf, ni, ef, ei, n_nodes, root, -1, vl, rule, knobs, bounds)
        remaining -= 1
        state = ni[STATE, leaf]
        if state == NEW:
            if hidden_actions == 0:
                return leaf, n_nodes, n_edges, remaining, n_waiting, n_batch, done
            n_nodes += 1
            ni[FIRST, leaf] = n_edges
            ni[COUNT, leaf] = hidden_actions
            ni[STATE, leaf] = PENDING
            for a in range(hidden_actions):
                e = n_edges + a
                ef[PRIOR, e] = 0.0
                ef[VISITS, e] = 0.0
                ef[VALUES, e] = 0.0
                ei[CHILD, e] = -1
                ei[ACTION, e] = a
            n_edges += hidden_actions
            batch[n_batch] = leaf
            n_batch += 1
            waiting[n_waiting] = leaf
            n_waiting += 1
        elif state == PENDING:
            waiting[n_waiting] = leaf
            n_waiting += 1
        else:
            backup(nf, ni, ef, root, leaf, nf[VALUE, leaf], vl, bounds)
            done += 1
    return -1, n_nodes, n_edges, remaining, n_waiting, n_batch, done


# ----- an evaluated batch -----------------------------------------------------------------------
@njit(cache=True, nogil=True)
def apply_batch(nf, ni, ef, ei, batch, probs, values):
    """The evaluator's answer for the nodes `batch`: each node's priors are its row of `probs`
    at its actions, normalised (uniform where they sum to 0), its value from `values`."""
    for j in range(batch.shape[0]):
        node = batch[j]
        first = ni[FIRST, node]
        count = ni[COUNT, node]
        total = 0.0
        for k in range(count):
            total += float(probs[j, ei[ACTION, first + k]])
        for k in range(count):
            if total > 0:
                ef[PRIOR, first + k] = float(probs[j, ei[ACTION, first + k]]) / total
            else:
                ef[PRIOR, first + k] = 1.0 / count
        nf[VALUE, node] = float(values[j])
        ni[STATE, node] = EXPANDED


@njit(cache=True, nogil=True)
def latent_apply(nf, ni, ef, batch, probs, values, rewards):
    """The recurrent inference's answer for the hidden-state nodes `batch`: priors the whole
    row of `probs` (a softmax over every action id, as the model gave it), value and reward."""
    for j in range(batch.shape[0]):
        node = batch[j]
        first = ni[FIRST, node]
        for k in range(ni[COUNT, node]):
            ef[PRIOR, first + k] = float(probs[j, k])
        nf[VALUE, node] = float(values[j])
        nf[REWARD, node] = float(rewards[j])
        ni[STATE, node] = EXPANDED


# ----- the Gumbel rule's interior selection -------------------------------------------------------
@njit(cache=True, nogil=True)
def interior_index(
    ef, first, count, value, value_scale, maxvisit_init, epsilon, by_score, bottom, top, tiny
):  # fmt: skip
    """`gamegym.search.gumbel.interior_index` on the edges `first`..`first + count` of a node
    with network value `value`, the same float operations in the same order (so the same
    child): argmax of the improved policy minus the visit share, unvisited children credited
    with the mixed value; `by_score`: q clipped to the score range [bottom, top]."""
    visited = np.empty(count, np.int64)  # the visited children, with their prior (>= tiny)
    floored = np.empty(count)  # and q
    qs = np.empty(count)
    n_visited = 0
    total = weighted = mass = most = 0.0
    best_prior = -1.0  # the largest unvisited prior, at its lowest index
    best_rest = -1
    for k in range(count):
        n = ef[VISITS, first + k]
        p = ef[PRIOR, first + k]
        if n == 0:
            if p > best_prior:
                best_prior, best_rest = p, k
            continue
        if p < tiny:
            p = tiny
        q = ef[VALUES, first + k] / n
        visited[n_visited], floored[n_visited], qs[n_visited] = k, p, q
        n_visited += 1
        if n > most:
            most = n
        total += n
        weighted += p * q
        mass += p
    if n_visited == 0:  # every q is the value: the largest prior (all below tiny: alike)
        return best_rest if best_prior > tiny else 0
    unvisited = n_visited < count
    fill = (value + total * weighted / mass) / (1.0 + total)  # the unvisited children's q
    if by_score:
        for j in range(n_visited):
            qs[j] = min(max(qs[j], bottom), top)
        fill = min(max(fill, bottom), top)
    high, low = qs[:n_visited].max(), qs[:n_visited].min()
    if by_score:
        span = top - bottom
        if unvisited and fill > high:
            high = fill
    else:
        if unvisited:
            high, low = max(high, fill), min(low, fill)
        span = high - low
    factor = (maxvisit_init + most) * value_scale / (span if span > epsilon else epsilon)
    weight_sum = 0.0
    for j in range(n_visited):
        qs[j] = floored[j] * math.exp(factor * (qs[j] - high))  # the child's weight
        weight_sum += qs[j]
    fill_weight = 0.0
    if unvisited:
        fill_weight = math.exp(factor * (fill - high))
        prior_sum = 0.0  # in order, as Python's sum() of the priors
        for k in range(count):
            prior_sum += ef[PRIOR, first + k]
        rest_mass = prior_sum - mass
        weight_sum += fill_weight * (rest_mass if rest_mass > 0.0 else 0.0)
    norm, share = 1.0 / weight_sum, 1.0 / (1.0 + total)
    best, best_score = -1, -math.inf
    for j in range(n_visited):
        score = qs[j] * norm - ef[VISITS, first + visited[j]] * share
        if score > best_score:
            best, best_score = visited[j], score
    if unvisited:
        score = (best_prior if best_prior > tiny else tiny) * fill_weight * norm
        if score > best_score or (score == best_score and best_rest < best):
            best = best_rest
    return best
