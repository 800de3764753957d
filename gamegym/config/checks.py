"""The checks every config section uses: a field's type and range, a choice, a registered
name, unknown keys ("did you mean …?"), and sections nested in sections.

Each check raises `ConfigError` naming the field by its dotted path in config.json
("selfplay.search.searchcount"): a section's path is its `_section` (a class attribute, or
the instance's own where one class is nested in several places, see `nested`).
"""

from __future__ import annotations

import contextvars
import dataclasses
import difflib
from dataclasses import fields
from typing import Any

from gamegym.registry import Registry

__all__ = [
    "ConfigError",
    "check",
    "int_in",
    "float_in",
    "boolean",
    "choice",
    "registered",
    "nested",
    "field_names",
    "reject_unknown",
]


class ConfigError(ValueError):
    """A configuration value or key is not acceptable; the message names the field."""


def check(condition: bool, name: str, message: str) -> None:
    if not condition:
        raise ConfigError(f"config field '{name}' {message}")


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def section_of(obj: Any) -> str:
    """The dotted prefix of a section's fields: "selfplay.", "evaluate.search.", ..."""
    return getattr(obj, "_section", "")


def int_in(obj: Any, name: str, low: int, high: int | None = None) -> None:
    value = getattr(obj, name)
    check(is_int(value), f"{section_of(obj)}{name}", f"must be an integer, got {value!r}")
    check(
        value >= low and (high is None or value <= high),
        f"{section_of(obj)}{name}",
        f"must be in [{low}, {high if high is not None else '∞'}], got {value}",
    )


def float_in(
    obj: Any, name: str, low: float, high: float | None = None, low_open: bool = False
) -> None:
    value = getattr(obj, name)
    check(is_number(value), f"{section_of(obj)}{name}", f"must be a number, got {value!r}")
    ok = value > low if low_open else value >= low
    check(
        ok and (high is None or value <= high),
        f"{section_of(obj)}{name}",
        f"must be in {'(' if low_open else '['}{low}, {high if high is not None else '∞'}], "
        f"got {value}",
    )


def boolean(obj: Any, name: str) -> None:
    value = getattr(obj, name)
    check(
        isinstance(value, bool), f"{section_of(obj)}{name}", f"must be true or false, got {value!r}"
    )


def choice(obj: Any, name: str, choices: tuple) -> None:
    value = getattr(obj, name)
    check(
        value in choices,
        f"{section_of(obj)}{name}",
        f"must be one of {list(choices)}, got {value!r}",
    )


# while GymConfig.__post_init__ builds a config without importing its plugins: those of them
# not imported (their names may be registered by them, so registry fields are not checked)
PENDING_PLUGINS: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "gamegym_pending_plugins", default=()
)
# set by GymConfig.from_dict(..., plugins=False): the config being built imports no plugin
NO_PLUGINS: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "gamegym_no_plugins", default=False
)


def registered(obj: Any, name: str, registry: Registry) -> None:
    """The field names something registered in `registry` (gamegym.registry; a name its
    providers declare is known without importing them); any name while a config whose plugins
    were not imported is built (one of them may register it)."""
    value = getattr(obj, name)
    if isinstance(value, str) and value and PENDING_PLUGINS.get():
        return
    if isinstance(value, str) and registry.knows(value):
        return
    check(False, f"{section_of(obj)}{name}", f"must be one of {registry.names()}, got {value!r}")


def field_names(cls: type) -> list[str]:
    return [f.name for f in fields(cls)] if dataclasses.is_dataclass(cls) else []


def reject_unknown(data: dict, known: list[str], prefix: str, hint_for: Any = None) -> None:
    """ConfigError for the first key of `data` not in `known`, suggesting the closest known
    one; `hint_for(key)` may give a better hint for a key (e.g. one that moved)."""
    for key in data:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = (
                f"; did you mean '{prefix}{close[0]}'?"
                if close
                else f"; known fields: {', '.join(known)}"
            )
            hint = (hint_for(key) if hint_for is not None else None) or hint
            raise ConfigError(f"unknown config field '{prefix}{key}'{hint}")


def nested(obj: Any, name: str, cls: type, hint_for: Any = None) -> None:
    """Make the field `name` of section `obj` a `cls` section and give it its dotted path
    (`obj`'s path + name).  Given as a JSON object, its keys change the field's default (a
    section nested with defaults of its own, as evaluate.search, keeps them); given as a `cls`,
    it is taken as it is."""
    value = getattr(obj, name)
    path = f"{section_of(obj)}{name}"
    if isinstance(value, dict):
        reject_unknown(value, field_names(cls), path + ".", hint_for)
        (declared,) = [f for f in fields(obj) if f.name == name]
        made = declared.default_factory
        value = dataclasses.replace(made() if callable(made) else cls(), **value)
        setattr(obj, name, value)
    check(
        isinstance(value, cls),
        path,
        f"must be a JSON object (the {cls.__name__} section), got {value!r}",
    )
    value._section = path + "."
