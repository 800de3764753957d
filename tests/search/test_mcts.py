"""MCTS on known positions with fixed seeds, and the threaded search against a plain reference."""

import math

import numpy as np
import pytest
from conftest import MUST_BLOCK, WIN_IN_ONE

from gamegym.config import GymConfig
from gamegym.data.samples import GameRecord
from gamegym.game.players import Solver
from gamegym.search.mcts import (
    Node,
    Search,
    SearchParams,
    choose_action,
    uniform_evaluator,
    visit_policy,
)
from gamegym.search.play import selfplay_game as play_game
from games.connectfour import ConnectFour
from games.tictactoe import TicTacToe


def best_action(graph, vertex, searchcount=400, threads=1, evaluate=None, seed=0, solver=False):
    evaluate = evaluate or uniform_evaluator(graph.action_space_size)
    search = Search(
        graph, evaluate, SearchParams(searchcount=searchcount, threads=threads, solver=solver)
    )
    root = search.run(Node(vertex), np.random.default_rng(seed))
    return root.actions[choose_action(root, 0.0, np.random.default_rng(seed))], root


# tic-tac-toe boards from the mover's view: 1 = mine, -1 = theirs
FORK_FOR_ME = (1, 0, 0, 0, -1, 0, 0, 0, 1)  # a position where only some moves keep the draw


THREADS = [1, 4]  # concurrent searches


@pytest.mark.parametrize("solver", [True, False])
@pytest.mark.parametrize("threads", THREADS)
def test_finds_a_forced_win(threads, solver):
    action, _ = best_action(TicTacToe(), WIN_IN_ONE, threads=threads, solver=solver)
    assert action == 2


@pytest.mark.parametrize("solver", [True, False])
@pytest.mark.parametrize("threads", THREADS)
def test_blocks_a_forced_loss(threads, solver):
    action, _ = best_action(TicTacToe(), MUST_BLOCK, threads=threads, solver=solver)
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
            len(children)
        )
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
        return {
            "terminal": False,
            "value": float(values[0]),
            "children": list(children),
            "prior": list(prior / prior.sum()),
            "N": [0] * len(children),
            "W": [0.0] * len(children),
            "sub": [None] * len(children),
        }

    def simulate(node):
        if node["terminal"]:
            return node["value"]
        total = sum(node["N"])
        scale = c * math.sqrt(total + 1)
        scores = [
            (node["W"][i] / node["N"][i] if node["N"][i] else 0.0)
            + scale * node["prior"][i] / (1 + node["N"][i])
            for i in range(len(node["N"]))
        ]
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
def test_one_thread_equals_the_sequential_reference(make_graph):
    graph = make_graph()
    evaluate = pseudo_network(graph)
    vertex = graph.roots[0]
    search = Search(
        graph, evaluate, SearchParams(searchcount=300, threads=1, virtualloss=3.0, solver=False)
    )
    root = search.run(Node(vertex), np.random.default_rng(0), searchcount=299)
    expected = reference_search(graph, evaluate, vertex, 299, SearchParams().exploration_const)
    assert root.visits == expected


@pytest.mark.parametrize("threads", [2, 8, 32])
def test_threaded_search_counts_every_search_and_batches(threads):
    graph = TicTacToe()
    calls = []
    uniform = uniform_evaluator(9)

    def evaluate(vertices):
        calls.append(len(vertices))
        return uniform(vertices)

    search = Search(
        graph,
        evaluate,
        SearchParams(searchcount=500, threads=threads, solver=False),
    )
    root = search.run(Node(graph.roots[0]), np.random.default_rng(1))
    assert sum(root.visits) == 500  # virtual loss fully removed
    assert all(v >= 0 for v in root.visits)
    assert search.searches_done == 500
    assert max(calls) > 1  # leaves of several threads went in one batch
    assert max(calls) <= threads


def test_dirichlet_noise_is_seeded():
    graph = TicTacToe()
    params = SearchParams(searchcount=100, threads=1, dirichlet_fraction=0.25)
    visits = []
    for _ in range(2):
        search = Search(graph, pseudo_network(graph), params)
        visits.append(search.run(Node(graph.roots[0]), np.random.default_rng(7)).visits)
    assert visits[0] == visits[1]
    other = (
        Search(graph, pseudo_network(graph), params)
        .run(Node(graph.roots[0]), np.random.default_rng(8))
        .visits
    )
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


@pytest.mark.parametrize("solver", [False, True])
@pytest.mark.parametrize("vertex,expected", [(WIN_IN_ONE, 2), (MUST_BLOCK, 2)])
def test_pipelined_batches_keep_results(vertex, expected, solver):
    graph = TicTacToe()
    evaluate = AsyncUniform(9)
    search = Search(graph, evaluate, SearchParams(searchcount=400, threads=8, solver=solver))
    root = search.run(Node(vertex), np.random.default_rng(0))
    assert root.actions[choose_action(root, 0.0, np.random.default_rng(0))] == expected
    # every search backed up once, virtual loss fully removed; the solver may stop early
    assert sum(root.visits) == search.searches_done and all(v >= 0 for v in root.visits)
    assert search.searches_done == 400 if not solver else search.searches_done <= 400
    assert evaluate.outstanding == 0


def test_next_batch_is_selected_while_one_is_in_flight():
    graph = TicTacToe()
    evaluate = AsyncUniform(9)
    _, root = best_action(graph, graph.roots[0], searchcount=300, threads=8, evaluate=evaluate)
    assert sum(root.visits) == 300 and all(v >= 0 for v in root.visits)
    assert evaluate.max_outstanding == 2 and evaluate.outstanding == 0


# ----- MCTS-solver -------------------------------------------------------------------------------


