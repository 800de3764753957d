"""`gamegym check`: random playouts that test a GameGraph against its contract.

Each violation names the vertex that broke it, so a user who gets their game wrong learns it
here, not an hour into training.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from gamegym.graph import GameGraph, GameSpecError, load_game

__all__ = ["Violation", "check_graph", "run_check"]

EXAMPLES_PER_KIND = 3


@dataclass
class Violation:
    kind: str        # a short stable id, e.g. "score-out-of-range"
    message: str
    vertex: str      # repr of the vertex that broke the contract


class _Report:
    def __init__(self):
        self.violations: list[Violation] = []
        self.counts: dict[str, int] = {}
        self.notes: list[str] = []
        self.positions = 0

    def add(self, kind: str, message: str, vertex) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if self.counts[kind] <= EXAMPLES_PER_KIND:
            self.violations.append(Violation(kind, message, repr(vertex)))


def check_graph(graph: GameGraph, games: int = 20, seed: int = 0, max_moves: int = 1000,
                report: _Report | None = None) -> list[Violation]:
    """Play `games` random games from the roots and return every contract violation found."""
    report = report or _Report()
    rng = np.random.default_rng(seed)
    try:
        roots = tuple(graph.roots)
    except Exception as error:
        report.add("exception", f"roots raised {type(error).__name__}: {error}", None)
        return report.violations
    if not roots:
        report.add("no-roots", "roots is empty", None)
        return report.violations
    reference = {"shape": None}
    _check_identity_transform(graph, report)
    for game in range(games):
        vertex = roots[game % len(roots)]
        for move in range(max_moves + 1):
            try:
                children = _check_vertex(graph, vertex, reference, report)
            except Exception as error:
                report.add("exception", f"{type(error).__name__}: {error}", vertex)
                break
            report.positions += 1
            if not children:
                break
            if move == max_moves:
                report.add("too-long", f"game not over after {max_moves} moves (a cycle?)",
                           vertex)
                break
            vertex = children[int(rng.integers(len(children)))]
    return report.violations


def _check_identity_transform(graph, report) -> None:
    perm = np.asarray(graph.transform_actions(0))
    if perm.shape != (graph.action_space_size,) or (perm != np.arange(len(perm))).any():
        report.add("symmetry", "transform_actions(0) is not the identity", None)


def _check_vertex(graph: GameGraph, vertex, reference: dict, report: _Report) -> tuple:
    try:
        hash(vertex)
    except TypeError:
        report.add("unhashable", "vertex is not hashable", vertex)
        raise
    if graph.open_at(vertex):
        graph.expand_at(vertex)
        if graph.open_at(vertex):
            report.add("open-after-expand", "open_at is still True after expand_at", vertex)
    else:
        try:
            graph.expand_at(vertex)
            report.add("expand-not-open", "expand_at on a vertex that is not open did not raise",
                       vertex)
        except Exception:
            pass
    children = tuple(graph.children_at(vertex))
    actions = tuple(graph.actions_at(vertex))
    terminal = graph.terminal_at(vertex)
    score = graph.score_at(vertex)
    if terminal and children:
        report.add("children-at-terminal", f"terminal vertex has {len(children)} children", vertex)
    if not terminal and not children:
        report.add("terminal-mismatch", "vertex has no children but terminal_at is False", vertex)
    if not isinstance(score, (int, float, np.floating, np.integer)) or not -1 <= score <= 1:
        report.add("score-out-of-range", f"score {score!r} is not in [-1, 1]", vertex)
    elif abs(score) == 1 and children:
        report.add("score-at-nonterminal", f"score {score} (won/lost) at a vertex with children",
                   vertex)
    _check_actions(graph, vertex, children, actions, report)
    _check_numpify(graph, vertex, reference, report)
    if children:
        _check_deterministic(graph, vertex, children, actions, report)
        _check_symmetries(graph, vertex, children, actions, report)
    return children


def _check_actions(graph, vertex, children, actions, report) -> None:
    if len(actions) != len(children):
        report.add("action-count", f"{len(children)} children but {len(actions)} action ids",
                   vertex)
    if len(children) > graph.outdegree_max:
        report.add("outdegree", f"{len(children)} children > outdegree_max "
                   f"{graph.outdegree_max}", vertex)
    if len(set(actions)) != len(actions):
        report.add("duplicate-action", f"duplicate action ids {sorted(actions)}", vertex)
    bad = [a for a in actions if not 0 <= a < graph.action_space_size]
    if bad:
        report.add("action-out-of-range", f"action ids {bad} outside [0, "
                   f"{graph.action_space_size})", vertex)


def _check_numpify(graph, vertex, reference, report) -> None:
    x = graph.numpify(vertex)
    if not isinstance(x, np.ndarray) or x.dtype != np.float32:
        report.add("numpify-type", f"numpify gave {type(x).__name__} "
                   f"{getattr(x, 'dtype', '')}, not a float32 ndarray", vertex)
        return
    if reference["shape"] is None:
        reference["shape"] = x.shape
    elif x.shape != reference["shape"]:
        report.add("numpify-shape", f"numpify shape {x.shape} differs from {reference['shape']}",
                   vertex)
    try:
        back = graph.unnumpify(x)
    except NotImplementedError:
        return
    if back != vertex:
        report.add("unnumpify", f"unnumpify(numpify(v)) gave {back!r}", vertex)


def _check_deterministic(graph, vertex, children, actions, report) -> None:
    again, again_actions = graph.expansion(vertex)
    if tuple(again) != children or tuple(int(a) for a in again_actions) != actions:
        report.add("nondeterministic", "expanding the vertex twice gave different children or "
                   "actions", vertex)


def _check_symmetries(graph, vertex, children, actions, report) -> None:
    for k in range(1, graph.symmetry_count):
        image = graph.transform(vertex, k)
        perm = np.asarray(graph.transform_actions(k))
        expected = {graph.transform(c, k): int(perm[a]) for c, a in zip(children, actions)}
        got = dict(zip(graph.children_at(image), graph.actions_at(image)))
        if set(expected) != set(got):
            report.add("symmetry", f"symmetry {k} does not map the children to the children of "
                       "the image", vertex)
        elif any(got[c] != a for c, a in expected.items()):
            report.add("symmetry", f"transform_actions({k}) does not map the action ids to "
                       "those of the image", vertex)


def run_check(spec: str, game_args: dict | None, games: int, seed: int, out=sys.stdout) -> int:
    """Load a game, check it, print a report; 0 when clean, 1 on violations, 2 if unloadable."""
    try:
        graph = load_game(spec, game_args)
    except GameSpecError as error:
        print(f"gamegym check: error: {error}", file=out)
        return 2
    report = _Report()
    check_graph(graph, games, seed, report=report)
    print(f"checked {spec} {graph.game_args}: {games} random games, {report.positions} "
          f"positions, action space {graph.action_space_size}, "
          f"{graph.symmetry_count} symmetries", file=out)
    if not report.violations:
        print("no contract violations found", file=out)
        return 0
    for kind, count in sorted(report.counts.items()):
        examples = [v for v in report.violations if v.kind == kind]
        print(f"\n{kind}: {count} time(s)", file=out)
        for violation in examples:
            print(f"  {violation.message}\n    at vertex {violation.vertex}", file=out)
    print(f"\n{sum(report.counts.values())} violation(s) of the GameGraph contract", file=out)
    return 1
