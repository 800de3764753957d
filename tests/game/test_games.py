"""The bundled games: known positions with exact outcomes, a slow reference for Santorini's rules,
and the conformance test: every bundled game passes `gamegym check` (the GameGraph contract,
symmetries and numpify included) and the rules all of them share."""

from __future__ import annotations

import math
from itertools import permutations

import numpy as np
import pytest

from gamegym.game.checker import GraphChecker
from games.connectfour import ConnectFour
from games.santorini import Santorini
from games.tictactoe import TicTacToe, TicTacToeVariant

ALL_GAMES = [  # game, arguments, random games the checker plays
    pytest.param(TicTacToe, {}, 20, id="tictactoe"),
    pytest.param(TicTacToeVariant, {"blocked": [0, 4]}, 20, id="tictactoe-blocked-0-4"),
    pytest.param(TicTacToeVariant, {"blocked": [1], "misere": True}, 20, id="tictactoe-misere"),
    pytest.param(ConnectFour, {}, 20, id="connectfour-6x7"),
    pytest.param(ConnectFour, {"rows": 4, "columns": 4}, 20, id="connectfour-4x4"),
    pytest.param(ConnectFour, {"rows": 5, "columns": 4}, 20, id="connectfour-5x4"),
    pytest.param(ConnectFour, {"rows": 4, "columns": 5}, 20, id="connectfour-4x5"),
    pytest.param(Santorini, {}, 20, id="santorini-3x1"),
    pytest.param(Santorini, {"dimension": 3, "units_per_player": 2}, 10, id="santorini-3x2"),
    pytest.param(Santorini, {"dimension": 4, "units_per_player": 1}, 10, id="santorini-4x1"),
    pytest.param(Santorini, {"dimension": 4, "units_per_player": 2}, 5, id="santorini-4x2"),
    pytest.param(Santorini, {"dimension": 5, "units_per_player": 2}, 5, id="santorini-5x2"),
]


def play(game, actions):
    """The vertices from the root along a list of action ids (root first)."""
    vertices = [game.roots[0]]
    for action in actions:
        vertices.append(game.child_by_action(vertices[-1], action))
    return vertices


def playout_vertices(game, rng, games):
    """Every vertex visited by `games` uniformly random playouts from the root."""
    for _ in range(games):
        vertex = game.roots[0]
        while True:
            yield vertex
            children = game.children_at(vertex)
            if not children:
                break
            vertex = children[rng.integers(len(children))]


def assert_won_by_last_move(game, actions):
    """Every vertex along the line is open to play except the last, which is lost for its mover."""
    vertices = play(game, actions)
    for vertex in vertices[:-1]:
        assert game.score_at(vertex) == 0.0
        assert not game.terminal_at(vertex)
    assert game.score_at(vertices[-1]) == -1.0
    assert game.expansion(vertices[-1]) == ((), ())
    assert game.terminal_at(vertices[-1])


# ----- tic-tac-toe ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "actions",
    [
        [0, 3, 1, 4, 2],  # X: top row
        [3, 0, 4, 1, 8, 2],  # O: top row
        [6, 0, 7, 1, 8],  # X: bottom row
        [0, 1, 3, 2, 6],  # X: left column
        [1, 0, 4, 3, 2, 6],  # O: left column
        [2, 0, 5, 1, 8],  # X: right column
        [0, 1, 4, 2, 8],  # X: main diagonal
        [2, 0, 4, 1, 6],  # X: anti-diagonal
    ],
)
def test_tictactoe_lines_win(actions):
    assert_won_by_last_move(TicTacToe(), actions)


def test_tictactoe_full_board_is_a_draw():
    game = TicTacToe()
    vertices = play(game, [0, 1, 2, 4, 3, 5, 7, 6, 8])  # X O X / X O O / O X X
    assert all(game.children_at(v) for v in vertices[:-1])
    last = vertices[-1]
    assert 0 not in last
    assert game.score_at(last) == 0.0 and game.terminal_at(last)
    assert game.render(last).splitlines() == ["XOX", "XOO", "OXX", "draw"]


