"""Playing with Q-value heads (the bootstrapped learner, gamegym.learners.bootstrapped.learner): self-play
without a tree, the model as a player, and the model call behind "q" requests.

  QSelfplay            the learner's self-play driver: many games at once, one "q" request for
                       a move in each; every game acts greedily on one head drawn for it, and
                       every position gets a Bernoulli(p) mask over the heads, drawn from the
                       seeded rng
  VotePlayer           the heads' majority vote of their greedy legal moves (the paper's rule)
  MeanQPositionValuer  an MCTS evaluator over "q" requests: the heads' mean Q as the leaf
                       value

The model call behind "q" requests is in gamegym.learners.bootstrapped.evaluators.

A "q" request has inputs {"x": float32 [B, *input_shape]} and answers {"q": float32 [B, K, A]},
the value of each action id for the mover at each position, per head, in [-1, 1].
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator

import numpy as np

from gamegym.data.samples import GameRecord
from gamegym.game.graph import GameGraph
from gamegym.game.players import Player
from gamegym.learners.bootstrapped.config import positions_per_iteration
from gamegym.nets.inference import softmax
from gamegym.search.play import ModelWait

__all__ = ["QSelfplay", "VotePlayer", "MeanQPositionValuer", "vote", "epsilon_for", "DQN_EPSILON"]

DQN_EPSILON = 0.1  # bootstrapped.epsilon when it is not set and the network has one head
PRIOR_TEMPERATURE = 0.25  # MeanQPositionValuer: priors = softmax(mean Q / this) over legal moves


def epsilon_for(epsilon: float | None, heads: int) -> float:
    """bootstrapped.epsilon, or its default: 0 with several heads (the heads explore), DQN_EPSILON
    with one."""
    if epsilon is not None:
        return float(epsilon)
    return 0.0 if heads > 1 else DQN_EPSILON


def vote(q: np.ndarray, legal: np.ndarray, rng: np.random.Generator) -> int:
    """The action id most heads' greedy legal move is; among tied ones the best by mean Q,
    then a random one.  q float32 [K, A], legal bool [A]."""
    masked = np.where(legal, q, -np.inf)
    votes = np.bincount(masked.argmax(axis=1), minlength=q.shape[1])
    best = np.flatnonzero(votes == votes.max())
    if len(best) > 1:
        mean = q[:, best].mean(axis=0)
        best = best[mean >= mean.max()]
    return int(best[rng.integers(len(best))])


class _Game:
    """A game in progress in QSelfplay."""

    __slots__ = ("vertex", "x", "heads", "record")

    def __init__(self, vertex, x: np.ndarray, heads: tuple[int, int]):
        self.vertex, self.x, self.heads = vertex, x, heads  # the acting head of either side
        self.record = GameRecord(extra={"mask": [], "head": [], "terminal": []})


class QSelfplay:
    """Self-play without search: `concurrent_games` games at once, in two groups so that one
    group's request is at the Predictor while the other group moves.

    Each game draws one head uniformly (with `head_per_side`, one for each side) and plays the
    legal move that head values most (a uniformly random legal move with chance `epsilon`); in
    the first `temperature_drop_move` plies of a game it samples the move from
    softmax(Q / temperature) of that head over the legal moves instead, so that games differ.
    A sample per position: pi one-hot on the move, root_value the acting head's Q of it, and
    three columns of its own (stored in the sample files): "mask" bool [K]
    (Bernoulli(mask_probability) per head), "head" int16 (the acting head) and "terminal" bool
    (this move ended the game; never set in a truncated game).

    With `positions_per_iteration` (by default its share of what the Trainer waits for; 0 =
    never) the driver pauses once the games it finished with the newest model iteration hold
    that many positions, until the Predictor answers with a newer iteration (`ModelWait`: it
    asks with one position now and then).  While it waits it yields None, so the loop writes
    out the games it holds.
    """

    def __init__(self, graph: GameGraph, service, config, rng: np.random.Generator):
        self.graph, self.service, self.rng = graph, service, rng
        cfg = config.selfplay
        own = config.learner_config  # the bootstrapped section
        self.heads = int(own.heads)
        self.mask_probability = float(own.mask_probability)
        self.epsilon = epsilon_for(own.epsilon, self.heads)
        self.max_moves = cfg.max_moves
        self.concurrent = own.concurrent_games
        self.pause = ModelWait(positions_per_iteration(config), self._probe)
        self.head_per_side = own.head_per_side
        self.temperature = cfg.temperature
        self.opening = cfg.temperature_drop_move if cfg.temperature > 0 else 0
        self.searches_done = 0  # moves decided (one Q evaluation each; there is no tree)
        self._games: list[_Game] = []
        self._done: deque = deque()  # finished (record, iteration) not yet handed out

    # ----- the driver -------------------------------------------------------------------------
    def play(self, should_stop: Callable[[], bool]) -> Iterator[tuple[GameRecord, int] | None]:
        if not self._games:
            self._games = [self._new_game() for _ in range(self.concurrent)]
        groups = [self._games[i::2] for i in range(min(2, len(self._games)))]
        in_flight: deque = deque()  # (group index, answer), in the order submitted
        while not should_stop():
            if self._done:
                yield self._done.popleft()
                continue
            capped = self.pause.due
            if capped and not in_flight:
                yield from self.pause.wait(should_stop)
                continue
            if not capped:
                busy = {i for i, _ in in_flight}
                for i, group in enumerate(groups):
                    if i not in busy:
                        x = np.stack([game.x for game in group])
                        in_flight.append((i, self.service.submit("q", {"x": x})))
            i, answer = in_flight.popleft()
            outputs, iteration = answer()
            self._step(groups[i], outputs["q"], iteration)

    def _probe(self) -> int:
        """The model iteration that answers one position now."""
        return self.service.submit("q", {"x": self._games[0].x[None]})()[1]

    # ----- moves --------------------------------------------------------------------------------
    def _new_game(self) -> _Game:
        roots = self.graph.roots
        vertex = roots[int(self.rng.integers(len(roots)))] if len(roots) > 1 else roots[0]
        heads = self.rng.integers(self.heads, size=2 if self.head_per_side else 1)
        return _Game(vertex, self.graph.numpify(vertex), (int(heads[0]), int(heads[-1])))

    def _step(self, group: list[_Game], q: np.ndarray, iteration: int) -> None:
        """One move in every game of the group, from its Q [len(group), K, A]."""
        self.pause.saw(iteration)
        graph, rng = self.graph, self.rng
        for game, q_game in zip(group, q):
            legal = graph.legal_mask(game.vertex)
            head = game.heads[len(game.record) % 2]
            values = q_game[head]
            if len(game.record) < self.opening:
                p = softmax(np.where(legal, values / self.temperature, -np.inf)[None])[0]
                action = int(rng.choice(len(p), p=p))
            elif self.epsilon and rng.random() < self.epsilon:
                action = int(rng.choice(np.flatnonzero(legal)))
            else:
                action = int(np.where(legal, values, -np.inf).argmax())
            record = game.record
            pi = np.zeros(len(legal), np.float32)
            pi[action] = 1.0
            record.x.append(game.x)
            record.pi.append(pi)
            record.action.append(action)
            record.root_value.append(float(values[action]))
            record.legal.append(legal)
            record.extra["mask"].append(rng.random(self.heads) < self.mask_probability)
            record.extra["head"].append(np.int16(head))
            record.extra["terminal"].append(False)
            game.vertex = graph.child_by_action(game.vertex, action)
            if not graph.children_at(game.vertex):
                score = float(graph.score_at(game.vertex))  # the next mover's view
                record.result = score if len(record) % 2 == 0 else -score
                record.extra["terminal"][-1] = True
            elif len(record) >= self.max_moves:
                record.truncated = True
            else:
                game.x = graph.numpify(game.vertex)
                continue
            self._finish(game, iteration)
        self.searches_done += len(group)

    def _finish(self, game: _Game, iteration: int) -> None:
        self._done.append((game.record, iteration))
        self.pause.finished(len(game.record), iteration)
        fresh = self._new_game()
        game.vertex, game.x, game.heads, game.record = (
            fresh.vertex,
            fresh.x,
            fresh.heads,
            fresh.record,
        )


class VotePlayer(Player):
    """The ensemble as a player without search: the majority vote of the heads' greedy legal
    moves (ties: the higher mean Q, then random)."""

    def __init__(self, service):
        self.service = service

    def choose(self, graph: GameGraph, vertex, rng: np.random.Generator) -> int:
        outputs, _ = self.service.submit("q", {"x": graph.numpify(vertex)[None]})()
        return vote(outputs["q"][0], graph.legal_mask(vertex), rng)


class MeanQPositionValuer:
    """An MCTS evaluator (gamegym.search.mcts) over "q" requests: a leaf's value is the best legal mean
    Q over the heads, its priors softmax(mean Q / PRIOR_TEMPERATURE) over the legal moves."""

    def __init__(self, graph: GameGraph, service):
        self.graph, self.service = graph, service

    def __call__(self, vertices) -> tuple[np.ndarray, np.ndarray]:
        return self.submit(vertices)()

    def submit(self, vertices) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
        graph = self.graph
        legal = np.stack([graph.legal_mask(v) for v in vertices])
        answer = self.service.submit("q", {"x": graph.numpify_many(vertices)})

        def collect() -> tuple[np.ndarray, np.ndarray]:
            outputs, _ = answer()
            mean = np.where(legal, outputs["q"].mean(axis=1), -np.inf)
            values = mean.max(axis=1).astype(np.float32)
            return softmax(mean / PRIOR_TEMPERATURE).astype(np.float32), values

        return collect
