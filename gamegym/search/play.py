"""Playing with MCTS over the GameGraph (AlphaZero's way): a self-play game, the self-play
driver of a Selfplayer, and a model player for matches.

  selfplay_game   one self-play game with a Search: the rule's policy targets and moves, root
                  values, the temperature schedule, playout caps, truncation at `max_moves`
  SearchSelfplay  AlphaZero's `Learner.selfplayer`: games one after another, leaves evaluated
                  through a model service (gamegym.nets.inference) with an evaluation cache
  ModelWait       a self-play driver's pause for the next model after so many positions
  MCTSPlayer      search with a model's evaluations, the most visited move (no noise)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from gamegym.game.graph import GameGraph
from gamegym.game.players import Player
from gamegym.nets.inference import NetworkPositionValuer
from gamegym.search.cores import make_search
from gamegym.search.gumbel import PlayoutCap
from gamegym.search.mcts import Node, SearchParams
from gamegym.search.tree import TreeSearch

__all__ = [
    "selfplay_game",
    "playout_cap",
    "SearchSelfplay",
    "ModelWait",
    "MCTSPlayer",
    "Record",
]


class Record(Protocol):
    """What a self-play game fills in: a `gamegym.data.samples.GameRecord`, which the caller
    makes (the search writes no sample files and imports nothing of gamegym.data).  Per
    position: x (numpify), pi float32 [A], legal bool [A], root_value, action, policy_weight
    (only with playout caps); per game: result (first mover's view) and truncated."""

    x: list
    pi: list
    legal: list
    root_value: list
    action: list
    policy_weight: list
    result: float
    truncated: bool

    def __len__(self) -> int: ...


R = TypeVar("R", bound=Record)


def playout_cap(cfg) -> PlayoutCap | None:
    """The playout cap of a `SelfplayConfig` (None when every move gets the full search:
    `playout_cap_probability` 1, the default)."""
    probability = getattr(cfg, "playout_cap_probability", 1.0)
    if probability >= 1.0:
        return None
    return PlayoutCap(cfg.search.searchcount, cfg.fast_searchcount, probability)


def selfplay_game(
    graph: GameGraph,
    search: TreeSearch,
    cfg,
    rng: np.random.Generator,
    record: R,
    should_stop: Callable[[], bool] = lambda: False,
) -> R | None:
    """One self-play game written into `record` (a new, empty `GameRecord`), which it
    returns; None when stopped before it finished.

    Each move: with playout caps (`playout_cap`), one draw from `rng` decides a full search
    (`search.searchcount`, its position a policy target: policy_weight 1) or a fast one
    (`fast_searchcount`, no Dirichlet noise, policy_weight 0); without, every move is full and
    `rng` draws nothing for it.  The move is the rule's choice at the temperature of the
    schedule (`temperature` before `temperature_drop_move`, then 0; the Gumbel rule ignores
    it).  Every position keeps its value target whatever its search."""
    cap = playout_cap(cfg)
    roots = graph.roots
    node = search.new_root(roots[int(rng.integers(len(roots)))] if len(roots) > 1 else roots[0])
    move = 0
    while True:
        if not graph.children_at(node.vertex):
            score = float(graph.score_at(node.vertex))
            record.result = score if move % 2 == 0 else -score
            return record
        if move >= cfg.max_moves:
            record.truncated = True
            return record
        if should_stop():
            return None
        if cap is None:
            search.run(node, rng)
        else:
            full, count = cap.draw(rng)
            search.run(node, rng, count, explore=full)
            record.policy_weight.append(1.0 if full else 0.0)
        record.x.append(graph.numpify(node.vertex))
        record.pi.append(search.policy_target(node))
        record.legal.append(graph.legal_mask(node.vertex))
        record.root_value.append(node.mean_value())
        temperature = cfg.temperature if move < cfg.temperature_drop_move else 0.0
        index = search.choose(node, temperature, rng)
        record.action.append(node.actions[index])
        node = search.next_root(node, index)
        move += 1


class ModelWait:
    """A self-play driver's pause: once the games it finished with the newest model iteration
    hold `cap` positions (0: never), it waits until `probe()` (one request past any cache; the
    iteration that answers) shows a newer iteration, asking every PROBE_SECONDS; after LIMIT
    seconds without one it plays another round with the model it has.  The Trainer gets the
    CPU meanwhile, and trains on games of the model it last published."""

    PROBE_SECONDS = 0.25
    LIMIT = 120.0

    def __init__(self, cap: int, probe: Callable[[], int] | None):
        if cap and probe is None:
            raise ValueError("a self-play driver that waits for new models needs a probe")
        self.cap, self.probe = cap, probe
        self.iteration = -1  # the newest model iteration that answered
        self.played = 0  # positions of the games finished with it since the last wait
        self._since: float | None = None  # when the current wait began

    @property
    def due(self) -> bool:
        return bool(self.cap) and self.played >= self.cap

    def saw(self, iteration: int) -> bool:
        """Note an answer's model iteration; True when it is newer (the count starts again)."""
        if iteration <= self.iteration:
            return False
        self.iteration, self.played, self._since = iteration, 0, None
        return True

    def finished(self, positions: int, iteration: int) -> None:
        """Count a finished game played with `iteration`."""
        self.saw(iteration)
        if iteration == self.iteration:
            self.played += positions

    def wait(self, should_stop: Callable[[], bool]) -> Iterator[None]:
        """Yield None (the loop writes out the games held, or a single-process run trains)
        until a newer model answers, the stop, or LIMIT seconds since the wait began (a driver
        called again after the loop left it goes on with the same wait)."""
        assert self.probe is not None
        if self._since is None:
            self._since = time.monotonic()
        while not should_stop():
            if self.saw(self.probe()):
                return
            if time.monotonic() - self._since > self.LIMIT:
                self.played, self._since = 0, None  # a round more with this model
                return
            yield None
            time.sleep(self.PROBE_SECONDS)


class SearchSelfplay(Generic[R]):
    """AlphaZero's self-play driver: one game at a time, MCTS over the GameGraph, leaves
    evaluated through the model service with an evaluation cache.  Another learner passes its
    own `search` (MuZero's latent search); its evaluator's `iteration` tags the games, and its
    `probe()` tells the newest iteration while the driver waits for a model
    (`selfplay.positions_per_iteration`).  `new_record` makes each game's empty record (the
    learner's `gamegym.data.samples.GameRecord`)."""

    def __init__(
        self,
        graph: GameGraph,
        service,
        config,
        rng: np.random.Generator,
        new_record: Callable[[], R],
        search: TreeSearch | None = None,
    ):
        self.graph, self.config, self.rng = graph, config.selfplay, rng
        self.new_record = new_record
        if search is None:
            search = make_search(
                graph,
                NetworkPositionValuer(graph, service, self.config.evaluation_cache),
                SearchParams.from_selfplay(self.config),
            )
        self.search = search
        self.evaluate: Any = search.evaluate  # with the `iteration` of its last answer
        self.pause = ModelWait(
            self.config.positions_per_iteration, getattr(self.evaluate, "probe", None)
        )

    @property
    def searches_done(self) -> int:
        return self.search.searches_done

    def play(self, should_stop: Callable[[], bool]) -> Iterator[tuple[R, int] | None]:
        while not should_stop():
            if self.pause.due:
                yield from self.pause.wait(should_stop)
                continue
            record = selfplay_game(
                self.graph, self.search, self.config, self.rng, self.new_record(), should_stop
            )
            if record is None:
                return
            iteration = max(0, self.evaluate.iteration)
            self.pause.finished(len(record), iteration)
            yield record, iteration


class MCTSPlayer(Player):
    """Search with a model's evaluations; plays its rule's move at temperature 0 (PUCT: the
    most visited one).  `params` is the search (`SearchParams.from_config` of a search
    section without noise; the model players' section is `evaluate.search`); `make` builds it
    (MuZero's latent search; default the GameGraph one, on the core `params.core` names)."""

    def __init__(
        self,
        evaluate,
        params: SearchParams,
        make: Callable[[GameGraph, Any, SearchParams], TreeSearch] = make_search,
    ):
        self.params = params
        self.evaluate = evaluate
        self.make = make

    def search(self, graph: GameGraph, vertex, rng: np.random.Generator) -> Node:
        """The searched root node (its visit counts are the move distribution)."""
        return self._searched(graph, vertex, rng)[1]

    def choose(self, graph: GameGraph, vertex, rng: np.random.Generator) -> int:
        search, root = self._searched(graph, vertex, rng)
        return int(root.actions[search.choose(root, 0.0, rng)])  # the rule's, at temperature 0

    def _searched(self, graph: GameGraph, vertex, rng: np.random.Generator) -> tuple[Any, Any]:
        search = self.make(graph, self.evaluate, self.params)
        return search, search.run(search.new_root(vertex), rng)
