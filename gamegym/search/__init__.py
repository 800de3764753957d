"""The search: one tree core with virtual loss (mcts.py, its parts in tree.py), the root rules
it runs, registered by name (rules.py: PUCT, and Gumbel on the pure core in gumbel.py),
MuZero's search in a learned latent space (latent.py), the compiled core that runs the PUCT
search and the latent search faster and plays the same games (arena.py, latent_arena.py;
`selfplay.search_core`), and playing games
with a search, with playout-cap randomization (play.py).  Values are negamax, from the view of
the player to move.

May import: gamegym.game, gamegym.registry, gamegym.compiledcore, gamegym.nets.inference (what
a search asks of a network), gamegym.data (to write what it played), numpy, and numba (the
optional extra `gamegym[fast]`, in _arena_kernels.py only); never TensorFlow, the learners or
the runtime.
"""
