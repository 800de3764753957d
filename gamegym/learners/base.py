"""The Learner interface: how a trainer mode builds its network and trains one iteration.

A Learner turns a `SampleBatch` (whole games, see gamegym.samples) into targets and trains the
session's model on them.  Sequence learners (MuZero unrolls, DQN transitions) rebuild games from
the `game` / `step` / `action` columns; curious replay uses the per-sample losses to set the
priorities of the samples it drew.

Training options are read from a `train_config` by attribute (a `gamegym.config.TrainConfig`, a
SimpleNamespace) or by key (a dict); `option()` gives the TrainConfig default for a missing one.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Learner", "TrainReport", "TrainResult", "get_learner", "register", "option"]

# other spellings accepted for an option: name -> aliases
ALIASES = {"batchsize": ("batch_size", "mini_batch_size")}


@dataclass
class TrainReport:
    """What one training iteration reports."""

    history: dict = field(default_factory=dict)   # name -> list of per-epoch floats
    samples: int = 0                              # training samples (validation ones excluded)
    seconds: float = 0.0
    per_sample_loss: np.ndarray | None = None     # float32 [N] over the batch, for curious replay


TrainResult = TrainReport  # the earlier name


class Learner(ABC):
    """One trainer mode.  Instances are made per process; they may keep optimizer state."""

    name: str = ""

    @abstractmethod
    def build_model(self, graph, network_config):
        """A fresh Keras model for a new session of this game.  A learner with several
        networks (MuZero's h, g, f) returns one container model holding them."""

    @abstractmethod
    def compile(self, model, train_config) -> None:
        """Prepare the optimizer (and any target networks) for training `model`."""

    @abstractmethod
    def make_targets(self, batch, graph=None, train_config=None) -> tuple[Any, dict, np.ndarray]:
        """(inputs, targets by name, sample ids): the training examples of a SampleBatch.
        Sample ids [M] index `batch` and say which sample each example belongs to (a sequence
        learner makes fewer examples than samples, e.g. none for a game's last position)."""

    @abstractmethod
    def train_iteration(self, model, batch, train_config, rng: np.random.Generator,
                        graph=None) -> TrainReport:
        """Train one iteration on `batch` (a SampleBatch); `graph` enables augmentation."""

    @abstractmethod
    def per_sample_loss(self, model, batch, train_config=None) -> np.ndarray:
        """float32 [N]: the loss of each sample under the current model (no update)."""


def option(train_config, name: str):
    """A training option by attribute or key (aliases accepted); the TrainConfig default when
    the config does not have it."""
    for key in (name, *ALIASES.get(name, ())):
        if isinstance(train_config, Mapping):
            if key in train_config:
                return train_config[key]
        elif train_config is not None and hasattr(train_config, key):
            return getattr(train_config, key)
    from gamegym.config import TrainConfig
    return getattr(TrainConfig, name)


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
