"""The search: one tree core with PUCT, Gumbel and latent (MuZero) selection rules, and the
policy targets and move choices they give (visit counts, completed-Q improved policies), plus
the per-move search budget (playout-cap randomization).  Values are negamax, from the view of
the player to move.  Modules here may import gamegym.game and numpy, never TensorFlow, the
learners or the runtime.
"""
