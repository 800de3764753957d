"""The AlphaZero learner: policy and value heads trained on searched self-play.

May import: gamegym.game, gamegym.search, gamegym.nets, gamegym.data, gamegym.learners.base.
"""

from gamegym.learners.alphazero.learner import AlphaZeroLearner

__all__ = ["AlphaZeroLearner"]
