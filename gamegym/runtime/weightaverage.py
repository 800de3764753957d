"""train.weight_average "ema": the Trainer publishes an exponential moving average of the
weights it trains, as KataGo does (D. J. Wu, "Accelerating Self-Play Learning in Go", 2019:
snapshots of the weights averaged with a decay of 0.75 per snapshot).

After each iteration n the Trainer trains on from its own weights w_n (its optimizer state goes
on with them) and publishes

    a_n = decay * a_(n-1) + (1 - decay) * w_n         (a = w_n at the first averaged iteration)

for the weights the learner names (`Learner.averaged_weights`: by default every floating-point
weight, batch normalization's moving mean and variance included; the others are published as
trained).  models/<n>.keras holds a_n and models/<n>.raw.keras holds w_n, written first, so a
resume continues training from w_n and the average from a_n, and an iteration without a raw
file has no average in progress (a new one starts at the next iteration).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["WeightAverage", "model_file_weights"]


class WeightAverage:
    """The average of one Trainer's weights (train.weight_average "ema") and where it is
    stored.  `load` (path -> the weights of the model file there) reads a stored average on a
    resume; it is called only when there is one."""

    def __init__(self, decay: float, load: Callable[[Path], list]):
        self.decay = float(decay)
        self._load = load
        self.weights: list[np.ndarray] | None = None  # the average published last
        self.iteration = -2  # the iteration `weights` belongs to (-2: not looked up yet)

    @classmethod
    def of(cls, train_config, load=None) -> WeightAverage | None:
        """The average a TrainConfig asks for; None for train.weight_average "none".  `load`:
        by default the weights of a Keras model file."""
        if train_config.weight_average == "none":
            return None
        return cls(train_config.weight_average_decay, load or model_file_weights)

    def stored(self, session, iteration: int) -> list[np.ndarray] | None:
        """The average published as model `iteration` (read from the session on a resume),
        or None when that model is not an average (it has no models/<it>.raw.keras)."""
        if self.iteration != iteration:
            raw = session.raw_model_path(iteration)
            self.weights = self._load(session.model_path(iteration)) if raw.exists() else None
            self.iteration = iteration
        return self.weights

    def next(self, previous: list | None, trained: list, averaged: list[bool]) -> list:
        """The average after an iteration that trained the weights `trained`, from the
        average `previous` (None: the average starts here); `averaged` marks the weights that
        are averaged, the others are taken as trained."""
        if previous is None:
            return [np.array(w, copy=True) for w in trained]
        if [np.shape(w) for w in previous] != [np.shape(w) for w in trained]:
            raise ValueError(
                "the stored average of weights (the published model) does not have the shapes "
                "of the trained weights (models/<it>.raw.keras); set train.weight_average "
                '"none" to publish the trained weights'
            )
        keep = self.decay
        return [
            (a * keep + w * (1.0 - keep)).astype(w.dtype) if mine else np.array(w, copy=True)
            for a, w, mine in zip(previous, trained, averaged)
        ]

    def published(self, iteration: int, weights: list) -> None:
        """`weights` were published as model `iteration`."""
        self.weights, self.iteration = weights, iteration

    def report(self, started: bool) -> dict[str, Any]:
        """What train/<it>.json says of the average: its decay, and whether it started at
        that iteration (the model then holds the trained weights)."""
        return {"kind": "ema", "decay": self.decay, "started": started}


def model_file_weights(path: Path) -> list:
    """The weights of the Keras model file at `path` (loads TensorFlow)."""
    from gamegym.nets.tfsetup import load_model

    return load_model(path).get_weights()
