"""The layout of the compiled core's flat tree (gamegym.search.flat): the rows of its node and
edge arrays, and the codes of the selection functions, shared by the Python side and the numba
kernels (gamegym.search._flat_kernels).

  ni  int64 [5, nodes]    state, first edge, edge count, parent edge, parent node
  nf  float64 [3, nodes]  value (the network's, or the final score; mover's view), visit total,
                          reward of the edge into the node (the latent search's; 0 otherwise)
  ef  float64 [3, edges]  prior, visits (virtual ones included), value sum (the parent's view)
  ei  int64 [2, edges]    child node (-1 until made), action id
  knobs float64 [9]       the selection functions' constants (rows below)

May import: gamegym.search.tree (the node states and the discount) only.
"""

from __future__ import annotations

from gamegym.search.tree import DISCOUNT, Node

__all__ = ["DISCOUNT"]

NEW, PENDING, EXPANDED, TERMINAL = Node.NEW, Node.PENDING, Node.EXPANDED, Node.TERMINAL
STATE, FIRST, COUNT, PARENT_EDGE, PARENT = 0, 1, 2, 3, 4  # rows of ni
VALUE, TOTAL, REWARD = 0, 1, 2  # rows of nf
PRIOR, VISITS, VALUES = 0, 1, 2  # rows of ef
CHILD, ACTION = 0, 1  # rows of ei
# the selection functions of the walk (gamegym.search.rules): PUCT, PUCT on Q min-max
# normalised by the values backed up (MuZero's), Gumbel's deterministic non-root rule
PUCT, PUCT_NORMALISED, GUMBEL = 0, 1, 2
# rows of knobs: c_puct; Gumbel's sigma constants, whether q is clipped to the score range
# [bottom, top] (1.0) or rescaled by the node's own spread (0.0), and the smallest prior; k of
# the forced playouts at the root of the search running (0: none; gamegym.search.forced)
C_PUCT, VALUE_SCALE, MAXVISIT_INIT, EPSILON, BY_SCORE, BOTTOM, TOP, TINY, FORCED = range(9)
