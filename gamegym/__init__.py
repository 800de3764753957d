"""gamegym: a desktop self-play gym for two-player board games.

from gamegym import GameGym, GameGraph, GymConfig
from gamegym import Solver, AlphaBetaPlayer, UCTPlayer   # reference players for your game
"""

from gamegym.config import (
    ConfigError,
    GymConfig,
    NetworkConfig,
    PredictConfig,
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
from gamegym.runtime.gym import GameGym, GymError
from gamegym.search.uct import UCTPlayer

__all__ = [
    "GameGym",
    "GymError",
    "GameGraph",
    "GameGraphError",
    "GameSpecError",
    "VertexError",
    "load_game",
    "GymConfig",
    "NetworkConfig",
    "PredictConfig",
    "SelfplayConfig",
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
]
__version__ = "0.1.0"
