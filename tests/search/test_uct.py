"""The `mcts:N` opponent (gamegym.search.uct.UCTPlayer: the tree core with a rollout evaluator)
on known positions."""

import numpy as np
import pytest
from conftest import random_vertices
from nim import TwoPileNim

from gamegym.game.graph import VertexError
from gamegym.game.players import RandomPlayer, play_game
from gamegym.search.uct import UCTPlayer
from games.connectfour import ConnectFour
from games.santorini import Santorini
from games.tictactoe import TicTacToe


def after(graph, actions):
    vertex = graph.roots[0]
    for action in actions:
        vertex = graph.child_by_action(vertex, action)
    return vertex


# X to move; each position has exactly one move that wins at once (X), or one move that stops
# O from winning at once while X has no win (block)
POSITIONS = [
    pytest.param(TicTacToe(), (1, 1, 0, -1, -1, 0, 0, 0, 0), 2, id="tictactoe-win"),
    pytest.param(TicTacToe(), (-1, -1, 0, 1, 0, 0, 0, 0, 1), 2, id="tictactoe-block"),
    pytest.param(
        ConnectFour(), after(ConnectFour(), [3, 0, 3, 0, 3, 6]), 3, id="connectfour-win-vertical"
    ),
    pytest.param(
        ConnectFour(), after(ConnectFour(), [6, 1, 6, 2, 0, 3]), 4, id="connectfour-block-row"
    ),  # O has 1 2 3 on the bottom row; 0 is taken
    pytest.param(
        ConnectFour(), after(ConnectFour(), [1, 6, 2, 6, 4, 0]), 3, id="connectfour-win-gap"
    ),  # X has 1 2 _ 4 on the bottom row
]


@pytest.mark.parametrize("graph, vertex, action", POSITIONS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mcts_takes_a_win_in_one_and_blocks_a_loss_in_one(graph, vertex, action, seed):
    assert UCTPlayer(200).choose(graph, vertex, np.random.default_rng(seed)) == action


def test_a_proven_win_stops_the_search_and_is_reported():
    graph = TicTacToe()
    root = UCTPlayer(500).search(graph, (1, 1, 0, -1, -1, 0, 0, 0, 0), np.random.default_rng(0))
    assert root.proven == 1.0
    assert root.total < 500  # stopped once the win was proven


def positions_with_a_trap(graph, rng, count):
    """Random positions where the player to move has no win in one, and some moves (but not
    all) let the opponent win at once; with the set of those losing action ids."""
    found = []
    while len(found) < count:
        for vertex in random_vertices(graph, rng, games=1):
            children, actions = graph.children_at(vertex), graph.actions_at(vertex)
            if any(graph.score_at(c) == -1.0 for c in children):
                continue
            losing = {
                a
                for c, a in zip(children, actions)
                if any(graph.score_at(g) == -1.0 for g in graph.children_at(c))
            }
            if losing and len(losing) < len(actions):
                found.append((vertex, losing))
                break
    return found


@pytest.mark.parametrize("graph", [ConnectFour(), TicTacToe()], ids=lambda g: type(g).__name__)
def test_mcts_avoids_a_move_that_lets_the_opponent_win_at_once(graph):
    rng = np.random.default_rng(6)
    for vertex, losing in positions_with_a_trap(graph, rng, 6):
        assert UCTPlayer(300).choose(graph, vertex, rng) not in losing


def test_same_seed_same_game_and_only_legal_moves():
    graph = ConnectFour()
    players = (UCTPlayer(60), UCTPlayer(60))
    games = [play_game(graph, players, np.random.default_rng(3)) for _ in range(2)]
    assert games[0] == games[1]
    other = play_game(graph, players, np.random.default_rng(4))
    assert other.actions != games[0].actions
    for vertex, action in zip(games[0].vertices, games[0].actions):
        assert action in graph.actions_at(vertex)


@pytest.mark.parametrize(
    "graph", [TicTacToe(), Santorini(3, 1), TwoPileNim()], ids=lambda g: type(g).__name__
)
def test_mcts_plays_whole_games_on_any_graph(graph):
    rng = np.random.default_rng(5)
    record = play_game(graph, (UCTPlayer(30), RandomPlayer()), rng)
    assert not graph.children_at(record.vertices[-1])


def test_mcts_beats_random_and_refuses_bad_arguments():
    graph, rng = ConnectFour(), np.random.default_rng(1)
    outcomes = [play_game(graph, (UCTPlayer(100), RandomPlayer()), rng).outcome for _ in range(3)]
    assert outcomes == [1.0, 1.0, 1.0]
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="simulations must be an integer >= 1"):
            UCTPlayer(bad)
    with pytest.raises(VertexError, match="game is over"):
        UCTPlayer(10).choose(graph, after(graph, [0, 1, 0, 1, 0, 1, 0]), rng)
