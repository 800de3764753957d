"""Positions as the page draws them: the game's `board_at` grid, or a text fallback.

`position_view` is what the page gets for one vertex: the board (the game's grid with its
clickable moves, or `render`'s text), every legal move named in words, whose turn it is, and
at the end a line saying how the game ended.  A vertex does not know how many moves were
played before it, so the caller passes `ply` (0 = the first mover is to move).
"""

from __future__ import annotations

import numpy as np

from gamegym.game.graph import GameGraph

__all__ = [
    "position_view",
    "move_shares",
    "describe",
    "result_line",
    "side_names",
    "winner",
    "move_cells",
]

DEFAULT_NAMES = ["first player", "second player"]
SHARES_SHOWN = 8  # the most visited moves listed under a board


def describe(graph: GameGraph, vertex, action: int) -> str:
    """A move in words; a game whose describe_action fails still gets 'action N'."""
    try:
        return str(graph.describe_action(vertex, int(action)))
    except Exception:  # noqa: BLE001 - a broken description must not break the page
        return f"action {int(action)}"


def side_names(board: dict | None) -> list[str]:
    """The two sides' names, the first mover first."""
    players = (board or {}).get("players")
    return list(players) if isinstance(players, list) and len(players) == 2 else DEFAULT_NAMES


def winner(graph: GameGraph, vertex, ply: int) -> int | None:
    """At a terminal vertex reached after `ply` moves: 0 or 1, the side that won (0 moved
    first), or None for a draw."""
    score = float(graph.score_at(vertex))  # the view of the player to move now
    if score == 0:
        return None
    return ply % 2 if score > 0 else 1 - ply % 2


def result_line(
    graph: GameGraph, vertex, ply: int, names: list[str], truncated: bool = False
) -> str:
    """How a finished game ended, e.g. 'X won' or 'a draw' ('' while it goes on)."""
    if truncated:
        return f"cut at {ply} moves: neither won"
    if graph.children_at(vertex):
        return ""
    side = winner(graph, vertex, ply)
    return "a draw" if side is None else f"{names[side]} won"


def position_view(graph: GameGraph, vertex, ply: int) -> dict:
    """What the page shows of one position (JSON-able)."""
    board = None
    if graph.has_board:
        board = graph.board_at(vertex)
    actions = graph.actions_at(vertex)
    names = side_names(board)
    view = {
        "board": board,
        "text": None if board is not None else graph.render(vertex),
        "moves": [{"action": int(a), "text": describe(graph, vertex, a)} for a in actions],
        "ply": ply,
        "to_move": ply % 2,
        "players": names,
        "over": not actions,
        "result": result_line(graph, vertex, ply, names),
    }
    return view


def move_cells(board: dict | None, action: int) -> list[int]:
    """The cells a move is played with on a board (the first cell of each click step: where a
    Connect Four disc lands), to mark the last move; [] without a board."""
    for move in (board or {}).get("moves", ()):
        if move["action"] == action:
            return [step[0] for step in move["clicks"]]
    return []


def move_shares(graph: GameGraph, vertex, policy: np.ndarray) -> list[dict]:
    """The moves with the largest share of a search policy (visit counts over action ids),
    largest first: [{"action", "text", "share"}]."""
    policy = np.asarray(policy, dtype=np.float64)
    legal = [int(a) for a in graph.actions_at(vertex) if 0 <= a < len(policy)]
    ranked = sorted(legal, key=lambda a: -policy[a])[:SHARES_SHOWN]
    return [
        {"action": a, "text": describe(graph, vertex, a), "share": round(float(policy[a]), 4)}
        for a in ranked
        if policy[a] > 0
    ]
