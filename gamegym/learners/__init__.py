"""Learners (trainer modes) behind one interface; `get_learner(name)` picks one."""
from gamegym.learners.base import REGISTRY, Learner, TrainReport, TrainResult, register

__all__ = ["Learner", "TrainReport", "TrainResult", "get_learner", "register"]


def get_learner(name: str) -> Learner:
    """A new Learner by name; ValueError naming the known ones otherwise."""
    from gamegym.learners import alphazero, bootstrapped, muzero  # noqa: F401  (built-ins register)
    try:
        return REGISTRY[name]()
    except KeyError:
        raise ValueError(f"unknown learner {name!r}; known learners: "
                         f"{', '.join(sorted(REGISTRY))}") from None
