"""A game's one identity: its reference (`GameRef`), the spec and arguments a config names.

A session's config.json names its game as `game` ("package.module:Class") and `game_args` (the
keyword arguments, a JSON object); `GymConfig.game_ref` is that pair as one frozen, hashable,
picklable value.  Every process builds the graph from the reference once: `GameRef.build`
keeps what it built for the rest of the process, so the gym, a benchmark and each child ask
for the game by its reference and get the one graph their process has.  A child process is
handed the config (the reference inside it), never a graph.

Two references are equal when their specs are and their arguments are equal as JSON (the
order of the keys does not matter).  A reference that leaves an argument at its default and
one that spells it out build the same graph: what is kept is found by the arguments with the
defaults filled in (`complete`).

A graph built in your own code enters through its reference, `GameRef.of(graph)`: its class's
spec and the arguments it was built with, refused when that spec does not import the very
class (a class defined in a function, or one a module name hides), since every process
rebuilds the game from the reference.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from gamegym.game.graph import (
    GameGraph,
    GameSpecError,
    bound_game_args,
    build_game,
    game_class,
    game_module,
    game_spec,
)

__all__ = ["GameRef", "forget_built"]

# the graphs this process has built, by (class, completed arguments as canonical JSON); a
# handful at most (a benchmark that changes the game holds two), the oldest dropped first
_KEPT = 8
_built: OrderedDict[tuple[type, str], GameGraph[Any]] = OrderedDict()
_lock = threading.RLock()  # reentrant: a game whose constructor builds another by reference


def _canonical(args: Mapping[str, Any], spec: str) -> str:
    """The arguments as canonical JSON (keys sorted, no spaces): the reference's value."""
    try:
        return json.dumps(dict(args), sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError) as error:
        raise GameSpecError(
            f"game {spec!r}: its arguments {dict(args)!r} must be JSON values (the session's "
            f"config.json stores them): {error}"
        ) from error


class GameRef:
    """A game by reference: `spec` ("package.module:Class") and `args` (its keyword arguments,
    a JSON object).  Frozen, hashable and picklable; equal to another when the spec and the
    arguments (as JSON) are.  Making one imports nothing (a session's game is imported only
    once the user allowed it, gamegym.data.trust); `build` imports and builds."""

    __slots__ = ("spec", "_args")
    spec: str
    _args: str  # canonical JSON

    def __init__(self, spec: str, args: Mapping[str, Any] | None = None):
        game_module(spec)  # GameSpecError naming a spec that is no 'package.module:Class'
        args = {} if args is None else args
        if not isinstance(args, Mapping):
            raise GameSpecError(
                f"game {spec!r}: its arguments must be a JSON object (a dict), got {args!r}"
            )
        object.__setattr__(self, "spec", spec)
        object.__setattr__(self, "_args", _canonical(args, spec))

    @classmethod
    def of(cls, graph: GameGraph[Any]) -> GameRef:
        """The reference of a graph built in this process: its class's spec and the arguments
        it was built with.  GameSpecError when the spec does not import that very class:
        every other process rebuilds the game from the reference."""
        spec = game_spec(graph)
        if game_class(spec) is not type(graph):  # a class of that name, but another one
            raise GameSpecError(
                f"the game {type(graph).__qualname__} cannot be rebuilt from its spec "
                f"{spec!r}: define it at the top level of an importable module"
            )
        return cls(spec, graph.game_args)

    @property
    def args(self) -> dict[str, Any]:
        """The keyword arguments (a new dict each time: the reference does not change)."""
        args: dict[str, Any] = json.loads(self._args)
        return args

    def settings(self) -> dict[str, Any]:
        """The reference as a config holds it: {"game": spec, "game_args": args}."""
        return {"game": self.spec, "game_args": self.args}

    def complete(self) -> GameRef:
        """The same game with every argument its class takes spelled out (the defaults filled
        in, as `GameGraph.game_args` records them): what a new session stores, and what a
        preset is looked up by.  Imports the game's module; builds nothing."""
        return GameRef(self.spec, bound_game_args(game_class(self.spec), (), self.args))

    def build(self) -> GameGraph[Any]:
        """The graph of this game in this process: built on the first call (for this or an
        equivalent reference), the same object after.  GameSpecError naming the spec when it
        cannot be imported or built.  A thread that needs a graph of its own (the cache of
        expanded vertices is not shared safely between threads) asks for `build_new`."""
        cls = game_class(self.spec)
        key = (cls, json.dumps(bound_game_args(cls, (), self.args), sort_keys=True, default=repr))
        with _lock:
            graph = _built.get(key)
            if graph is None:
                graph = _built[key] = build_game(cls, self.spec, self.args)
                while len(_built) > _KEPT:
                    _built.popitem(last=False)
            else:
                _built.move_to_end(key)
            return graph

    def build_new(self) -> GameGraph[Any]:
        """A graph of this game of the caller's own, not the one `build` keeps."""
        return build_game(game_class(self.spec), self.spec, self.args)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a GameRef is frozen: cannot set {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GameRef):
            return NotImplemented
        return (self.spec, self._args) == (other.spec, other._args)

    def __hash__(self) -> int:
        return hash((GameRef, self.spec, self._args))

    def __reduce__(self) -> tuple[Any, ...]:
        return GameRef, (self.spec, self.args)

    def __repr__(self) -> str:
        return f"GameRef({self.spec!r}, {self.args!r})"

    def __str__(self) -> str:
        return self.spec if self._args == "{}" else f"{self.spec} {self._args}"


def forget_built() -> None:
    """Drop the graphs this process built (the next `build` builds anew): for tests."""
    with _lock:
        _built.clear()
