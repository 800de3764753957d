"""A sum tree: a priority per item, with O(log N) update and proportional sampling, in numpy.

The items' priorities are the leaves of a complete binary tree stored in one float64 array
(node 1 is the root, node k has children 2k and 2k+1, the leaves are nodes L..2L-1 for the
smallest power of two L >= capacity); every inner node holds the sum of its children.  Both
operations work on a whole batch of items at once, a few numpy calls per tree level:

    tree.update(index, priority)   # set the priorities of some items: O(k log N)
    index = tree.sample(k, rng)    # k items drawn with P(i) = p_i / sum_j p_j: O(k log N)

Numpy's cost is per call, not per element, at these sizes, so both keep the calls few: an
update adds each changed leaf's difference to all its ancestors in one call (the sums are
recomputed exactly from the leaves after every `capacity` updated leaves, so rounding errors
cannot pile up), and a draw searches the cumulative sums of one level of 1,024 nodes at once
before it walks down the levels below one at a time.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SumTree"]

TOP_LEVEL = 10  # the level searched at once: its 1,024 nodes' cumulative sums take about
#                  4 us, the price of three levels walked one at a time, and save ten


class SumTree:
    """Priorities of `capacity` items (all 0 at first); see the module."""

    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError(f"a sum tree needs a capacity of at least 1, got {capacity}")
        self.capacity = int(capacity)
        self.depth = max(0, (self.capacity - 1).bit_length())  # levels below the root
        self.leaves = 1 << self.depth  # first leaf node
        self.tree = np.zeros(2 * self.leaves, np.float64)
        self._levels = np.arange(self.depth + 1)  # shifts from a leaf to each ancestor
        self._updated = 0  # leaves changed since the last _resum

    def __len__(self) -> int:
        return self.capacity

    @property
    def total(self) -> float:
        """The sum of all priorities."""
        return float(self.tree[1])

    def priorities(self, index=None) -> np.ndarray:
        """float64 [k]: the priorities of the items `index` (all items when None); a copy."""
        leaves = self.tree[self.leaves : self.leaves + self.capacity]
        return leaves.copy() if index is None else leaves[self._index(index)]

    def update(self, index, priority) -> None:
        """Set the priorities of the items `index` (int [k]) to `priority` (float [k] or one
        number); for an item named twice the last value counts."""
        index = self._index(index)
        priority = np.asarray(priority, np.float64)
        if priority.shape != index.shape:
            priority = np.full(index.shape, priority)  # one number for all (or a clear error)
        if not ((priority >= 0) & (priority < np.inf)).all():  # NaN fails both
            raise ValueError("priorities must be finite and >= 0")
        if len(index) == 0:
            return
        # keep the last value of a repeated item: unique over the reversed order
        _, last = np.unique(index[::-1], return_index=True)
        leaf = index[::-1][last] + self.leaves
        change = priority[::-1][last] - self.tree.take(leaf)
        ancestors = leaf[:, None] >> self._levels  # the leaf and every node above it
        np.add.at(self.tree, ancestors.ravel(), np.repeat(change, self.depth + 1))
        self.tree[leaf] = priority[::-1][last]  # exactly, whatever the rounding
        self._updated += len(leaf)
        if self._updated >= self.capacity:
            self._resum()

    def fill(self, priority) -> None:
        """Set every item's priority at once (float [capacity]): O(N), for restoring."""
        priority = np.asarray(priority, np.float64)
        if priority.shape != (self.capacity,):
            raise ValueError(f"fill needs {self.capacity} priorities, got {priority.shape}")
        if not np.isfinite(priority).all() or (priority < 0).any():
            raise ValueError("priorities must be finite and >= 0")
        self.tree[:] = 0.0
        self.tree[self.leaves : self.leaves + self.capacity] = priority
        self._resum()

    def _resum(self) -> None:
        """Every inner node recomputed as the sum of its children, bottom up: O(N)."""
        first = self.leaves
        while first > 1:
            parent = first // 2
            self.tree[parent:first] = (
                self.tree[first : 2 * first : 2] + self.tree[first + 1 : 2 * first : 2]
            )
            first = parent
        self._updated = 0

    def find(self, mass) -> np.ndarray:
        """int64 [k]: for each value u in [0, total), the item whose span of the cumulative
        priorities holds u (items with priority 0 have no span and are never found)."""
        u = np.array(mass, np.float64, ndmin=1)
        tree = self.tree
        # one level of up to TOP nodes at once: the first whose cumulative sum exceeds u
        top = min(self.depth, TOP_LEVEL)
        sums = np.maximum(tree[1 << top : 2 << top], 0.0).cumsum()
        node = np.minimum(np.searchsorted(sums, u, side="right"), len(sums) - 1)
        u -= np.where(node > 0, sums[node - 1], 0.0)
        node += 1 << top
        for _ in range(self.depth - top):  # then one level at a time
            node <<= 1
            left = tree.take(node)
            right = u >= left
            np.subtract(u, left, out=u, where=right)
            node += right
        index = node - self.leaves
        # rounding can lead past the last item of a subtree onto an empty leaf: rare; those
        # few are found again exactly from the cumulative sums of the leaves
        bad = (index >= self.capacity) | (tree.take(node) <= 0)
        if bad.any():
            index[bad] = self._find_exact(np.array(mass, np.float64, ndmin=1)[bad])
        return index

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """int64 [size]: items drawn independently with probability p_i / total."""
        total = self.total
        if not total > 0:
            raise ValueError("cannot sample: every priority is 0")
        return self.find(rng.random(size) * total)

    def _find_exact(self, mass: np.ndarray) -> np.ndarray:
        cumulative = np.cumsum(self.priorities())
        index = np.searchsorted(cumulative, np.minimum(mass, cumulative[-1]), side="right")
        index = np.minimum(index, self.capacity - 1)
        positive = np.flatnonzero(self.priorities() > 0)
        # an item with priority 0 sits where its cumulative sum equals its neighbour's: move
        # to the next item that has a span (or the last one that does)
        where = np.searchsorted(positive, index)
        return positive[np.minimum(where, len(positive) - 1)]

    def _index(self, index) -> np.ndarray:
        index = np.asarray(index, np.int64).reshape(-1)
        if len(index) and (index.min() < 0 or index.max() >= self.capacity):
            raise IndexError(f"item index out of range [0, {self.capacity})")
        return index
