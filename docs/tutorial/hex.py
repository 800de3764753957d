"""Hex on a small rhombus board: the game of the tutorial "Teach it your own game".

Two players take turns placing a stone on an empty cell.  X, who moves first, wins by joining
the top row to the bottom row with a chain of X stones; O wins by joining the left column to
the right column.  A full board always has exactly one winner, so there are no draws.

Cells are (row, column) on an N x N rhombus; a cell touches six others:
(r-1, c), (r-1, c+1), (r, c-1), (r, c+1), (r+1, c-1), (r+1, c).

gamegym sees every position from the view of the player to move.  Here that player always
joins top to bottom: after a move the board is *transposed* (row and column swapped, which
keeps the six neighbours of every cell) and the two colours are swapped.  So a vertex is a
pair of bitmasks (mine, theirs) in the mover's frame, and one network learns both sides.
"""

from __future__ import annotations

import numpy as np

from gamegym import GameGraph


class Hex(GameGraph):
    """Hex on a `size` x `size` board (2 to 8); action id = row * size + column in the frame
    of the player to move."""

    def __init__(self, size: int = 4):
        super().__init__()
        if not isinstance(size, int) or not 2 <= size <= 8:
            raise ValueError(f"size must be an integer from 2 to 8, got {size!r}")
        self.size = size
        cells = range(size * size)
        self._transposed = [(i % size) * size + i // size for i in cells]
        self._neighbours = [self._cell_neighbours(i) for i in cells]

    def _cell_neighbours(self, cell: int) -> tuple[int, ...]:
        n, (r, c) = self.size, divmod(cell, self.size)
        steps = ((-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0))
        return tuple(
            (r + dr) * n + c + dc for dr, dc in steps if 0 <= r + dr < n and 0 <= c + dc < n
        )

    # ----- the contract -------------------------------------------------------------------
    @property
    def roots(self) -> tuple:
        return ((0, 0),)  # (mine, theirs): the empty board

    @property
    def outdegree_max(self) -> int:
        return self.size * self.size  # the first move may go anywhere

    def expansion(self, vertex: tuple) -> tuple[tuple, tuple]:
        mine, theirs = vertex
        if self._joins_left_right(theirs):  # the player who just moved has won
            return (), ()
        empty = [i for i in range(self.size * self.size) if not (mine | theirs) >> i & 1]
        # after the move the other player is to move: swap the colours, transpose the board
        children = tuple((self._transpose(theirs), self._transpose(mine | 1 << i)) for i in empty)
        return children, tuple(empty)

    def score_at(self, vertex: tuple) -> float:
        return -1.0 if self._joins_left_right(vertex[1]) else 0.0

    def numpify(self, vertex: tuple) -> np.ndarray:
        planes = np.zeros((self.size, self.size, 2), np.float32)  # [row, column, mine/theirs]
        for plane, stones in enumerate(vertex):
            for i in range(self.size * self.size):
                if stones >> i & 1:
                    planes[i // self.size, i % self.size, plane] = 1.0
        return planes

    def unnumpify(self, array: np.ndarray) -> tuple:
        flat = np.asarray(array).reshape(self.size * self.size, 2)
        return tuple(sum(1 << i for i in range(len(flat)) if flat[i, p] > 0.5) for p in (0, 1))

    # ----- symmetry: turning the board half round keeps who joins which sides ---------------
    @property
    def symmetry_count(self) -> int:
        return 2

    def transform(self, vertex: tuple, k: int) -> tuple:
        if k not in (0, 1):
            raise ValueError(f"Hex has no symmetry {k}")
        return vertex if k == 0 else tuple(self._rotate(stones) for stones in vertex)

    def transform_actions(self, k: int) -> np.ndarray:
        if k not in (0, 1):
            raise ValueError(f"Hex has no symmetry {k}")
        cells = np.arange(self.size * self.size)
        return cells if k == 0 else cells[::-1].copy()

    # ----- for people: the board as X and O see it ------------------------------------------
    def render(self, vertex: tuple) -> str:
        x, o, x_to_move = self._board(vertex)
        n, lines = self.size, []
        lines.append("  " + " ".join("abcdefgh"[c] for c in range(n)))
        for r in range(n):
            marks = (
                "X" if x >> (r * n + c) & 1 else "O" if o >> (r * n + c) & 1 else "."
                for c in range(n)
            )
            lines.append(" " * r + f"{r + 1} " + " ".join(marks))
        if self.score_at(vertex) == -1.0:
            lines.append(f"{'O' if x_to_move else 'X'} has won")
        else:
            lines.append(
                f"{'X' if x_to_move else 'O'} to move "
                f"({'top to bottom' if x_to_move else 'left to right'})"
            )
        return "\n".join(lines)

    def describe_action(self, vertex: tuple, action: int) -> str:
        cell = action if self._board(vertex)[2] else self._transposed[action]
        return f"{'abcdefgh'[cell % self.size]}{cell // self.size + 1}"

    # ----- helpers ------------------------------------------------------------------------
    def _board(self, vertex: tuple) -> tuple[int, int, bool]:
        """X's stones, O's stones on the real board, and whether X is to move."""
        mine, theirs = vertex
        x_to_move = bin(mine).count("1") == bin(theirs).count("1")
        if x_to_move:
            return mine, theirs, True
        return self._transpose(theirs), self._transpose(mine), False

    def _transpose(self, stones: int) -> int:
        return sum(
            1 << self._transposed[i] for i in range(self.size * self.size) if stones >> i & 1
        )

    def _rotate(self, stones: int) -> int:
        last = self.size * self.size - 1
        return sum(1 << (last - i) for i in range(last + 1) if stones >> i & 1)

    def _joins_left_right(self, stones: int) -> bool:
        n = self.size
        frontier = [r * n for r in range(n) if stones >> (r * n) & 1]  # stones in column a
        seen = set(frontier)
        while frontier:
            cell = frontier.pop()
            if cell % n == n - 1:
                return True
            for other in self._neighbours[cell]:
                if stones >> other & 1 and other not in seen:
                    seen.add(other)
                    frontier.append(other)
        return False