def proven_nodes(node):
    """Every node of a search tree with a proven value."""
    stack, found = [node], []
    while stack:
        node = stack.pop()
        if node.proven is not None:
            found.append(node)
        stack.extend(child for child in node.children if child is not None)
    return found


@pytest.mark.parametrize("threads", THREADS)
def test_solver_proves_a_win_in_one_and_stops(threads):
    graph = TicTacToe()
    search = Search(
        graph,
        uniform_evaluator(9),
        SearchParams(searchcount=400, threads=threads, solver=True),
    )
    root = search.run(Node(WIN_IN_ONE), np.random.default_rng(0))
    assert root.proven == 1.0 and root.mean_value() == 1.0
    assert search.searches_done < 400  # nothing left to search once the root is proven
    policy = visit_policy(root, 9)
    assert policy[2] == 1.0  # the policy target is the proven win only
    rng = np.random.default_rng(0)
    assert {root.actions[choose_action(root, 1.0, rng)] for _ in range(50)} == {2}


def test_solver_never_plays_a_move_proven_to_lose():
    graph = TicTacToe()
    for seed in range(5):
        search = Search(
            graph, uniform_evaluator(9), SearchParams(searchcount=60, threads=4, solver=True)
        )
        root = search.run(Node(MUST_BLOCK), np.random.default_rng(seed))
        losing = [
            a for a, c in zip(root.actions, root.children) if c is not None and c.proven == 1.0
        ]
        assert losing  # the search proved some moves lose
        policy = visit_policy(root, 9)
        assert policy[losing].sum() == 0 and math.isclose(policy.sum(), 1.0, rel_tol=1e-6)
        rng = np.random.default_rng(seed)
        chosen = {root.actions[choose_action(root, 1.0, rng)] for _ in range(100)}
        assert not chosen & set(losing)


@pytest.mark.parametrize("make_graph", [TicTacToe, lambda: ConnectFour(rows=4, columns=4)])
@pytest.mark.parametrize("threads", THREADS)
def test_every_proven_value_is_the_exact_value(make_graph, threads):
    """Wins, losses and draws proven anywhere in the tree agree with the exact solver."""
    graph = make_graph()
    exact = Solver(graph)
    rng = np.random.default_rng(3)
    checked = 0
    for _game in range(6):
        vertex = graph.roots[0]
        for _ in range(int(rng.integers(0, 6))):  # a few random opening moves
            children = graph.children_at(vertex)
            if not children:
                break
            vertex = children[int(rng.integers(len(children)))]
        if not graph.children_at(vertex):
            continue
        search = Search(
            graph,
            pseudo_network(graph),
            SearchParams(searchcount=800, threads=threads, solver=True),
        )
        root = search.run(Node(vertex), rng)
        for node in proven_nodes(root):
            assert node.proven == exact.value(node.vertex), node.vertex
            checked += 1
        assert sum(root.visits) == search.searches_done
    assert checked > 50


def test_proven_root_keeps_its_value_when_the_tree_is_reused():
    """Self-play moves down into the searched child; a proven child needs no more searches."""
    graph = TicTacToe()
    search = Search(
        graph, uniform_evaluator(9), SearchParams(searchcount=400, threads=4, solver=True)
    )
    root = search.run(Node(MUST_BLOCK), np.random.default_rng(0))
    child = root.children[root.actions.index(5)]  # not blocking: the opponent wins at cell 2
    assert child is not None and child.proven == 1.0
    before = search.searches_done
    again = search.run(child, np.random.default_rng(0))
    assert again is child and search.searches_done == before
    assert again.mean_value() == 1.0
    assert visit_policy(again, 9)[2] == 1.0


def test_without_the_solver_nothing_is_proven():
    graph = TicTacToe()
    search = Search(graph, uniform_evaluator(9), SearchParams(searchcount=400, solver=False))
    root = search.run(Node(WIN_IN_ONE), np.random.default_rng(0))
    assert proven_nodes(root) == [] and search.searches_done == 400
    assert root.proven_best() is None


def test_the_session_config_switches_the_solver():
    game = "games.tictactoe:TicTacToe"
    assert not SearchParams.from_selfplay(GymConfig.from_dict({"game": game}).selfplay).solver
    on = GymConfig.from_dict({"game": game, "selfplay": {"search": {"solver": True}}})
    assert SearchParams.from_selfplay(on.selfplay).solver


def test_self_play_with_the_solver_records_exact_endings():
    """Whole self-play games: every move played is one the policy target allows, and the
    positions the search proved carry their exact value as the search value."""
    graph = TicTacToe()
    cfg = GymConfig.from_dict(
        {
            "game": "games.tictactoe:TicTacToe",
            "selfplay": {"search": {"solver": True, "searchcount": 50}},
        }
    ).selfplay
    search = Search(graph, uniform_evaluator(9), SearchParams.from_selfplay(cfg))
    exact = Solver(graph)
    rng = np.random.default_rng(5)
    exact_values = 0
    for _ in range(8):
        record = play_game(graph, search, cfg, rng, GameRecord())
        vertex = graph.roots[0]
        for pi, action, root_value in zip(record.pi, record.action, record.root_value):
            assert math.isclose(pi.sum(), 1.0, rel_tol=1e-6) and pi[action] > 0
            if abs(root_value) == 1.0:  # proven won or lost (a mean is never exactly 1)
                assert root_value == exact.value(vertex)
                exact_values += 1
            vertex = graph.child_by_action(vertex, action)
    assert exact_values > 0


def test_os_threads_are_refused_with_the_setting_named():
    """The search has one driver thread; a config that asks for OS threads is told which
    setting to change instead of running another driver."""
    with pytest.raises(ValueError, match="search.os_threads.*one driver thread"):
        Search(TicTacToe(), uniform_evaluator(9), SearchParams(os_threads=True))
