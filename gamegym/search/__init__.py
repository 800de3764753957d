"""The search: MCTS over a GameGraph (PUCT with virtual loss), MuZero's search in a learned
latent space, the Gumbel root rule, and playing games with a search.

May import: gamegym.game, gamegym.nets.inference (what a search asks of a network), gamegym.data
(to write what it played); never TensorFlow.
"""
