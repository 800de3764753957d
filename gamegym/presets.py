"""Presets of the bundled games: starter networks (gamegym/initialmodels/) and session settings.

A preset is per learner and game.  PRESETS holds whole presets: AlphaZero's (no learner named in
their "train" section) and MuZero's (`<game preset>-muzero`); LEARNER_PRESETS holds the other
learner presets as changes to AlphaZero's (`<game preset>-bootstrapped`, `-dqn`).  A preset's
starter model, when there is one, is initialmodels/<preset name>.keras, built by its learner and
shipped inside the package (package data).  ABOUT says in one line what each preset is for
(`gamegym presets` lists them; `gamegym new --preset NAME` starts a session from one)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from gamegym.config import TrainConfig

log = logging.getLogger(__name__)
# the learner of a preset that does not name one: TrainConfig's default
DEFAULT_LEARNER = TrainConfig.learner

INITIAL_MODELS = Path(__file__).resolve().parent / "initialmodels"  # package data

# name -> game spec, game arguments, network config, config overrides that learn well on 2 cores
PRESETS = {
    "tictactoe": {
        "game": "games.tictactoe:TicTacToe",
        "game_args": {},
        "network": {"kind": "dense", "width": 64, "blocks": 2},
        "selfplay": {
            "selfplayprocesses": 1,
            "searchthreadcount": 8,
            "searchcount": 64,
            "temperature_drop_move": 4,
            "gamelog_dump_threshold": 20,
            "dirichlet_alpha": 1.0,
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
    "connectfour": {
        "game": "games.connectfour:ConnectFour",
        "game_args": {"rows": 6, "columns": 7},
        "network": {"kind": "residual", "width": 32, "blocks": 3},
        "selfplay": {
            "selfplayprocesses": 2,
            "searchthreadcount": 16,
            "searchcount": 100,
            "temperature_drop_move": 10,
            "dirichlet_alpha": 1.0,
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
    "santorini-3-1": {
        "game": "games.santorini:Santorini",
        "game_args": {"dimension": 3, "units_per_player": 1},
        "network": {"kind": "dense", "width": 128, "blocks": 2},
        "selfplay": {
            "selfplayprocesses": 2,
            "searchthreadcount": 16,
            "searchcount": 100,
            "temperature_drop_move": 6,
            "dirichlet_alpha": 0.8,
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
    # MuZero (train.learner "muzero"): the same games searched in a learned model
    "tictactoe-muzero": {
        "game": "games.tictactoe:TicTacToe",
        "game_args": {},
        "network": {"kind": "dense", "width": 128, "blocks": 2},
        "selfplay": {
            "selfplayprocesses": 1,
            "searchthreadcount": 8,
            "searchcount": 64,
            "temperature_drop_move": 4,
            "gamelog_dump_threshold": 20,
            "dirichlet_alpha": 1.0,
        },
        "muzero": {"hidden_size": 64, "num_unroll_steps": 3, "reward_loss_weight": 4.0},
        "train": {
            "learner": "muzero",
            "min_samplecount": 400,
            "min_new_samples": 400,
            "max_samplecount": 8000,
            "max_sampleage": 6,
            "epochs": 6,
            "batchsize": 32,
            "learning_rate": 3e-3,
        },
    },
    "connectfour-muzero": {
        "game": "games.connectfour:ConnectFour",
        "game_args": {"rows": 6, "columns": 7},
        "network": {"kind": "residual", "width": 32, "blocks": 2},
        "selfplay": {
            "selfplayprocesses": 2,
            "searchthreadcount": 16,
            "searchcount": 100,
            "temperature_drop_move": 10,
            "dirichlet_alpha": 1.0,
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
    "santorini-3-1-muzero": {
        "game": "games.santorini:Santorini",
        "game_args": {"dimension": 3, "units_per_player": 1},
        "network": {"kind": "dense", "width": 128, "blocks": 2},
        "selfplay": {
            "selfplayprocesses": 2,
            "searchthreadcount": 16,
            "searchcount": 100,
            "temperature_drop_move": 6,
            "dirichlet_alpha": 0.8,
        },
        "muzero": {"hidden_size": 64, "num_unroll_steps": 5, "reward_loss_weight": 4.0},
        "train": {
            "learner": "muzero",
            "min_samplecount": 1000,
            "min_new_samples": 1000,
            "max_samplecount": 20000,
            "max_sampleage": 6,
            "epochs": 2,
            "batchsize": 32,
            "learning_rate": 3e-3,
        },
    },
}


# presets of games that need an optional extra; no starter model (a fresh network at `new`)
EXTRA_PRESETS = {
    "openspiel-connect_four": {  # OpenSpiel's connect_four through the adapter (.[openspiel])
        **PRESETS["connectfour"],
        "game": "gamegym.adapters.openspiel:OpenSpielGame",
        "game_args": {"name": "connect_four", "params": None},
    },
}

# learner preset -> game preset name -> what it changes in the game's preset above, section by
# section; "alphazero" (the default) is the presets above as they are (MuZero's are whole presets
# above).  Each names its learner in train.learner; a learner preset may be a variant of a
# learner (dqn: bootstrapped, K = 1).
LEARNER_PRESETS: dict[str, dict[str, dict]] = {
    "bootstrapped": {
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
    },
}
# plain DQN for the side by side with bootstrapped: one head trained on every sample, and
# epsilon-greedy self-play (the default epsilon with one head, gamegym.learners.bootstrapped.play.DQN_EPSILON)
DQN = {"bootstrapped": {"heads": 1, "prior_scale": 0.0, "mask_probability": 1.0}}


def _changed(preset: dict, changes: dict) -> dict:
    """`preset` with `changes` applied: sections (dicts) updated key by key, other keys set."""
    out = dict(preset)
    for key, value in changes.items():
        out[key] = {**out.get(key, {}), **value} if isinstance(value, dict) else value
    return out


LEARNER_PRESETS["dqn"] = {
    name: _changed(changes, DQN) for name, changes in LEARNER_PRESETS["bootstrapped"].items()
}

# every preset by name: the whole ones and the learner presets' changes applied
ALL_PRESETS = {
    **PRESETS,
    **EXTRA_PRESETS,
    **{
        f"{name}-{learner}": _changed(PRESETS[name], changes)
        for learner, by_game in LEARNER_PRESETS.items()
        for name, changes in by_game.items()
    },
}

# preset name -> what it is for, in one line (`gamegym presets`)
ABOUT = {
    "tictactoe": "the trial run: learns perfect play within minutes on 2 cores",
    "connectfour": "Connect Four 6x7 with a small residual network: hours on 2 cores",
    "santorini-3-1": "Santorini 3x3, one builder each: small enough to check against the "
    "exact solver",
    "tictactoe-muzero": "MuZero searching a learned model of tic-tac-toe: minutes on 2 cores",
    "connectfour-muzero": "MuZero on Connect Four 6x7: a long run",
    "santorini-3-1-muzero": "MuZero on Santorini 3x3-1, measured against the exact solver",
    "openspiel-connect_four": "OpenSpiel's connect_four through the adapter (the [openspiel] "
    "extra), with the connectfour settings",
    "tictactoe-bootstrapped": "Bootstrapped DQN on tic-tac-toe: K Q-heads, no search, 64 games "
    "at once",
    "connectfour-bootstrapped": "Bootstrapped DQN on Connect Four 6x7: K Q-heads, no search",
    "tictactoe-dqn": "plain DQN (one head, epsilon-greedy) on tic-tac-toe: the baseline beside "
    "bootstrapped",
    "connectfour-dqn": "plain DQN on Connect Four 6x7: the baseline beside bootstrapped",
}


def get_preset(name: str) -> dict:
    """The preset called `name` (a copy, whole: game, game arguments, settings); ValueError
    naming the known ones otherwise."""
    if name not in ALL_PRESETS:
        raise ValueError(
            f"unknown preset {name!r}; known presets: "
            f"{', '.join(sorted(ALL_PRESETS))} (gamegym presets lists them)"
        )
    return json.loads(json.dumps(ALL_PRESETS[name]))


def preset_learner(preset: dict) -> str:
    """The learner a preset is for."""
    return preset.get("train", {}).get("learner", DEFAULT_LEARNER)


def learner_presets() -> list[str]:
    """The names `preset_for` takes: each learner with a preset, and the variants (dqn)."""
    return sorted(
        {
            DEFAULT_LEARNER,
            *LEARNER_PRESETS,
            *(preset_learner(preset) for preset in PRESETS.values()),
        }
    )


def preset_for(
    game: str, game_args: dict, learner: str = DEFAULT_LEARNER
) -> tuple[str, dict] | None:
    """(name, preset) of the bundled preset for this game and arguments with the learner preset
    `learner` (a learner, or a variant such as dqn), or None when there is none."""
    if learner not in learner_presets():
        raise ValueError(
            f"unknown learner preset {learner!r}; known: {', '.join(learner_presets())}"
        )
    for name, preset in {**PRESETS, **EXTRA_PRESETS}.items():
        if (
            preset["game"] == game
            and preset["game_args"] == dict(game_args)
            and preset_learner(preset) == DEFAULT_LEARNER
        ):
            full = name if learner == DEFAULT_LEARNER else f"{name}-{learner}"
            return (full, ALL_PRESETS[full]) if full in ALL_PRESETS else None
    return None


def initial_model_path(
    game: str, game_args: dict, network=None, learner: str = DEFAULT_LEARNER
) -> Path | None:
    """The bundled starter model for this game and learner preset, when there is one on disk
    (initialmodels/<preset name>.keras); see `starter_model` for `network`."""
    found = preset_for(game, game_args, learner)
    return None if found is None else starter_model(found[0], network)


def starter_model(name: str, network=None) -> Path | None:
    """The starter model of the preset `name`, when it has one (initialmodels/<name>.keras).

    With `network` (the session's network config), only when the file is that network: a
    preset whose network was edited without re-running scripts/make_initialmodels.py must
    not quietly train the old one.  The mismatch is logged and the session starts fresh."""
    path = INITIAL_MODELS / f"{name}.keras"
    if not path.is_file():
        return None
    preset = ALL_PRESETS[name]
    if network is not None and not _is_network(
        path, preset["game"], preset["game_args"], network, preset_learner(preset)
    ):
        log.warning(
            "%s is not the network %s asks for (run scripts/make_initialmodels.py); "
            "starting from a freshly built network",
            path.name,
            network,
        )
        return None
    return path


def _is_network(path: Path, game: str, game_args: dict, network, learner: str) -> bool:
    """True when the model file is the network `network` describes, as the learner judges it
    (Learner.is_model_file_of)."""
    from gamegym.game.graph import load_game
    from gamegym.learners import get_learner

    return get_learner(learner).is_model_file_of(path, load_game(game, game_args), network)
