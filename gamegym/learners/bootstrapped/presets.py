"""Bootstrapped DQN's presets, and plain DQN's beside them: changes to the AlphaZero presets of
the same games (their base), section by section.  No starter model: a fresh Q-network."""

from __future__ import annotations

from typing import Any

from gamegym.learners.base import Preset, register_preset

__all__ = ["PRESETS"]

# base preset -> what Bootstrapped DQN changes in it
BOOTSTRAPPED: dict[str, dict[str, Any]] = {
    "tictactoe": {
        "selfplay": {"selfplayprocesses": 1, "gamelog_dump_threshold": 64},
        "bootstrapped": {"concurrent_games": 64, "target_update_period": 200},
        "train": {
            "learner": "bootstrapped",
            "min_samplecount": 800,
            "min_new_samples": 800,
            "max_samplecount": 20000,
            "max_sampleage": 20,
            "num_updates_per_train_iter": 200,
            "batchsize": 64,
        },
    },
    "connectfour": {
        "selfplay": {"selfplayprocesses": 1, "gamelog_dump_threshold": 64},
        "bootstrapped": {"concurrent_games": 64, "target_update_period": 400},
        "train": {
            "learner": "bootstrapped",
            "min_samplecount": 3000,
            "min_new_samples": 3000,
            "max_samplecount": 60000,
            "max_sampleage": 15,
            "num_updates_per_train_iter": 200,
            "batchsize": 128,
        },
    },
}
# plain DQN for the side by side with bootstrapped: one head trained on every sample, and
# epsilon-greedy self-play (the default epsilon with one head,
# gamegym.learners.bootstrapped.play.DQN_EPSILON)
DQN = {"heads": 1, "prior_scale": 0.0, "mask_probability": 1.0}
# learner preset -> what it changes in the bootstrapped section above
VARIANTS: dict[str, dict[str, Any]] = {"bootstrapped": {}, "dqn": DQN}

ABOUT = {
    "tictactoe-bootstrapped": "Bootstrapped DQN on tic-tac-toe: K Q-heads, no search, 64 games "
    "at once",
    "connectfour-bootstrapped": "Bootstrapped DQN on Connect Four 6x7: K Q-heads, no search",
    "tictactoe-dqn": "plain DQN (one head, epsilon-greedy) on tic-tac-toe: the baseline beside "
    "bootstrapped",
    "connectfour-dqn": "plain DQN on Connect Four 6x7: the baseline beside bootstrapped",
}

PRESETS = tuple(
    Preset(
        f"{base}-{variant}",
        {**changes, "bootstrapped": {**changes["bootstrapped"], **section}},
        ABOUT[f"{base}-{variant}"],
        base=base,
        variant=variant,
    )
    for variant, section in VARIANTS.items()
    for base, changes in BOOTSTRAPPED.items()
)

for _preset in PRESETS:
    register_preset(_preset)
