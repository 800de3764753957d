"""AlphaZero's presets: the bundled games with settings that learn well on 2 cores.

Each is a whole config (game, game arguments, network, self-play and training settings) and,
but for the one whose game needs an optional extra, ships a starter model
(gamegym/initialmodels/<name>.keras, built by scripts/make_initialmodels.py).  The other
learners' presets of the same games name these as their base.
"""

from __future__ import annotations

from gamegym.learners.base import Preset, register_preset

__all__ = ["PRESETS"]

PRESETS = (
    Preset(
        "tictactoe",
        {
            "game": "games.tictactoe:TicTacToe",
            "game_args": {},
            "network": {"kind": "dense", "width": 64, "blocks": 2},
            "selfplay": {
                "selfplayprocesses": 1,
                "search": {"threads": 8, "searchcount": 64, "dirichlet_alpha": 1.0},
                "temperature_drop_move": 4,
                "gamelog_dump_threshold": 20,
            },
            "train": {
                "min_samplecount": 400,
                "min_new_samples": 400,
                "max_samplecount": 8000,
                "max_sampleage": 6,
                "epochs": 4,
                "batchsize": 64,
            },
        },
        "the trial run: learns perfect play within minutes on 2 cores",
        starter=True,
    ),
    Preset(
        "connectfour",
        {
            "game": "games.connectfour:ConnectFour",
            "game_args": {"rows": 6, "columns": 7},
            "network": {"kind": "residual", "width": 32, "blocks": 3},
            "selfplay": {
                "selfplayprocesses": 2,
                "search": {"threads": 16, "searchcount": 100, "dirichlet_alpha": 1.0},
                "temperature_drop_move": 10,
            },
            "train": {
                "min_samplecount": 2000,
                "min_new_samples": 2000,
                "max_samplecount": 40000,
                "max_sampleage": 8,
                "epochs": 2,
                "batchsize": 128,
            },
        },
        "Connect Four 6x7 with a small residual network: hours on 2 cores",
        starter=True,
    ),
    Preset(
        "santorini-3-1",
        {
            "game": "games.santorini:Santorini",
            "game_args": {"dimension": 3, "units_per_player": 1},
            "network": {"kind": "dense", "width": 128, "blocks": 2},
            "selfplay": {
                "selfplayprocesses": 2,
                "search": {"threads": 16, "searchcount": 100, "dirichlet_alpha": 0.8},
                "temperature_drop_move": 6,
            },
            "train": {
                "min_samplecount": 1000,
                "min_new_samples": 1000,
                "max_samplecount": 20000,
                "max_sampleage": 6,
                "epochs": 3,
                "batchsize": 64,
            },
        },
        "Santorini 3x3, one builder each: small enough to check against the exact solver",
        starter=True,
    ),
    # a game that needs an optional extra (.[openspiel]): no starter model, a fresh network
    Preset(
        "openspiel-connect_four",
        {
            "game": "gamegym.adapters.openspiel:OpenSpielGame",
            "game_args": {"name": "connect_four", "params": None},
        },
        "OpenSpiel's connect_four through the adapter (the [openspiel] extra), with the "
        "connectfour settings",
        base="connectfour",
    ),
)

for _preset in PRESETS:
    register_preset(_preset)
