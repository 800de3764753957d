"""Which core runs a search (`selfplay.search.core`): the Python tree core
(gamegym.search.core, with AlphaZero's and MuZero's steps in gamegym.search.mcts and
gamegym.search.latent) or the compiled one (gamegym.search.flat and gamegym.search.latent_flat),
and why a search cannot run on the compiled core.  "auto", the config's default, is compiled
where the compiled core covers the search and numba is installed.  This module imports the
searches only when it makes one, so asking it costs no numba and no model code.
"""

from __future__ import annotations

from gamegym.config.search import CORES, compiled_core_available, compiled_core_problem
from gamegym.game.graph import GameGraph
from gamegym.search.rules import search_rule
from gamegym.search.tree import Evaluator, SearchParams, TreeSearch

__all__ = [
    "CORES",
    "compiled_core_available",
    "compiled_core_problem",
    "compiled_latent_runs",
    "core_for",
    "make_search",
    "make_latent_search",
]


def core_for(params: SearchParams) -> str:
    """The core a search with `params` runs on: "compiled" or "python".  "auto" is compiled
    where the compiled core covers the search (a `compiled` rule, no MCTS-solver)
    and numba is installed; "compiled" raises ValueError where it cannot be."""
    core = params.core
    if core not in CORES:
        raise ValueError(f"selfplay.search.core must be one of {list(CORES)}, got {core!r}")
    if core == "python" or params.os_threads:  # (the Python core refuses os_threads, named)
        return "python"
    problem = compiled_core_problem(params.rule, params.solver)
    if problem is None:
        return "compiled"
    if core == "compiled":
        raise ValueError(f"selfplay.search.core 'compiled': {problem}")
    return "python"


def make_search(graph: GameGraph, evaluate: Evaluator, params: SearchParams) -> TreeSearch:
    """AlphaZero's tree search over `graph` on the core `params.core` asks for (see
    `core_for`): a `gamegym.search.flat.FlatSearch` or the Python `gamegym.search.mcts.Search`;
    both have the same interface."""
    if core_for(params) == "compiled":
        from gamegym.search.flat import FlatSearch

        return FlatSearch(graph, evaluate, params)
    from gamegym.search.mcts import Search

    return Search(graph, evaluate, params)


def compiled_latent_runs(rule: str) -> bool:
    """Whether the compiled latent search runs the search rule `rule`: a rule that leaves the
    root's child to the walk (PUCT) does; one that picks it itself (Gumbel's sequential
    halving) runs on the Python latent search only."""
    return not hasattr(search_rule(rule), "root_child")


def make_latent_search(graph: GameGraph, evaluate, params: SearchParams):
    """MuZero's latent search over `graph` on the core `params.core` asks for (`core_for`): a
    `gamegym.search.latent_flat.LatentFlatSearch` or the Python
    `gamegym.search.latent.LatentSearch`."""
    core = core_for(params)
    if core == "compiled" and not compiled_latent_runs(params.rule):
        if params.core == "compiled":
            raise ValueError(
                "selfplay.search.core 'compiled': the compiled core runs MuZero's latent "
                f"search with the 'puct' rule only, not {params.rule!r}: use search.core "
                "'auto' or 'python'"
            )
        core = "python"  # "auto": the Python latent search runs the Gumbel rule
    if core == "compiled":
        from gamegym.search.latent_flat import LatentFlatSearch

        return LatentFlatSearch(graph, evaluate, params)
    from gamegym.search.latent import LatentSearch

    return LatentSearch(graph, evaluate, params)
