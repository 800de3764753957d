"""The format of a game's optional `board_at` dict (GameGraph.board_at), which the web page
draws, and its checks: `board_problem` (the dict's fields, cells, players and style) and
`board_moves_problem` (its moves against the legal action ids, and their clicks).  The checker
(`gamegym check`) runs both at every vertex of a game that implements `board_at`.
"""

from __future__ import annotations

import json
from typing import Any, TypeGuard

import numpy as np

__all__ = ["BOARD_STYLES", "board_moves_problem", "board_problem", "is_int"]

BOARD_STYLES = ("marks", "discs", "levels")


def board_problem(board: Any) -> str:
    """What is wrong with the format of a `board_at` dict ('' if nothing)."""
    if not isinstance(board, dict):
        return f"board_at gave {type(board).__name__}, not a dict"
    try:
        json.dumps(board)
    except (TypeError, ValueError) as error:
        return f"board_at's dict is not JSON: {error}"
    rows, columns, cells = board.get("rows"), board.get("columns"), board.get("cells")
    if not (is_int(rows) and is_int(columns) and rows >= 1 and columns >= 1):
        return f"rows and columns must be ints >= 1, got {rows!r} and {columns!r}"
    if not isinstance(cells, list) or len(cells) != rows * columns:
        return f"cells must be a list of rows*columns = {rows * columns} dicts"
    for i, cell in enumerate(cells):
        if not isinstance(cell, dict) or set(cell) - {"piece", "label", "level"}:
            return f"cell {i} is {cell!r}: a dict with only piece, label and level"
        if "piece" in cell and cell["piece"] not in (0, 1):
            return f"cell {i} has piece {cell['piece']!r}, not 0 or 1"
        if "label" in cell and not (isinstance(cell["label"], str) and len(cell["label"]) <= 8):
            return f"cell {i} has label {cell['label']!r}, not a string of at most 8 characters"
        if "level" in cell and not (is_int(cell["level"]) and 0 <= cell["level"] <= 4):
            return f"cell {i} has level {cell['level']!r}, not an int in 0..4"
    players = board.get("players")
    if not (
        isinstance(players, list)
        and len(players) == 2
        and all(isinstance(p, str) and p for p in players)
    ):
        return f"players must be two names, got {players!r}"
    if board.get("style", "marks") not in BOARD_STYLES:
        return f"style {board['style']!r} is not one of {', '.join(BOARD_STYLES)}"
    if not isinstance(board.get("moves"), list):
        return "moves must be a list"
    return ""


def board_moves_problem(board: dict, actions: tuple) -> str:
    """What is wrong with a (well-formed) board's moves at a vertex with these legal action
    ids ('' if nothing): one entry per action in child order, clicks that name cells, and no
    action's clicks the start of another's."""
    moves, size = board["moves"], board["rows"] * board["columns"]
    listed = [m.get("action") if isinstance(m, dict) else None for m in moves]
    if listed != [int(a) for a in actions]:
        return f"moves list actions {listed[:8]}, the legal action ids are {list(actions)[:8]}"
    paths: dict = {}  # a sequence of clicked cells -> the action it completes
    prefixes: dict = {}  # a sequence that is the start of an action's clicks -> that action
    for move in moves:
        clicks, action = move.get("clicks"), move["action"]
        if not (
            isinstance(clicks, list)
            and clicks
            and all(
                isinstance(step, list) and step and all(is_int(c) and 0 <= c < size for c in step)
                for step in clicks
            )
        ):
            return (
                f"action {action}: clicks {clicks!r} must be a non-empty list of non-empty "
                f"lists of cells in [0, {size})"
            )
        sequences: list[tuple[int, ...]] = [()]
        for step in clicks:
            sequences = [s + (c,) for s in sequences for c in step]
            if len(sequences) > 10_000:
                return f"action {action}: too many click sequences"
        for sequence in sequences:
            starts = [sequence[:k] for k in range(1, len(sequence))]
            others = {
                paths.get(sequence),
                prefixes.get(sequence),
                *(paths.get(start) for start in starts),
            } - {None, action}
            if others:
                return (
                    f"the clicks {list(sequence)} of action {action} and those of action "
                    f"{min(o for o in others if o is not None)} are the same or one starts the other"
                )
            for start in starts:
                prefixes.setdefault(start, action)
            paths[sequence] = action
    return ""


def is_int(x: Any) -> TypeGuard[int]:
    """An integer (Python's or NumPy's), not a bool."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)
