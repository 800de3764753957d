"""The game heuristics that `alphabeta:D` uses."""

import numpy as np
import pytest
from conftest import random_vertices

from gamegym.game.players import AlphaBetaPlayer, game_heuristic
from games.connectfour import ConnectFour
from games.santorini import Santorini
from games.tictactoe import TicTacToe


def after(graph, actions):
    vertex = graph.roots[0]
    for action in actions:
        vertex = graph.child_by_action(vertex, action)
    return vertex


@pytest.mark.parametrize(
    "graph",
    [ConnectFour(), ConnectFour(5, 4), Santorini(3, 1), Santorini(5, 2)],
    ids=lambda g: f"{type(g).__name__}",
)
def test_heuristic_is_antisymmetric_in_range_and_zero_at_the_start(graph):
    assert graph.has_heuristic
    assert graph.heuristic_at(graph.roots[0]) == 0.0
    rng, values = np.random.default_rng(2), []
    for vertex in random_vertices(graph, rng, games=10):
        value = graph.heuristic_at(vertex)
        values.append(value)
        assert -1.0 < value < 1.0
        assert graph.heuristic_at(graph.swap_players(vertex)) == pytest.approx(-value, abs=1e-12)
        for k in range(graph.symmetry_count):
            assert graph.heuristic_at(graph.transform(vertex, k)) == pytest.approx(value, abs=1e-12)
    assert len({round(v, 6) for v in values}) > 10  # it tells positions apart


def test_connectfour_heuristic_sees_open_threes_and_the_centre():
    graph = ConnectFour()
    centre = after(graph, [3])  # O to move; X holds the centre
    assert graph.heuristic_at(centre) < 0.0
    three = after(graph, [1, 6, 2, 6, 3, 5])  # X to move: X has 1 2 3 open on both sides
    assert graph.heuristic_at(three) > 0.1


def test_alphabeta_uses_the_game_heuristic_and_alphabeta0_does_not():
    graph = ConnectFour()
    with_heuristic = AlphaBetaPlayer(2, heuristic=game_heuristic).search(graph, graph.roots[0])
    without = AlphaBetaPlayer(2).search(graph, graph.roots[0])
    assert with_heuristic.best_actions == (3,)  # the centre column
    assert without.best_actions == tuple(range(7)) and without.value == 0.0
    assert game_heuristic(TicTacToe(), (0,) * 9) == 0.0  # no heuristic: the score
