"""The optional `GameGraph.board_at` contract: the bundled games' boards, and `gamegym check`
finding a broken one."""

from __future__ import annotations

import json

import numpy as np
import pytest
from nim import TwoPileNim

from gamegym.game.boardformat import board_moves_problem, board_problem
from gamegym.game.checker import check_graph
from gamegym.serve.boards import move_cells, position_view
from games.connectfour import ConnectFour
from games.santorini import Santorini
from games.tictactoe import TicTacToe, TicTacToeVariant

GAMES = [
    TicTacToe(),
    TicTacToeVariant(blocked=[0, 8]),
    ConnectFour(),
    ConnectFour(5, 4),
    Santorini(3, 1),
    Santorini(4, 2),
    Santorini(5, 2),
]


def clicked(board: dict, cells: list[int]) -> list[int]:
    """The actions whose clicks are exactly these cells (as the page matches them)."""
    return [
        m["action"]
        for m in board["moves"]
        if len(m["clicks"]) == len(cells) and all(c in step for c, step in zip(cells, m["clicks"]))
    ]


@pytest.mark.parametrize("graph", GAMES, ids=lambda g: f"{type(g).__name__}{g.game_args}")
def test_bundled_boards_pass_the_checker(graph):
    checker_kinds = {v.kind for v in check_graph(graph, games=4, seed=1)}
    assert not checker_kinds & {"board", "board-moves", "exception"}


@pytest.mark.parametrize("graph", GAMES, ids=lambda g: f"{type(g).__name__}{g.game_args}")
def test_every_move_is_played_by_its_own_clicks(graph):
    rng = np.random.default_rng(0)
    vertex, ply = graph.roots[0], 0
    while graph.actions_at(vertex):
        board = graph.board_at(vertex)
        json.dumps(board)
        pieces = [c["piece"] for c in board["cells"] if "piece" in c]
        if isinstance(graph, Santorini):  # each side's workers, placed in the first two plies
            assert sorted(pieces) == [0] * graph.units_per_player * min(ply, 1) + [
                1
            ] * graph.units_per_player * (ply >= 2)
        else:  # a mark or disc a move, X's first
            assert sorted(pieces) == [0] * ((ply + 1) // 2) + [1] * (ply // 2)
        for move in board["moves"]:
            assert clicked(board, move_cells(board, move["action"])) == [move["action"]]
        action = int(rng.choice(graph.actions_at(vertex)))
        vertex, ply = graph.child_by_action(vertex, action), ply + 1
    assert graph.board_at(vertex)["moves"] == []
    assert position_view(graph, vertex, ply)["result"]


def test_pieces_belong_to_the_side_not_to_the_mover():
    graph = TicTacToe()
    vertex = graph.child_by_action(graph.roots[0], 4)  # X in the centre, O to move
    assert graph.board_at(vertex)["cells"][4] == {"piece": 0, "label": "X"}
    vertex = graph.child_by_action(vertex, 0)  # O in a corner, X to move
    assert graph.board_at(vertex)["cells"][0] == {"piece": 1, "label": "O"}
    c4 = ConnectFour()
    after = c4.child_by_action(c4.child_by_action(c4.roots[0], 3), 3)
    cells = c4.board_at(after)["cells"]
    assert cells[38] == {"piece": 0} and cells[31] == {"piece": 1}
    board = c4.board_at(after)
    assert board["moves"][3]["clicks"][0][0] == 24  # the next disc in column 4


def test_santorini_turn_is_worker_destination_build():
    graph = Santorini(3, 1)
    vertex = graph.child_by_action(graph.roots[0], 4)  # red in the centre
    vertex = graph.child_by_action(vertex, 0)  # yellow in the corner
    board = graph.board_at(vertex)
    assert board["cells"][4]["piece"] == 0 and board["cells"][0]["piece"] == 1
    assert all(m["clicks"][0] == [4] and len(m["clicks"]) == 3 for m in board["moves"])
    action = clicked(board, [4, 5, 2])[0]  # move right, build up
    assert graph.describe_action(vertex, action) == "moves right to r2c3, builds up"
    assert graph.child_by_action(vertex, action)[0][2] == 1


class BrokenBoards(TwoPileNim):
    """Nim whose board breaks the format in a way chosen by `fault`."""

    def __init__(self, fault: str = ""):
        super().__init__()
        self.fault = fault

    def board_at(self, vertex):
        moves = [
            {"action": a, "clicks": [[0]] if self.fault == "same-clicks" else [[a % 4]]}
            for a in self.actions_at(vertex)
        ]
        board = {
            "rows": 2,
            "columns": 2,
            "cells": [{}, {}, {}, {}],
            "players": ["a", "b"],
            "moves": moves,
        }
        if self.fault == "cells":
            board["cells"] = [{}]
        if self.fault == "piece":
            board["cells"][0] = {"piece": 2}
        if self.fault == "missing-move":
            board["moves"] = moves[1:]
        return board


@pytest.mark.parametrize(
    "fault, kind, words",
    [
        ("cells", "board", "rows*columns"),
        ("piece", "board", "piece 2"),
        ("missing-move", "board-moves", "legal action ids"),
        ("same-clicks", "board-moves", "the same or one starts the other"),
    ],
)
def test_the_checker_finds_broken_boards(fault, kind, words):
    found = {v.kind: v for v in check_graph(BrokenBoards(fault), games=3)}
    assert kind in found and words in found[kind].message


@pytest.mark.parametrize(
    "board, words",
    [
        ([], "not a dict"),
        ({"rows": 0, "columns": 1, "cells": []}, "rows and columns"),
        ({"rows": 1, "columns": 1, "cells": [{"colour": 1}]}, "only piece, label and level"),
        ({"rows": 1, "columns": 1, "cells": [{"level": 5}]}, "level 5"),
        ({"rows": 1, "columns": 1, "cells": [{}], "players": ["a"]}, "two names"),
        ({"rows": 1, "columns": 1, "cells": [{}], "players": ["a", "b"], "style": "3d"}, "style"),
        (
            {
                "rows": 1,
                "columns": 1,
                "cells": [{}],
                "players": ["a", "b"],
                "moves": [],
                "extra": {1, 2},
            },
            "not JSON",
        ),
    ],
)
def test_board_format_problems(board, words):
    assert words in board_problem(board)


def test_a_click_path_may_not_start_another():
    board = {
        "rows": 1,
        "columns": 3,
        "cells": [{}, {}, {}],
        "players": ["a", "b"],
        "moves": [{"action": 0, "clicks": [[0]]}, {"action": 1, "clicks": [[0], [1]]}],
    }
    assert "one starts the other" in board_moves_problem(board, (0, 1))
    board["moves"][0]["clicks"] = [[2]]
    assert board_moves_problem(board, (0, 1)) == ""
    board["moves"][1]["clicks"] = [[0, 2], [1]]  # a step's alternatives count too
    assert "one starts the other" in board_moves_problem(board, (0, 1))
    board["moves"][1]["clicks"] = [[5]]
    assert "cells in [0, 3)" in board_moves_problem(board, (0, 1))


def test_a_game_without_a_board_shows_its_text_and_moves():
    graph = TwoPileNim()
    assert not graph.has_board
    view = position_view(graph, (1, 0), 3)
    assert view["board"] is None and view["text"] == graph.render((1, 0))
    assert view["moves"] == [{"action": 0, "text": "action 0"}]
    assert view["players"] == ["first player", "second player"] and view["to_move"] == 1
    end = position_view(graph, (0, 0), 4)
    assert end["over"] and end["result"] == "second player won"
