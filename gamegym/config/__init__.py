"""Session configuration: one dataclass per concern, validated when built, JSON round trip.

  checks.py    ConfigError and the checks of a field (type, range, choice, registered name,
               unknown keys), used by every section, a learner's own too
  search.py    the search section (`SearchConfig`), nested where a search runs, and the one
               table of search defaults
  sections.py  the network, predict, selfplay and evaluate sections
  train.py     the train section
  layouts.py   the layouts of a session's config.json that earlier formats wrote, read as today's
  gym.py       `GymConfig`, the rules that span sections (`check_config`), plugins, merging

Validating a config imports only what it names: the learner of train.learner and the replay
of train.replay through gamegym.registry; a backend or a search rule is known by its
registry's declared names, without importing it.

May import: gamegym.registry, gamegym.game.playerspecs and gamegym.game.ref (a config names
its game by reference, `GymConfig.game_ref`); nothing else of gamegym.
"""

from gamegym.config.checks import ConfigError, boolean, check, choice, float_in, int_in
from gamegym.config.gym import (
    SECTIONS,
    GymConfig,
    check_config,
    import_plugins,
    merged_settings,
)
from gamegym.config.layouts import learner_config_class
from gamegym.config.search import SearchConfig
from gamegym.config.sections import (
    PRECISIONS,
    EvaluateConfig,
    NetworkConfig,
    PredictConfig,
    SelfplayConfig,
)
from gamegym.config.train import COMPILES, WEIGHT_AVERAGES, TrainConfig

__all__ = [
    "ConfigError",
    "NetworkConfig",
    "PredictConfig",
    "SelfplayConfig",
    "SearchConfig",
    "TrainConfig",
    "EvaluateConfig",
    "GymConfig",
    "SECTIONS",
    "check",
    "check_config",
    "int_in",
    "float_in",
    "boolean",
    "choice",
    "import_plugins",
    "learner_config_class",
    "merged_settings",
    "PRECISIONS",
    "COMPILES",
    "WEIGHT_AVERAGES",
]
