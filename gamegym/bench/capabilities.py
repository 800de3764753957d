"""What the benchmarks can measure of a learner: capabilities it declares when it registers
(`@register(network_paths=True)`, gamegym.registry), not methods of the Learner interface,
which holds only what the gym's processes call.  Each is asked by the learner's registered
name; a learner that declares none is measured as one whose self-play searches its GameGraph:

  selfplay_searches  bool: whether its self-play searches a tree (default True).  One that plays
                     straight from its network (bootstrapped) has no search ceiling nor
                     efficiency, and its self-play's searches per move are 0.
  stub_search        (graph, SearchParams) -> TreeSearch: its self-play's search with a uniform
                     evaluator, nothing computed at the leaves (the search ceiling).  Default:
                     the search over the GameGraph on the core the params pick.
  player_searches    (GymConfig) -> bool: whether the model's player (evaluate, play, the
                     benchmarks) searches a tree under a session's config.  Default: as its
                     self-play does.
  play_rule          (GymConfig) -> str: how the model's player picks a move, in words, when it
                     does not search.  Default: "the best move of its network".
  network_paths      bool: whether its model is one network that gamegym.bench.networks can time
                     on each path (TensorFlow, NumPy, ONNX Runtime); else the throughput bench
                     times the learner's own evaluator (default False).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gamegym.registry import LEARNERS

if TYPE_CHECKING:
    from gamegym.config import GymConfig
    from gamegym.game.graph import GameGraph
    from gamegym.search.tree import SearchParams, TreeSearch

__all__ = [
    "network_paths",
    "play_rule",
    "player_searches",
    "selfplay_searches",
    "stub_search",
]


def selfplay_searches(learner: str) -> bool:
    """Whether the self-play of the learner registered as `learner` searches a tree."""
    return bool(LEARNERS.capability(learner, "selfplay_searches", True))


def stub_search(learner: str, graph: GameGraph[Any], params: SearchParams) -> TreeSearch:
    """The learner's self-play search on `graph` with a uniform evaluator, on the core `params`
    pick: the search ceiling's search."""
    own = LEARNERS.capability(learner, "stub_search")
    if own is not None:
        search: TreeSearch = own(graph, params)
        return search
    from gamegym.search.cores import make_search
    from gamegym.search.mcts import uniform_evaluator

    return make_search(graph, uniform_evaluator(graph.action_space_size), params)


def player_searches(config: GymConfig) -> bool:
    """Whether the model's player of the session with config `config` searches a tree."""
    own = LEARNERS.capability(config.train.learner, "player_searches")
    if own is not None:
        return bool(own(config))
    return selfplay_searches(config.train.learner)


def play_rule(config: GymConfig) -> str:
    """How the model's player of the session with config `config` picks a move, in words,
    when it does not search."""
    own = LEARNERS.capability(config.train.learner, "play_rule")
    return str(own(config)) if own is not None else "the best move of its network"


def network_paths(learner: str) -> bool:
    """Whether gamegym.bench.networks can time the learner's model on each network path."""
    return bool(LEARNERS.capability(learner, "network_paths", False))
