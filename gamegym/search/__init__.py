"""The search: one tree core in the manner of mctx (core.py: one tree, one walk taking a root
and an interior selection function, one backup with reward and discount, one virtual-loss rule,
one driver; its parts in tree.py), the rules that give it their selection functions, policy
targets and moves, registered by name (rules.py: PUCT, with KataGo's forced playouts and policy
target pruning in forced.py, and Gumbel on the pure functions of gumbel.py), and the steps on
it: AlphaZero's over a GameGraph (mcts.py) and MuZero's over a learned model (latent.py).  The
compiled core runs the same walk, backup and virtual loss on flat arrays with numba kernels
and plays the same games (flat.py, latent_flat.py, _flat_kernels.py; `selfplay.search.core`);
the Python core is its reference.  The rollout-UCT yardstick is the core with a rollout
evaluator (uct.py), and play.py plays games with a search, with playout-cap randomization.
Values are negamax, from the view of the player to move.

May import: gamegym.game, gamegym.registry, gamegym.config.search (the search section: its
defaults and the compiled core's coverage), gamegym.nets.inference (what a search asks of a
network), numpy, and numba (the optional extra `gamegym[fast]`, in _flat_kernels.py only);
never TensorFlow, gamegym.data, the learners or the runtime.
"""
