"""`gamegym check`: random playouts that test a GameGraph against its contract.

`check_graph` plays random games from the roots (root i % len(roots) for game i) and checks the
contract at every vertex it visits; each violation names the vertex that broke it, so a user who
gets their game wrong learns it here, not an hour into training.  Kinds (short stable ids):

  no-roots              roots is empty
  unhashable            hash(vertex) fails (the game stops there)
  exception             a graph method raised (the game stops there)
  score-out-of-range    score_at is not a real number in [-1, 1]
  score-at-nonterminal  score_at is -1 or +1 at a vertex that has children
  children-at-terminal  terminal_at is True but the vertex has children
  terminal-mismatch     terminal_at is False but the vertex has no children
  numpify-type          numpify is not a float32 numpy array
  numpify-shape         numpify's shape differs from the first vertex's
  unnumpify             unnumpify(numpify(v)) != v
  numpify-many          numpify_many of a game's positions differs from their numpify, stacked
                        (checked when the game implements numpify_many)
  duplicate-action      two children of a vertex share an action id
  action-out-of-range   an action id is not an int in [0, action_space_size)
  outdegree             more children than outdegree_max
  action-count          different numbers of children and action ids (the game stops there)
  open-after-expand     open_at is still True after expand_at
  expand-not-open       expand_at on a vertex that is not open did not raise
  nondeterministic      expansion called twice differs, or differs from children_at/actions_at
  symmetry              a transform does not map children to children and action ids to action
                        ids, changes the score, or transform 0 is not the identity
  too-long              a game went on for more than max_moves plies (a cycle?)
  heuristic-out-of-range  heuristic_at is not a real number in [-1, 1]
  heuristic-symmetry    heuristic_at differs between a vertex and one of its symmetric images
  heuristic-antisymmetric  heuristic_at(swap_players(v)) != -heuristic_at(v) (checked when the
                        game implements swap_players)
  heuristic-view        on average the heuristic favours the player to move at the vertices
                        where that player has lost: it is from the wrong player's view
  board                 board_at's dict breaks its format (GameGraph.board_at): a missing or
                        wrong field, cells that do not fill the grid, a value that is not JSON
  board-moves           board_at's moves are not the legal action ids in child order, a click
                        names no cell, or one action's clicks are the start of another's

Reports are deduplicated by kind: one Violation per kind with the first vertex, the total count
and a few more examples.  A graph without `unnumpify` gets a note, not a violation.  The
heuristic checks run only for a graph that implements `heuristic_at`, the board checks
only for one that implements `board_at` (its format: gamegym.game.boardformat).  The
command's report is gamegym.game.checkreport.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gamegym.game.boardformat import board_moves_problem, board_problem, is_int
from gamegym.game.graph import SCORE_RANGE, GameGraph

__all__ = ["Violation", "GraphChecker", "check_graph"]

EXAMPLES_PER_KIND = 3
_MISSING = object()  # what call_optional returns for a method the game does not have
HEURISTIC_TOLERANCE = 1e-9  # heuristic values this close are equal (float arithmetic)


@dataclass
class Violation:
    """One kind of broken rule, with the first vertex that broke it."""

    kind: str  # a short stable id, e.g. "score-out-of-range"
    message: str  # what went wrong at the first vertex
    vertex: str  # repr of the first vertex that broke the contract
    count: int = 1  # how many times the kind was seen in all games
    examples: list = field(default_factory=list)  # (vertex repr, message) of the next few
    subject: Any = field(default=None, repr=False, compare=False)  # the first vertex itself


class _Abort(Exception):
    """Stop the current game: the graph cannot be walked on from this vertex."""


class GraphChecker:
    """Plays random games on a graph and collects contract violations and notes."""

    def __init__(self, graph: GameGraph, seed: int = 0, max_moves: int = 1000):
        self.graph = graph
        self.rng = np.random.default_rng(seed)
        self.max_moves = max_moves
        self.violations: dict[str, Violation] = {}
        self.notes: list[str] = []
        self.games_played = 0
        self.positions = 0  # vertices checked, repeats included
        self._shape: tuple | None = None
        self._roundtrip = True  # False once unnumpify turned out not to be implemented
        self._swap = True  # False once swap_players turned out not to be implemented
        self._many = type(graph).numpify_many is not GameGraph.numpify_many
        self._heuristic = bool(getattr(graph, "has_heuristic", False))
        self._board = bool(getattr(graph, "has_board", False))
        self._lost_heuristics: list = []  # (vertex, heuristic) at lost terminal vertices

    # ----- recording -----------------------------------------------------------------------
    def report(self, kind: str, message: str, vertex: Any) -> None:
        text = _short_repr(vertex)
        found = self.violations.get(kind)
        if found is None:
            self.violations[kind] = Violation(kind, message, text, subject=vertex)
            return
        found.count += 1
        if len(found.examples) < EXAMPLES_PER_KIND - 1:
            found.examples.append((text, message))

    def call(self, what: str, vertex: Any, function: Callable, *args: Any) -> Any:
        """Call a graph method; an exception is reported and stops the game."""
        try:
            return function(*args)
        except Exception as error:  # noqa: BLE001 - any failure of the graph is a finding
            self.report("exception", f"{what} raised {type(error).__name__}: {error}", vertex)
            raise _Abort from error

    # ----- the games -----------------------------------------------------------------------
    def run(self, games: int, after_game: Callable[[int], None] | None = None) -> list[Violation]:
        """Play the games; the violations found, one per kind, in the order first seen.
        `after_game` is called with the number of games played after each one (progress)."""
        try:
            roots = tuple(self.call("roots", None, lambda: self.graph.roots))
        except _Abort:
            roots = ()
        else:
            if not roots:
                self.report("no-roots", "roots is empty", None)
        for game in range(games if roots else 0):
            self.play(roots[game % len(roots)])
            self.games_played += 1
            if after_game is not None:
                after_game(self.games_played)
        self._check_heuristic_view()
        return list(self.violations.values())

    def play(self, vertex: Any) -> None:
        """One random game from `vertex`, checking every vertex on the way, then numpify_many
        on the game's positions."""
        path = []
        try:
            for _ in range(self.max_moves + 1):
                children = self.check_vertex(vertex)
                path.append(vertex)
                if not children:
                    self._check_numpify_many(path)
                    return
                vertex = children[int(self.rng.integers(len(children)))]
            self.report(
                "too-long", f"game not over after {self.max_moves} moves (a cycle?)", vertex
            )
        except _Abort:
            return

    def _check_numpify_many(self, path: list) -> None:
        """A game's positions, as a batch of leaves (shuffled: a batch mixes games and
        depths), through numpify_many and through numpify one by one."""
        if not self._many or self._shape is None:
            return
        batch = [path[i] for i in self.rng.permutation(len(path))]
        got = self.call("numpify_many", batch[0], self.graph.numpify_many, batch)
        want = np.stack([self.graph.numpify(v) for v in batch])
        if not isinstance(got, np.ndarray) or got.dtype != np.float32 or got.shape != want.shape:
            self.report(
                "numpify-many",
                f"numpify_many gave {type(got).__name__} {getattr(got, 'dtype', '')} "
                f"{getattr(got, 'shape', '')}, not float32 {want.shape}",
                batch[0],
            )
        elif not np.array_equal(got, want):
            row = int(np.flatnonzero((got != want).reshape(len(batch), -1).any(axis=1))[0])
            self.report("numpify-many", "numpify_many differs from numpify", batch[row])

    # ----- the checks at one vertex --------------------------------------------------------
    def check_vertex(self, vertex: Any) -> tuple:
        """Check everything at one vertex; returns its children (empty: the game is over)."""
        self.positions += 1
        try:
            hash(vertex)
        except Exception as error:  # noqa: BLE001
            self.report("unhashable", f"vertex is not hashable: {error}", vertex)
            raise _Abort from error
        expansion = self._check_expansion(vertex)
        self._check_open_expand(vertex)
        children, actions = self._check_children(vertex, expansion)
        self._check_score(vertex, children)
        self._check_numpify(vertex)
        if self._check_actions(vertex, children, actions):
            self._check_symmetries(vertex, children, actions)
        if self._heuristic:
            self._check_heuristic(vertex, children)
        if self._board:
            self._check_board(vertex, actions)
        return children

    def _check_expansion(self, vertex: Any) -> tuple:
        graph = self.graph
        first = _as_pair(self.call("expansion", vertex, graph.expansion, vertex))
        second = _as_pair(self.call("expansion", vertex, graph.expansion, vertex))
        if len(first[0]) != len(first[1]):
            self.report(
                "action-count",
                f"expansion gave {len(first[0])} children but {len(first[1])} action ids",
                vertex,
            )
            raise _Abort
        if first != second:
            self.report(
                "nondeterministic",
                "expanding the vertex twice gave different children or actions",
                vertex,
            )
        return first

    def _check_open_expand(self, vertex: Any) -> None:
        graph = self.graph
        if self.call("open_at", vertex, graph.open_at, vertex):
            self.call("expand_at", vertex, graph.expand_at, vertex)
            if self.call("open_at", vertex, graph.open_at, vertex):
                self.report("open-after-expand", "open_at is still True after expand_at", vertex)
            return
        try:
            graph.expand_at(vertex)
        except Exception:  # noqa: BLE001 - the expected outcome
            return
        self.report(
            "expand-not-open", "expand_at on a vertex that is not open did not raise", vertex
        )

    def _check_children(self, vertex: Any, expansion: tuple) -> tuple:
        graph = self.graph
        children = tuple(self.call("children_at", vertex, graph.children_at, vertex))
        actions = tuple(self.call("actions_at", vertex, graph.actions_at, vertex))
        if len(children) != len(actions):
            self.report(
                "action-count",
                f"children_at has {len(children)} children but "
                f"actions_at has {len(actions)} action ids",
                vertex,
            )
            raise _Abort
        if (children, actions) != expansion:
            self.report(
                "nondeterministic", "children_at / actions_at differ from expansion", vertex
            )
        terminal = self.call("terminal_at", vertex, graph.terminal_at, vertex)
        if terminal and children:
            self.report(
                "children-at-terminal", f"terminal vertex has {len(children)} children", vertex
            )
        elif not terminal and not children:
            self.report(
                "terminal-mismatch", "vertex has no children but terminal_at is False", vertex
            )
        return children, actions

    def _check_score(self, vertex: Any, children: tuple) -> None:
        score = self.call("score_at", vertex, self.graph.score_at, vertex)
        if not _is_score(score):
            self.report("score-out-of-range", f"score {score!r} is not in [-1, 1]", vertex)
        elif children and abs(float(score)) == 1.0:
            self.report(
                "score-at-nonterminal",
                f"score {float(score):g} (won/lost) at a vertex with {len(children)} children",
                vertex,
            )

    def _check_numpify(self, vertex: Any) -> None:
        array = self.call("numpify", vertex, self.graph.numpify, vertex)
        if not isinstance(array, np.ndarray) or array.dtype != np.float32:
            self.report(
                "numpify-type",
                f"numpify gave {type(array).__name__} "
                f"{getattr(array, 'dtype', '')}, not a float32 ndarray",
                vertex,
            )
            return
        if self._shape is None:
            self._shape = array.shape
        elif array.shape != self._shape:
            self.report(
                "numpify-shape",
                f"numpify shape {array.shape} differs from {self._shape} at the first vertex",
                vertex,
            )
        if self._roundtrip:
            self._check_roundtrip(vertex, array)

    def call_optional(
        self, name: str, vertex: Any, function: Callable, *args: Any, unchecked: str
    ) -> Any:
        """Call an optional graph method: _MISSING and a note when the game does not implement
        it (`unchecked` says what is then not checked); any other exception stops the game."""
        try:
            return function(*args)
        except NotImplementedError:
            self.notes.append(f"{name} is not implemented: {unchecked} is not checked")
            return _MISSING
        except Exception as error:  # noqa: BLE001
            self.report("exception", f"{name} raised {type(error).__name__}: {error}", vertex)
            raise _Abort from error

    def _check_roundtrip(self, vertex: Any, array: np.ndarray) -> None:
        back = self.call_optional(
            "unnumpify",
            vertex,
            self.graph.unnumpify,
            array.copy(),
            unchecked="the numpify round trip",
        )
        if back is _MISSING:
            self._roundtrip = False
            if self.graph.symmetry_count > 1:
                self.notes.append(
                    "without unnumpify, training shows no symmetric images of the samples "
                    "(train.augment_symmetries has no effect on this game)"
                )
            return
        if back != vertex:
            self.report("unnumpify", f"unnumpify(numpify(v)) gave {_short_repr(back)}", vertex)

    def _check_actions(self, vertex: Any, children: tuple, actions: tuple) -> bool:
        """Action id rules; True if the action ids are good enough to check symmetries."""
        graph = self.graph
        size = self.call("action_space_size", vertex, lambda: graph.action_space_size)
        limit = self.call("outdegree_max", vertex, lambda: graph.outdegree_max)
        if len(children) > limit:
            self.report("outdegree", f"{len(children)} children > outdegree_max {limit}", vertex)
        bad = [a for a in actions if not is_int(a) or not 0 <= a < size]
        if bad:
            self.report("action-out-of-range", f"action ids {bad[:5]} outside [0, {size})", vertex)
            return False
        if len(set(actions)) != len(actions):
            repeated = sorted({a for a in actions if actions.count(a) > 1})
            self.report(
                "duplicate-action",
                f"action ids {repeated[:5]} are used by more than one child",
                vertex,
            )
            return False
        return True

    def _check_symmetries(self, vertex: Any, children: tuple, actions: tuple) -> None:
        count = self.call("symmetry_count", vertex, lambda: self.graph.symmetry_count)
        for k in range(count):
            problem = self.call(
                f"symmetry {k}", vertex, self._symmetry_problem, vertex, children, actions, k
            )
            if problem:
                self.report("symmetry", f"symmetry {k}: {problem}", vertex)
                return

    def _symmetry_problem(self, vertex: Any, children: tuple, actions: tuple, k: int) -> str:
        """What symmetry k gets wrong at this vertex ('' if nothing)."""
        graph = self.graph
        image = graph.transform(vertex, k)
        perm = np.asarray(graph.transform_actions(k))
        size = graph.action_space_size
        if perm.shape != (size,) or sorted(perm.tolist()) != list(range(size)):
            return f"transform_actions is not a permutation of range({size})"
        if k == 0 and (image != vertex or perm.tolist() != list(range(size))):
            return "transform 0 is not the identity"
        if graph.score_at(image) != graph.score_at(vertex):
            return f"the image scores {graph.score_at(image)}, the vertex {graph.score_at(vertex)}"
        mapped = {(graph.transform(child, k), int(perm[a])) for child, a in zip(children, actions)}
        image_pairs = set(zip(graph.children_at(image), graph.actions_at(image)))
        if {c for c, _ in mapped} != {c for c, _ in image_pairs}:
            return (
                f"the images of the {len(children)} children are not the "
                f"{len(image_pairs)} children of the image {_short_repr(image)}"
            )
        for child, action in sorted(mapped - image_pairs, key=repr)[:1]:
            found = sorted(a for c, a in image_pairs if c == child)
            return (
                f"transform_actions maps an action id to {action} but the image child "
                f"{_short_repr(child)} has action id(s) {found}"
            )
        for child, action in sorted(image_pairs - mapped, key=repr)[:1]:
            return (
                f"no action id is mapped to action id {action} of the image child "
                f"{_short_repr(child)}"
            )
        return ""

    # ----- the optional board -------------------------------------------------------------
    def _check_board(self, vertex: Any, actions: tuple) -> None:
        board = self.call("board_at", vertex, self.graph.board_at, vertex)
        problem = board_problem(board)
        if problem:
            self.report("board", problem, vertex)
            return
        problem = board_moves_problem(board, actions)
        if problem:
            self.report("board-moves", problem, vertex)

    # ----- the optional heuristic ----------------------------------------------------------
    def _check_heuristic(self, vertex: Any, children: tuple) -> None:
        graph = self.graph
        value = self.call("heuristic_at", vertex, graph.heuristic_at, vertex)
        if not _is_score(value):
            self.report("heuristic-out-of-range", f"heuristic {value!r} is not in [-1, 1]", vertex)
            return
        value = float(value)
        if not children and graph.score_at(vertex) <= -1.0:
            self._lost_heuristics.append((vertex, value))
        for k in range(1, self.call("symmetry_count", vertex, lambda: graph.symmetry_count)):
            image = self.call(f"transform {k}", vertex, graph.transform, vertex, k)
            other = self.call("heuristic_at", image, graph.heuristic_at, image)
            if not _is_real(other) or abs(float(other) - value) > HEURISTIC_TOLERANCE:
                self.report(
                    "heuristic-symmetry",
                    f"heuristic {value:g} here but {other!r} at its image under symmetry {k}",
                    vertex,
                )
                break
        if self._swap:
            self._check_antisymmetry(vertex, value)

    def _check_antisymmetry(self, vertex: Any, value: float) -> None:
        graph = self.graph
        swapped = self.call_optional(
            "swap_players",
            vertex,
            graph.swap_players,
            vertex,
            unchecked="the heuristic's antisymmetry",
        )
        if swapped is _MISSING:
            self._swap = False
            return
        other = self.call("heuristic_at", swapped, graph.heuristic_at, swapped)
        if not _is_real(other) or abs(float(other) + value) > HEURISTIC_TOLERANCE:
            self.report(
                "heuristic-antisymmetric",
                f"heuristic {value:g} here but {other!r} with "
                "the players swapped (expected its negative)",
                vertex,
            )

    def _check_heuristic_view(self) -> None:
        """At the vertices where the player to move has lost, a heuristic from the mover's view
        should on average be against the mover."""
        found = self._lost_heuristics
        if not found or sum(h for _, h in found) <= 0:
            return
        favoured = [(v, h) for v, h in found if h > 0]
        vertex, value = favoured[0]
        self.report(
            "heuristic-view",
            f"the heuristic favours the player to move at "
            f"{len(favoured)} of the {len(found)} vertices where that player has lost "
            f"(mean {sum(h for _, h in found) / len(found):+.3f}; {value:+.3f} here): "
            "it must be from the view of the player to move",
            vertex,
        )


def _as_pair(expansion: Any) -> tuple:
    children, actions = expansion
    return tuple(children), tuple(actions)


def _is_real(x: Any) -> bool:
    return (
        isinstance(x, (int, float, np.integer, np.floating))
        and not isinstance(x, bool)
        and math.isfinite(float(x))
    )


def _is_score(x: Any) -> bool:
    """A real number in the contract's score range (what score_at and heuristic_at give)."""
    low, high = SCORE_RANGE
    return _is_real(x) and low <= float(x) <= high


def _short_repr(vertex: Any, limit: int = 300) -> str:
    try:
        text = repr(vertex)
    except Exception as error:  # noqa: BLE001
        return f"<repr failed: {error}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_graph(
    graph: GameGraph, games: int = 20, seed: int = 0, max_moves: int = 1000
) -> list[Violation]:
    """Play `games` random games (seeded) and return the violations found, one per kind."""
    return GraphChecker(graph, seed=seed, max_moves=max_moves).run(games)
