"""Presets of the bundled games: starter networks (initialmodels/) and session settings, for
AlphaZero (PRESETS) and for the other learners (LEARNER_PRESETS: changes to those)."""
from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)
INITIAL_MODELS = Path(__file__).resolve().parent.parent / "initialmodels"

# name -> game spec, game arguments, network config, config overrides that learn well on 2 cores
PRESETS = {
    "tictactoe": {
        "game": "games.tictactoe:TicTacToe", "game_args": {},
        "network": {"kind": "dense", "width": 64, "blocks": 2},
        "selfplay": {"selfplayprocesses": 1, "searchthreadcount": 8, "searchcount": 64,
                     "temperature_drop_move": 4, "gamelog_dump_threshold": 20,
                     "dirichlet_alpha": 1.0},
        "train": {"min_samplecount": 400, "min_new_samples": 400, "max_samplecount": 8000,
                  "max_sampleage": 6, "epochs": 4, "batchsize": 64},
    },
    "connectfour": {
        "game": "games.connectfour:ConnectFour", "game_args": {"rows": 6, "columns": 7},
        "network": {"kind": "residual", "width": 32, "blocks": 3},
        "selfplay": {"selfplayprocesses": 2, "searchthreadcount": 16, "searchcount": 100,
                     "temperature_drop_move": 10, "dirichlet_alpha": 1.0},
        "train": {"min_samplecount": 2000, "min_new_samples": 2000, "max_samplecount": 40000,
                  "max_sampleage": 8, "epochs": 2, "batchsize": 128},
    },
    "santorini-3-1": {
        "game": "games.santorini:Santorini", "game_args": {"dimension": 3, "units_per_player": 1},
        "network": {"kind": "dense", "width": 128, "blocks": 2},
        "selfplay": {"selfplayprocesses": 2, "searchthreadcount": 16, "searchcount": 100,
                     "temperature_drop_move": 6, "dirichlet_alpha": 0.8},
        "train": {"min_samplecount": 1000, "min_new_samples": 1000, "max_samplecount": 20000,
                  "max_sampleage": 6, "epochs": 3, "batchsize": 64},
    },
}


# learner preset -> game preset name -> what it changes in the game's preset above, section by
# section; "alphazero" (the default) is the presets above as they are.  Each names its learner
# in train.learner; a learner preset may be a variant of a learner (dqn: bootstrapped, K = 1).
LEARNER_PRESETS: dict[str, dict[str, dict]] = {
    "bootstrapped": {
        "tictactoe": {
            "selfplay": {"selfplayprocesses": 1, "concurrent_games": 64,
                         "gamelog_dump_threshold": 64},
            "train": {"learner": "bootstrapped", "min_samplecount": 800,
                      "min_new_samples": 800, "max_samplecount": 20000, "max_sampleage": 20,
                      "num_updates_per_train_iter": 200, "batchsize": 64,
                      "target_update_period": 200},
        },
        "connectfour": {
            "selfplay": {"selfplayprocesses": 1, "concurrent_games": 64,
                         "gamelog_dump_threshold": 64},
            "train": {"learner": "bootstrapped", "min_samplecount": 3000,
                      "min_new_samples": 3000, "max_samplecount": 60000, "max_sampleage": 15,
                      "num_updates_per_train_iter": 200, "batchsize": 128,
                      "target_update_period": 400},
        },
    },
}
# plain DQN for the side by side with bootstrapped: one head trained on every sample, and
# epsilon-greedy self-play (the default epsilon with one head, gamegym.qplay.DQN_EPSILON)
DQN = {"network": {"heads": 1, "prior_scale": 0.0}, "train": {"mask_probability": 1.0}}


def _changed(preset: dict, changes: dict) -> dict:
    """`preset` with `changes` applied: sections (dicts) updated key by key, other keys set."""
    out = dict(preset)
    for key, value in changes.items():
        out[key] = {**out.get(key, {}), **value} if isinstance(value, dict) else value
    return out


LEARNER_PRESETS["dqn"] = {name: _changed(changes, DQN)
                          for name, changes in LEARNER_PRESETS["bootstrapped"].items()}


def preset_for(game: str, game_args: dict, learner: str = "alphazero") -> tuple[str, dict] | None:
    """(name, preset) of the bundled preset for this game and arguments with the learner preset
    `learner` (see LEARNER_PRESETS), or None when there is none."""
    if learner != "alphazero" and learner not in LEARNER_PRESETS:
        raise ValueError(f"unknown learner preset {learner!r}; known: "
                         f"{', '.join(['alphazero', *sorted(LEARNER_PRESETS)])}")
    for name, preset in PRESETS.items():
        if preset["game"] == game and preset["game_args"] == dict(game_args):
            if learner == "alphazero":
                return name, preset
            changes = LEARNER_PRESETS[learner].get(name)
            return None if changes is None else (name, _changed(preset, changes))
    return None


def initial_model_path(game: str, game_args: dict, network=None,
                       learner: str = "alphazero") -> Path | None:
    """The bundled starter model for this game and learner preset, when there is one on disk
    (initialmodels/<preset>.keras for AlphaZero, <preset>-<learner>.keras for the others).

    With `network` (the session's network config), only when the file is that network: a
    preset whose network was edited without re-running scripts/make_initialmodels.py must
    not quietly train the old one.  The mismatch is logged and the session starts fresh."""
    found = preset_for(game, game_args, learner)
    if found is None:
        return None
    name = found[0] if learner == "alphazero" else f"{found[0]}-{learner}"
    path = INITIAL_MODELS / f"{name}.keras"
    if not path.is_file():
        return None
    trains = found[1].get("train", {}).get("learner", "alphazero")
    if network is not None and not _is_network(path, game, game_args, network, trains):
        log.warning("%s is not the network %s asks for (run scripts/make_initialmodels.py); "
                    "starting from a freshly built network", path.name, network)
        return None
    return path


def _is_network(path: Path, game: str, game_args: dict, network, learner: str) -> bool:
    """True when the model file has the architecture (name, weight shapes) that `learner`
    builds for `network`."""
    from gamegym.graph import load_game
    from gamegym.learners import get_learner
    from gamegym.tfsetup import configure_tensorflow, load_model
    # as when the gym builds the first model: the GPU is the Predictor's, not this process's
    configure_tensorflow(use_gpu=False)
    graph = load_game(game, game_args)
    stored, fresh = load_model(path), get_learner(learner).build_model(graph, network)
    return (stored.name, [w.shape for w in stored.weights]) == (
        fresh.name, [w.shape for w in fresh.weights])
