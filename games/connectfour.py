"""Connect Four as a GameGraph, on bitboards.

A move drops a disc into a column that is not full (it lands on the lowest empty cell) and hands
the board to the opponent.  The action id of a move is its column.  The player who completes
four in a row (horizontally, vertically or diagonally) wins: the vertex after the winning move
is terminal with score -1.  A full board is a draw (score 0).  X moves first, so an even number
of discs means X is to move.

A vertex is one int seen from the player to move, ``mine | discs << span``: the bitboard `mine`
has a bit set for each of the active player's discs, `discs` for every disc on the board, and
span = columns * (rows + 1) bits.  Column c owns the ``rows + 1`` bits from ``c * (rows + 1)``,
bottom row first; the top bit of each column stays 0, so shifting a board by 1, rows, rows + 1
or rows + 2 bits never carries a line from one column into the next (Pascal Pons's layout).  A
move is then a handful of integer operations: after column c the opponent's discs
``mine ^ discs`` become the mover's and the board is ``discs | (discs + bottom[c])``; "four in a
row" is two shifts and two ands per direction.  One int per vertex (not a pair) hashes fast and
is not tracked by Python's garbage collector, which matters at tens of thousands of new
vertices a second.  `cells(vertex)` gives the board as one int per cell (1 = the active
player's disc, -1 = the opponent's, 0 = empty, row 0 at the top), for people and tests.

The heuristic (for alpha-beta) counts, in every window of four cells on a line, the windows
that only one player occupies: three discs and an empty cell, or two and two empty (and four,
which only happens once the game is won); the discs in the centre column add a little.  It is
the active player's count minus the opponent's, squashed into (-1, 1), so it is antisymmetric
and 0 on the empty board.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from gamegym.game.graph import GameGraph

__all__ = ["ConnectFour"]

# heuristic weights: a window with four of one player's discs (only at the end of the game),
# three and an empty cell, two and two empty cells, a disc in the centre column(s); the sum is
# divided by _SCALE and squashed
_FOUR, _THREE, _TWO, _CENTRE, _SCALE = 100.0, 5.0, 2.0, 1.0, 40.0


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
        height = rows + 1  # bits per column, the empty top bit included
        self._height = height
        self._shifts = (1, height - 1, height, height + 1)  # |, \, -, /
        # (column, its bottom bit, its top cell's bit) for move generation
        self._drops = tuple(
            (c, 1 << (c * height), 1 << (c * height + rows - 1)) for c in range(columns)
        )
        # _bits[i]: the bit of cell i = row*columns + column (row 0 at the top)
        self._bits = np.array(
            [c * height + rows - 1 - r for r in range(rows) for c in range(columns)], dtype=np.int64
        )
        self._bytes = (columns * height + 7) // 8
        # boards of at most 64 bits are converted to and from cells with uint64 shifts
        self._shift_grid = (
            self._bits.astype(np.uint64).reshape(rows, columns, 1)
            if columns * height <= 64
            else None
        )
        self._span = columns * height  # vertex = mine | discs << span
        self._low = (1 << self._span) - 1
        self._moves: dict = {}  # discs -> (the discs after each legal move << span, columns)
        self._column_mask = (1 << rows) - 1
        self._full = sum(self._column_mask << (c * height) for c in range(columns))
        self._centre = sum(
            self._column_mask << (c * height) for c in {(columns - 1) // 2, columns // 2}
        )
        # for each line direction: the bits where a window of four may start
        self._window_starts = tuple(
            self._starts(dr, dc) for dr, dc in ((1, 0), (-1, 1), (0, 1), (1, 1))
        )
        self._root = 0

    def _starts(self, up: int, right: int) -> int:
        """Bits of the cells from which four cells going (up rows, right columns) fit."""
        starts = 0
        for c in range(self.columns):
            for r in range(self.rows):  # r counts from the bottom here
                if 0 <= r + 3 * up < self.rows and c + 3 * right < self.columns:
                    starts |= 1 << (c * self._height + r)
        return starts

    @property
    def roots(self) -> tuple:
        return (self._root,)

    @property
    def outdegree_max(self) -> int:
        return self.columns

    @property
    def action_space_size(self) -> int:
        return self.columns

    # ----- rules ------------------------------------------------------------------------
    def _four(self, discs: int) -> bool:
        """True when these discs hold four in a row."""
        vertical, falling, across, rising = self._shifts
        pairs = discs & (discs >> vertical)
        if pairs & (pairs >> 2 * vertical):
            return True
        pairs = discs & (discs >> across)
        if pairs & (pairs >> 2 * across):
            return True
        pairs = discs & (discs >> rising)
        if pairs & (pairs >> 2 * rising):
            return True
        pairs = discs & (discs >> falling)
        return bool(pairs & (pairs >> 2 * falling))

    def _split(self, vertex: int) -> tuple[int, int]:
        """(mine, discs) of a vertex."""
        return vertex & self._low, vertex >> self._span

    def _moves_at(self, discs: int) -> tuple[tuple, tuple]:
        """The discs after each legal move (shifted into place in a vertex) and the move's
        column, remembered per `discs` (the moves depend only on which cells are taken)."""
        after, columns = [], []
        for column, bottom, top in self._drops:
            if not discs & top:
                after.append((discs | (discs + bottom)) << self._span)
                columns.append(column)
        if len(self._moves) >= self.cache_limit:
            self._moves.clear()
        moves = self._moves[discs] = (tuple(after), tuple(columns))
        return moves

    def score_at(self, vertex: int) -> float:
        return -1.0 if self._four((vertex & self._low) ^ (vertex >> self._span)) else 0.0

    def expansion(self, vertex: int) -> tuple[tuple, tuple]:
        discs = vertex >> self._span
        theirs = (vertex & self._low) ^ discs
        if self._four(theirs):
            return (), ()
        moves = self._moves.get(discs)
        if moves is None:
            moves = self._moves_at(discs)
        return tuple(map(theirs.__or__, moves[0])), moves[1]

    def heuristic_at(self, vertex: int) -> float:
        """Open threes and twos by window, and the centre column, for the active player minus
        the opponent, squashed into (-1, 1) (see the module docstring)."""
        mine, discs = self._split(vertex)
        theirs = mine ^ discs
        empty = self._full & ~discs
        total = _CENTRE * ((mine & self._centre).bit_count() - (theirs & self._centre).bit_count())
        for shift, starts in zip(self._shifts, self._window_starts):
            total += self._window_score(mine, empty, shift, starts)
            total -= self._window_score(theirs, empty, shift, starts)
        return math.tanh(total / _SCALE)

    @staticmethod
    def _window_score(own: int, empty: int, shift: int, starts: int) -> float:
        """Weighted count of the windows (starting at `starts`, cells `shift` bits apart) that
        hold four of `own` discs, three and an empty cell, or two and two empty cells."""
        free = own | empty  # cells not held by the other player
        s2, s3 = 2 * shift, 3 * shift
        open_windows = starts & free & (free >> shift) & (free >> s2) & (free >> s3)
        if not open_windows:
            return 0.0
        a, b, c, d = own, own >> shift, own >> s2, own >> s3
        both_ab, one_ab, both_cd, one_cd = a & b, a ^ b, c & d, c ^ d
        four = both_ab & both_cd
        three = (both_ab & one_cd) | (both_cd & one_ab)
        two = (both_ab & ~c & ~d) | (both_cd & ~a & ~b) | (one_ab & one_cd)
        return (
            _FOUR * (four & open_windows).bit_count()
            + _THREE * (three & open_windows).bit_count()
            + _TWO * (two & open_windows).bit_count()
        )

    def swap_players(self, vertex: int) -> int:
        """The same discs with the other player to move (for the heuristic's check)."""
        mine, discs = self._split(vertex)
        return (mine ^ discs) | discs << self._span

    # ----- the board as cells -------------------------------------------------------------
    def _planes(self, vertex: int) -> np.ndarray:
        """uint8 [2, rows*columns]: the active player's discs, the opponent's, by cell."""
        if self._shift_grid is not None:
            return self._grid(vertex).reshape(-1, 2).T
        mine, discs = self._split(vertex)
        size = self._bytes
        raw = np.frombuffer(
            mine.to_bytes(size, "little") + (mine ^ discs).to_bytes(size, "little"), dtype=np.uint8
        )
        return np.unpackbits(raw, bitorder="little").reshape(2, 8 * size)[:, self._bits]

    def cells(self, vertex: int) -> tuple:
        """The board as rows*columns ints, cell row*columns + column with row 0 at the top:
        1 = the active player's disc, -1 = the opponent's, 0 = empty."""
        planes = self._planes(vertex).astype(np.int64)
        return tuple((planes[0] - planes[1]).tolist())

    def vertex_from_cells(self, cells) -> int:
        """Inverse of `cells` (the discs must rest on each other, as in play)."""
        values = np.asarray(cells, dtype=np.int64).reshape(self.rows * self.columns)
        return self._from_planes(values == 1, values == -1)

    def _from_planes(self, mine_cells: np.ndarray, their_cells: np.ndarray) -> int:
        def to_int(cells: np.ndarray) -> int:
            bits = np.zeros(8 * self._bytes, dtype=np.uint8)
            bits[self._bits[cells]] = 1
            return int.from_bytes(np.packbits(bits, bitorder="little").tobytes(), "little")

        mine = to_int(mine_cells)
        return mine | (mine | to_int(their_cells)) << self._span

    def _grid(self, vertex: int) -> np.ndarray:
        """uint64 [rows, columns, 2] of 0/1 on a board of at most 64 bits: numpify's layout."""
        return self._grids((vertex,))[0]

    def _grids(self, vertices) -> np.ndarray:
        """`_grid` of each vertex, stacked: one shift for the whole batch."""
        both = np.array([(m, m ^ d) for m, d in map(self._split, vertices)], dtype=np.uint64)
        return (both.reshape(len(both), 1, 1, 2) >> self._shift_grid) & np.uint64(1)

    def board_at(self, vertex: int) -> dict:
        """The grid for the web page: red (piece 0, X) moved first; a move is a click anywhere in
        its column (the cell where the disc lands first)."""
        board, columns = self.cells(vertex), self.columns
        mover = (vertex >> self._span).bit_count() % 2
        cells = [{} if not v else {"piece": mover if v == 1 else 1 - mover} for v in board]
        moves = []
        for column in self.actions_at(vertex):
            column_cells = list(range(column, self.rows * columns, columns))
            landing = max(i for i in column_cells if not board[i])
            moves.append(
                {
                    "action": column,
                    "clicks": [[landing] + [i for i in column_cells if i != landing]],
                }
            )
        return {
            "rows": self.rows,
            "columns": columns,
            "cells": cells,
            "players": ["red", "yellow"],
            "style": "discs",
            "moves": moves,
        }

    # ----- network input ----------------------------------------------------------------
    def numpify(self, vertex: int) -> np.ndarray:
        """float32 [rows, columns, 2]: plane 0 = the active player's discs, plane 1 = the
        opponent's; row 0 is the top row."""
        if self._shift_grid is not None:
            return self._grid(vertex).astype(np.float32)
        return self._planes(vertex).T.reshape(self.rows, self.columns, 2).astype(np.float32)

    def numpify_many(self, vertices) -> np.ndarray:
        """numpify of each vertex, stacked: on a board of at most 64 bits, one shift for the
        whole batch."""
        if self._shift_grid is None:
            return super().numpify_many(vertices)
        return self._grids(vertices).astype(np.float32)

    def unnumpify(self, array: np.ndarray) -> int:
        planes = np.asarray(array).reshape(self.rows * self.columns, 2).round()
        return self._from_planes(planes[:, 0] == 1, planes[:, 1] == 1)

    def render(self, vertex: int) -> str:
        board = self.cells(vertex)
        discs = vertex >> self._span
        x_to_move = discs.bit_count() % 2 == 0
        marks = {1: "X", -1: "O", 0: "."} if x_to_move else {1: "O", -1: "X", 0: "."}
        width = len(str(self.columns - 1))
        lines = [
            " ".join(marks[board[r * self.columns + c]].rjust(width) for c in range(self.columns))
            for r in range(self.rows)
        ]
        lines.append(" ".join(str(c).rjust(width) for c in range(self.columns)))
        if self.score_at(vertex) < 0:
            lines.append(f"{marks[-1]} has won")
        elif discs == self._full:
            lines.append("draw")
        else:
            lines.append(f"{marks[1]} to move")
        return "\n".join(lines)

    # ----- symmetries: the left-right mirror --------------------------------------------
    @property
    def symmetry_count(self) -> int:
        return 2

    def _mirror(self, bits: int) -> int:
        height, mask, last = self._height, self._column_mask, self.columns - 1
        mirrored = 0
        for c in range(self.columns):
            mirrored |= ((bits >> (c * height)) & mask) << ((last - c) * height)
        return mirrored

    def transform(self, vertex: int, k: int) -> int:
        if k == 0:
            return vertex
        if k == 1:
            mine, discs = self._split(vertex)
            return self._mirror(mine) | self._mirror(discs) << self._span
        raise ValueError(f"ConnectFour has no symmetry {k}")

    def describe_action(self, vertex, action: int) -> str:
        return f"column {action + 1}"

    # ----- the exact solver and the solved-position benchmark ------------------------------
    def exact_solver(self):
        """games.connectfour_solver's solver, each call bounded by SOLVER_SECONDS."""
        from games.connectfour_solver import SOLVER_SECONDS, ConnectFourSolver

        return ConnectFourSolver(self, seconds=SOLVER_SECONDS)

    @property
    def benchmark_positions(self) -> Path | None:
        """3,000 solved positions of the 6 x 7 board (scripts/make_connectfour_positions.py)."""
        if (self.rows, self.columns) != (6, 7):
            return None
        return Path(__file__).with_name("connectfour-positions.tsv")

    def transform_actions(self, k: int) -> np.ndarray:
        if k == 0:
            return np.arange(self.columns)
        if k == 1:
            return np.arange(self.columns)[::-1].copy()
        raise ValueError(f"ConnectFour has no symmetry {k}")
