"""The search section: one `SearchConfig`, nested where a search runs (`selfplay.search`, and
the players' search in `evaluate.search`), as AlphaZero.jl nests one `MctsParams` in its
self-play and arena parameters.

Its defaults are the one table of search defaults: gamegym.search's `SearchParams` and the
Gumbel rule's `GumbelParams` take theirs from it (`SearchParams.from_config` maps a section to
the search's parameters).  Whether the compiled core covers a search is answered here too
(`compiled_core_problem`), from what the registered rules declare, so a config that names
the compiled core is checked without importing the search; so is whether the rule can force
playouts (`forcing_problem`).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from gamegym.config.checks import boolean, check, choice, float_in, int_in, registered
from gamegym.registry import SEARCHES

__all__ = [
    "SearchConfig",
    "CORES",
    "GUMBEL_RESCALES",
    "compiled_core_available",
    "compiled_core_problem",
    "compiled_rules",
    "forcing_problem",
]

CORES = ("auto", "python", "compiled")  # search.core (gamegym.search.cores.core_for)
GUMBEL_RESCALES = ("node", "score")  # search.gumbel_rescale (gamegym.search.gumbel)


@dataclass
class SearchConfig:
    """The tree search: its budget, its root rule and that rule's constants, the threads
    that share one tree, and the core that runs it."""

    _section = "search."
    rule: str = "puct"  # root rule: "puct" (AlphaZero) or "gumbel" (Gumbel AlphaZero /
    #                     MuZero: Gumbel-Top-k, sequential halving, completed-Q targets)
    searchcount: int = 100  # searches (MCTS simulations) per move
    threads: int = 8  # concurrent searches (virtual loss) sharing one tree
    os_threads: bool = False  # must stay false: one thread drives every concurrent search
    #                     (OS threads were several times slower under the GIL; kept to name
    #                     the setting of an older config)
    solver: bool = False  # prove wins/losses in the tree (MCTS-solver); exact endgames
    core: str = "auto"  # "auto": the compiled core where numba is installed and it covers
    #                     the search (PUCT or Gumbel, no solver; MuZero: PUCT),
    #                     else "python"; "compiled": the search's loops compiled by numba
    #                     (`pip install 'gamegym[fast]'`), the same games faster, or an error
    #                     naming why not
    exploration_const: float = 1.5  # PUCT exploration constant c_puct
    virtualloss: float = 1.0  # visits of value -1 added on a path while its leaf is evaluated
    dirichlet_alpha: float = 0.5  # Dirichlet noise concentration at the root
    dirichlet_fraction: float | None = None  # weight of the noise in the root priors (0 =
    #                     off; None = the rule's default: puct 0.25, gumbel 0); self-play
    #                     only: a player searches without noise
    forced_playouts: float = 0.0  # (puct) KataGo's forced playouts, the constant k (0 = off;
    #                     KataGo uses 2): at the root of a full self-play search, a child
    #                     visited fewer than sqrt(k P total) times (P its noised prior) is
    #                     searched next, and the policy target drops the visits PUCT would
    #                     not have given it; the move is still drawn from all the visits;
    #                     self-play only: a player never forces
    gumbel_considered: int = 16  # (gumbel) root actions sampled by Gumbel-Top-k (mctx: 16)
    gumbel_value_scale: float = 0.1  # (gumbel) c_scale of sigma(q) = (c_visit + max N)
    #                     c_scale q
    gumbel_maxvisit_init: float = 50.0  # (gumbel) c_visit of sigma(q)
    gumbel_rescale: str = "score"  # (gumbel) q to [0, 1] in sigma by the score range
    #                     [-1, 1] ("score") or by the node's children's min and max ("node",
    #                     mctx's), which blows a small spread up to the full scale

    def validate(self) -> None:
        registered(self, "rule", SEARCHES)
        int_in(self, "searchcount", 1, 1_000_000)
        int_in(self, "threads", 1, 1024)
        boolean(self, "os_threads")
        check(
            not self.os_threads,
            f"{self._section}os_threads",
            "must be false: one thread drives every concurrent search (OS threads were several "
            "times slower under the GIL, and no core runs them)",
        )
        boolean(self, "solver")
        choice(self, "core", CORES)
        if self.core == "compiled":
            problem = compiled_core_problem(self.rule, self.solver)
            check(problem is None, f"{self._section}core", f"'compiled': {problem}")
        float_in(self, "exploration_const", 0.0, 100.0, low_open=True)
        float_in(self, "virtualloss", 0.0, 100.0)
        float_in(self, "dirichlet_alpha", 0.0, 100.0, low_open=True)
        if self.dirichlet_fraction is not None:
            float_in(self, "dirichlet_fraction", 0.0, 1.0)
        float_in(self, "forced_playouts", 0.0, 100.0)
        if self.forced_playouts:
            problem = forcing_problem(self.rule)
            check(
                problem is None,
                f"{self._section}forced_playouts",
                f"({self.forced_playouts}) {problem}",
            )
        int_in(self, "gumbel_considered", 1, 65536)
        float_in(self, "gumbel_value_scale", 0.0, 1000.0)
        float_in(self, "gumbel_maxvisit_init", 0.0, 1e9)
        choice(self, "gumbel_rescale", GUMBEL_RESCALES)


def compiled_core_available() -> bool:
    """Whether numba is installed (the compiled core's one dependency)."""
    return importlib.util.find_spec("numba") is not None


def compiled_rules() -> list[str]:
    """The root rules the compiled core runs (`SearchRule.compiled`)."""
    return [name for name, rule in SEARCHES.items() if getattr(rule, "compiled", False)]


def compiled_core_problem(rule: str, solver: bool) -> str | None:
    """Why a search with this rule and solver setting cannot run on the compiled core (None:
    it can).  (`os_threads`, which no core runs, is refused on its own: by `validate`, and
    by the Python core for search parameters made in code.)"""
    rules = compiled_rules()
    uncovered = [
        what
        for what, present in (
            (f"the {rule!r} rule", rule not in rules),
            ("the MCTS-solver (search.solver)", solver),
        )
        if present
    ]
    if uncovered:
        return (
            f"the compiled core runs the {' and '.join(repr(r) for r in rules)} rules without "
            f"the MCTS-solver; this search has {' and '.join(uncovered)}: use "
            "search.core 'python' or 'auto'"
        )
    if not compiled_core_available():
        return (
            "the compiled core needs numba, which is not installed: "
            "pip install 'gamegym[fast]' (or search.core 'python')"
        )
    return None


def forcing_problem(rule: str) -> str | None:
    """Why the root rule `rule` cannot force playouts (`search.forced_playouts`; None: it can,
    or it is a plugin's rule not registered yet, whose search then says so itself)."""
    if rule not in SEARCHES:
        return None
    if getattr(SEARCHES.get(rule), "forces_playouts", False):
        return None
    able = [name for name, cls in SEARCHES.items() if getattr(cls, "forces_playouts", False)]
    return (
        f"cannot be used with search.rule {rule!r}, which picks every root child itself: "
        f"only the {' and '.join(repr(r) for r in able)} rule forces playouts; set it to 0 "
        "or change the rule"
    )
