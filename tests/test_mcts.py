"""MCTS on known positions with fixed seeds, and the threaded search against a plain reference."""
import math

import numpy as np
import pytest

from games.connectfour import ConnectFour
from games.tictactoe import TicTacToe
from gamegym.mcts import Node, Search, SearchParams, choose_action, uniform_evaluator, visit_policy


def best_action(graph, vertex, searchcount=400, threads=1, evaluate=None, seed=0,
                os_threads=False):
    evaluate = evaluate or uniform_evaluator(graph.action_space_size)
    search = Search(graph, evaluate, SearchParams(searchcount=searchcount, threads=threads,
                                                  os_threads=os_threads))
    root = search.run(Node(vertex), np.random.default_rng(seed))
    return root.actions[choose_action(root, 0.0, np.random.default_rng(seed))], root


# tic-tac-toe boards from the mover's view: 1 = mine, -1 = theirs
WIN_IN_ONE = (1, 1, 0,
              -1, -1, 0,
              0, 0, 0)      # cell 2 wins at once (cell 5 would only block)
MUST_BLOCK = (-1, -1, 0,
              1, 0, 0,
              0, 0, 0)      # the opponent threatens cell 2
FORK_FOR_ME = (1, 0, 0,
               0, -1, 0,
               0, 0, 1)     # a position where only some moves keep the draw


MODES = [(1, False), (4, False), (4, True)]  # (concurrent searches, on OS threads)


@pytest.mark.parametrize("threads,os_threads", MODES)
def test_finds_a_forced_win(threads, os_threads):
    action, _ = best_action(TicTacToe(), WIN_IN_ONE, threads=threads, os_threads=os_threads)
    assert action == 2


@pytest.mark.parametrize("threads,os_threads", MODES)
def test_blocks_a_forced_loss(threads, os_threads):
    action, _ = best_action(TicTacToe(), MUST_BLOCK, threads=threads, os_threads=os_threads)
    assert action == 2


def test_connect_four_completes_a_vertical_four():
    graph = ConnectFour(rows=6, columns=7)
    vertex = graph.roots[0]
    for column in (3, 0, 3, 0, 3, 6):  # three of mine in column 3, opponent elsewhere
        vertex = graph.child_by_action(vertex, column)
    action, _ = best_action(graph, vertex, searchcount=300)
    assert action == 3


def test_never_plays_an_illegal_move_when_the_prior_favours_it():
    graph = TicTacToe()
    occupied = [i for i, c in enumerate(MUST_BLOCK) if c]

    def evaluate(vertices):
        probs = np.full((len(vertices), 9), 1e-3, np.float32)
        probs[:, occupied] = 10.0  # nearly all mass on occupied cells
        return probs, np.zeros(len(vertices), np.float32)

    for seed in range(5):
        action, root = best_action(graph, MUST_BLOCK, searchcount=50, evaluate=evaluate, seed=seed)
        assert action not in occupied
        policy = visit_policy(root, 9)
        assert policy[occupied].sum() == 0
        assert math.isclose(policy.sum(), 1.0, rel_tol=1e-6)


class ShuffledTicTacToe(TicTacToe):
    """The same game with each vertex's children in a different (fixed) order."""

    def __init__(self, seed):
        super().__init__()
        self.seed = seed

    def expansion(self, vertex):
        children, actions = super().expansion(vertex)
        order = np.random.default_rng([self.seed, hash(vertex) & 0xFFFFFFFF]).permutation(
            len(children))
        return tuple(children[i] for i in order), tuple(actions[i] for i in order)


@pytest.mark.parametrize("vertex,expected", [(WIN_IN_ONE, 2), (MUST_BLOCK, 2)])
def test_choice_does_not_depend_on_child_order(vertex, expected):
    for seed in range(4):
        action, _ = best_action(ShuffledTicTacToe(seed), vertex)
        assert action == expected


def reference_search(graph, evaluate, vertex, count, c):
    """A plain recursive PUCT search (no threads, no virtual loss): visits per child."""
    def new_node(v):
        children = graph.children_at(v)
        if not children:
            return {"terminal": True, "value": graph.score_at(v)}
        probs, values = evaluate([v])
        prior = np.array([probs[0][a] for a in graph.actions_at(v)], dtype=np.float64)
        return {"terminal": False, "value": float(values[0]), "children": list(children),
                "prior": list(prior / prior.sum()), "N": [0] * len(children),
                "W": [0.0] * len(children), "sub": [None] * len(children)}

    def simulate(node):
        if node["terminal"]:
            return node["value"]
        total = sum(node["N"])
        scale = c * math.sqrt(total + 1)
        scores = [(node["W"][i] / node["N"][i] if node["N"][i] else 0.0)
                  + scale * node["prior"][i] / (1 + node["N"][i]) for i in range(len(node["N"]))]
        i = int(np.argmax(scores))
        if node["sub"][i] is None:
            node["sub"][i] = new_node(node["children"][i])
            value = -node["sub"][i]["value"]
        else:
            value = -simulate(node["sub"][i])
        node["N"][i] += 1
        node["W"][i] += value
        return value

    root = new_node(vertex)
    for _ in range(count):
        simulate(root)
    return root["N"]


