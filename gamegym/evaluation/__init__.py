"""Evaluation: matches and ratings of model iterations against each other and the yardsticks
(`arena`: players from player specs, matches, the Elo fit; `ratings`: an iteration rated
against the configured opponents, the results and ratings files, the rating plot, a verdict).
The Evaluator process that rates a running session is gamegym.runtime.evaluator; the commands
`gamegym evaluate` and `gamegym play` are gamegym.cli.evaluate.

May import: gamegym.game, gamegym.adapters, gamegym.search, gamegym.nets (a model loaded as
the Predictor loads it: gamegym.nets.fastmodels), gamegym.learners, gamegym.data,
gamegym.config and gamegym.workmeter; never the runtime, the web page, the benchmarks or the
command line.
"""
