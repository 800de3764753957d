"""MuZero's own config section: `"muzero": {...}` in config.json (train.learner "muzero")."""

from __future__ import annotations

from dataclasses import dataclass

from gamegym.config import float_in, int_in

__all__ = ["MuZeroConfig"]


@dataclass
class MuZeroConfig:
    """MuZero's options; the shared sections (network, selfplay, train) apply as well."""

    _section = "muzero."
    NETWORK = ("hidden_size",)  # fields that shape the network (the network builder reads them)
    FIXED = ("hidden_size",)  # fields a resumed session may not change

    hidden_size: int = 0  # units of a dense network's hidden state (0 = network.width);
    #                                 a residual network's hidden state is `width` planes
    num_unroll_steps: int = 5  # dynamics steps unrolled from each sample (K)
    reward_loss_weight: float = 1.0  # weight of the reward MSE (the paper's: 1)

    def validate(self) -> None:
        int_in(self, "hidden_size", 0, 4096)
        int_in(self, "num_unroll_steps", 1, 100)
        float_in(self, "reward_loss_weight", 0.0, 1000.0)
