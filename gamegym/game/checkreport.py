"""The report of `gamegym check --game GAME`: load the game, run the checker (gamegym.game.checker)
and print what was checked and every kind of contract violation found, each with the vertex
that broke it (drawn by the game's `render` where that is short).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TextIO

from gamegym.game.checker import GraphChecker
from gamegym.game.graph import GameGraph, GameSpecError, load_game

__all__ = ["run_check"]


def run_check(
    spec: str,
    game_args: dict | None,
    games: int,
    seed: int,
    out: TextIO | None = None,
    err: TextIO | None = None,
    after_game: Callable[[int], None] | None = None,
) -> int:
    """Load a game, check it and print a report: what was checked (and notes) on `out`, the
    contract violations, or why the game cannot be loaded, on `err` (stdout and stderr by
    default); 0 when clean, 1 on violations, 2 if the game cannot be loaded.  `after_game`:
    as GraphChecker.run takes it."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    try:
        graph = load_game(spec, game_args)
    except GameSpecError as error:
        print(f"gamegym check: error: {error}", file=err)
        return 2
    except Exception as error:  # noqa: BLE001 - e.g. a ValueError from the game's constructor
        print(
            f"gamegym check: error: cannot build {spec} with arguments {game_args}: "
            f"{type(error).__name__}: {error}",
            file=err,
        )
        return 2
    checker = GraphChecker(graph, seed=seed)
    violations = checker.run(games, after_game)
    _print_report(checker, violations, spec, seed, out, err)
    return 1 if violations else 0


def _print_report(
    checker: GraphChecker, violations: list, spec: str, seed: int, out: TextIO, err: TextIO
) -> None:
    graph = checker.graph
    print(
        f"checked {spec} {graph.game_args}: {checker.games_played} random games "
        f"(seed {seed}), {checker.positions} positions, action space "
        f"{graph.action_space_size}, {graph.symmetry_count} symmetries"
        + (", heuristic checked" if checker._heuristic else "")
        + (", board checked" if checker._board else ""),
        file=out,
    )
    for note in checker.notes:
        print(f"note: {note}", file=out)
    if not violations:
        print("no contract violations found", file=out)
        return
    out.flush()  # the summary before the violations where both go to one terminal
    for v in violations:
        print(f"\n{v.kind}: {v.count} time(s)\n  {v.message}\n    at vertex {v.vertex}", file=err)
        picture = _render(graph, v.subject)
        if picture:
            print("    " + picture.replace("\n", "\n    "), file=err)
        for text, message in v.examples:
            print(f"  {message}\n    at vertex {text}", file=err)
    total = sum(v.count for v in violations)
    print(f"\n{total} violation(s) of the GameGraph contract, {len(violations)} kind(s)", file=err)


def _render(graph: GameGraph, vertex: Any, max_lines: int = 15, max_chars: int = 600) -> str:
    """graph.render(vertex) when it works and is short (and says more than repr), else ''."""
    if vertex is None:
        return ""
    try:
        text = str(graph.render(vertex))
    except Exception:  # noqa: BLE001
        return ""
    short = text.count("\n") < max_lines and len(text) <= max_chars
    return text if short and text != repr(vertex) else ""
