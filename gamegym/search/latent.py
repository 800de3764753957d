"""MuZero's search: MCTS in a learned latent space (no TensorFlow here).

The root is the real position: its children are the GameGraph's legal moves (masked there and
nowhere else) and it is evaluated by *initial inference* (observation -> hidden state, policy,
value).  Below the root every node is a hidden state, expanded over the whole action space and
evaluated by *recurrent inference* (the parent's hidden state and the action -> reward, hidden
state, policy, value).  The model never says a game is over: after an ending it has learned
absorbing states (reward 0, value 0).

This module is the step of the one tree core (`gamegym.search.core.TreeCore`): what a node's
children are, what the model is asked and how its answer fills a node.  Signs (negamax with
rewards): a node's value is from the view of the player to move there; an edge's reward is what
the player moving there receives.  The core backs up reward - child value (AlphaZero's
-child value, with reward 0), which needs turns that strictly alternate
(`GameGraph.turns_alternate`; `require_alternating`).

With the "puct" rule, selection is PUCT on min-max normalised Q (the paper's): Q(s, a), from the
view of the mover at s, is mapped to [0, 1] by the smallest and largest values backed up in the
tree so far (once they differ); an unvisited child counts 0.  Every backed-up value is a
reward-plus-value sum the model gave, so its bounds contain every Q; virtual loss never enters
them.  With the "gumbel" rule
(`gamegym.search.rules`), Gumbel MuZero: Gumbel-Top-k and sequential halving over the root's
legal moves, the deterministic rule below it on q = reward - child value (sigma rescales each
node's completed q by the score range, or by its own smallest and largest as mctx does:
`selfplay.search.gumbel_rescale`), and the improved policy as the target.

Everything else -- the walk by the rule's selection functions, the backup, concurrent searches
under virtual loss, one batch per round, the pipelined Predictor round trip -- is the core's.

Model iterations: the hidden states of a tree were made by the iteration that answered its root,
and its recurrent requests are tagged with it, so the Predictor never feeds them to another
iteration's dynamics.  When the Predictor no longer holds that iteration (two reloads during one
search), the search starts again from the root (`gamegym.search.core.restarting`;
`LatentSearch.restarts` counts it).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import cast

import numpy as np

from gamegym.game.graph import GameGraph, GameGraphError
from gamegym.search.core import TreeCore
from gamegym.search.tree import Node, SearchParams

__all__ = [
    "LatentNode",
    "LatentSearch",
    "NetworkLatentValuer",
    "uniform_latent_evaluator",
    "UniformLatentValuer",
    "require_alternating",
]

RESTARTS = 5  # searches started again from the root before a StaleIteration is given up


def require_alternating(graph: GameGraph) -> None:
    """GameGraphError unless every move of `graph` hands the turn to the other player."""
    if not getattr(graph, "turns_alternate", True):
        raise GameGraphError(
            f"{type(graph).__name__} sets turns_alternate = False: MuZero's latent search "
            "negates rewards and values at every ply, so it needs a game whose turns strictly "
            "alternate; train this game with the 'alphazero' learner"
        )


class LatentNode(Node):
    """A search node: the real position (the root, `parent` None) or a hidden state reached
    from `parent` by `action`."""

    __slots__ = ("parent", "action", "hidden")

    def __init__(self, vertex: Hashable, parent: LatentNode | None = None, action: int = -1):
        super().__init__(vertex)
        self.parent = parent
        self.action = action  # action id from the parent
        self.hidden = None  # hidden state [H] or [rows, columns, planes] once evaluated

    def reset(self) -> None:
        """Forget the search below this node (a restart at the root)."""
        LatentNode.__init__(self, self.vertex, self.parent, self.action)


class LatentSearch(TreeCore):
    """MCTS over a learned model (see the module docstring); the evaluator is a
    `NetworkLatentValuer` or anything answering a list of LatentNodes with
    (probs [B, A], values [B], rewards [B], hidden [B, ...])."""

    normalise_q = True  # PUCT's Q by the bounds of the values backed up (the paper's)
    edge_rewards = True  # the reward the dynamics network predicts for each edge
    restarts_allowed = RESTARTS

    def __init__(self, graph: GameGraph, evaluate, params: SearchParams):
        require_alternating(graph)
        super().__init__(graph, evaluate, params)
        self.action_ids = tuple(range(graph.action_space_size))

    def new_root(self, vertex: Hashable) -> LatentNode:
        return LatentNode(vertex)

    def next_root(self, root: Node, index: int) -> LatentNode:
        """A fresh root at the position played: each move is searched from its real
        observation (the hidden states below the old root are the model's, not the game's)."""
        return LatentNode(root.child_vertices[index])

    def _restart(self, root: Node) -> None:
        self._queue = []  # leaves of the abandoned tree
        cast(LatentNode, root).reset()  # the latent search's roots are LatentNodes

    # ----- tree operations --------------------------------------------------------------------
    # the latent tree holds LatentNodes only (typed so rather than cast: a call per new node)
    def _open(self, node: LatentNode) -> None:  # type: ignore[override]
        if node.parent is None:  # the real position: legal moves only, or the final score
            vertex = node.vertex
            children = self.graph.children_at(vertex)
            if not children:
                node.state = Node.TERMINAL
                node.value = float(self.graph.score_at(vertex))
                return
            node.child_vertices = children
            node.actions = self.graph.actions_at(vertex)
        else:  # a hidden state: every action id
            node.actions = self.action_ids
        n = len(node.actions)
        node.children = [None] * n
        node.visits = [0] * n
        node.values = [0.0] * n
        node.state = Node.PENDING
        self._queue.append(node)

    def _inputs(self, batch: list) -> list:
        return batch  # the evaluator needs each node's parent and action, not a vertex

    def _apply(
        self,
        batch: list,
        probs: np.ndarray,
        values: np.ndarray,
        rewards: np.ndarray | None = None,
        hidden: np.ndarray | None = None,
    ) -> None:
        self.evaluations += len(batch)
        for j, node in enumerate(batch):
            row = probs[j]
            if node.parent is None:
                p = [float(row[a]) for a in node.actions]
                s = sum(p)
                node.priors = [x / s for x in p] if s > 0 else [1.0 / len(p)] * len(p)
            else:
                node.priors = row.tolist()  # a softmax over every action id
                node.reward = float(rewards[j])  # type: ignore[index]  # hidden states come with rewards
            node.value = float(values[j])
            node.hidden = hidden[j] if hidden is not None else None
            node.state = Node.EXPANDED

    def _make_child(self, node: LatentNode, i: int) -> LatentNode:  # type: ignore[override]
        return LatentNode(None, node, node.actions[i])


class NetworkLatentValuer:
    """MuZero's model calls over a model service (gamegym.nets.inference) for a LatentSearch: a
    batch of roots goes as one "initial" request ({"x": observations}), a batch of hidden-state
    nodes as one "recurrent" request ({"hidden": their parents' hidden states, "action": action
    ids}) tagged with the iteration that answered the tree's root.

    Answers (probs [B, A], values [B], rewards [B], hidden [B, ...]); `submit` sends now and
    answers later so the search selects its next batch meanwhile.
    """

    def __init__(self, graph: GameGraph, service):
        self.graph = graph
        self.service = service
        self.iteration = -1  # the model iteration of the current tree (its root's answer)

    @property
    def requests(self) -> int:
        return self.service.requests

    def __call__(self, nodes: list):
        return self.submit(nodes)()

    def probe(self) -> int:
        """The model iteration that answers now: one "initial" request of the first root."""
        x = self.graph.numpify(self.graph.roots[0])[None]
        return self.service.submit("initial", {"x": x})()[1]

    def submit(self, nodes: list) -> Callable[[], tuple]:
        roots = sum(1 for node in nodes if node.parent is None)
        if roots and roots < len(nodes):
            raise ValueError("a batch mixes roots and hidden-state nodes")
        if roots:
            return self.initial([node.vertex for node in nodes])
        hidden = np.stack([node.parent.hidden for node in nodes])
        actions = np.fromiter((node.action for node in nodes), np.int32, len(nodes))
        return self.recurrent(hidden, actions)

    def initial(self, vertices: list) -> Callable[[], tuple]:
        """Send the initial inference of real positions now; the answer (probs, values, None,
        hidden) when called.  Its iteration becomes the tree's."""
        answer = self.service.submit("initial", {"x": self.graph.numpify_many(vertices)})

        def collect_initial() -> tuple:
            outputs, self.iteration = answer()
            return (outputs["probs"], outputs["values"], None, outputs["hidden"])

        return collect_initial

    def recurrent(self, hidden: np.ndarray, actions: np.ndarray) -> Callable[[], tuple]:
        """Send the recurrent inference of hidden states [B, ...] and action ids [B] now,
        tagged with the tree's iteration; the answer (probs, values, rewards, hidden) when
        called (StaleIteration when the Predictor no longer holds that iteration)."""
        answer = self.service.submit(
            "recurrent",
            {"hidden": hidden, "action": np.asarray(actions, np.int32)},
            iteration=self.iteration,
        )

        def collect_recurrent() -> tuple:
            outputs, _ = answer()
            return (outputs["probs"], outputs["values"], outputs["reward"], outputs["hidden"])

        return collect_recurrent


class UniformLatentValuer:
    """A stub for the latent search: uniform priors, value and reward 0, a zero hidden state
    (for the search ceiling and tests).  Answers at once: it has no `submit`."""

    def __init__(self, action_space_size: int, hidden_size: int = 1):
        self.action_space_size = action_space_size
        self.hidden_size = hidden_size

    def _answer(self, n: int) -> tuple:
        a = self.action_space_size
        return (
            np.full((n, a), 1.0 / a, np.float32),
            np.zeros(n, np.float32),
            np.zeros(n, np.float32),
            np.zeros((n, self.hidden_size), np.float32),
        )

    def __call__(self, nodes: list) -> tuple:
        return self._answer(len(nodes))

    def initial(self, vertices: list) -> Callable[[], tuple]:
        answer = self._answer(len(vertices))
        return lambda: answer

    def recurrent(self, hidden: np.ndarray, actions: np.ndarray) -> Callable[[], tuple]:
        answer = self._answer(len(actions))
        return lambda: answer


def uniform_latent_evaluator(action_space_size: int, hidden_size: int = 1):
    """A stub for the latent search: uniform priors, value and reward 0, a zero hidden state
    (for the search ceiling and tests)."""
    return UniformLatentValuer(action_space_size, hidden_size)
