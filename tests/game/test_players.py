"""gamegym.game.players: the exact solver against theory and a slow reference, alpha-beta against the
solver, and every player only ever plays legal moves."""

import os
import time

import numpy as np
import pytest
from nim import TwoPileNim

from gamegym.game.graph import GameGraphError, VertexError
from gamegym.game.players import (
    AlphaBetaPlayer,
    RandomPlayer,
    Solver,
    SolverPlayer,
    play_game,
    solve,
)
from games.connectfour import ConnectFour
from games.santorini import Santorini
from games.tictactoe import TicTacToe


def nim_value(vertex):
    """The theory: the player to move wins iff (a % 3) xor (b % 3) != 0."""
    a, b = vertex
    return 1.0 if (a % 3) ^ (b % 3) else -1.0


class Loop(TwoPileNim):
    """Taking the last stone of a pile refills it: a graph with cycles."""

    def expansion(self, vertex):
        children, actions = super().expansion(vertex)
        return tuple((a or 3, b or 3) for a, b in children), actions


def reference_value(graph, vertex, memo):
    """Plain negamax over the whole tree, memoized by vertex: no pruning, bounds or symmetry."""
    if vertex not in memo:
        children = graph.expansion(vertex)[0]
        memo[vertex] = (
            float(graph.score_at(vertex))
            if not children
            else max(-reference_value(graph, c, memo) for c in children)
        )
    return memo[vertex]


def random_positions(graph, rng, count):
    """Non-terminal vertices of random games, each at a random ply."""
    found = []
    while len(found) < count:
        vertex, path = graph.roots[0], []
        while graph.children_at(vertex):
            path.append(vertex)
            children = graph.children_at(vertex)
            vertex = children[rng.integers(len(children))]
        found.append(path[rng.integers(len(path))])
    return found


# ----- the exact solver ---------------------------------------------------------------------------
@pytest.mark.parametrize("use_symmetry", [True, False])
def test_solver_matches_nim_theory(use_symmetry):
    graph = TwoPileNim()
    solver = Solver(graph, use_symmetry=use_symmetry)
    for a in range(8):
        for b in range(8):
            solution = solver.solve((a, b))
            if (a, b) == (0, 0):
                assert solution.value == -1.0 and solution.optimal_actions == ()
                continue
            assert solution.value == nim_value((a, b))
            after = {
                x: -nim_value(c)
                for c, x in zip(graph.children_at((a, b)), graph.actions_at((a, b)))
            }
            assert solution.action_values == after
            assert solution.optimal_actions == tuple(
                x for x in after if after[x] == max(after.values())
            )


def test_tictactoe_is_a_draw_and_every_first_move_keeps_it():
    solution = solve(TicTacToe(), (0,) * 9)
    assert solution.value == 0.0
    assert solution.optimal_actions == tuple(range(9))
    assert 0 < solution.nodes < 5000


def test_won_tictactoe_position():
    won = (
        1,
        1,
        0,  # the player to move (X) has two in the top row
        -1,
        -1,
        0,  # and O threatens the middle row
        0,
        0,
        0,
    )
    solution = solve(TicTacToe(), won)
    assert solution.value == 1.0
    assert solution.optimal_actions == (2,)
    assert solution.action_values == {2: 1.0, 5: 0.0, 6: -1.0, 7: -1.0, 8: -1.0}


def test_lost_tictactoe_position():
    lost = (
        -1,
        -1,
        0,  # X (the opponent) threatens cell 2 ...
        -1,
        1,
        0,  # ... and cell 6; O to move cannot block both
        0,
        0,
        1,
    )
    solution = solve(TicTacToe(), lost)
    assert solution.value == -1.0
    assert solution.optimal_actions == (2, 5, 6, 7)


def test_solver_matches_the_reference_on_random_tictactoe_positions():
    graph, rng, memo = TicTacToe(), np.random.default_rng(3), {}
    for use_symmetry in (True, False):
        solver = Solver(graph, use_symmetry=use_symmetry)
        for vertex in random_positions(graph, rng, 40):
            solution = solver.solve(vertex)
            assert solution.value == reference_value(graph, vertex, memo)
            for child, action in zip(graph.children_at(vertex), graph.actions_at(vertex)):
                assert solution.action_values[action] == -reference_value(graph, child, memo)


def santorini_endgames(graph, rng, count, built):
    """Vertices of random Santorini games at the moment `built` levels are on the board."""
    found = []
    while len(found) < count:
        vertex = graph.roots[0]
        while graph.children_at(vertex) and sum(vertex[0]) < built:
            children = graph.children_at(vertex)
            vertex = children[rng.integers(len(children))]
        if graph.children_at(vertex):
            found.append(vertex)
    return found


def test_solver_matches_the_reference_on_santorini_endgames():
    graph, rng = Santorini(3, 1), np.random.default_rng(7)
    solver, memo = Solver(graph), {}
    for vertex in santorini_endgames(graph, rng, 6, built=17):  # the reference: 480,000 vertices
        solution = solver.solve(vertex)
        assert solution.value == reference_value(graph, vertex, memo)
        for child, action in zip(graph.children_at(vertex), graph.actions_at(vertex)):
            assert solution.action_values[action] == -reference_value(graph, child, memo)


def test_solver_refuses_a_graph_with_cycles():
    with pytest.raises(VertexError, match="cycle"):
        Solver(Loop(), use_symmetry=False).value((2, 2))


def test_solver_max_plies_guard():
    with pytest.raises(GameGraphError, match="max_plies=3"):
        Solver(TwoPileNim(), max_plies=3).value((5, 6))


