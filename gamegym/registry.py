"""The gym's extension points by name: learners, replay modes, backends and search rules.

Each kind of thing a config names has one `Registry`.  An implementation registers itself where
it is defined (`@LEARNERS.register`); config validation, presets, the CLI and the benchmarks ask
the registry for a name, its class or the list of names, and never compare names themselves.

The built-in implementations live in the modules each registry lists as its *providers*: they
are imported the first time the registry is asked, so naming a registry costs nothing until a
name is looked up.  A registry may declare the names its providers register (`declared`):
`knows(name)` answers for those without importing anything, so validating a config that
names a built-in backend or search rule imports neither.

Code of your own registers the same way, from any module imported before the config is built
(a test folder, your game's module), or as a package entry point in the group
`gamegym.<kind>s` (e.g. `gamegym.learners`), which is loaded with the providers:

    from gamegym.registry import LEARNERS

    @LEARNERS.register
    class MyLearner(Learner):
        name = "mine"

What only some callers need to know of an implementation, beyond its interface, it declares
as *capabilities* when it registers (`LEARNERS.register(cls, network_paths=True)`), and those
callers ask `LEARNERS.capability("mine", "network_paths", False)`: the benchmarks learn what they
can measure of a learner this way (gamegym.bench.capabilities), so the Learner interface holds
only what the gym's processes call.

This module imports nothing of gamegym, so every layer may use it.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import logging
import threading
from collections.abc import Iterator
from importlib import metadata
from typing import Any, TypeVar

__all__ = [
    "Registry",
    "RegistryError",
    "LEARNERS",
    "PRESETS",
    "REPLAYS",
    "BACKENDS",
    "SEARCHES",
]

log = logging.getLogger("gamegym.registry")

T = TypeVar("T")


class RegistryError(KeyError):
    """A name no implementation registered under; the message lists the known names."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class Registry:
    """Names of one kind of implementation (a learner, a replay mode, ...) and their classes."""

    def __init__(
        self,
        kind: str,
        field: str,
        providers: tuple[str, ...] = (),
        declared: tuple[str, ...] = (),
    ) -> None:
        self.kind = kind  # "learner": used in messages
        self.field = field  # the config field that names one: "train.learner"
        self.providers = providers  # modules that register the built-in implementations
        # names the providers register, known without importing them (`knows`)
        self.declared = frozenset(declared)
        self._entries: dict[str, Any] = {}
        self._declared: dict[int, dict[str, Any]] = {}  # id(object) -> its capabilities
        self._loaded = False
        self._lock = threading.RLock()

    def register(
        self, obj: T | None = None, *, name: str | None = None, **capabilities: Any
    ) -> Any:
        """Register `obj` under `name` (default: its `name` attribute).  Usable as a decorator,
        with or without arguments.  Registering a second object under a taken name is an
        error; registering the same object again is not (it keeps what it declared).
        `capabilities` declare what a caller beyond the object's interface may ask of it
        (`capability`), e.g. what a benchmark can measure of a learner."""

        def add(target: T) -> T:
            key = name if name is not None else getattr(target, "name", None)
            if not isinstance(key, str) or not key:
                raise ValueError(
                    f"a {self.kind} needs a non-empty string name to register, "
                    f"got {key!r} for {target!r}"
                )
            with self._lock:
                present = self._entries.get(key)
                if present is not None and present is not target:
                    raise ValueError(
                        f"{self.kind} {key!r} is registered already ({_describe(present)})"
                    )
                self._entries[key] = target
                if capabilities:
                    self._declared[id(target)] = {
                        **self._declared.get(id(target), {}),
                        **capabilities,
                    }
            return target

        return add if obj is None else add(obj)

    def unregister(self, name: str) -> None:
        """Forget a name (for tests that register a toy implementation)."""
        with self._lock:
            self._declared.pop(id(self._entries.pop(name, None)), None)

    def get(self, name: str) -> Any:
        """The implementation registered under `name`; RegistryError naming the known ones."""
        self._load()
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            raise RegistryError(self.unknown(name)) from None

    def capability(self, name: str, key: str, default: Any = None) -> Any:
        """What the implementation registered under `name` declared as `key` when it
        registered (`register(obj, key=value)`), else what the nearest of its base classes
        declared (a subclass inherits capabilities as it inherits methods), else `default`.
        RegistryError for an unknown name."""
        obj = self.get(name)
        for owner in getattr(obj, "__mro__", (obj,)):
            declared = self._declared.get(id(owner), {})
            if key in declared:
                return declared[key]
        return default

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        self._load()
        return sorted(self._entries)

    def items(self) -> Iterator[tuple[str, Any]]:
        """(name, implementation) pairs, sorted by name."""
        self._load()
        return iter(sorted(self._entries.items()))

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries

    def knows(self, name: object) -> bool:
        """Whether `name` is registered; a name the providers declare is known without
        importing them (a config names one without paying for the modules behind it)."""
        return (isinstance(name, str) and name in self.declared) or name in self

    def unknown(self, name: Any) -> str:
        """The message for a name nothing registered under."""
        known = self.names()
        close = difflib.get_close_matches(str(name), known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"unknown {self.kind} {name!r}{hint}; known {self.kind}s: {', '.join(known)}"

    def _load(self) -> None:
        if self._loaded:
            return
        with self._lock:
            if self._loaded:
                return
            self._loaded = True  # set first: a provider may ask the registry while loading
            for module in self.providers:
                importlib.import_module(module)
            for point in _entry_points().select(group=f"gamegym.{self.kind}s"):
                _load_entry_point(self, point)


@functools.cache
def _entry_points() -> Any:
    """Every installed package's entry points, read once per process (each reading scans the
    metadata of every installed distribution): an object with `select(group=...)`
    (SelectableGroups before Python 3.12, EntryPoints from it)."""
    return metadata.entry_points()


def _load_entry_point(registry: Registry, point: Any) -> None:
    """Import a package's entry point; one that fails is logged and left out, not fatal."""
    try:
        obj = point.load()
    except Exception as error:  # a broken plug-in must not stop the gym
        log.warning(
            "cannot load %s %r from entry point %s: %s",
            registry.kind,
            point.name,
            point.value,
            error,
        )
        return
    registry.register(obj, name=point.name)


def _describe(obj: Any) -> str:
    module = getattr(obj, "__module__", "?")
    return f"{module}.{getattr(obj, '__qualname__', type(obj).__qualname__)}"


LEARNERS = Registry(
    "learner",
    "train.learner",
    providers=(
        "gamegym.learners.alphazero",
        "gamegym.learners.muzero",
        "gamegym.learners.bootstrapped",
    ),
)
# each learner's presets (gamegym.learners.base.Preset), gathered by gamegym.presets
PRESETS = Registry(
    "preset",
    "--preset",
    providers=(
        "gamegym.learners.alphazero.presets",
        "gamegym.learners.muzero.presets",
        "gamegym.learners.bootstrapped.presets",
    ),
)
REPLAYS = Registry(
    "replay", "train.replay", providers=("gamegym.data.replay", "gamegym.data.prioritized")
)
BACKENDS = Registry(
    "backend",
    "selfplay.backend",
    providers=("gamegym.runtime.backends", "gamegym.runtime.ray.backend"),
    declared=("processes", "ray"),
)
SEARCHES = Registry(
    "search",
    "selfplay.search.rule",
    providers=("gamegym.search.rules",),
    declared=("gumbel", "puct"),
)
