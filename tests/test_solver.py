"""Reference players: the exact solver, alpha-beta and random on known positions."""
import numpy as np
import pytest

from games.connectfour import ConnectFour
from games.santorini import Santorini
from games.tictactoe import TicTacToe
from gamegym.arena import run_match
from gamegym.players import AlphaBetaPlayer, RandomPlayer, SolverPlayer, solve


def test_tictactoe_from_the_start_is_a_draw_and_every_first_move_keeps_it():
    solution = solve(TicTacToe(), (0,) * 9)
    assert solution.value == 0
    assert sorted(solution.optimal_actions) == list(range(9))


def test_won_and_lost_positions():
    won = (1, 1, 0,
           -1, -1, 0,
           0, 0, 0)                       # the mover completes the top row at cell 2
    solution = solve(TicTacToe(), won)
    assert solution.value == 1 and 2 in solution.optimal_actions
    graph = TicTacToe()
    lost = (-1, 0, -1,
            0, 1, 0,
            -1, 0, 1)                     # opponent threatens cells 1 and 3: only one can be blocked
    assert solve(graph, lost).value == -1


def test_alphabeta_at_full_depth_agrees_with_the_solver():
    graph, rng = TicTacToe(), np.random.default_rng(3)
    for _ in range(15):
        vertex = graph.roots[0]
        for _ in range(int(rng.integers(0, 5))):
            children = graph.children_at(vertex)
            if not children:
                break
            vertex = children[int(rng.integers(len(children)))]
        if not graph.children_at(vertex):
            continue
        exact = solve(graph, vertex)
        action = AlphaBetaPlayer(9).choose(graph, vertex, rng)
        assert action in exact.optimal_actions


@pytest.mark.parametrize("graph", [TicTacToe(), ConnectFour(4, 4), Santorini(3, 1)],
                         ids=lambda g: type(g).__name__)
def test_players_only_play_legal_moves(graph):
    rng = np.random.default_rng(0)
    for player in (RandomPlayer(), AlphaBetaPlayer(2)):
        vertex = graph.roots[0]
        while graph.children_at(vertex):
            action = player.choose(graph, vertex, rng)
            assert action in graph.actions_at(vertex)
            vertex = graph.child_by_action(vertex, action)


def test_solver_never_loses_to_random_as_either_side():
    graph = TicTacToe()
    result = run_match(graph, SolverPlayer(hurry=False), RandomPlayer(), 20,
                       np.random.default_rng(1))
    assert result.losses == 0 and result.wins >= 10
