"""Tic-tac-toe as a GameGraph.

A vertex is a tuple of 9 ints, cell ``row*3 + column``, seen from the player to move:
1 = the active player's mark, -1 = the opponent's, 0 = empty.  A move marks an empty cell and
hands the board to the opponent, so each child is the negated board.  The action id of a move is
its cell.  The game is over when the player who just moved completed a line (the active player
has lost: score -1) or the board is full (draw: score 0).  X moves first, so equal mark counts
mean X is to move.
"""

from __future__ import annotations

from operator import neg

import numpy as np

from gamegym.game.graph import GameGraph

__all__ = ["TicTacToe", "TicTacToeVariant"]

_LINES = (
    (0, 1, 2),
    (3, 4, 5),
    (6, 7, 8),  # rows
    (0, 3, 6),
    (1, 4, 7),
    (2, 5, 8),  # columns
    (0, 4, 8),
    (2, 4, 6),
)  # diagonals


def _square_symmetry(k: int, row: int, column: int, last: int) -> tuple[int, int]:
    """Image of (row, column) under dihedral symmetry k (0..7) of a square with index `last` as
    its highest row/column; with last=0 it maps a direction (row step, column step)."""
    return (
        (row, column),
        (column, last - row),
        (last - row, last - column),
        (last - column, row),
        (row, last - column),
        (column, row),
        (last - row, column),
        (last - column, last - row),
    )[k]


