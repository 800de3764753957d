"""A fourth learner that ships with no gamegym file: it registers itself from the test folder.

`toy` is AlphaZero with a smoothed policy target: pi' = (1 - smoothing) * pi + smoothing *
uniform over the legal moves, `smoothing` being the one field of its own config section
("toy": {"smoothing": 0.2} in config.json).  A session names it with `train.learner: "toy"`
and `plugins: ["toylearner"]`, so every process imports this module and finds it.  It ships a
preset too, `tictactoe-toy`: AlphaZero's tic-tac-toe settings with this learner.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gamegym.config import float_in
from gamegym.learners import Preset, register, register_preset
from gamegym.learners.alphazero import AlphaZeroLearner


@dataclass
class ToyConfig:
    """The toy learner's own section."""

    _section = "toy."
    smoothing: float = 0.1  # weight of the uniform policy over the legal moves in the target

    def validate(self) -> None:
        float_in(self, "smoothing", 0.0, 1.0)


@register
class ToyLearner(AlphaZeroLearner):
    name = "toy"
    config_class = ToyConfig

    @classmethod
    def check_config(cls, config) -> str | None:
        if config.learner_config.smoothing == 1.0 and config.train.value_loss_weight == 0.0:
            return "'toy.smoothing' 1 with train.value_loss_weight 0 would train nothing"
        return None

    def make_targets(self, batch, graph=None, train_config=None):
        x, targets, ids = super().make_targets(batch, graph, train_config)
        smoothing = float(getattr(train_config, "smoothing", ToyConfig.smoothing))
        legal = targets["legal"].astype(np.float32)
        uniform = legal / np.maximum(legal.sum(axis=1, keepdims=True), 1.0)
        targets["pi"] = ((1.0 - smoothing) * targets["pi"] + smoothing * uniform).astype(np.float32)
        return x, targets, ids


register_preset(
    Preset(
        "tictactoe-toy",
        {"plugins": ["toylearner"], "train": {"learner": "toy"}, "toy": {"smoothing": 0.2}},
        "the toy learner on tic-tac-toe: AlphaZero's settings, a smoothed policy target",
        base="tictactoe",
    )
)
