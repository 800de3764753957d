"""MuZero Reanalyze: stored positions searched again by the current model (`train.reanalyze`).

A sample file keeps what the latent search needs of each position: its observation x (the
root's initial inference) and its legal action ids (the root's children; below the root the
search expands every action id of the model's hidden states).  So the search runs over
`StoredPositions`, a GameGraph whose vertices are the rows of a sample file: a row's children
are its legal moves, and the search never asks about them (the latent search opens only the
root from the game).  Each position gets the self-play search (`selfplay.search` and its
searchcount, on the self-play core) without root noise: the noise is there to try moves in
play, and a reanalysed target is trained on, never played.  The new target is the rule's policy
target (the visit distribution under PUCT, the improved policy under Gumbel) and the new value
the root's search value, from the mover's view.

No TensorFlow: the model answers through the Selfplayer's model service (the Predictor, or
the model on the CPU fast path in the Selfplayer), batched as self-play's leaves are.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from gamegym import workmeter
from gamegym.data.reanalysis import Reanalysis
from gamegym.game.graph import GameGraph
from gamegym.search.cores import make_latent_search
from gamegym.search.latent import NetworkLatentValuer
from gamegym.search.tree import SearchParams

__all__ = ["StoredPositions", "LatentReanalyser"]


class StoredPositions(GameGraph[Any]):
    """The positions of a sample file as a GameGraph for the latent search's root: vertex i is
    row i (observation x[i], legal moves legal[i]); its children stand for its legal moves and
    are never searched from (vertices (i, action id))."""

    def __init__(self, x: np.ndarray, legal: np.ndarray):
        super().__init__()
        self.x = np.asarray(x, np.float32)
        self.legal = np.asarray(legal, bool)
        self._actions_size = int(self.legal.shape[1])

    @property
    def roots(self) -> tuple[int, ...]:
        return tuple(range(len(self.x)))

    @property
    def outdegree_max(self) -> int:
        return self._actions_size

    @property
    def action_space_size(self) -> int:
        return self._actions_size

    def score_at(self, vertex) -> float:
        return 0.0  # a stored position was searched, so it had moves: never over

    def numpify(self, vertex) -> np.ndarray:
        return self.x[vertex]

    def numpify_many(self, vertices: Sequence) -> np.ndarray:
        return self.x[np.asarray(vertices, np.int64)]

    def expansion(self, vertex) -> tuple[tuple, tuple[int, ...]]:
        actions = tuple(int(a) for a in np.flatnonzero(self.legal[vertex]))
        return tuple((vertex, a) for a in actions), actions


class LatentReanalyser:
    """MuZero's `Learner.reanalyser`: `(x, legal, rng, should_stop)` -> the Reanalysis of
    those stored positions, each searched by the model behind `service` (see the module)."""

    def __init__(self, service, params: SearchParams):
        self.service = service
        self.params = params

    @classmethod
    def of(cls, service, config) -> LatentReanalyser:
        """The reanalyser of a session's GymConfig: self-play's search, without root noise."""
        return cls(service, SearchParams.from_selfplay(config.selfplay, noise=False))

    def __call__(
        self,
        x: np.ndarray,
        legal: np.ndarray,
        rng: np.random.Generator,
        should_stop: Callable[[], bool] = lambda: False,
    ) -> Reanalysis | None:
        positions = StoredPositions(x, legal)
        evaluator = NetworkLatentValuer(positions, self.service)
        search = make_latent_search(positions, evaluator, self.params)
        n, size = len(positions.x), positions.action_space_size
        pi = np.zeros((n, size), np.float32)
        values = np.zeros(n, np.float32)
        iteration: int | None = None
        for i in range(n):
            if should_stop():
                return None
            if not positions.legal[i].any():  # not a searched position: a file of bad data
                raise ValueError(f"stored position {i} has no legal move to search")
            root = search.new_root(i)
            search.run(root, rng, explore=False)
            pi[i] = search.policy_target(root)
            values[i] = root.mean_value()
            answered = evaluator.iteration
            iteration = answered if iteration is None else min(iteration, answered)
            workmeter.tick()  # a position searched: this process is not hung
        return Reanalysis(pi, values, max(0, iteration if iteration is not None else 0))