def test_tictactoe_action_id_is_row_times_3_plus_column():
    game = TicTacToe()
    root = game.roots[0]
    assert game.actions_at(root) == tuple(range(9))
    child = game.child_by_action(root, 1 * 3 + 2)  # X in row 1, column 2
    assert child == (0, 0, 0, 0, 0, -1, 0, 0, 0)  # seen by O: X is the opponent
    grandchild = game.child_by_action(child, 2 * 3 + 0)  # O in row 2, column 0
    assert grandchild == (0, 0, 0, 0, 0, 1, -1, 0, 0)
    assert game.actions_at(grandchild) == (0, 1, 2, 3, 4, 7, 8)
    assert game.render(grandchild).splitlines() == ["...", "..X", "O..", "X to move"]


def test_tictactoe_variant_never_marks_a_blocked_cell_and_keeps_the_board():
    game = TicTacToeVariant([4])
    plain = TicTacToe()
    root = game.roots[0]
    assert game.game_args == {"blocked": [4], "misere": False}
    assert game.actions_at(root) == (0, 1, 2, 3, 5, 6, 7, 8)
    assert (
        game.numpify(root).shape == plain.numpify(root).shape
        and game.action_space_size == plain.action_space_size
    )
    assert game.symmetry_count == 8 and TicTacToeVariant([0]).symmetry_count == 2
    assert_won_by_last_move(game, [0, 1, 3, 2, 6])  # X: the left column, clear of the block
    vertices = play(game, [0, 1, 2, 5, 3, 6, 7, 8])  # X O X / X # O / O X O: no line left
    assert game.terminal_at(vertices[-1]) and game.score_at(vertices[-1]) == 0.0
    assert game.render(vertices[-1]).splitlines() == ["XOX", "X#O", "OXO", "draw"]
    assert TicTacToeVariant().actions_at(root) == tuple(range(9))  # plain tic-tac-toe
    for cells in ([9], [-1], range(9)):
        with pytest.raises(ValueError, match="blocked"):
            TicTacToeVariant(cells)


def test_misere_tictactoe_the_line_loses():
    game = TicTacToeVariant(misere=True)
    last = play(game, [0, 3, 1, 4, 2])[-1]  # X completes the top row...
    assert game.terminal_at(last) and game.score_at(last) == 1.0  # ...and O, to move, wins
    assert game.render(last).splitlines()[-1] == "X has lost (misère)"
    from gamegym.game.players import Solver

    assert Solver(game).value(game.roots[0]) == 0.0  # a draw with perfect play


# ----- Connect Four ---------------------------------------------------------------------------
SIZES = [(6, 7), (4, 4), (4, 5), (5, 4)]


@pytest.mark.parametrize("rows, columns", SIZES)
@pytest.mark.parametrize(
    "actions",
    [
        [0, 0, 1, 1, 2, 2, 3],  # X: horizontal, bottom row
        [1, 0, 1, 0, 2, 0, 3, 0],  # O: vertical in column 0
        [0, 1, 0, 1, 0, 1, 0],  # X: vertical in column 0
        [0, 1, 1, 2, 2, 3, 2, 3, 3, 0, 3],  # X: diagonal rising to the right
        [3, 2, 2, 1, 1, 0, 1, 0, 0, 3, 0],  # X: diagonal rising to the left
    ],
)
def test_connectfour_four_in_a_row_wins(rows, columns, actions):
    assert_won_by_last_move(ConnectFour(rows, columns), actions)


def test_connectfour_win_filling_the_board_is_a_win_not_a_draw():
    game = ConnectFour(4, 4)
    actions = [0, 1, 0, 2, 3, 2, 1, 1, 2, 1, 3, 2, 0, 0, 3, 3]  # O completes the top row
    assert_won_by_last_move(game, actions)
    assert game.render(play(game, actions)[-1]).splitlines() == [
        "O O O O",
        "X O X X",
        "X X O X",
        "X O O X",
        "0 1 2 3",
        "O has won",
    ]


