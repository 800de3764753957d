"""The search tree's parts: the search parameters, the node with its statistics, and the
evaluator a search asks (with a uniform stub).  The search itself is `gamegym.search.core`."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.random import Generator

from gamegym.config.search import SearchConfig
from gamegym.registry import SEARCHES

if TYPE_CHECKING:
    from gamegym.config.sections import SelfplayConfig

__all__ = ["DISCOUNT", "Evaluator", "SearchParams", "Node", "TreeSearch", "uniform_evaluator"]

# what a value below an edge counts for above it in the backup (reward + DISCOUNT * value): the
# turn passes at every ply, so a node's statistics are from the view of the player to move there
DISCOUNT = -1.0

DEFAULTS = SearchConfig  # the one table of search defaults: the search section's own

# evaluator(vertices) -> (probs float32 [B, A] over action ids, values float32 [B] mover's view)
Evaluator = Callable[[Sequence[Hashable]], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class SearchParams:
    """What the search needs from a search section (`from_config`).  Defaults are the config's
    (gamegym.config.search.SearchConfig, the one table), but for one thread, the Python core
    and no root noise: a search built by hand is the plain reference search."""

    searchcount: int = DEFAULTS.searchcount  # searches per move
    threads: int = 1  # search threads sharing the tree
    exploration_const: float = DEFAULTS.exploration_const  # c_puct
    virtualloss: float = DEFAULTS.virtualloss  # loss visits added along a path while its
    #                                            leaf is evaluated
    dirichlet_alpha: float = DEFAULTS.dirichlet_alpha  # root noise concentration
    dirichlet_fraction: float = 0.0  # root noise weight (0 = none)
    forced_playouts: float = DEFAULTS.forced_playouts  # k of forced playouts at the root
    #                                                    (0 = none; gamegym.search.forced)
    os_threads: bool = DEFAULTS.os_threads  # refused (gamegym.search.core): the searches
    #                                         have one driver
    solver: bool = DEFAULTS.solver  # prove wins and losses (MCTS-solver, see gamegym.search.mcts)
    core: str = "python"  # "python", "compiled" or "auto" (gamegym.search.cores.core_for)
    rule: str = DEFAULTS.rule  # the root rule (gamegym.registry.SEARCHES)
    gumbel_considered: int = DEFAULTS.gumbel_considered  # Gumbel: root actions sampled by
    #                                                      Gumbel-Top-k
    gumbel_value_scale: float = DEFAULTS.gumbel_value_scale  # Gumbel: sigma's c_scale
    gumbel_maxvisit_init: float = DEFAULTS.gumbel_maxvisit_init  # Gumbel: sigma's c_visit
    gumbel_rescale: str = DEFAULTS.gumbel_rescale  # Gumbel: how sigma maps q to [0, 1]

    @classmethod
    def from_config(cls, search: SearchConfig, noise: bool = True) -> SearchParams:
        """The parameters of a search section (`selfplay.search`, `evaluate.search`): the one
        place a config becomes a search.  An unset `dirichlet_fraction` (None) is the rule's
        default (PUCT 0.25, Gumbel 0); `noise=False`, a player's search: no noise and no forced
        playouts (they are self-play's)."""
        fraction = search.dirichlet_fraction
        if fraction is None:
            fraction = SEARCHES.get(search.rule).default_dirichlet_fraction
        return cls(
            searchcount=search.searchcount,
            threads=search.threads,
            exploration_const=search.exploration_const,
            virtualloss=search.virtualloss,
            dirichlet_alpha=search.dirichlet_alpha,
            dirichlet_fraction=fraction if noise else 0.0,
            forced_playouts=search.forced_playouts if noise else 0.0,
            os_threads=search.os_threads,
            solver=search.solver,
            core=search.core,
            rule=search.rule,
            gumbel_considered=search.gumbel_considered,
            gumbel_value_scale=search.gumbel_value_scale,
            gumbel_maxvisit_init=search.gumbel_maxvisit_init,
            gumbel_rescale=search.gumbel_rescale,
        )

    @classmethod
    def from_selfplay(cls, cfg: SelfplayConfig, noise: bool = True) -> SearchParams:
        """The search of a selfplay section (`from_config` of its `search`)."""
        return cls.from_config(cfg.search, noise)


class Node:
    """A vertex in the search tree with the statistics of its outgoing edges (mover's view)."""

    __slots__ = (
        "vertex",
        "child_vertices",
        "actions",
        "children",
        "priors",
        "raw_priors",
        "visits",
        "values",
        "total",
        "state",
        "value",
        "reward",
        "proven",
        "solved",
    )

    NEW, PENDING, EXPANDED, TERMINAL = 0, 1, 2, 3

    def __init__(self, vertex: Hashable):
        self.vertex = vertex
        self.child_vertices: tuple = ()
        self.actions: tuple = ()
        self.children: list = []  # Node or None per child
        self.priors: list = []  # P(s, a) per child
        self.raw_priors: list | None = None  # priors before root noise
        self.visits: list = []  # N(s, a) per child, virtual visits included
        self.values: list = []  # W(s, a) per child, sum of values from this node's view
        self.total: float = 0  # sum of visits (virtual losses are floats)
        self.state = Node.NEW
        self.value = 0.0  # network value (or final score) from the mover's view
        self.reward = 0.0  # reward of the edge into this node, the parent's mover's view (0
        #                    in a game: only MuZero's model predicts rewards on the way)
        self.proven: float | None = None  # exact value from the mover's view, once proven
        self.solved = 0  # how many children are proven

    def mean_value(self) -> float:
        """Search value of this node from its mover's view (its exact value once proven)."""
        if self.proven is not None:
            return self.proven
        return sum(self.values) / self.total if self.total else self.value

    def proven_best(self) -> list[int] | None:
        """Indices of the children a move may go to, as far as the search proved anything:
        the children that achieve a proven value, else the children not proven to lose (None
        when nothing rules a child out)."""
        if not self.solved:
            return None
        children = self.children
        if self.proven is not None:
            best = [
                i
                for i, c in enumerate(children)
                if c is not None and c.proven is not None and -c.proven == self.proven
            ]
            return best or None
        keep = [
            i for i, c in enumerate(children) if c is None or c.proven is None or c.proven < 1.0
        ]
        return keep if len(keep) < len(children) else None


class TreeSearch(Protocol):
    """What self-play, the players and the benches use of a tree search: the Python core
    (gamegym.search.core.TreeCore: AlphaZero's and MuZero's steps on it) or the compiled core
    (gamegym.search.flat.FlatSearch).  Roots are each core's own node type."""

    graph: Any
    evaluate: Any
    searches_done: int
    evaluations: int

    def new_root(self, vertex: Hashable) -> Any: ...

    def next_root(self, root: Any, index: int) -> Any: ...

    def policy_target(self, root: Any) -> np.ndarray: ...

    def choose(self, root: Any, temperature: float, rng: np.random.Generator) -> int: ...

    def run(
        self, root: Any, rng: Generator, searchcount: int | None = None, explore: bool = True
    ) -> Any: ...


def uniform_evaluator(action_space_size: int) -> Evaluator:
    """A stub evaluator: uniform priors and value 0 (for the search ceiling and tests).  The
    answer for each batch size is made once and handed out read-only, so the stub costs the
    search next to nothing."""
    answers: dict = {}

    def evaluate(vertices):
        n = len(vertices)
        answer = answers.get(n)
        if answer is None:
            answer = (
                np.full((n, action_space_size), 1.0 / action_space_size, np.float32),
                np.zeros(n, np.float32),
            )
            for array in answer:
                array.flags.writeable = False
            answers[n] = answer
        return answer

    return evaluate
