"""The Bootstrapped DQN learner: K Q-heads on a shared torso, and play with them.

May import: gamegym.game, gamegym.search, gamegym.nets, gamegym.data, gamegym.learners.base.
"""

from gamegym.learners.bootstrapped.learner import BootstrappedLearner

__all__ = ["BootstrappedLearner"]