def test_connectfour_gravity_and_action_id_is_column():
    game = ConnectFour()
    root = game.roots[0]
    assert game.actions_at(root) == tuple(range(7))
    first, second = (game.cells(v) for v in play(game, [2, 2])[1:])
    bottom, above = 5 * 7 + 2, 4 * 7 + 2
    assert first[bottom] == -1 and sum(map(abs, first)) == 1
    assert second[bottom] == 1 and second[above] == -1 and sum(map(abs, second)) == 2


def test_connectfour_full_column_is_not_legal():
    game = ConnectFour(4, 4)
    vertex = play(game, [0, 0, 0, 0])[-1]
    assert game.actions_at(vertex) == (1, 2, 3)
    assert game.cells(vertex)[0::4] == (-1, 1, -1, 1)  # column 0 from the top, seen by X


def test_connectfour_full_board_is_a_draw():
    game = ConnectFour(4, 4)
    vertices = play(game, [1, 2, 3, 3, 0, 0, 3, 3, 0, 0, 2, 1, 1, 2, 1, 2])
    assert all(game.score_at(v) == 0.0 and game.children_at(v) for v in vertices[:-1])
    assert 0 not in game.cells(vertices[-1])
    assert game.score_at(vertices[-1]) == 0.0 and game.terminal_at(vertices[-1])
    assert game.render(vertices[-1]).splitlines() == [
        "O X O O",
        "X X O X",
        "O O X O",
        "X X O X",
        "0 1 2 3",
        "draw",
    ]


def reference_connectfour(rows, columns, board):
    """{column: child board} and whether the player to move has lost, by the rules, slowly, on a
    list of rows (row 0 at the top; 1 = the player to move, -1 = the opponent, 0 = empty)."""
    grid = [list(board[r * columns : (r + 1) * columns]) for r in range(rows)]

    def line_of_four(player):
        for r in range(rows):
            for c in range(columns):
                for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                    cells = [(r + i * dr, c + i * dc) for i in range(4)]
                    if all(
                        0 <= y < rows and 0 <= x < columns and grid[y][x] == player
                        for y, x in cells
                    ):
                        return True
        return False

    lost = line_of_four(-1)
    children = {}
    for c in range(columns):
        empty = [r for r in range(rows) if grid[r][c] == 0]
        if lost or not empty:
            continue
        after = [row[:] for row in grid]
        after[empty[-1]][c] = 1  # the lowest empty cell
        children[c] = tuple(-x for row in after for x in row)  # seen by the opponent
    return children, lost


def reference_heuristic(rows, columns, board):
    """The Connect Four heuristic by its definition, window by window."""
    from games.connectfour import _CENTRE, _FOUR, _SCALE, _THREE, _TWO

    total = 0.0
    for r in range(rows):
        for c in range(columns):
            for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                if not (0 <= r + 3 * dr < rows and 0 <= c + 3 * dc < columns):
                    continue
                window = [board[(r + i * dr) * columns + c + i * dc] for i in range(4)]
                for player in (1, -1):
                    if -player not in window:
                        own = window.count(player)
                        total += player * {4: _FOUR, 3: _THREE, 2: _TWO}.get(own, 0.0)
    for r in range(rows):
        for c in {(columns - 1) // 2, columns // 2}:
            total += _CENTRE * board[r * columns + c]
    return math.tanh(total / _SCALE)


@pytest.mark.parametrize("rows, columns", SIZES + [(7, 9), (8, 9)])
def test_connectfour_matches_the_reference_move_by_move(rows, columns):
    game = ConnectFour(rows, columns)
    rng = np.random.default_rng(rows * 10 + columns)
    for vertex in playout_vertices(game, rng, games=30):
        board = game.cells(vertex)
        assert game.vertex_from_cells(board) == vertex
        grid = np.asarray(board).reshape(rows, columns)  # the network input of every release
        assert np.array_equal(
            game.numpify(vertex), np.stack([grid == 1, grid == -1], axis=-1).astype(np.float32)
        )
        expected, lost = reference_connectfour(rows, columns, board)
        children, actions = game.expansion(vertex)
        assert list(actions) == sorted(expected)
        assert {a: game.cells(child) for a, child in zip(actions, children)} == expected
        assert game.score_at(vertex) == (-1.0 if lost else 0.0)
        assert game.heuristic_at(vertex) == pytest.approx(
            reference_heuristic(rows, columns, board), abs=1e-12
        )


@pytest.mark.parametrize("kwargs", [{"rows": 3}, {"columns": 3}, {"rows": 4.0}, {"columns": True}])
def test_connectfour_rejects_small_boards(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        ConnectFour(**kwargs)


# ----- Santorini: a slow reference written from the rules -------------------------------------
DIRECTIONS = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1))