class TicTacToe(GameGraph):
    """Tic-tac-toe on a 3x3 board; action id = row*3 + column."""

    def __init__(self) -> None:
        super().__init__()
        # _cell_maps[k][i]: the cell that cell i becomes under symmetry k
        self._cell_maps = tuple(
            tuple(r * 3 + c for r, c in (_square_symmetry(k, i // 3, i % 3, 2) for i in range(9)))
            for k in range(8)
        )
        # _sources[k][j]: the cell whose content lands on cell j under symmetry k
        self._sources = tuple(tuple(sorted(range(9), key=m.__getitem__)) for m in self._cell_maps)

    @property
    def roots(self) -> tuple:
        return ((0,) * 9,)

    @property
    def outdegree_max(self) -> int:
        return 9

    @property
    def action_space_size(self) -> int:
        return 9

    @staticmethod
    def _lost(vertex: tuple) -> bool:
        """True when the opponent (who just moved) has a complete line."""
        return any(vertex[a] == -1 and vertex[b] == -1 and vertex[c] == -1 for a, b, c in _LINES)

    def score_at(self, vertex: tuple) -> float:
        return -1.0 if self._lost(vertex) else 0.0

    def expansion(self, vertex: tuple) -> tuple[tuple, tuple]:
        if self._lost(vertex):
            return (), ()
        flipped = tuple(map(neg, vertex))
        actions = tuple(i for i in range(9) if not vertex[i])
        children = tuple(flipped[:i] + (-1,) + flipped[i + 1 :] for i in actions)
        return children, actions

    # ----- network input ----------------------------------------------------------------
    def numpify(self, vertex: tuple) -> np.ndarray:
        """float32 [3, 3, 2]: plane 0 = the active player's marks, plane 1 = the opponent's."""
        board = np.asarray(vertex, dtype=np.float32).reshape(3, 3)
        return np.stack([board == 1, board == -1], axis=-1).astype(np.float32)

    def unnumpify(self, array: np.ndarray) -> tuple:
        array = np.asarray(array)
        board = array[..., 0].round().astype(int) - array[..., 1].round().astype(int)
        return tuple(int(x) for x in board.reshape(9))

    def render(self, vertex: tuple) -> str:
        x_to_move = vertex.count(1) == vertex.count(-1)
        marks = {1: "X", -1: "O", 0: "."} if x_to_move else {1: "O", -1: "X", 0: "."}
        rows = ["".join(marks[vertex[r * 3 + c]] for c in range(3)) for r in range(3)]
        if self._lost(vertex):
            status = f"{marks[-1]} has won"
        elif 0 not in vertex:
            status = "draw"
        else:
            status = f"{marks[1]} to move"
        return "\n".join(rows + [status])

    def board_at(self, vertex: tuple) -> dict:
        """The grid for the web page: X (piece 0) moved first; a move is a click on its cell."""
        mover = 0 if vertex.count(1) == vertex.count(-1) else 1
        cells = [
            {}
            if not v
            else {
                "piece": mover if v == 1 else 1 - mover,
                "label": "XO"[mover if v == 1 else 1 - mover],
            }
            for v in vertex
        ]
        return {
            "rows": 3,
            "columns": 3,
            "cells": cells,
            "players": ["X", "O"],
            "style": "marks",
            "moves": [{"action": a, "clicks": [[a]]} for a in self.actions_at(vertex)],
        }

    # ----- symmetries: the 8 rotations and reflections of the square ----------------------
    @property
    def symmetry_count(self) -> int:
        return 8

    def transform(self, vertex: tuple, k: int) -> tuple:
        if not 0 <= k < 8:
            raise ValueError(f"TicTacToe has no symmetry {k}")
        return tuple(vertex[i] for i in self._sources[k])

    def describe_action(self, vertex: tuple, action: int) -> str:
        return f"row {action // 3 + 1} column {action % 3 + 1}"

    def transform_actions(self, k: int) -> np.ndarray:
        if not 0 <= k < 8:
            raise ValueError(f"TicTacToe has no symmetry {k}")
        return np.array(self._cell_maps[k], dtype=np.int64)


class TicTacToeVariant(TicTacToe):
    """Tic-tac-toe under changed rules: `blocked` cells no one may mark, and `misere` play (who
    completes a line loses).

    The board, the network input (a blocked cell looks empty: nothing tells the network the
    rules changed) and the action ids are those of TicTacToe, so a session can continue from
    TicTacToe into a variant with the same model (`gamegym continue`): the adaptation
    experiment of Curious Replay.  A line through a blocked cell can never be completed; the
    game is drawn when every free cell is marked.  Every variant with blocked cells tried
    (the centre, a corner, an edge, two corners, corner and centre, the four corners, the
    four edges) and misère play are draws with perfect play.  The symmetries are those of the
    square that map the blocked cells onto themselves.
    """

    def __init__(self, blocked=(), misere: bool = False) -> None:
        super().__init__()
        cells = sorted({int(c) for c in blocked})
        if not all(0 <= c < 9 for c in cells) or len(cells) >= 9:
            raise ValueError(f"blocked must name some (not all) cells 0..8, got {blocked!r}")
        if not isinstance(misere, bool):
            raise ValueError(f"misere must be true or false, got {misere!r}")
        self.blocked = frozenset(cells)
        self.misere = misere
        self._game_args = {"blocked": cells, "misere": misere}  # as JSON stores them
        self._kept = tuple(
            k for k in range(8) if {self._cell_maps[k][c] for c in cells} == self.blocked
        )

    def score_at(self, vertex: tuple) -> float:
        """The player who just moved completed a line: the player to move has lost, or in
        misère play won."""
        if not self._lost(vertex):
            return 0.0
        return 1.0 if self.misere else -1.0

    def expansion(self, vertex: tuple) -> tuple[tuple, tuple]:
        if self._lost(vertex):
            return (), ()
        flipped = tuple(map(neg, vertex))
        actions = tuple(i for i in range(9) if not vertex[i] and i not in self.blocked)
        children = tuple(flipped[:i] + (-1,) + flipped[i + 1 :] for i in actions)
        return children, actions

    def render(self, vertex: tuple) -> str:
        lines = super().render(vertex).split("\n")
        rows = [
            "".join("#" if r * 3 + c in self.blocked else lines[r][c] for c in range(3))
            for r in range(3)
        ]
        status = lines[3]
        if status.endswith("has won") and self.misere:
            status = f"{status.split()[0]} has lost (misère)"
        elif status.endswith("to move") and all(vertex[i] or i in self.blocked for i in range(9)):
            status = "draw"
        return "\n".join(rows + [status])

    def board_at(self, vertex: tuple) -> dict:
        """TicTacToe's grid with the blocked cells marked '#'."""
        board = super().board_at(vertex)
        for cell in self.blocked:
            board["cells"][cell] = {"label": "#"}
        return board

    @property
    def symmetry_count(self) -> int:
        return len(self._kept)

    def transform(self, vertex: tuple, k: int) -> tuple:
        return super().transform(vertex, self._symmetry(k))

    def transform_actions(self, k: int) -> np.ndarray:
        return super().transform_actions(self._symmetry(k))

    def _symmetry(self, k: int) -> int:
        if not 0 <= k < len(self._kept):
            raise ValueError(f"this TicTacToeVariant has no symmetry {k}")
        return self._kept[k]
