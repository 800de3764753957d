"""The compiled search core's kernels (`gamegym.search.arena`), compiled by numba on first
import (or loaded from numba's cache): the walk down by PUCT with virtual loss, the backup, the
gathering of a batch of leaves and the writing of an evaluated batch, on the arena's arrays
(their rows: gamegym.search.arena_layout).  MuZero's latent search
(`gamegym.search.latent_arena`) walks and backs up with the same two (min-max normalised Q,
rewards on the edges) and has its own gathering, which opens a new node over every action id
itself, and its own writing of a batch.

May import: numba and gamegym.search.arena_layout; imported by gamegym.search.arena and
gamegym.search.latent_arena only, when they make their first search.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from gamegym.search.arena_layout import (
    ACTION,
    CHILD,
    COUNT,
    EXPANDED,
    FIRST,
    NEW,
    PARENT,
    PARENT_EDGE,
    PENDING,
    PRIOR,
    REWARD,
    STATE,
    TERMINAL,
    TOTAL,
    VALUE,
    VALUES,
    VISITS,
)

__all__ = [
    "gather",
    "backup_all",
    "apply_batch",
    "descend",
    "backup",
    "latent_gather",
    "latent_apply",
    "take",
    "gumbel_walk",
    "interior_index",
]


@njit(cache=True, nogil=True)
def descend(nf, ni, ef, ei, n_nodes, root, c, vl, low, high):
    """Walk from `root` by PUCT, adding virtual loss `vl` on the path, to a node that is not
    expanded, and return it; a first step onto an edge makes its child, node `n_nodes` (state
    NEW).  Where `high` > `low` (the latent search's bounds of the values backed up), Q of a
    visited edge is mapped to [0, 1] by them first; AlphaZero's search passes (inf, -inf)."""
    span = high - low if high > low else 0.0
    node = root
    while ni[STATE, node] == EXPANDED:
        first = ni[FIRST, node]
        scale = c * math.sqrt(nf[TOTAL, node] + 1)
        best = 0
        best_score = -1e30
        for k in range(ni[COUNT, node]):
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
        child = take(nf, ni, ef, ei, n_nodes, node, first + best, vl)
        if child == n_nodes:
            return child
        node = child
    return node


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
    loss `vl` off: each parent sees the reward of the edge (0 but in the latent search) minus
    the value below it; `bounds` [low, high] widen to every value backed up."""
    low = bounds[0]
    high = bounds[1]
    node = leaf
    while node != root:
        e = ni[PARENT_EDGE, node]
        value = nf[REWARD, node] - value
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
def gather(
    nf, ni, ef, ei, n_nodes, root, c, vl, slots, remaining, waiting, n_waiting, opened, first,
    count, value, bounds,
):  # fmt: skip
    """Walk searches until `slots` of them wait on leaves being evaluated, none remain, or a
    walk makes a new node; the caller opens that node through the GameGraph and calls again
    with it as `opened`: with `count` edges from `first` (then it waits for the evaluator), or
    with `count` 0 and its final score `value` (terminal: backed up at once, as is every walk
    that ends on a terminal node).  `bounds` is scratch for `backup` (PUCT's Q is not
    normalised here).  Returns (the new node or -1, its parent edge, remaining, n_waiting,
    searches backed up)."""
    done = 0
    if opened >= 0:
        if count > 0:
            ni[FIRST, opened] = first
            ni[COUNT, opened] = count
            ni[STATE, opened] = PENDING
            waiting[n_waiting] = opened
            n_waiting += 1
        else:
            ni[STATE, opened] = TERMINAL
            nf[VALUE, opened] = value
            backup(nf, ni, ef, root, opened, value, vl, bounds)
            done += 1
    while n_waiting < slots and remaining > 0:
        leaf = descend(nf, ni, ef, ei, n_nodes, root, c, vl, math.inf, -math.inf)
        remaining -= 1
        state = ni[STATE, leaf]
        if state == NEW:
            return leaf, ni[PARENT_EDGE, leaf], remaining, n_waiting, done
        if state == PENDING:
            waiting[n_waiting] = leaf
            n_waiting += 1
        else:
            backup(nf, ni, ef, root, leaf, nf[VALUE, leaf], vl, bounds)
            done += 1
    return -1, -1, remaining, n_waiting, done


@njit(cache=True, nogil=True)
def backup_all(nf, ni, ef, root, waiting, n_waiting, vl, bounds):
    """Back up the searches that waited on `waiting[:n_waiting]` (now evaluated)."""
    for j in range(n_waiting):
        leaf = waiting[j]
        backup(nf, ni, ef, root, leaf, nf[VALUE, leaf], vl, bounds)


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


# ----- MuZero's latent search ------------------------------------------------------------------
@njit(cache=True, nogil=True)
def latent_gather(
    nf, ni, ef, ei, n_nodes, n_edges, root, c, vl, slots, remaining, waiting, n_waiting, batch,
    actions, bounds,
):  # fmt: skip
    """Walk searches until `slots` of them wait on leaves being evaluated or none remain.  A
    walk that makes a new node opens it here over every action id (`actions` edges from
    `n_edges`; a hidden state needs no GameGraph) and adds it to `batch`; the caller makes
    room for `slots` new nodes and their edges first.  Returns (n_nodes, n_edges, remaining,
    n_waiting, new nodes in `batch`, searches backed up)."""
    done = 0
    n_batch = 0
    while n_waiting < slots and remaining > 0:
        leaf = descend(nf, ni, ef, ei, n_nodes, root, c, vl, bounds[0], bounds[1])
        remaining -= 1
        state = ni[STATE, leaf]
        if state == NEW:
            n_nodes += 1
            ni[FIRST, leaf] = n_edges
            ni[COUNT, leaf] = actions
            ni[STATE, leaf] = PENDING
            for a in range(actions):
                e = n_edges + a
                ef[PRIOR, e] = 0.0
                ef[VISITS, e] = 0.0
                ef[VALUES, e] = 0.0
                ei[CHILD, e] = -1
                ei[ACTION, e] = a
            n_edges += actions
            batch[n_batch] = leaf
            n_batch += 1
            waiting[n_waiting] = leaf
            n_waiting += 1
        elif state == PENDING:
            waiting[n_waiting] = leaf
            n_waiting += 1
        else:  # a terminal root's searches never get here; kept for a settled leaf
            backup(nf, ni, ef, root, leaf, nf[VALUE, leaf], vl, bounds)
            done += 1
    return n_nodes, n_edges, remaining, n_waiting, n_batch, done


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


# ----- the Gumbel rule -------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def gumbel_walk(
    nf, ni, ef, ei, n_nodes, root, index, vl, value_scale, maxvisit_init, epsilon, by_score,
    bottom, top, tiny,
):  # fmt: skip
    """A simulation of the Gumbel rule: from `root` into its child `index` (the halving's
    choice), then by `interior_index` down to a node that is not expanded, which it returns;
    virtual loss `vl` on the path, a new node made as in `descend`."""
    node = root
    k = index
    while True:
        child = take(nf, ni, ef, ei, n_nodes, node, ni[FIRST, node] + k, vl)
        if child == n_nodes or ni[STATE, child] != EXPANDED:
            return child
        node = child
        k = interior_index(
            ef, ni[FIRST, node], ni[COUNT, node], nf[VALUE, node], value_scale, maxvisit_init,
            epsilon, by_score, bottom, top, tiny,
        )  # fmt: skip


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