def reference_santorini(game, vertex):
    """{action id: child} by the rules, slowly, in board coordinates."""
    dim, units = game.dimension, game.units_per_player
    heights, mine, theirs = vertex
    placements = list(permutations(range(dim * dim), units))
    if any(heights[cell] == 3 for cell in theirs):
        return {}
    if not mine:
        return {
            i: (heights, theirs, cells)
            for i, cells in enumerate(placements)
            if not set(cells) & set(theirs)
        }

    def step(cell, direction):
        row, column = cell // dim + direction[0], cell % dim + direction[1]
        return row * dim + column if 0 <= row < dim and 0 <= column < dim else None

    result = {}
    for w, src in enumerate(mine):
        for m, direction in enumerate(DIRECTIONS):
            dest = step(src, direction)
            if dest is None or dest in mine or dest in theirs:
                continue
            if heights[dest] == 4 or heights[dest] > heights[src] + 1:
                continue
            moved = tuple(dest if i == w else cell for i, cell in enumerate(mine))
            first = len(placements) + (w * 8 + m) * 8
            if heights[dest] == 3:
                result[first + 7 - m] = (heights, theirs, moved)
                continue
            for b, build_direction in enumerate(DIRECTIONS):
                cell = step(dest, build_direction)
                if cell is None or cell in moved or cell in theirs or heights[cell] == 4:
                    continue
                built = tuple(h + (i == cell) for i, h in enumerate(heights))
                result[first + b] = (built, theirs, moved)
    return result


@pytest.mark.parametrize("dimension, units", [(3, 1), (3, 2), (4, 2), (5, 1), (5, 2)])
def test_santorini_matches_the_reference(dimension, units):
    game = Santorini(dimension, units)
    rng = np.random.default_rng(dimension * 10 + units)
    for vertex in playout_vertices(game, rng, games=15):
        children, actions = game.expansion(vertex)
        assert list(actions) == sorted(actions)
        assert dict(zip(actions, children)) == reference_santorini(game, vertex)
        lost = not children and (bool(vertex[1]) or any(vertex[0][c] == 3 for c in vertex[2]))
        assert game.score_at(vertex) == (-1.0 if lost else 0.0)


def santorini_vertex(rows, mine, theirs):
    """A 3x3 vertex from rows of levels."""
    return tuple(h for row in rows for h in row), tuple(mine), tuple(theirs)


def destinations(game, vertex):
    return {child[2][0] for child in game.children_at(vertex)}


def test_santorini_climbing_from_level_2_to_3_wins_without_a_build():
    game = Santorini()
    vertex = santorini_vertex([[2, 3, 0], [0, 0, 0], [0, 0, 0]], [0], [8])
    east = 4
    win = game.child_by_action(vertex, 9 + (0 * 8 + east) * 8 + (7 - east))
    assert win == (vertex[0], (8,), (1,))
    assert game.score_at(vertex) == 0.0
    assert game.score_at(win) == -1.0 and game.terminal_at(win)
    assert "B has won" in game.render(win)


def test_santorini_a_worker_on_level_3_ends_the_game():
    game = Santorini()
    vertex = santorini_vertex([[0, 0, 0], [0, 3, 0], [0, 0, 0]], [0], [4])
    assert game.expansion(vertex) == ((), ()) and game.score_at(vertex) == -1.0


