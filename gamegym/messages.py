"""Typed messages between the gym's processes (all picklable)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class EvalRequest:
    """A Selfplayer's batch of leaves for the Predictor."""

    request_id: int
    x: np.ndarray            # float32 [B, *input_shape] numpify of each leaf


@dataclass
class EvalResponse:
    """The Predictor's answer to one EvalRequest."""

    request_id: int
    iteration: int           # model iteration that evaluated the batch
    probs: np.ndarray        # float32 [B, A] softmax policy over action ids
    values: np.ndarray       # float32 [B] value from each leaf's mover's view


@dataclass
class Reload:
    """Tell the Predictor a new model iteration was published."""

    iteration: int


@dataclass
class Report:
    """Figures a process reports to the gym's monitor (role, pid, counters since last report)."""

    role: str
    pid: int
    figures: dict = field(default_factory=dict)
