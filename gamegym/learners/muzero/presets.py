"""MuZero's presets: the bundled games searched in a learned model, each with a starter model
(gamegym/initialmodels/<name>.keras, built by scripts/make_initialmodels.py)."""

from __future__ import annotations

from gamegym.learners.base import Preset, register_preset

__all__ = ["PRESETS"]

PRESETS = (
    Preset(
        "tictactoe-muzero",
        {
            "game": "games.tictactoe:TicTacToe",
            "game_args": {},
            "network": {"kind": "dense", "width": 128, "blocks": 2},
            "selfplay": {
                "selfplayprocesses": 1,
                "search": {
                    "rule": "gumbel",
                    "threads": 8,
                    "searchcount": 64,
                    "dirichlet_alpha": 1.0,
                },
                "temperature_drop_move": 4,
                "gamelog_dump_threshold": 20,
            },
            "muzero": {"hidden_size": 64, "num_unroll_steps": 3, "reward_loss_weight": 4.0},
            "train": {
                "learner": "muzero",
                "min_samplecount": 400,
                "min_new_samples": 400,
                "max_samplecount": 20000,
                "max_sampleage": 30,
                "epochs": 2,
                "batchsize": 32,
                "learning_rate": 3e-3,
                "learning_rate_schedule": [[40, 1e-3], [100, 3e-4]],
            },
        },
        "MuZero searching a learned model of tic-tac-toe: minutes on 2 cores",
        starter=True,
    ),
    Preset(
        "connectfour-muzero",
        {
            "game": "games.connectfour:ConnectFour",
            "game_args": {"rows": 6, "columns": 7},
            "network": {"kind": "residual", "width": 32, "blocks": 2},
            "selfplay": {
                "selfplayprocesses": 2,
                "search": {"threads": 16, "searchcount": 100, "dirichlet_alpha": 1.0},
                "temperature_drop_move": 10,
            },
            "muzero": {"num_unroll_steps": 5, "reward_loss_weight": 4.0},
            "train": {
                "learner": "muzero",
                "min_samplecount": 2000,
                "min_new_samples": 2000,
                "max_samplecount": 40000,
                "max_sampleage": 8,
                "epochs": 1,
                "batchsize": 128,
                "learning_rate": 2e-3,
            },
        },
        "MuZero on Connect Four 6x7: a long run",
        starter=True,
    ),
    Preset(
        "santorini-3-1-muzero",
        {
            "game": "games.santorini:Santorini",
            "game_args": {"dimension": 3, "units_per_player": 1},
            "network": {"kind": "dense", "width": 128, "blocks": 2},
            "selfplay": {
                "selfplayprocesses": 2,
                "search": {
                    "rule": "gumbel",
                    "threads": 16,
                    "searchcount": 100,
                    "dirichlet_alpha": 0.8,
                },
                "temperature_drop_move": 6,
            },
            "muzero": {"hidden_size": 64, "num_unroll_steps": 5, "reward_loss_weight": 4.0},
            "train": {
                "learner": "muzero",
                "min_samplecount": 1000,
                "min_new_samples": 1000,
                "max_samplecount": 40000,
                "max_sampleage": 30,
                "epochs": 1,
                "batchsize": 32,
                "learning_rate": 3e-3,
                "learning_rate_schedule": [[40, 1e-3], [100, 3e-4]],
            },
        },
        "MuZero on Santorini 3x3-1, measured against the exact solver",
        starter=True,
    ),
)

for _preset in PRESETS:
    register_preset(_preset)
