"""The game layer: the GameGraph contract, a game's reference (ref.py: its spec and arguments,
built once per process), its checker, players and player specs, and the reference players
(solver, alpha-beta) that serve as yardsticks; the UCT yardstick is the tree search with random
rollouts (gamegym.search.uct).

May import: numpy and the standard library only; nothing else of gamegym.
"""
