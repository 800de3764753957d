"""The layout of the compiled core's arena (gamegym.search.arena): the rows of its node and edge
arrays, shared by the Python side and the numba kernels (gamegym.search._arena_kernels).

  ni  int64 [5, nodes]    state, first edge, edge count, parent edge, parent node
  nf  float64 [3, nodes]  value (the network's, or the final score; mover's view), visit total,
                          reward of the edge into the node (the latent search's; 0 otherwise)
  ef  float64 [3, edges]  prior, visits (virtual ones included), value sum (the parent's view)
  ei  int64 [2, edges]    child node (-1 until made), action id

May import: gamegym.search.tree (the node states) only.
"""

from __future__ import annotations

from gamegym.search.tree import Node

NEW, PENDING, EXPANDED, TERMINAL = Node.NEW, Node.PENDING, Node.EXPANDED, Node.TERMINAL
STATE, FIRST, COUNT, PARENT_EDGE, PARENT = 0, 1, 2, 3, 4  # rows of ni
VALUE, TOTAL, REWARD = 0, 1, 2  # rows of nf
PRIOR, VISITS, VALUES = 0, 1, 2  # rows of ef
CHILD, ACTION = 0, 1  # rows of ei