def pseudo_network(graph):
    """A deterministic, non-uniform evaluator (a hash of the vertex), to make the test bite."""
    def evaluate(vertices):
        probs = np.empty((len(vertices), graph.action_space_size), np.float32)
        values = np.empty(len(vertices), np.float32)
        for row, v in enumerate(vertices):
            rng = np.random.default_rng(abs(hash(v)) % (2**32))
            probs[row] = rng.dirichlet(np.ones(graph.action_space_size))
            values[row] = rng.uniform(-0.9, 0.9)
        return probs, values
    return evaluate


@pytest.mark.parametrize("make_graph", [TicTacToe, lambda: ConnectFour(rows=5, columns=5)])
@pytest.mark.parametrize("os_threads", [False, True])
def test_one_thread_equals_the_sequential_reference(make_graph, os_threads):
    graph = make_graph()
    evaluate = pseudo_network(graph)
    vertex = graph.roots[0]
    search = Search(graph, evaluate, SearchParams(searchcount=300, threads=1, virtualloss=3.0,
                                                  os_threads=os_threads))
    root = search.run(Node(vertex), np.random.default_rng(0), searchcount=299)
    expected = reference_search(graph, evaluate, vertex, 299, SearchParams().exploration_const)
    assert root.visits == expected


@pytest.mark.parametrize("threads", [2, 8, 32])
@pytest.mark.parametrize("os_threads", [False, True])
def test_threaded_search_counts_every_search_and_batches(threads, os_threads):
    graph = TicTacToe()
    calls = []
    uniform = uniform_evaluator(9)

    def evaluate(vertices):
        calls.append(len(vertices))
        return uniform(vertices)

    search = Search(graph, evaluate, SearchParams(searchcount=500, threads=threads,
                                                  os_threads=os_threads))
    root = search.run(Node(graph.roots[0]), np.random.default_rng(1))
    assert sum(root.visits) == 500           # virtual loss fully removed
    assert all(v >= 0 for v in root.visits)
    assert search.searches_done == 500
    assert max(calls) > 1                     # leaves of several threads went in one batch
    assert max(calls) <= threads


def test_dirichlet_noise_is_seeded():
    graph = TicTacToe()
    params = SearchParams(searchcount=100, threads=1, dirichlet_fraction=0.25)
    visits = []
    for _ in range(2):
        search = Search(graph, pseudo_network(graph), params)
        visits.append(search.run(Node(graph.roots[0]), np.random.default_rng(7)).visits)
    assert visits[0] == visits[1]
    other = Search(graph, pseudo_network(graph), params).run(
        Node(graph.roots[0]), np.random.default_rng(8)).visits
    assert other != visits[0]


class AsyncUniform:
    """An evaluator that answers later (like the Predictor client): submit now, collect later."""

    def __init__(self, size):
        self.uniform = uniform_evaluator(size)
        self.outstanding = 0
        self.max_outstanding = 0

    def __call__(self, vertices):
        return self.submit(vertices)()

    def submit(self, vertices):
        self.outstanding += 1
        self.max_outstanding = max(self.max_outstanding, self.outstanding)

        def collect():
            self.outstanding -= 1
            return self.uniform(vertices)
        return collect


@pytest.mark.parametrize("vertex,expected", [(WIN_IN_ONE, 2), (MUST_BLOCK, 2)])
def test_pipelined_batches_keep_results(vertex, expected):
    graph = TicTacToe()
    evaluate = AsyncUniform(9)
    action, root = best_action(graph, vertex, threads=8, evaluate=evaluate)
    assert action == expected
    assert sum(root.visits) == 400 and all(v >= 0 for v in root.visits)
    assert evaluate.outstanding == 0


def test_next_batch_is_selected_while_one_is_in_flight():
    graph = TicTacToe()
    evaluate = AsyncUniform(9)
    _, root = best_action(graph, graph.roots[0], searchcount=300, threads=8, evaluate=evaluate)
    assert sum(root.visits) == 300 and all(v >= 0 for v in root.visits)
    assert evaluate.max_outstanding == 2 and evaluate.outstanding == 0
