"""Evaluation: matches and ratings of model iterations against each other and the yardsticks,
the optional Evaluator process, `gamegym evaluate` and `gamegym play`.

May import: gamegym.game, gamegym.search, gamegym.nets, gamegym.learners, gamegym.data,
gamegym.runtime.process and gamegym.nets.fastmodels (a model as the Predictor loads it).
"""
