"""Learners (trainer modes) behind one interface; `get_learner(name)` makes one.

Each learner is a sub-package (alphazero/, muzero/, bootstrapped/) holding its trainer side, its
self-play side and its networks, and registers its Learner class in gamegym.registry.LEARNERS.
A learner of your own registers the same way (`@register` on its class) and is then named by
`train.learner` like the built-in ones.  Each learner's presets (settings per game) live in its
`presets` module and register with `register_preset`; gamegym.presets gathers them.

May import: gamegym.game, gamegym.search, gamegym.nets, gamegym.data, gamegym.config,
gamegym.workmeter.
"""

from gamegym.learners.base import (
    REGISTRY,
    Learner,
    Preset,
    TrainReport,
    TrainResult,
    register,
    register_preset,
)
from gamegym.registry import LEARNERS, RegistryError

__all__ = [
    "Learner",
    "Preset",
    "TrainReport",
    "TrainResult",
    "get_learner",
    "register",
    "register_preset",
    "REGISTRY",
]


def get_learner(name: str) -> Learner:
    """A new Learner by name; ValueError naming the known ones otherwise."""
    try:
        return LEARNERS.get(name)()
    except RegistryError as error:
        raise ValueError(str(error)) from None
