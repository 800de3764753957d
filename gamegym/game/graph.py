"""The GameGraph contract: a symmetric two-player game seen as a graph of vertices.

Words used throughout gamegym:
  vertex     a game state, always seen from the view of the player to move (the *active* player).
             Vertices are hashable and compare by value.
  children   the vertices reachable by one legal move of the active player, in a fixed order.
  action id  an integer in [0, action_space_size) naming a move the same way in every position,
             so a policy output means the same move everywhere.
  open       a vertex whose children have not been computed yet; `expand_at` computes them.
  terminal   a vertex that is not open and has no children: the game is over.
  score      a float in [-1, 1] (`SCORE_RANGE`) from the active player's view; -1 / +1 iff the
             vertex is terminal and the active player has lost / won (a draw scores 0).

A game implements `roots`, `outdegree_max`, `score_at`, `numpify` and either `successors`
(children only; action id = child index) or `expansion` (children and their action ids).
Everything else has a working default.  `gamegym check --game MODULE:CLASS` tests an
implementation.

Optional: `heuristic_at(vertex)`, an estimate of a vertex's value in [-1, 1] from the view of
the player to move, which depth-limited alpha-beta (`alphabeta:D`) uses at its leaves; and
`swap_players(vertex)`, the same position with the other player to move, with which
`gamegym check` tests that the heuristic is antisymmetric (h(swap(v)) = -h(v)) in games where
the rules treat both players alike.

Optional: `board_at(vertex)`, the position as a small JSON-able dict that the web page
(`gamegym serve`) draws as a grid and plays by clicks; `gamegym check` tests it when the game
implements it (see `GameGraph.board_at` for the format).  Without it the page shows `render`'s
text and a list of the legal moves.

Optional: `exact_solver()`, a solver made for the game where the generic full-tree one is too
slow (the `solver` player uses it), and `benchmark_positions`, the path of a file of solved
positions (`gamegym bench accuracy`).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import inspect
import json
import sys
from abc import ABC, abstractmethod
from collections.abc import Hashable, Sequence
from typing import Any, Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "SCORE_RANGE",
    "GameGraph",
    "GameGraphError",
    "VertexError",
    "GameSpecError",
    "game_class",
    "game_module",
    "game_module_origin",
    "module_origin",
    "load_game",
    "build_game",
    "bound_game_args",
    "game_spec",
]

# the scores of the contract (score_at, heuristic_at), and so the range of every value a search
# backs up, a sample file holds and a value head is trained towards: (lost, won)
SCORE_RANGE = (-1.0, 1.0)

# a game's vertex type (a tuple, a string, ...): hashable and compared by value
Vertex = TypeVar("Vertex", bound=Hashable)
Graph = TypeVar("Graph", bound="GameGraph[Any]")


class GameGraphError(Exception):
    """A GameGraph broke its contract or was used against it."""


class VertexError(GameGraphError):
    """An operation is not allowed at this vertex; the message names the vertex."""

    def __init__(self, message: str, vertex: Any):
        super().__init__(f"{message} (vertex {vertex!r})")
        self.vertex = vertex


class GameSpecError(GameGraphError):
    """A game given as 'module:Class' could not be loaded or is not a GameGraph."""


class GameGraph(ABC, Generic[Vertex]):
    """Abstract graph of a symmetric two-player game; generic in its vertex type.

    Subclasses call ``super().__init__()`` and implement the abstract members plus one of
    `successors` / `expansion`.  The base class keeps a cache of expanded vertices that is
    cleared when it holds `cache_limit` vertices or `cache_child_limit` children in all
    (expanding is deterministic, so a cleared vertex just becomes open again).  A child costs
    about 250 bytes for Santorini 3x3 and 400 for Santorini 5x5 with two workers, so the
    defaults bound the cache near 100-160 MB per process whatever the board; on a large board
    the vertex count alone let it grow past 900 MB for a 2% saving in expansions.
    """

    cache_limit: int = 50_000
    cache_child_limit: int = 400_000
    # True when every move hands the turn to the other player, as the negamax view of the
    # contract assumes.  A game where a player may move twice in a row sets it False; the
    # learners that search in a learned latent space (MuZero) refuse such a game.
    turns_alternate: bool = True
    _game_args: dict[str, Any]

    def __new__(cls: type[Graph], *args: Any, **kwargs: Any) -> Graph:
        graph = super().__new__(cls)
        # remember the constructor arguments, so a session can rebuild the game
        graph._game_args = bound_game_args(cls, args, kwargs)
        return graph

    def __init__(self) -> None:
        self._children: dict[Vertex, tuple[Vertex, ...]] = {}
        self._cached_children = 0
        self._actions: dict[Vertex, tuple[int, ...]] = {}

    @property
    def game_args(self) -> dict[str, Any]:
        """The keyword arguments this graph was built with (stored in the session config)."""
        return dict(getattr(self, "_game_args", {}))

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if getattr(cls, "__abstractmethods__", None):
            return  # still abstract; checked on the concrete subclass
        if cls.successors is GameGraph.successors and cls.expansion is GameGraph.expansion:
            raise TypeError(f"{cls.__name__} must implement successors() or expansion()")

    # ----- what a game implements --------------------------------------------------------
    @property
    @abstractmethod
    def roots(self) -> tuple[Vertex, ...]:
        """The starting vertices, in a fixed order (usually one)."""

    @property
    @abstractmethod
    def outdegree_max(self) -> int:
        """An upper bound on the number of children of any vertex."""

    @abstractmethod
    def score_at(self, vertex: Vertex) -> float:
        """Score in [-1, 1] from the active player's view; ±1 iff terminal and won/lost."""

    @abstractmethod
    def numpify(self, vertex: Vertex) -> NDArray[np.float32]:
        """The network input for a vertex: float32, the same shape for every vertex."""

    def successors(self, vertex: Vertex) -> Sequence[Vertex]:
        """The children of a vertex in a fixed order; empty iff the game is over."""
        return self.expansion(vertex)[0]

    def expansion(self, vertex: Vertex) -> tuple[Sequence[Vertex], Sequence[int]]:
        """Children and the action id of each child.  Default: action id = child index."""
        children = tuple(self.successors(vertex))
        return children, tuple(range(len(children)))

    @property
    def action_space_size(self) -> int:
        """Number of distinct action ids (policy output size).  Default: outdegree_max."""
        return self.outdegree_max

    def numpify_many(self, vertices: Sequence[Vertex]) -> NDArray[np.float32]:
        """float32 [len(vertices), *numpify's shape]: numpify of each vertex, stacked (a batch
        of leaves for the network).  Default: numpify vertex by vertex.  Optional: a game whose
        numpify is a few NumPy operations can do them once for the whole batch (the checker
        tests that it equals the stacked numpify)."""
        return np.stack([self.numpify(vertex) for vertex in vertices])

    def unnumpify(self, array: NDArray[np.float32]) -> Vertex:
        """Inverse of numpify.  Optional; the checker tests it when implemented."""
        raise NotImplementedError(f"{type(self).__name__} does not implement unnumpify")

    def heuristic_at(self, vertex: Vertex) -> float:
        """An estimate of the vertex's value in [-1, 1] from the active player's view, for the
        leaves of a depth-limited search (`alphabeta:D`).  Optional (see `has_heuristic`)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement heuristic_at")

    @property
    def has_heuristic(self) -> bool:
        """True when the game implements `heuristic_at`."""
        return type(self).heuristic_at is not GameGraph.heuristic_at

    def swap_players(self, vertex: Vertex) -> Vertex:
        """The same position with the other player to move.  Optional: only for games whose
        rules treat both players alike; `gamegym check` then tests that the heuristic is
        antisymmetric (heuristic_at(swap_players(v)) == -heuristic_at(v))."""
        raise NotImplementedError(f"{type(self).__name__} does not implement swap_players")

    def board_at(self, vertex: Vertex) -> dict[str, Any]:
        """The position as a grid for the web page (`gamegym serve`): a small JSON-able dict.
        Optional (see `has_board`); `gamegym check` tests it when implemented.

          rows, columns  ints >= 1: the grid's size
          cells          rows*columns dicts, row 0 at the top and left to right (cell
                         row*columns + column); each has any of
                           "piece": 0 | 1   a piece of the player who moved first / second
                                            (who owns it, not seen from the player to move)
                           "label": str     a short text drawn on the cell ("X", "3")
                           "level": int     0..4, a height drawn as shading (Santorini)
                         and an empty cell is {}
          players        the two sides' names, the first mover first (e.g. ["X", "O"])
          moves          one entry per legal action, in child order:
                           {"action": id, "clicks": [[cell, ...], ...]}
                         the cells to click one after the other to play the action; each step
                         lists the cells any of which counts (a Connect Four column: every cell
                         of the column).  No action's clicks may be the start of another
                         action's (or the same): the page plays an action when its clicks are
                         complete.  Empty at a terminal vertex.
          style          optional drawing hint: "marks" (letters), "discs" or "levels"
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement board_at")

    @property
    def has_board(self) -> bool:
        """True when the game implements `board_at`."""
        return type(self).board_at is not GameGraph.board_at

    def exact_solver(self) -> Any:
        """A solver made for this game, for the `solver` player and the benchmarks: an object
        with `solve(vertex)` -> gamegym.game.players.Solution and `value(vertex)`, as
        gamegym.game.players.Solver has.  Optional: None (the default) means the generic
        Solver, which searches the whole game tree and so serves small games only."""
        return None

    @property
    def benchmark_positions(self) -> Any:
        """The path of this game's solved-position benchmark (gamegym.game.positions; what
        `gamegym bench accuracy` measures), or None (the default): the game has none."""
        return None

    def render(self, vertex: Vertex) -> str:
        """A human-readable picture of the vertex for the console."""
        return repr(vertex)

    def describe_action(self, vertex: Vertex, action: int) -> str:
        """A move in words for `gamegym play` (e.g. 'row 2 column 3').  Optional."""
        return f"action {action}"

    # ----- symmetries ---------------------------------------------------------------------
    @property
    def symmetry_count(self) -> int:
        """Number of symmetry transforms, the identity (index 0) included."""
        return 1

    def transform(self, vertex: Vertex, k: int) -> Vertex:
        """Apply symmetry k to a vertex.  Transform 0 is the identity."""
        if k != 0:
            raise ValueError(f"{type(self).__name__} has no symmetry {k}")
        return vertex

    def transform_actions(self, k: int) -> NDArray[np.int_]:
        """int array [action_space_size]: action a at a vertex is action perm[a] at its image."""
        if k != 0:
            raise ValueError(f"{type(self).__name__} has no symmetry {k}")
        return np.arange(self.action_space_size)

    def equivalenceclass_of(self, vertex: Vertex) -> list[Vertex]:
        """All images of a vertex under the symmetries (with repetitions removed, order kept)."""
        seen: dict[Vertex, None] = {}
        for k in range(self.symmetry_count):
            seen.setdefault(self.transform(vertex, k), None)
        return list(seen)

    def representative_of(self, vertex: Vertex) -> Vertex:
        """A canonical member of the equivalence class (the one with the smallest repr)."""
        return min(self.equivalenceclass_of(vertex), key=repr)

    # ----- the graph, built on the above (override only to keep your own store) ------------
    def open_at(self, vertex: Vertex) -> bool:
        """True while the children of this vertex have not been computed."""
        return vertex not in self._children

    def expand_at(self, vertex: Vertex) -> None:
        """Compute and store the children of an open vertex."""
        if vertex in self._children:
            raise VertexError("expand_at on a vertex that is not open", vertex)
        children, actions = self.expansion(vertex)
        children, actions = tuple(children), tuple(map(int, actions))
        if len(children) != len(actions):
            raise VertexError(
                f"expansion gave {len(children)} children but {len(actions)} action ids", vertex
            )
        if (
            len(self._children) >= self.cache_limit
            or self._cached_children >= self.cache_child_limit
        ):
            self.forget()
        self._children[vertex] = children
        self._cached_children += len(children)
        self._actions[vertex] = actions

    def children_at(self, vertex: Vertex) -> tuple[Vertex, ...]:
        """The children of an expanded vertex (expands it first if it is open)."""
        children = self._children.get(vertex)
        if children is None:
            self.expand_at(vertex)
            children = self._children[vertex]
        return children

    def actions_at(self, vertex: Vertex) -> tuple[int, ...]:
        """The action id of each child, in child order."""
        actions = self._actions.get(vertex)
        if actions is None:
            self.children_at(vertex)
            actions = self._actions[vertex]
        return actions

    def terminal_at(self, vertex: Vertex) -> bool:
        """True iff the game is over at this vertex (it is expanded first if open)."""
        return len(self.children_at(vertex)) == 0

    def forget(self) -> None:
        """Drop the cache of expanded vertices (they become open again)."""
        self._children.clear()
        self._actions.clear()
        self._cached_children = 0

    # ----- helpers ------------------------------------------------------------------------
    def legal_mask(self, vertex: Vertex) -> NDArray[np.bool_]:
        """bool [action_space_size]: True at the action ids of the children."""
        mask = np.zeros(self.action_space_size, dtype=bool)
        mask[list(self.actions_at(vertex))] = True
        return mask

    def child_by_action(self, vertex: Vertex, action: int) -> Vertex:
        """The child reached by an action id; VertexError if the action is not legal."""
        for a, child in zip(self.actions_at(vertex), self.children_at(vertex)):
            if a == action:
                return child
        raise VertexError(f"action {action} is not legal", vertex)


