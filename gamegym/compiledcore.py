"""What the compiled search core (gamegym.search.arena) can run, asked without importing the
search: the choices of `selfplay.search_core`, whether numba is installed, and why a search's
settings keep it on the Python core.  The config checks `search_core` with it and the search
picks its core with it, so the two give one answer.

May import: gamegym.registry and the standard library (the root rules say whether the compiled
core runs them, `SearchRule.compiled`, through gamegym.registry.SEARCHES).
"""

from __future__ import annotations

import importlib.util

from gamegym.registry import SEARCHES

__all__ = ["CORES", "compiled_core_available", "compiled_rules", "compiled_core_problem"]

CORES = ("auto", "python", "compiled")  # selfplay.search_core


def compiled_core_available() -> bool:
    """Whether numba is installed (the compiled core's one dependency)."""
    return importlib.util.find_spec("numba") is not None


def compiled_rules() -> list[str]:
    """The root rules the compiled core runs (`SearchRule.compiled`)."""
    return [name for name, rule in SEARCHES.items() if getattr(rule, "compiled", False)]


def compiled_core_problem(rule: str, solver: bool, os_threads: bool) -> str | None:
    """Why a search with these settings cannot run on the compiled core (None: it can)."""
    rules = compiled_rules()
    uncovered = [
        what
        for what, present in (
            (f"the {rule!r} rule", rule not in rules),
            ("the MCTS-solver (search_solver)", solver),
            ("OS threads (search_os_threads)", os_threads),
        )
        if present
    ]
    if uncovered:
        return (
            f"the compiled core runs the {' and '.join(repr(r) for r in rules)} rules without "
            f"the MCTS-solver or OS threads; this search has {' and '.join(uncovered)}: use "
            "search_core 'python' or 'auto'"
        )
    if not compiled_core_available():
        return (
            "the compiled core needs numba, which is not installed: "
            "pip install 'gamegym[fast]' (or search_core 'python')"
        )
    return None
