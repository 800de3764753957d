"""The Learner interface: how a trainer mode builds its network and trains one iteration.

A Learner turns a `SampleBatch` (whole games, see gamegym.samples) into targets and trains the
session's model on them.  Sequence learners (MuZero unrolls, DQN transitions) rebuild games from
the `game` / `step` / `action` columns; curious replay uses `per_sample_loss` to re-prioritise.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Learner", "TrainResult", "get_learner", "register"]


@dataclass
class TrainResult:
    """What one training iteration reports."""

    history: dict = field(default_factory=dict)   # name -> list of per-epoch values
    samples: int = 0                              # training samples used (validation excluded)
    seconds: float = 0.0
    per_sample_loss: np.ndarray | None = None     # float32 [N] over the batch, for curious replay


class Learner(ABC):
    """One trainer mode.  Instances are made per process; they may keep optimizer state."""

    name: str = ""

    @abstractmethod
    def build_model(self, graph, network_config):
        """A fresh Keras model for a new session of this game."""

    @abstractmethod
    def compile(self, model, train_config) -> None:
        """Prepare the optimizer (and any target networks) for training `model`."""

    @abstractmethod
    def train_iteration(self, model, batch, train_config, rng: np.random.Generator,
                        graph=None) -> TrainResult:
        """Train one iteration on `batch` (a SampleBatch); `graph` enables augmentation."""

    @abstractmethod
    def per_sample_loss(self, model, batch, train_config) -> np.ndarray:
        """float32 [N]: the loss of each sample under the current model (no update)."""


_REGISTRY: dict[str, type] = {}


def register(cls: type) -> type:
    """Class decorator: make a Learner available by its `name`."""
    _REGISTRY[cls.name] = cls
    return cls


def get_learner(name: str) -> Learner:
    """A new Learner by name; ValueError naming the known ones otherwise."""
    from gamegym.learners import alphazero  # noqa: F401  (built-in learners register themselves)
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise ValueError(f"unknown learner {name!r}; known learners: "
                         f"{', '.join(sorted(_REGISTRY))}") from None