# Game modules of gamegym's own that moved: a session folder made before names the old module.
MOVED_MODULES = {"gamegym.openspiel": "gamegym.adapters.openspiel"}


def _module_name(spec: object) -> tuple[str, str]:
    """(module, class) of a game spec; a module that is not a dotted name of Python
    identifiers (a file path, a relative name) is refused before anything is imported."""
    if not isinstance(spec, str) or ":" not in spec:
        raise GameSpecError(f"game {spec!r} must look like 'package.module:ClassName'")
    module_name, _, class_name = spec.partition(":")
    if not all(part.isidentifier() for part in module_name.split(".")):
        raise GameSpecError(
            f"game {spec!r}: {module_name!r} is not an importable module name "
            "(dotted Python names, found on the import path); gamegym imports "
            "game code only from importable packages, never from a file path"
        )
    return MOVED_MODULES.get(module_name, module_name), class_name


def game_module(spec: str) -> str:
    """The module a game spec imports ('package.module:Class' -> 'package.module'); a spec
    that is not a module name is refused (GameSpecError) before anything is imported."""
    return _module_name(spec)[0]


def game_module_origin(spec: str) -> str:
    """The file of the module a game spec imports, found without running any of its code (a
    session folder names code; resuming it runs that code)."""
    return module_origin(game_module(spec), f"game {spec!r}")