def test_santorini_trapped_player_loses():
    game = Santorini()
    # my worker in the corner: level 2 and a dome around it, the opponent on the centre
    vertex = santorini_vertex([[0, 2, 0], [4, 1, 0], [0, 0, 0]], [0], [4])
    assert game.expansion(vertex) == ((), ())
    assert game.score_at(vertex) == -1.0 and game.terminal_at(vertex)
    # the same board with the opponent elsewhere: the centre is open
    free = santorini_vertex([[0, 2, 0], [4, 1, 0], [0, 0, 0]], [0], [8])
    assert destinations(game, free) == {4} and game.score_at(free) == 0.0


def test_santorini_trapped_by_own_worker_loses():
    game = Santorini(3, 2)
    vertex = santorini_vertex([[0, 0, 4], [4, 4, 4], [0, 2, 0]], [0, 1], [6, 8])
    assert game.expansion(vertex) == ((), ()) and game.score_at(vertex) == -1.0


def test_santorini_cannot_climb_two_levels_but_may_drop_any():
    game = Santorini()
    low = santorini_vertex([[0, 2, 1], [1, 0, 0], [0, 0, 0]], [0], [8])
    assert destinations(game, low) == {3, 4}
    high = santorini_vertex([[0, 0, 0], [3, 2, 0], [0, 0, 0]], [4], [8])
    assert destinations(game, high) == {0, 1, 2, 3, 5, 6, 7}
    north, south, west = 1, 6, 3
    dropped = game.child_by_action(high, 9 + north * 8 + south)  # down two, build behind
    assert dropped == ((0, 0, 0, 3, 3, 0, 0, 0, 0), (8,), (1,))
    assert game.child_by_action(high, 9 + west * 8 + 7 - west) == (high[0], (8,), (3,))  # wins


def test_santorini_domes_block_moves_and_builds():
    game = Santorini()
    vertex = santorini_vertex([[0, 4, 0], [0, 0, 0], [0, 0, 0]], [0], [8])
    assert destinations(game, vertex) == {3, 4}
    for child in game.children_at(vertex):
        assert child[0][1] == 4
    builds_from_centre = {
        child[0].index(1) for child in game.children_at(vertex) if child[2] == (4,)
    }
    assert builds_from_centre == {0, 2, 3, 5, 6, 7}  # not the dome (1), the worker (8), itself


def test_santorini_build_on_vacated_cell_and_dome_on_level_3():
    game = Santorini()
    vertex = santorini_vertex([[3, 0, 0], [0, 0, 0], [0, 0, 0]], [1], [8])
    south, north_west = 6, 0
    child = game.child_by_action(vertex, 9 + (0 * 8 + south) * 8 + (7 - south))
    assert child == ((3, 1, 0, 0, 0, 0, 0, 0, 0), (8,), (4,))  # built where it stood
    child = game.child_by_action(vertex, 9 + (0 * 8 + south) * 8 + north_west)
    assert child == ((4, 0, 0, 0, 0, 0, 0, 0, 0), (8,), (4,))  # level 3 gets a dome
    assert "##" in game.render(child)


def test_santorini_placement_phase_action_ids():
    game = Santorini()
    assert game.action_space_size == game.outdegree_max == 9 + 64
    root = game.roots[0]
    assert root == ((0,) * 9, (), ())
    assert game.actions_at(root) == tuple(range(9))
    first = game.child_by_action(root, 0)
    assert first == ((0,) * 9, (), (0,))
    assert game.actions_at(first) == (1, 2, 3, 4, 5, 6, 7, 8)
    second = game.child_by_action(first, 4)
    assert second == ((0,) * 9, (0,), (4,))
    # the corner worker moves east (4) or south (6) and builds anywhere around but the centre
    assert game.actions_at(second) == tuple(
        9 + (0 * 8 + m) * 8 + b
        for m, b in [(4, 3), (4, 4), (4, 5), (4, 7), (6, 1), (6, 2), (6, 6), (6, 7)]
    )
    assert "player 2 to move (placement)" in game.render(first)
    assert "player 1 to move" in game.render(second)


