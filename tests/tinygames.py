"""Tiny GameGraphs for unit tests (no bundled game needed).

TwoPileNim: two piles of stones; a move takes 1 or 2 stones from one pile; whoever takes the
last stone wins, so (0, 0) is terminal with score -1 for the player to move.  The vertex is the
pair of pile sizes.  Action ids: 0 = take 1 from the left pile, 1 = take 2 from the left,
2 = take 1 from the right, 3 = take 2 from the right.  One symmetry besides the identity swaps
the piles (actions 0 <-> 2, 1 <-> 3).  Theory: a pile of n is worth n % 3 (its Grundy number)
and the player to move wins iff (a % 3) ^ (b % 3) != 0.
"""
from __future__ import annotations

import numpy as np

from gamegym.graph import GameGraph


class TwoPileNim(GameGraph):
    """Two-pile take-1-or-2 Nim; roots (2, 3) and (1, 1)."""

    def __init__(self, roots: tuple = ((2, 3), (1, 1))):
        super().__init__()
        self._roots = tuple(roots)

    @property
    def roots(self) -> tuple:
        return self._roots

    @property
    def outdegree_max(self) -> int:
        return 4

    @property
    def action_space_size(self) -> int:
        return 4

    def score_at(self, vertex: tuple) -> float:
        return -1.0 if vertex == (0, 0) else 0.0

    def expansion(self, vertex: tuple) -> tuple[tuple, tuple]:
        a, b = vertex
        children, actions = [], []
        for take in (1, 2):
            if a >= take:
                children.append((a - take, b))
                actions.append(take - 1)
        for take in (1, 2):
            if b >= take:
                children.append((a, b - take))
                actions.append(take + 1)
        return tuple(children), tuple(actions)

    def numpify(self, vertex: tuple) -> np.ndarray:
        return np.asarray(vertex, dtype=np.float32) / 8.0

    def unnumpify(self, array: np.ndarray) -> tuple:
        a, b = (int(round(float(x) * 8.0)) for x in np.asarray(array).reshape(2))
        return (a, b)

    @property
    def symmetry_count(self) -> int:
        return 2

    def transform(self, vertex: tuple, k: int) -> tuple:
        if k == 0:
            return vertex
        if k == 1:
            return (vertex[1], vertex[0])
        raise ValueError(f"no symmetry {k}")

    def transform_actions(self, k: int) -> np.ndarray:
        if k == 0:
            return np.arange(4)
        if k == 1:
            return np.array([2, 3, 0, 1])
        raise ValueError(f"no symmetry {k}")


def nim_value(vertex: tuple) -> int:
    """The exact value of a TwoPileNim vertex for the player to move (theory, not search)."""
    a, b = vertex
    return 1 if (a % 3) ^ (b % 3) else -1