def module_origin(module_name: str, what: str = "") -> str:
    """The file a module would be imported from, found without running any of its code (for a
    dotted name, not even its packages' __init__); GameSpecError when it is not found.
    `what`: what needs it, for the message ("game 'x:Y'")."""
    module = sys.modules.get(module_name)
    if module is not None:
        return str(getattr(module, "__file__", None) or "(built in)")
    path = None
    spec_found: importlib.machinery.ModuleSpec | None = None
    for part in module_name.split("."):
        if path is None:  # a top-level package: every finder of sys.meta_path (an editable
            # install's among them) may know it; a top-level name's spec runs none of its code
            spec_found = importlib.util.find_spec(part)
        else:
            spec_found = importlib.machinery.PathFinder.find_spec(part, path)
        if spec_found is None:
            raise GameSpecError(
                f"cannot find module {module_name!r}{' for ' + what if what else ''} "
                "on the import path"
            )
        path = spec_found.submodule_search_locations
    origin = spec_found.origin if spec_found is not None else None
    return str(origin if origin not in (None, "built-in", "frozen") else "(built in)")


def load_game(spec: str, kwargs: dict[str, Any] | None = None) -> GameGraph[Any]:
    """A new game built from 'package.module:Class' and keyword arguments; clear errors on
    failure.  (Inside gamegym a game is built from its reference, gamegym.game.ref.GameRef,
    once per process; this builds a graph of its own each call.)"""
    return build_game(game_class(spec), spec, kwargs or {})


