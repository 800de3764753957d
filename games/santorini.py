"""Santorini (no god powers) as a GameGraph.

Board: dimension x dimension cells, cell ``row*dimension + column``.  Each cell has a level:
0 (ground), 1, 2, 3, or 4 (a dome).

Vertex: ``(heights, mine, theirs)`` seen from the player to move (the *active* player):
  heights  tuple of dimension**2 ints in 0..4
  mine     the cells of the active player's workers, () until they are placed
  theirs   the cells of the opponent's workers, () until they are placed
A child swaps `mine` and `theirs`, so every ply hands the move to the other player.

Turn: move one of your workers to an adjacent cell (8 directions) that holds no worker and no
dome and is at most one level higher (going down any number of levels is allowed), then build
one level on a cell adjacent to the worker's new position that holds no worker and no dome
(the cell just left is free); building on level 3 puts a dome.  Moving up onto level 3 wins at
once, without a build: that child is terminal with score -1 for its player to move.  A player
who cannot move loses: the vertex is terminal with score -1 (whenever a move exists, a build
exists too, because the cell just left can always be built on).

Placement is part of the game, as moves: the single root is the empty board, the first player
places all of its workers in one move, then the second player places all of its workers in one
move on free cells.  So the network learns placement too, the solver solves the whole game, and
there is one root instead of one per opening placement.  A placement places all of a player's
workers at once so that the player to move alternates on every ply, as negamax scores need.

Action ids (`action_space_size` = P + units_per_player*64):
  0 .. P-1                    placements: the ordered tuples of distinct cells
                              (itertools.permutations order), worker w goes to the w-th cell;
                              P = 9 for Santorini(3, 1), P = n*(n-1) on n cells with 2 units
  P + (w*8 + m)*8 + b         worker w moves in direction m, then builds in direction b from its
                              new cell; a winning move (up onto level 3) builds nothing and uses
                              b = 7 - m, the direction back to the cell it left
Directions m, b index (row step, column step): 0 (-1,-1), 1 (-1,0), 2 (-1,1), 3 (0,-1),
4 (0,1), 5 (1,-1), 6 (1,0), 7 (1,1); 7 - m is the opposite of m.

The heuristic (for alpha-beta) weighs, for each player, the levels its workers stand on, the
cells they could move to (mobility) and the level-3 cells a worker on level 2 could climb (a
threat to win); it is the active player's sum minus the opponent's, squashed into (-1, 1), so it
is antisymmetric and 0 before the workers are placed.

Workers keep their identity: `mine[w]` is worker w wherever it goes, and placements are
ordered.  (Keeping workers sorted by cell would halve the vertices per player, but then "worker
w" would swap under a board symmetry in some positions and not in others, and no fixed
`transform_actions(k)` permutation could map the action ids.)
"""

from __future__ import annotations

import math
from itertools import permutations
from operator import itemgetter

import numpy as np

from gamegym.game.graph import GameGraph

__all__ = ["Santorini"]

DIRECTIONS = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1))
_NAMES = ("up-left", "up", "up-right", "left", "right", "down-left", "down", "down-right")
DOME = 4
WIN_LEVEL = 3
# heuristic weights: a level under a worker, a cell a worker could move to, a level-3 cell a
# worker on level 2 could climb; the sum is divided by _SCALE and squashed
_LEVEL, _MOBILITY, _THREAT, _SCALE = 1.0, 0.1, 1.0, 3.0


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


def _check_range(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"Santorini {name} must be an integer in {low}..{high}, got {value!r}")
    return value


