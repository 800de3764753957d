"""The game layer: the GameGraph contract, its checker, players and player specs, and the
reference players (solver, alpha-beta, UCT) that serve as yardsticks.

May import: numpy and the standard library only; nothing else of gamegym.
"""
