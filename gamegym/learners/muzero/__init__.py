"""The MuZero learner: a learned model (representation, dynamics, prediction) searched in latent space.

May import: gamegym.game, gamegym.search, gamegym.nets, gamegym.data, gamegym.learners.base.
"""

from gamegym.learners.muzero.learner import MuZeroLearner

__all__ = ["MuZeroLearner"]