class Santorini(GameGraph):
    """Santorini on a dimension x dimension board with units_per_player workers each."""

    def __init__(self, dimension: int = 3, units_per_player: int = 1) -> None:
        super().__init__()
        self.dimension = _check_range("dimension", dimension, 3, 5)
        self.units_per_player = _check_range("units_per_player", units_per_player, 1, 2)
        size = dimension * dimension
        self._size = size
        # _neighbours[cell]: (direction index, neighbour cell) for each neighbour on the board
        self._neighbours = tuple(
            tuple(
                (m, (cell // dimension + dr) * dimension + cell % dimension + dc)
                for m, (dr, dc) in enumerate(DIRECTIONS)
                if 0 <= cell // dimension + dr < dimension
                and 0 <= cell % dimension + dc < dimension
            )
            for cell in range(size)
        )
        self._placements = tuple(permutations(range(size), units_per_player))
        self._placement_ids = {cells: i for i, cells in enumerate(self._placements)}
        self._action_count = len(self._placements) + units_per_player * 64
        self._channels = 5 + 2 * units_per_player + 2
        self._root = ((0,) * size, (), ())
        self._build_symmetries()

    def _build_symmetries(self) -> None:
        last = self.dimension - 1
        cell_maps, sources, action_maps = [], [], []
        for k in range(8):
            cell_map = tuple(
                r * self.dimension + c
                for r, c in (
                    _square_symmetry(k, i // self.dimension, i % self.dimension, last)
                    for i in range(self._size)
                )
            )
            direction_map = [
                DIRECTIONS.index(_square_symmetry(k, dr, dc, 0)) for dr, dc in DIRECTIONS
            ]
            perm = [
                self._placement_ids[tuple(cell_map[c] for c in cells)] for cells in self._placements
            ]
            base = len(self._placements)
            for w in range(self.units_per_player):
                for m in range(8):
                    for b in range(8):
                        perm.append(base + (w * 8 + direction_map[m]) * 8 + direction_map[b])
            cell_maps.append(cell_map)
            sources.append(tuple(sorted(range(self._size), key=cell_map.__getitem__)))
            action_maps.append(np.array(perm, dtype=np.int64))
        self._cell_maps, self._sources, self._action_maps = cell_maps, sources, action_maps
        # the solver and the sample augmentation transform millions of vertices: a C-level
        # getter per symmetry is several times faster than a generator over the cells
        self._height_getters = tuple(itemgetter(*source) for source in sources)
        self._symmetries = tuple(zip(self._height_getters, cell_maps))

    @property
    def roots(self) -> tuple:
        return (self._root,)

    @property
    def outdegree_max(self) -> int:
        return self._action_count

    @property
    def action_space_size(self) -> int:
        return self._action_count

    # ----- rules ------------------------------------------------------------------------
    def _can_move(self, heights: tuple, mine: tuple, theirs: tuple) -> bool:
        for src in mine:
            limit = heights[src] + 1
            for _, dest in self._neighbours[src]:
                height = heights[dest]
                if height <= limit and height != DOME and dest not in theirs and dest not in mine:
                    return True
        return False

    def score_at(self, vertex: tuple) -> float:
        heights, mine, theirs = vertex
        for cell in theirs:
            if heights[cell] == WIN_LEVEL:
                return -1.0
        if mine and not self._can_move(heights, mine, theirs):
            return -1.0
        return 0.0

    def expansion(self, vertex: tuple) -> tuple[tuple, tuple]:
        heights, mine, theirs = vertex
        for cell in theirs:
            if heights[cell] == WIN_LEVEL:
                return (), ()
        if not mine:
            return self._place(heights, theirs)
        neighbours = self._neighbours
        first = len(self._placements)
        children, actions = [], []
        for w, src in enumerate(mine):
            limit = heights[src] + 1
            for m, dest in neighbours[src]:
                height = heights[dest]
                if height > limit or height == DOME or dest in theirs or dest in mine:
                    continue
                moved = mine[:w] + (dest,) + mine[w + 1 :]
                base = first + (w * 8 + m) * 8
                if height == WIN_LEVEL:
                    children.append((heights, theirs, moved))
                    actions.append(base + 7 - m)
                    continue
                for b, cell in neighbours[dest]:
                    level = heights[cell]
                    if level == DOME or cell in theirs or cell in moved:
                        continue
                    children.append(
                        (heights[:cell] + (level + 1,) + heights[cell + 1 :], theirs, moved)
                    )
                    actions.append(base + b)
        return tuple(children), tuple(actions)

    def _place(self, heights: tuple, theirs: tuple) -> tuple[tuple, tuple]:
        children, actions = [], []
        for i, cells in enumerate(self._placements):
            for cell in cells:
                if cell in theirs:
                    break
            else:
                children.append((heights, theirs, cells))
                actions.append(i)
        return tuple(children), tuple(actions)

    # ----- heuristic ----------------------------------------------------------------------
    def heuristic_at(self, vertex: tuple) -> float:
        """Levels, mobility and threats of the active player minus the opponent's, squashed
        into (-1, 1) (see the module docstring)."""
        heights, mine, theirs = vertex
        occupied = mine + theirs
        total = self._strength(heights, mine, occupied) - self._strength(heights, theirs, occupied)
        return math.tanh(total / _SCALE)

    def _strength(self, heights: tuple, workers: tuple, occupied: tuple) -> float:
        strength = 0.0
        for src in workers:
            level = heights[src]
            strength += _LEVEL * level
            for _, dest in self._neighbours[src]:
                height = heights[dest]
                if height <= level + 1 and height != DOME and dest not in occupied:
                    strength += _MOBILITY
                    if level == WIN_LEVEL - 1 and height == WIN_LEVEL:
                        strength += _THREAT
        return strength

    def swap_players(self, vertex: tuple) -> tuple:
        """The same board with the other player to move (for the heuristic's check)."""
        heights, mine, theirs = vertex
        return heights, theirs, mine

    # ----- network input ----------------------------------------------------------------
    def numpify(self, vertex: tuple) -> np.ndarray:
        """float32 [dimension, dimension, 5 + 2*units + 2]: planes 0..4 one-hot level,
        then one plane per worker of the active player (worker 0 first), one per opponent
        worker, then 1 everywhere while the active player's / the opponent's workers are
        not placed yet."""
        heights, mine, theirs = vertex
        units = self.units_per_player
        planes = np.zeros((self._size, self._channels), dtype=np.float32)
        planes[np.arange(self._size), heights] = 1.0
        for w, cell in enumerate(mine):
            planes[cell, 5 + w] = 1.0
        for w, cell in enumerate(theirs):
            planes[cell, 5 + units + w] = 1.0
        if not mine:
            planes[:, -2] = 1.0
        if not theirs:
            planes[:, -1] = 1.0
        return planes.reshape(self.dimension, self.dimension, self._channels)

    def numpify_many(self, vertices) -> np.ndarray:
        """numpify of each vertex, stacked: the levels set for the whole batch at once, the
        workers gathered first and set in one assignment."""
        n, size, units = len(vertices), self._size, self.units_per_player
        planes = np.zeros((n, size, self._channels), dtype=np.float32)
        heights = np.array([vertex[0] for vertex in vertices], dtype=np.intp).reshape(n, size)
        planes[np.arange(n)[:, None], np.arange(size), heights] = 1.0
        rows: list[int] = []
        cells: list[int] = []
        channels: list[int] = []
        for row, (_, mine, theirs) in enumerate(vertices):
            for first, workers, unplaced in ((5, mine, -2), (5 + units, theirs, -1)):
                if not workers:
                    planes[row, :, unplaced] = 1.0
                for w, cell in enumerate(workers):
                    rows.append(row)
                    cells.append(cell)
                    channels.append(first + w)
        planes[rows, cells, channels] = 1.0
        return planes.reshape(n, self.dimension, self.dimension, self._channels)

    def unnumpify(self, array: np.ndarray) -> tuple:
        planes = np.asarray(array).reshape(self._size, self._channels)
        units = self.units_per_player
        heights = tuple(int(h) for h in planes[:, :5].argmax(axis=1))

        def workers(first: int, unplaced: int) -> tuple:
            if planes[0, unplaced] > 0.5:
                return ()
            return tuple(int(planes[:, first + w].argmax()) for w in range(units))

        return heights, workers(5, -2), workers(5 + units, -1)

    def render(self, vertex: tuple) -> str:
        """A grid of cells 'level + worker' (A = player to move, B = the other, ## = dome)."""
        heights, mine, theirs = vertex
        won = any(heights[cell] == WIN_LEVEL for cell in theirs)
        if not mine:
            ply = 1 if theirs else 0
        else:
            ply = 2 + sum(heights) + won
        lines = []
        for r in range(self.dimension):
            cells = []
            for c in range(self.dimension):
                i = r * self.dimension + c
                mark = "A" if i in mine else "B" if i in theirs else "."
                cells.append("##" if heights[i] == DOME else f"{heights[i]}{mark}")
            lines.append(" ".join(cells))
        status = f"A = player {ply % 2 + 1} to move"
        if not mine:
            status += " (placement)"
        elif self.score_at(vertex) < 0:
            status += " (lost: B has won)"
        return "\n".join(lines + [status])

    def board_at(self, vertex: tuple) -> dict:
        """The grid for the web page: each cell's level (4 = a dome) and the workers of the
        first mover (piece 0) and the second (piece 1).  A placement is a click on each
        worker's cell in turn; a turn is a click on the worker, on the cell it moves to and
        on the cell it builds on (a winning move up onto level 3 builds nothing)."""
        heights, mine, theirs = vertex
        won = any(heights[cell] == WIN_LEVEL for cell in theirs)
        ply = (1 if theirs else 0) if not mine else 2 + sum(heights) + won
        mover, n = ply % 2, self.dimension
        cells = [{"level": h} for h in heights]
        for owner, workers in ((mover, mine), (1 - mover, theirs)):
            for w, cell in enumerate(workers):
                cells[cell]["piece"] = owner
                if self.units_per_player > 1:
                    cells[cell]["label"] = str(w + 1)
        first, moves = len(self._placements), []
        for action in self.actions_at(vertex):
            if action < first:
                clicks = [[cell] for cell in self._placements[action]]
            else:
                w, rest = divmod(action - first, 64)
                m, b = divmod(rest, 8)
                src = mine[w]
                dest = src + DIRECTIONS[m][0] * n + DIRECTIONS[m][1]
                clicks = [[src], [dest]]
                if heights[dest] != WIN_LEVEL:
                    clicks.append([dest + DIRECTIONS[b][0] * n + DIRECTIONS[b][1]])
            moves.append({"action": action, "clicks": clicks})
        return {
            "rows": n,
            "columns": n,
            "cells": cells,
            "players": ["red", "yellow"],
            "style": "levels",
            "moves": moves,
        }

    def describe_action(self, vertex: tuple, action: int) -> str:
        """'place on r1c2' / 'worker 1 moves up-left, builds down' (rows and columns from 1)."""

        def cell(c: int) -> str:
            return f"r{c // self.dimension + 1}c{c % self.dimension + 1}"

        first = len(self._placements)
        if action < first:
            return "place on " + " and ".join(cell(c) for c in self._placements[action])
        w, rest = divmod(action - first, 64)
        m, b = divmod(rest, 8)
        who = f"worker {w + 1} " if self.units_per_player > 1 else ""
        heights, mine, _ = vertex
        if mine:
            src = mine[w]
            dest = src + DIRECTIONS[m][0] * self.dimension + DIRECTIONS[m][1]
            if 0 <= dest < self._size and heights[dest] == WIN_LEVEL:
                return f"{who}moves {_NAMES[m]} to {cell(dest)} and wins"
            return f"{who}moves {_NAMES[m]} to {cell(dest)}, builds {_NAMES[b]}"
        return f"{who}moves {_NAMES[m]}, builds {_NAMES[b]}"

    # ----- symmetries: the 8 rotations and reflections of the square ----------------------
    @property
    def symmetry_count(self) -> int:
        return 8

    def transform(self, vertex: tuple, k: int) -> tuple:
        if not 0 <= k < 8:
            raise ValueError(f"Santorini has no symmetry {k}")
        heights, mine, theirs = vertex
        cell_map = self._cell_maps[k]
        return (
            self._height_getters[k](heights),
            tuple([cell_map[c] for c in mine]),
            tuple([cell_map[c] for c in theirs]),
        )

    def equivalenceclass_of(self, vertex: tuple) -> list:
        # the exact solver keys its table by the smallest image of every vertex it searches:
        # one comprehension over the 8 symmetries, with the workers' cells looked up directly
        # for the usual one or two workers a side (1.5x faster than a comprehension per image)
        heights, mine, theirs = vertex
        symmetries = self._symmetries
        if len(mine) == len(theirs) == 1:
            a, b = mine[0], theirs[0]
            images = [(getter(heights), (m[a],), (m[b],)) for getter, m in symmetries]
        elif len(mine) == len(theirs) == 2:
            a, b, c, d = mine[0], mine[1], theirs[0], theirs[1]
            images = [(getter(heights), (m[a], m[b]), (m[c], m[d])) for getter, m in symmetries]
        else:  # during placement
            images = [
                (getter(heights), tuple([m[c] for c in mine]), tuple([m[c] for c in theirs]))
                for getter, m in symmetries
            ]
        return list(dict.fromkeys(images))

    def transform_actions(self, k: int) -> np.ndarray:
        if not 0 <= k < 8:
            raise ValueError(f"Santorini has no symmetry {k}")
        return self._action_maps[k].copy()
