"""Bootstrapped DQN's own config section: `"bootstrapped": {...}` in config.json."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gamegym.config import boolean, float_in, int_in

__all__ = ["BootstrappedConfig", "check_selfplay_pause", "positions_per_iteration"]


@dataclass
class BootstrappedConfig:
    """The bootstrapped learner's options; the shared sections apply as well (selfplay's
    search fields only to `q_search` and the Q-value MCTS player)."""

    _section = "bootstrapped."
    NETWORK = ("heads", "prior_scale")  # fields that shape the network
    FIXED = ("heads", "prior_scale")  # fields a resumed session may not change

    heads: int = 10  # K Q-heads on the shared torso; 1 = plain DQN
    prior_scale: float = 0.0  # weight of a fixed random prior network added to every
    #                                 head, never trained (0 = none)
    epsilon: float | None = None  # chance of a random legal move in self-play;
    #                                 None: 0 with several heads, 0.1 with one (DQN)
    head_per_side: bool = False  # each side of a game draws its own head
    concurrent_games: int = 64  # games a Selfplayer plays at once, one Q request for a
    #                                 move in each of them
    positions_per_iteration: int | None = None  # a Selfplayer waits for the next model once
    # its finished games hold this many positions; None:
    # selfplay.positions_per_iteration when set, else its
    # share of what the Trainer waits for
    # (train.min_new_samples); 0: never waits
    mask_probability: float = 0.5  # p: each head trains on a position with chance p (a
    #                                 Bernoulli mask drawn in self-play, stored)
    target_update_period: int = 500  # gradient steps between copies of the online Q-network
    # to the target network
    double_q: bool = True  # the online network picks the opponent's next move, the
    #                                 target network values it (double DQN)
    discount: float = 1.0  # gamma in y = r - gamma * max Q_target(s', a')
    q_search: bool = False  # evaluation: the model plays by MCTS with the heads' mean
    #                                 Q as leaf value, not by the heads' majority vote

    def validate(self) -> None:
        int_in(self, "heads", 1, 256)
        float_in(self, "prior_scale", 0.0, 100.0)
        if self.epsilon is not None:
            float_in(self, "epsilon", 0.0, 1.0)
        boolean(self, "head_per_side")
        int_in(self, "concurrent_games", 1, 65536)
        if self.positions_per_iteration is not None:
            int_in(self, "positions_per_iteration", 0)
        float_in(self, "mask_probability", 0.0, 1.0, low_open=True)
        int_in(self, "target_update_period", 1)
        boolean(self, "double_q")
        float_in(self, "discount", 0.0, 1.0, low_open=True)
        boolean(self, "q_search")


def check_selfplay_pause(config) -> str | None:
    """Selfplayers that wait for each new model after `positions_per_iteration` positions must
    together play enough for the Trainer to train it (else both would wait forever)."""
    return config.check_selfplay_pause(
        "bootstrapped.positions_per_iteration", config.learner_config.positions_per_iteration
    )


def positions_per_iteration(config) -> int:
    """The positions a Selfplayer plays with one model iteration before it waits for the next
    (0: it never waits): bootstrapped.positions_per_iteration, or by default its share of the
    samples the Trainer waits for (selfplay.positions_per_iteration instead, when set)."""
    given = config.learner_config.positions_per_iteration
    if given is None and config.selfplay.positions_per_iteration:
        given = config.selfplay.positions_per_iteration
    if given is not None:
        return given
    return math.ceil(config.samples_per_iteration() / config.selfplayers())
