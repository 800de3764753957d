"""gamegym: a desktop self-play gym for two-player board games.

from gamegym import GameGym, GameGraph, GymConfig
from gamegym import Solver, AlphaBetaPlayer, UCTPlayer   # reference players for your game

Each name is imported from its module when first asked for, so importing one part of the
package (`gamegym.config` to validate a config, `gamegym.game.graph` for a game) does not
import the rest of it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gamegym.config import (
        ConfigError,
        GymConfig,
        NetworkConfig,
        PredictConfig,
        SearchConfig,
        SelfplayConfig,
        TrainConfig,
    )
    from gamegym.data.session import SessionError, SessionLockedError
    from gamegym.game.graph import GameGraph, GameGraphError, GameSpecError, VertexError, load_game
    from gamegym.game.players import (
        AlphaBetaPlayer,
        Player,
        RandomPlayer,
        Solution,
        Solver,
        SolverPlayer,
        play_game,
        solve,
    )
    from gamegym.game.ref import GameRef
    from gamegym.runtime.gym import GameGym, GymError
    from gamegym.search.uct import UCTPlayer

# each public name -> the module it lives in
_HOMES = {
    "GameGym": "gamegym.runtime.gym",
    "GymError": "gamegym.runtime.gym",
    "GameGraph": "gamegym.game.graph",
    "GameGraphError": "gamegym.game.graph",
    "GameSpecError": "gamegym.game.graph",
    "VertexError": "gamegym.game.graph",
    "load_game": "gamegym.game.graph",
    "GameRef": "gamegym.game.ref",
    "GymConfig": "gamegym.config",
    "NetworkConfig": "gamegym.config",
    "PredictConfig": "gamegym.config",
    "SelfplayConfig": "gamegym.config",
    "SearchConfig": "gamegym.config",
    "TrainConfig": "gamegym.config",
    "ConfigError": "gamegym.config",
    "SessionError": "gamegym.data.session",
    "SessionLockedError": "gamegym.data.session",
    "Player": "gamegym.game.players",
    "RandomPlayer": "gamegym.game.players",
    "AlphaBetaPlayer": "gamegym.game.players",
    "Solver": "gamegym.game.players",
    "SolverPlayer": "gamegym.game.players",
    "Solution": "gamegym.game.players",
    "UCTPlayer": "gamegym.search.uct",
    "solve": "gamegym.game.players",
    "play_game": "gamegym.game.players",
}

__all__ = [
    "GameGym",
    "GymError",
    "GameGraph",
    "GameGraphError",
    "GameSpecError",
    "VertexError",
    "load_game",
    "GameRef",
    "GymConfig",
    "NetworkConfig",
    "PredictConfig",
    "SelfplayConfig",
    "SearchConfig",
    "TrainConfig",
    "ConfigError",
    "SessionError",
    "SessionLockedError",
    "Player",
    "RandomPlayer",
    "AlphaBetaPlayer",
    "Solver",
    "SolverPlayer",
    "Solution",
    "UCTPlayer",
    "solve",
    "play_game",
]  # the names of _HOMES
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'gamegym' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