@pytest.mark.skipif(
    os.environ.get("GAMEGYM_SLOW_SOLVE") != "1",
    reason="solving Santorini(3, 1) from its root takes about 4-5 minutes and "
    "1 GB; run with GAMEGYM_SLOW_SOLVE=1",
)
def test_santorini_3x3_1_is_lost_for_the_first_player():
    graph = Santorini(3, 1)
    start = time.perf_counter()
    solution = Solver(graph).solve(graph.roots[0])
    print(
        f"Santorini(3, 1) from the root: value {solution.value}, {solution.nodes} vertices, "
        f"{time.perf_counter() - start:.0f} s"
    )
    assert solution.value == -1.0
    assert solution.optimal_actions == tuple(range(9))  # every placement loses


# ----- alpha-beta -------------------------------------------------------------------------------
def test_alphabeta_at_full_depth_agrees_with_the_solver():
    graph, rng = TicTacToe(), np.random.default_rng(11)
    solver, player = Solver(graph), AlphaBetaPlayer(9)
    for vertex in random_positions(graph, rng, 40):
        result, exact = player.search(graph, vertex), solver.solve(vertex)
        assert np.sign(result.value) == exact.value
        assert set(result.best_actions) <= set(exact.optimal_actions)
        if exact.value == 0:
            assert result.best_actions == exact.optimal_actions


def test_alphabeta_wins_at_once_and_blocks():
    graph = TicTacToe()
    won = (1, 1, 0, -1, -1, 0, 0, 0, 0)
    assert AlphaBetaPlayer(1).search(graph, won).best_actions == (2,)
    must_block = (-1, -1, 0, 1, 0, 0, 0, 0, 0)  # O threatens cell 2, X has no win
    assert AlphaBetaPlayer(2).search(graph, must_block).best_actions == (2,)


def test_alphabeta_and_solverplayer_prefer_the_quickest_win():
    graph, rng = TicTacToe(), np.random.default_rng(0)
    solver, found = Solver(graph), 0
    for vertex in random_positions(graph, rng, 300):
        at_once = tuple(
            a
            for c, a in zip(graph.children_at(vertex), graph.actions_at(vertex))
            if graph.score_at(c) == -1
        )
        if not at_once or set(solver.solve(vertex).optimal_actions) == set(at_once):
            continue  # only positions where a slower win is optimal too
        found += 1
        assert AlphaBetaPlayer(9).search(graph, vertex).best_actions == at_once
        assert SolverPlayer().choose(graph, vertex, rng) in at_once
    assert found >= 10


def test_alphabeta_ties_are_broken_by_the_rng():
    graph = TicTacToe()
    player = AlphaBetaPlayer(2)
    first = {player.choose(graph, (0,) * 9, np.random.default_rng(seed)) for seed in range(30)}
    assert len(first) > 3
    again = [player.choose(graph, (0,) * 9, np.random.default_rng(4)) for _ in range(3)]
    assert len(set(again)) == 1


def test_alphabeta_uses_the_heuristic_at_depth_zero():
    graph = TicTacToe()

    def likes_the_centre(graph, vertex):  # the opponent's view after our move
        return -0.5 if vertex[4] == -1 else 0.0

    result = AlphaBetaPlayer(1, heuristic=likes_the_centre).search(graph, (0,) * 9)
    assert result.best_actions == (4,)
    assert result.value == pytest.approx(0.5 * 0.999)


@pytest.mark.parametrize(
    "graph",
    [TicTacToe(), ConnectFour(), Santorini(3, 1), TwoPileNim()],
    ids=lambda g: type(g).__name__,
)
def test_players_only_play_legal_moves(graph):
    rng = np.random.default_rng(5)

    def noise(graph, vertex):  # a heuristic that ranks moves at random
        return float(rng.uniform(-1, 1))

    players = [RandomPlayer(), AlphaBetaPlayer(2, heuristic=noise), AlphaBetaPlayer(3)]
    for first in players:
        for second in players:
            record = play_game(graph, (first, second), rng)
            for vertex, action in zip(record.vertices, record.actions):
                assert action in graph.actions_at(vertex)
            assert not graph.children_at(record.vertices[-1])


def test_random_player_is_legal_uniform_and_reproducible():
    graph = TicTacToe()
    rng = np.random.default_rng(2)
    counts = np.bincount(
        [RandomPlayer().choose(graph, (0,) * 9, rng) for _ in range(900)], minlength=9
    )
    assert counts.sum() == 900 and counts.min() > 60
    games = [
        play_game(graph, (RandomPlayer(), RandomPlayer()), np.random.default_rng(8))
        for _ in range(2)
    ]
    assert games[0] == games[1]
    with pytest.raises(VertexError, match="game is over"):
        RandomPlayer().choose(graph, games[0].vertices[-1], rng)


def test_solverplayer_never_loses_to_random_at_tictactoe():
    graph, rng = TicTacToe(), np.random.default_rng(9)
    solver_player = SolverPlayer()
    as_first = [play_game(graph, (solver_player, RandomPlayer()), rng).outcome for _ in range(20)]
    as_second = [-play_game(graph, (RandomPlayer(), solver_player), rng).outcome for _ in range(20)]
    assert min(as_first + as_second) >= 0
    assert as_first.count(1.0) >= 15  # random play loses most games against perfect play


def test_play_game_outcome_is_from_the_first_players_view():
    graph = TwoPileNim(roots=[(1, 0)])  # the first player takes the last stone
    record = play_game(graph, (RandomPlayer(), RandomPlayer()), np.random.default_rng(0))
    assert record.actions == (0,) and record.outcome == 1.0
    record = play_game(
        TwoPileNim(roots=[(3, 0)]), (SolverPlayer(), SolverPlayer()), np.random.default_rng(0)
    )
    assert record.outcome == -1.0  # 3 % 3 == 0: the first player loses
