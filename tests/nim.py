"""TwoPileNim: a tiny correct game for the tests (imported as `from nim import TwoPileNim`)."""

import numpy as np

from gamegym.game.graph import GameGraph


class TwoPileNim(GameGraph):
    """Two piles; a move takes 1 or 2 stones from one pile; who takes the last stone wins.

    Vertex (a, b); (0, 0) is terminal and lost for the player to move.  Action ids 0/1 take 1/2
    from the left pile, 2/3 take 1/2 from the right.  Symmetry 1 swaps the piles.  numpify gives
    the two pile sizes, unnumpify reads them back.  With several roots, game i of the checker
    starts at root i % len(roots).
    Theory: the player to move wins iff (a % 3) xor (b % 3) != 0."""

    def __init__(self, roots=((4, 5),)):
        super().__init__()
        self._roots = tuple(roots)

    @property
    def roots(self):
        return self._roots

    @property
    def outdegree_max(self):
        return 4

    @property
    def action_space_size(self):  # stated, so a subclass that lowers outdegree_max keeps it
        return 4

    def score_at(self, vertex):
        return -1.0 if vertex == (0, 0) else 0.0

    def expansion(self, vertex):
        a, b = vertex
        moves = [((a - t, b), t - 1) for t in (1, 2) if a >= t]
        moves += [((a, b - t), t + 1) for t in (1, 2) if b >= t]
        return tuple(c for c, _ in moves), tuple(x for _, x in moves)

    def numpify(self, vertex):
        return np.asarray(vertex, dtype=np.float32)

    def unnumpify(self, array):
        a, b = np.asarray(array).reshape(-1)[:2]
        return (int(round(a)), int(round(b)))

    @property
    def symmetry_count(self):
        return 2

    def transform(self, vertex, k):
        return vertex if k == 0 else (vertex[1], vertex[0])

    def transform_actions(self, k):
        return np.arange(4) if k == 0 else np.array([2, 3, 0, 1])
