"""Learners (trainer modes) behind one interface; `get_learner(name)` picks one."""
from gamegym.learners.base import Learner, TrainReport, TrainResult, get_learner, register

__all__ = ["Learner", "TrainReport", "TrainResult", "get_learner", "register"]
