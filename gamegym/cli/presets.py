"""The bundled presets at the console: `gamegym presets` lists them, `gamegym new --preset NAME`
starts a session from one (its game, settings and starter model; flags and --config override)."""

from __future__ import annotations

import json
from pathlib import Path

from gamegym.cli.util import read_overrides
from gamegym.config import GymConfig, merged_settings
from gamegym.game.ref import GameRef
from gamegym.presets import all_presets, get_preset, preset_learner, registered, starter_model

__all__ = ["add_parser", "cmd_presets", "new_session_settings"]

EXAMPLE = """examples:
  gamegym presets
  gamegym new sessions/ttt --preset tictactoe
  gamegym new sessions/c4 --preset connectfour --config changes.json
"""


def add_parser(sub) -> None:
    """`gamegym presets`: every bundled preset with its game, learner and purpose."""
    p = sub.add_parser(
        "presets",
        help="list the bundled presets (gamegym new --preset NAME)",
        description=__doc__,
        epilog=EXAMPLE,
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=cmd_presets)


def preset_rows() -> list[dict]:
    """One row per preset: name, game, game arguments, learner, starter model, purpose."""
    rows = []
    about = {name: preset.about for name, preset in registered().items()}
    for name, preset in sorted(all_presets().items()):
        model = starter_model(name)
        rows.append(
            {
                "name": name,
                "game": preset["game"],
                "game_args": preset.get("game_args", {}),
                "learner": preset_learner(preset),
                "about": about.get(name, ""),
                "starter_model": None if model is None else str(model),
            }
        )
    return rows


def cmd_presets(args) -> int:
    rows = preset_rows()
    if args.json:
        print(json.dumps({row["name"]: row for row in rows}, indent=2, sort_keys=True))
        return 0
    width = max(len(row["name"]) for row in rows)
    for row in rows:
        arguments = json.dumps(row["game_args"]) if row["game_args"] else ""
        model = ", starter model" if row["starter_model"] else ""
        print(
            f"{row['name']:<{width}}  {row['game']} {arguments}".rstrip()
            + f"  ({row['learner']}{model})"
        )
        print(f"{'':<{width}}  {row['about']}")
    print("start one with: gamegym new SESSION --preset NAME [--config CHANGES.json]")
    return 0


def new_session_settings(
    name: str, game: str | None, game_args: dict | None, config_file: Path | None
) -> tuple[GymConfig, Path | None]:
    """The config of a new session from the preset `name`, changed by a config file (section
    by section) and then by --game / --game-args, and the preset's starter model when the
    session keeps the preset's game, arguments and network (else None: a fresh network)."""
    preset = get_preset(name)
    settings = merged_settings(preset, read_overrides(config_file)) if config_file else preset
    if game is not None and game != settings["game"]:
        settings = merged_settings(settings, {"game": game, "game_args": game_args or {}})
    elif game_args is not None:
        settings = merged_settings(settings, {"game_args": game_args})
    config = GymConfig.from_dict(settings)
    same_game = config.game_ref == GameRef(preset["game"], preset.get("game_args", {}))
    starter = starter_model(name, config.network_options()) if same_game else None
    return config, starter
