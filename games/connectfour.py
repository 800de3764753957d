"""Connect Four as a GameGraph.

A vertex is a tuple of rows*columns ints, cell ``row*columns + column`` with row 0 at the top,
seen from the player to move: 1 = the active player's disc, -1 = the opponent's, 0 = empty.
A move drops a disc into a column that is not full (it lands on the lowest empty cell) and hands
the board to the opponent, so each child is the negated board.  The action id of a move is its
column.  The player who completes four in a row (horizontally, vertically or diagonally) wins:
the vertex after the winning move is terminal with score -1.  A full board is a draw (score 0).
X moves first, so equal disc counts mean X is to move.
"""
from __future__ import annotations

from operator import neg

import numpy as np

from gamegym.graph import GameGraph

__all__ = ["ConnectFour"]


def _check_size(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 4:
        raise ValueError(f"ConnectFour {name} must be an integer >= 4, got {value!r}")
    return value


class ConnectFour(GameGraph):
    """Connect Four on a rows x columns board; action id = column."""

    def __init__(self, rows: int = 6, columns: int = 7) -> None:
        super().__init__()
        self.rows = _check_size("rows", rows)
        self.columns = _check_size("columns", columns)
        size = rows * columns
        # _drops[c]: the cells of column c from the bottom up
        self._drops = tuple(tuple(r * columns + c for r in reversed(range(rows)))
                            for c in range(columns))
        windows = []
        for r in range(rows):
            for c in range(columns):
                for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                    if 0 <= r + 3 * dr < rows and 0 <= c + 3 * dc < columns:
                        windows.append(tuple((r + i * dr) * columns + c + i * dc
                                             for i in range(4)))
        self._windows = tuple(windows)
        self._root = (0,) * size
        self._mirror = tuple(r * columns + columns - 1 - c
                             for r in range(rows) for c in range(columns))

    @property
    def roots(self) -> tuple:
        return (self._root,)

    @property
    def outdegree_max(self) -> int:
        return self.columns

    @property
    def action_space_size(self) -> int:
        return self.columns

    def _lost(self, vertex: tuple) -> bool:
        """True when the opponent (who just moved) has four in a row."""
        for a, b, c, d in self._windows:
            if vertex[a] == -1 and vertex[b] == -1 and vertex[c] == -1 and vertex[d] == -1:
                return True
        return False

    def score_at(self, vertex: tuple) -> float:
        return -1.0 if self._lost(vertex) else 0.0

    def expansion(self, vertex: tuple) -> tuple[tuple, tuple]:
        if self._lost(vertex):
            return (), ()
        flipped = tuple(map(neg, vertex))
        children, actions = [], []
        for column, cells in enumerate(self._drops):
            for i in cells:
                if not vertex[i]:
                    children.append(flipped[:i] + (-1,) + flipped[i + 1:])
                    actions.append(column)
                    break
        return tuple(children), tuple(actions)

    # ----- network input ----------------------------------------------------------------
    def numpify(self, vertex: tuple) -> np.ndarray:
        """float32 [rows, columns, 2]: plane 0 = the active player's discs, plane 1 = the
        opponent's; row 0 is the top row."""
        board = np.asarray(vertex, dtype=np.float32).reshape(self.rows, self.columns)
        return np.stack([board == 1, board == -1], axis=-1).astype(np.float32)

    def unnumpify(self, array: np.ndarray) -> tuple:
        array = np.asarray(array)
        board = array[..., 0].round().astype(int) - array[..., 1].round().astype(int)
        return tuple(int(x) for x in board.reshape(self.rows * self.columns))

    def render(self, vertex: tuple) -> str:
        x_to_move = vertex.count(1) == vertex.count(-1)
        marks = {1: "X", -1: "O", 0: "."} if x_to_move else {1: "O", -1: "X", 0: "."}
        width = len(str(self.columns - 1))
        lines = [" ".join(marks[vertex[r * self.columns + c]].rjust(width)
                          for c in range(self.columns)) for r in range(self.rows)]
        lines.append(" ".join(str(c).rjust(width) for c in range(self.columns)))
        if self._lost(vertex):
            lines.append(f"{marks[-1]} has won")
        elif 0 not in vertex:
            lines.append("draw")
        else:
            lines.append(f"{marks[1]} to move")
        return "\n".join(lines)

    # ----- symmetries: the left-right mirror --------------------------------------------
    @property
    def symmetry_count(self) -> int:
        return 2

    def transform(self, vertex: tuple, k: int) -> tuple:
        if k == 0:
            return vertex
        if k == 1:
            return tuple(vertex[i] for i in self._mirror)
        raise ValueError(f"ConnectFour has no symmetry {k}")

    def describe_action(self, vertex, action: int) -> str:
        return f"column {action + 1}"

    def transform_actions(self, k: int) -> np.ndarray:
        if k == 0:
            return np.arange(self.columns)
        if k == 1:
            return np.arange(self.columns)[::-1].copy()
        raise ValueError(f"ConnectFour has no symmetry {k}")
