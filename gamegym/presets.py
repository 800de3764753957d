"""The presets: session settings per game and learner that learn well on 2 cores.

Each learner keeps its own presets in its sub-package (gamegym/learners/<learner>/presets.py)
and registers them in gamegym.registry.PRESETS, as a learner of your own can from its module
(`gamegym.learners.register_preset`) or a package entry point in the group `gamegym.presets`.
This module gathers them: `get_preset(name)` gives a preset's whole settings (a preset with a
base is its base's settings with its changes applied), `preset_for(game, game_args, learner)`
finds the one of a learner preset (a learner, or a variant such as dqn) for a game, and
`starter_model(name)` its starter network, shipped inside the package
(gamegym/initialmodels/<name>.keras, package data).  `gamegym presets` lists them with what
each is for; `gamegym new --preset NAME` starts a session from one.

PRESETS, ALL_PRESETS and ABOUT are read when asked, so a preset registered later is in them.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gamegym.config import TrainConfig, merged_settings
from gamegym.registry import PRESETS as REGISTERED

if TYPE_CHECKING:
    from gamegym.learners.base import Preset

# and, read when asked (module __getattr__): PRESETS, ALL_PRESETS, ABOUT
__all__ = [
    "DEFAULT_LEARNER",
    "INITIAL_MODELS",
    "all_presets",
    "get_preset",
    "initial_model_path",
    "learner_presets",
    "preset_for",
    "preset_learner",
    "registered",
    "starter_model",
]

log = logging.getLogger(__name__)
# the learner of a preset that does not name one: TrainConfig's default
DEFAULT_LEARNER = TrainConfig.learner

INITIAL_MODELS = Path(__file__).resolve().parent / "initialmodels"  # package data


def registered() -> dict[str, Preset]:
    """Every registered preset by name."""
    return dict(REGISTERED.items())


def _settings(name: str, presets: dict[str, Preset], seen: tuple[str, ...] = ()) -> dict:
    """The whole settings of the preset `name`: its base's with its changes applied."""
    if name in seen:
        raise ValueError(f"preset {seen[0]!r}: its bases go round in a circle ({name!r} again)")
    preset = presets[name]
    if preset.base is None:
        if not isinstance(preset.settings.get("game"), str):
            raise ValueError(f"preset {name!r} names no game and no base preset")
        return preset.settings
    if preset.base not in presets:
        raise ValueError(f"preset {name!r} changes the preset {preset.base!r}, which is not known")
    return merged_settings(_settings(preset.base, presets, (*seen, name)), preset.settings)


def all_presets() -> dict[str, dict]:
    """Every preset's whole settings by name (the shared objects: `get_preset` gives a copy)."""
    presets = registered()
    return {name: _settings(name, presets) for name in presets}


def preset_learner(preset: dict) -> str:
    """The learner a preset (its whole settings) is for."""
    learner: str = preset.get("train", {}).get("learner", DEFAULT_LEARNER)
    return learner


def _variant(preset: Preset, settings: dict) -> str:
    """The learner preset a preset belongs to: its variant, else its learner."""
    return preset.variant or preset_learner(settings)


def get_preset(name: str) -> dict:
    """The preset called `name` (a copy, whole: game, game arguments, settings); ValueError
    naming the known ones otherwise."""
    presets = registered()
    if name not in presets:
        raise ValueError(
            f"unknown preset {name!r}; known presets: "
            f"{', '.join(sorted(presets))} (gamegym presets lists them)"
        )
    copied: dict = json.loads(json.dumps(_settings(name, presets)))
    return copied


def learner_presets() -> list[str]:
    """The names `preset_for` takes: each learner with a preset, and the variants (dqn)."""
    presets = registered()
    return sorted(
        {DEFAULT_LEARNER}
        | {_variant(preset, _settings(name, presets)) for name, preset in presets.items()}
    )


def preset_for(
    game: str, game_args: dict, learner: str = DEFAULT_LEARNER
) -> tuple[str, dict] | None:
    """(name, preset) of the preset for this game and arguments with the learner preset
    `learner` (a learner, or a variant such as dqn), or None when there is none; the first by
    name when several are."""
    if learner not in learner_presets():
        raise ValueError(
            f"unknown learner preset {learner!r}; known: {', '.join(learner_presets())}"
        )
    presets = registered()
    for name, preset in sorted(presets.items()):
        settings = _settings(name, presets)
        if (
            _variant(preset, settings) == learner
            and settings["game"] == game
            and settings.get("game_args", {}) == dict(game_args)
        ):
            return name, json.loads(json.dumps(settings))
    return None


def initial_model_path(
    game: str, game_args: dict, network: Any = None, learner: str = DEFAULT_LEARNER
) -> Path | None:
    """The starter model for this game and learner preset, when there is one on disk
    (initialmodels/<preset name>.keras); see `starter_model` for `network`."""
    found = preset_for(game, game_args, learner)
    return None if found is None else starter_model(found[0], network)


def starter_model(name: str, network: Any = None) -> Path | None:
    """The starter model of the preset `name`, when it ships one (initialmodels/<name>.keras).

    With `network` (the session's network config), only when the file is that network: a
    preset whose network was edited without re-running scripts/make_initialmodels.py must
    not quietly train the old one.  The mismatch is logged and the session starts fresh.
    The file is judged on this process's graph of the preset's game (GameRef.build)."""
    presets = registered()
    path = INITIAL_MODELS / f"{name}.keras"
    if name not in presets or not presets[name].starter or not path.is_file():
        return None
    if network is not None and not _is_network(path, _settings(name, presets), network):
        log.warning(
            "%s is not the network %s asks for (run scripts/make_initialmodels.py); "
            "starting from a freshly built network",
            path.name,
            network,
        )
        return None
    return path


def _is_network(path: Path, preset: dict, network: Any) -> bool:
    """True when the model file is the network `network` describes, as the preset's learner
    judges it (Learner.is_model_file_of)."""
    from gamegym.game.ref import GameRef
    from gamegym.learners import get_learner

    graph = GameRef(preset["game"], preset.get("game_args", {})).build()
    return get_learner(preset_learner(preset)).is_model_file_of(path, graph, network)


def __getattr__(name: str) -> Any:
    """PRESETS (the presets that ship a starter model, whole), ALL_PRESETS (every preset,
    whole) and ABOUT (name -> what it is for), as the registry holds them now."""
    if name == "ALL_PRESETS":
        return all_presets()
    if name == "PRESETS":
        presets = registered()
        return {n: _settings(n, presets) for n, p in presets.items() if p.starter}
    if name == "ABOUT":
        return {n: p.about for n, p in registered().items()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