def build_game(cls: type[Graph], spec: str, kwargs: dict[str, Any]) -> Graph:
    """`cls(**kwargs)`, the class `spec` names; GameSpecError naming the spec and the
    arguments when the class refuses them (an unknown argument, a value out of range)."""
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as error:  # unknown argument, or a value the game refuses
        raise GameSpecError(
            f"cannot build {spec} with arguments {json.dumps(kwargs)}: {error}"
        ) from error


def bound_game_args(
    cls: type, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The keyword arguments `cls(*args, **kwargs)` builds a game with, its defaults filled in
    (what `GameGraph.game_args` records); the given keywords as they are when they do not
    bind to the constructor (its call then says why)."""
    kwargs = kwargs or {}
    try:
        bound = inspect.signature(cls).bind(*args, **kwargs)
    except (TypeError, ValueError):  # arguments that do not bind; no signature to read
        return dict(kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def game_class(spec: str) -> type[GameGraph[Any]]:
    """The GameGraph class a 'package.module:Class' spec names (imported, not built); clear
    errors on failure."""
    module_name, class_name = _module_name(spec)
    try:
        module = importlib.import_module(module_name)
    except Exception as error:
        raise GameSpecError(
            f"cannot import module {module_name!r} for game {spec!r}: {error}"
        ) from error
    cls = getattr(module, class_name, None)
    if cls is None:
        raise GameSpecError(f"module {module_name!r} has no class {class_name!r}")
    if not (isinstance(cls, type) and issubclass(cls, GameGraph)):
        raise GameSpecError(f"{spec!r} is not a gamegym.GameGraph subclass")
    return cls


def game_spec(graph: GameGraph[Any]) -> str:
    """The 'module:Class' spec of a graph instance."""
    cls = type(graph)
    return f"{cls.__module__}:{cls.__qualname__}"
