"""The search: MCTS over a GameGraph (PUCT with virtual loss), MuZero's search in a learned
latent space, the Gumbel root rule (gumbel.py), the per-move search budget (playout-cap
randomization), and playing games with a search.  Values are negamax, from the view of the
player to move.

May import: gamegym.game, gamegym.nets.inference (what a search asks of a network), gamegym.data
(to write what it played) and numpy; never TensorFlow, the learners or the runtime.
"""
