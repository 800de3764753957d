"""gamegym: a desktop self-play gym for two-player board games.

    from gamegym import GameGym, GameGraph, GymConfig
"""
from gamegym.config import (ConfigError, GymConfig, NetworkConfig, PredictConfig, SelfplayConfig,
                            TrainConfig)
from gamegym.graph import GameGraph, GameGraphError, GameSpecError, VertexError, load_game
from gamegym.gym import GameGym, GymError
from gamegym.session import SessionError, SessionLockedError

__all__ = ["GameGym", "GymError", "GameGraph", "GameGraphError", "GameSpecError", "VertexError",
           "load_game", "GymConfig", "NetworkConfig", "PredictConfig", "SelfplayConfig",
           "TrainConfig", "ConfigError", "SessionError", "SessionLockedError"]
__version__ = "0.1.0"