def test_santorini_placement_with_two_units_is_ordered():
    game = Santorini(3, 2)
    pairs = list(permutations(range(9), 2))
    assert game.action_space_size == 72 + 128
    assert game.actions_at(game.roots[0]) == tuple(range(72))
    first = game.child_by_action(game.roots[0], pairs.index((5, 2)))
    assert first == ((0,) * 9, (), (5, 2))
    actions = game.actions_at(first)
    assert len(actions) == 7 * 6
    assert all(not {2, 5} & set(pairs[a]) for a in actions)
    second = game.child_by_action(first, pairs.index((0, 8)))
    assert second == ((0,) * 9, (5, 2), (0, 8))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"dimension": 6},
        {"dimension": 2},
        {"dimension": 4.0},
        {"units_per_player": 3},
        {"units_per_player": 0},
    ],
)
def test_santorini_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        Santorini(**kwargs)


# ----- the GameGraph contract on random playouts ---------------------------------------------
@pytest.mark.parametrize("cls, kwargs, games", ALL_GAMES)
def test_every_bundled_game_passes_the_checker_and_the_rules_they_share(cls, kwargs, games):
    game = cls(**kwargs)
    checker = GraphChecker(game, seed=0)  # the contract, symmetries and numpify included
    assert checker.run(games) == [] and checker.notes == []
    assert checker.games_played == games
    for vertex in playout_vertices(game, np.random.default_rng(11), games=4):
        score = game.score_at(vertex)
        children = game.children_at(vertex)
        assert score in (-1.0, 0.0, 1.0)  # only the last move decides these games
        if score == 1.0:
            assert getattr(game, "misere", False)  # who completes a line loses
        if score:
            assert not children
        if not children and cls is Santorini:
            assert score == -1.0  # Santorini has no draws
        assert isinstance(game.render(vertex), str)


def test_moves_are_described_in_words():
    from games.connectfour import ConnectFour
    from games.santorini import Santorini
    from games.tictactoe import TicTacToe

    ttt = TicTacToe()
    assert ttt.describe_action(ttt.roots[0], 5) == "row 2 column 3"
    c4 = ConnectFour()
    assert c4.describe_action(c4.roots[0], 0) == "column 1"
    santorini = Santorini(3, 1)
    root = santorini.roots[0]
    assert santorini.describe_action(root, 4) == "place on r2c2"
    placed = santorini.child_by_action(santorini.child_by_action(root, 0), 8)
    # the first player (on r1c1) moves down-right onto r2c2 and builds right, on r2c3
    action = 9 + (0 * 8 + 7) * 8 + 4
    assert santorini.describe_action(placed, action) == "moves down-right to r2c2, builds right"
    assert action in santorini.actions_at(placed)
    two = Santorini(3, 2)
    assert two.describe_action(two.roots[0], 1) == "place on r1c1 and r1c3"


def test_the_expansion_cache_stays_under_its_limit():
    from games.santorini import Santorini

    graph = Santorini(3, 1)
    graph.cache_limit = 500
    rng = np.random.default_rng(0)
    seen = 0
    for _ in range(100):
        vertex = graph.roots[0]
        while graph.children_at(vertex):
            seen += 1
            assert len(graph._children) <= 500
            children = graph.children_at(vertex)
            vertex = children[rng.integers(len(children))]
    assert seen > 500  # the walk expanded more vertices than the cache keeps
    # a forgotten vertex is expanded again, to the same children
    assert graph.children_at(graph.roots[0]) == Santorini(3, 1).children_at(graph.roots[0])


def test_the_expansion_cache_is_bounded_by_children_too():
    # a vertex of a large board holds many children: the cache counts them as well
    from games.santorini import Santorini

    graph = Santorini(5, 2)
    graph.cache_child_limit = 2_000
    rng = np.random.default_rng(0)
    for _ in range(20):
        vertex = graph.roots[0]
        while graph.children_at(vertex):
            held = sum(len(c) for c in graph._children.values())
            assert held < 2_000 + max(len(c) for c in graph._children.values())
            assert held == graph._cached_children
            children = graph.children_at(vertex)
            vertex = children[rng.integers(len(children))]
    assert len(graph._children) < 2_000 // 10  # far fewer vertices than the limit
