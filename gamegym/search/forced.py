"""KataGo's forced playouts and policy target pruning (Wu, "Accelerating Self-Play Learning
in Go", 2019, section 3.2), for the PUCT rule's self-play searches (`selfplay.search.
forced_playouts`, the constant k; 0 = off).

Forced playouts: at the root of a full self-play search, a child that has been visited but
fewer than n_forced = sqrt(k P total) times, P its prior (the noised one where Dirichlet noise
is mixed in) and total the root's visits, is searched next whatever PUCT says; the first such
child in the root's order, and only at the root.  A move whose first evaluation looked bad
(a Dirichlet noise move, typically) thus keeps being searched a little.

Policy target pruning: the forced visits would teach the policy to predict them, so the
target is not the raw visit counts.  From every child but the most visited c*, visits are
taken off one by one, at most n_forced of them, while the child's PUCT with the lower count
stays below c*'s PUCT (each with its final mean value, as the search's PUCT computes it); a
child left with 1 visit or none counts 0.  The target is what remains, normalised.  The move
played is still drawn from the unpruned counts (the paper prunes the policy target only).

The forcing check here is the Python core's; the compiled core's is
gamegym.search._flat_kernels.forced_child, the same float operations in the same order.  The
pruning runs in Python for both cores (it reads a searched root's statistics once per move).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["forced_child", "pruned_visits"]


def forced_child(node: Any, k: float) -> int:
    """The first child of `node` that has been visited (virtual visits count) but fewer than
    sqrt(k * prior * node.total) times, or -1 when none is; where the MCTS-solver proved a
    child, that child is never forced (its value is exact)."""
    total = node.total
    children = node.children if node.solved else None
    i = 0
    for n, p in zip(node.visits, node.priors):
        if (
            n > 0
            and n < math.sqrt(k * p * total)
            and (children is None or children[i] is None or children[i].proven is None)
        ):
            return i
        i += 1  # noqa: SIM113 - faster than enumerate over zip here
    return -1


def pruned_visits(
    root: Any, k: float, exploration_const: float, low: float = 0.0, span: float = 0.0
) -> list[float]:
    """The root's visit counts with the forced visits taken off (the module docstring), one
    per child: the policy target before normalisation.  PUCT(c, n) = Q(c) + c_puct
    sqrt(total + 1) P(c) / (1 + n), Q the child's mean value, mapped to [0, 1] by (Q - low) /
    span where `span` is not 0 (MuZero's normalised Q).  Where the MCTS-solver proved
    something, only the proven-best children (`Node.proven_best`) keep visits."""
    visits, values, priors, total = root.visits, root.values, root.priors, root.total
    allowed = root.proven_best()
    indices = list(range(len(visits))) if allowed is None else list(allowed)
    kept = [0.0] * len(visits)
    best = max(indices, key=visits.__getitem__)  # the first of the most visited
    if visits[best] <= 0:
        return kept
    scale = exploration_const * math.sqrt(total + 1)

    def q(i: int) -> float:
        mean = values[i] / visits[i]
        return (mean - low) / span if span else mean

    bar = q(best) + scale * priors[best] / (1 + visits[best])  # c*'s PUCT
    for i in indices:
        n = visits[i]
        if i == best or n <= 0:
            kept[i] = n
            continue
        forced = math.sqrt(k * priors[i] * total)
        value, push = q(i), scale * priors[i]
        m = n  # taking one more visit off leaves m - 1, whose PUCT is value + push / m
        while m >= 1 and n - m + 1 <= forced and value + push / m < bar:
            m -= 1
        kept[i] = m if m > 1 else 0.0
    return kept
