"""A learner preset as the benchmarks run it: found for a bundled game (`bundled_preset`) and
made into a GymConfig the one way every benchmark makes its config (`preset_config`): the
preset's settings with the benchmark's changes applied in turn as `GymConfig.updated` applies
them (a section key by key, other fields replaced), built once.
"""

from __future__ import annotations

from typing import Any

from gamegym.config import GymConfig, merged_settings
from gamegym.game.ref import GameRef
from gamegym.presets import preset_for

__all__ = ["bundled_preset", "preset_config"]


def preset_config(settings: dict[str, Any], *changes: dict[str, Any] | None) -> GymConfig:
    """The config of `settings` (a preset's, or any config's JSON form) with each of `changes`
    (None: none) applied in turn, as `GymConfig.updated` applies them; the config is built
    (and validated) once, from the merged settings."""
    merged = settings
    for change in changes:
        if change:
            merged = merged_settings(merged, change)
    return GymConfig.from_dict(merged)


def bundled_preset(game: GameRef, learner: str) -> tuple[str, dict]:
    """The learner's bundled preset for the game (as `preset_for` gives it for the game's
    arguments, its defaults filled in), or a ValueError that names the game: the learning
    benchmark runs on the bundled games."""
    args = game.complete().args
    found = preset_for(game.spec, args, learner)
    if found is None:
        raise ValueError(
            f"no bundled {learner} preset for {game.spec} {args}; the "
            "learning benchmark runs on the bundled games"
        )
    return found
