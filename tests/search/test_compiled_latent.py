"""MuZero's latent search on the compiled core against the Python latent search, its reference:
the same searches, the same games, the same restarts; and which core MuZero's Selfplayer and
the bench's ceiling get."""

import dataclasses

import numpy as np
import pytest
from conftest import MUST_BLOCK, WIN_IN_ONE
from test_compiled_core import games_of, selfplay_config

from gamegym.nets.inference import LocalService, StaleIteration
from gamegym.search.cores import make_latent_search
from gamegym.search.flat_layout import NEW, TERMINAL
from gamegym.search.latent import LatentSearch, NetworkLatentValuer, uniform_latent_evaluator
from gamegym.search.latent_flat import LatentFlatSearch
from gamegym.search.mcts import SearchParams
from games.connectfour import ConnectFour
from games.tictactoe import TicTacToe

pytest.importorskip("numba", reason='numba is not installed: pip install -e ".[fast]"')

GAMES = [TicTacToe, lambda: ConnectFour(rows=6, columns=7)]


class PseudoLatentModel:
    """A fixed random MuZero model: every hidden state and action gets its own priors, value,
    reward and next hidden state, so two searches agree only if they visit the same nodes in
    the same order and send the same batches."""

    kinds = ("initial", "recurrent")

    def __init__(self, graph, iteration=0, size=8):
        rng = np.random.default_rng(17 + iteration)
        inputs = int(np.prod(graph.numpify(graph.roots[0]).shape))
        actions = graph.action_space_size
        self.iteration = iteration
        self.w_in = rng.normal(size=(inputs, size)).astype(np.float32)
        self.w_h = (0.5 * rng.normal(size=(size, size))).astype(np.float32)
        self.w_a = rng.normal(size=(actions, size)).astype(np.float32)
        self.w_p = rng.normal(size=(size, actions)).astype(np.float32)
        self.w_v = (0.4 * rng.normal(size=size)).astype(np.float32)
        self.w_r = (0.4 * rng.normal(size=size)).astype(np.float32)

    def run(self, kind, inputs):
        if kind == "initial":
            x = np.asarray(inputs["x"], np.float32).reshape(len(inputs["x"]), -1)
            hidden = np.tanh(x @ self.w_in)
            rewards = np.zeros(len(x), np.float32)
        else:
            hidden = np.tanh(inputs["hidden"] @ self.w_h + self.w_a[inputs["action"]])
            rewards = np.tanh(hidden @ self.w_r)
        logits = hidden @ self.w_p
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        return {
            "hidden": hidden.astype(np.float32),
            "reward": rewards.astype(np.float32),
            "values": np.tanh(hidden @ self.w_v).astype(np.float32),
            "probs": probs.astype(np.float32),
        }


class ReloadingService(LocalService):
    """A model service that loads the next iteration before request `reload_at` and holds
    only the newest, so the search that asked for the old one must start again."""

    def __init__(self, graph, reload_at):
        super().__init__(PseudoLatentModel(graph))
        self.graph, self.reload_at, self.log = graph, reload_at, []

    def submit(self, kind, inputs, iteration=-1):
        if self.requests + 1 == self.reload_at:
            self.evaluator = PseudoLatentModel(self.graph, self.evaluator.iteration + 1)
        self.log.append((kind, iteration))
        try:
            return super().submit(kind, inputs, iteration)
        except StaleIteration as refused:
            error = refused  # raised when the answer is read, as the Predictor's client does

            def collect():
                raise error

            return collect


def both(graph, params, service=lambda graph: LocalService(PseudoLatentModel(graph))):
    """A Python and a compiled latent search, each over its own service of the same model."""
    services = service(graph), service(graph)
    return (
        LatentSearch(graph, NetworkLatentValuer(graph, services[0]), params),
        LatentFlatSearch(graph, NetworkLatentValuer(graph, services[1]), params),
        services,
    )


@pytest.mark.parametrize("make_graph", GAMES)
@pytest.mark.parametrize("threads", [1, 8])
def test_plays_the_games_of_the_python_latent_search(make_graph, threads):
    """Moves, policy targets, root values and results of whole self-play games (noise and
    temperature on; with 8 threads the batches are pipelined through the service) are those
    of the Python latent search, with the same model requests."""
    graph = make_graph()
    cfg = selfplay_config(searchcount=60, threads=threads, temperature_drop_move=4)
    python, compiled, services = both(graph, SearchParams.from_selfplay(cfg))
    assert games_of(compiled, cfg, graph, 2, seed=7) == games_of(python, cfg, graph, 2, seed=7)
    assert compiled.searches_done == python.searches_done > 0
    assert compiled.evaluations == python.evaluations > 0
    assert services[1].requests == services[0].requests


@pytest.mark.parametrize("make_graph", GAMES)
@pytest.mark.parametrize("threads", [1, 8])
def test_forced_playouts_play_the_games_of_the_python_latent_search(make_graph, threads):
    """With forced playouts at the root (k = 2) and the targets pruned by PUCT on Q
    normalised by the values backed up, the games are the Python latent search's."""
    graph = make_graph()
    cfg = selfplay_config(
        searchcount=60, threads=threads, temperature_drop_move=4, forced_playouts=2.0
    )
    params = SearchParams.from_selfplay(cfg)
    python, compiled, services = both(graph, params)
    games = games_of(python, cfg, graph, 2, seed=7)
    assert games_of(compiled, cfg, graph, 2, seed=7) == games
    assert compiled.searches_done == python.searches_done > 0
    assert services[1].requests == services[0].requests
    unforced, _, _ = both(graph, dataclasses.replace(params, forced_playouts=0.0))
    assert games_of(unforced, cfg, graph, 2, seed=7) != games  # the setting changes the games


@pytest.mark.parametrize("virtualloss", [0.0, 1.0, 3.0])
def test_the_same_visits_values_and_bounds_under_virtual_loss(virtualloss):
    graph = ConnectFour(rows=6, columns=7)
    params = SearchParams(searchcount=800, threads=16, virtualloss=virtualloss)
    python, compiled, _ = both(graph, params)
    expected = python.run(python.new_root(graph.roots[0]), np.random.default_rng(0))
    root = compiled.run(compiled.new_root(graph.roots[0]), np.random.default_rng(0))
    assert root.visits == expected.visits and sum(root.visits) == 800
    assert root.values == expected.values
    assert root.priors == expected.priors
    assert tuple(compiled.bounds) == (python.low, python.high)
    assert python.low < python.high  # rewards and values of the model: Q was normalised


@pytest.mark.parametrize("vertex,expected", [(WIN_IN_ONE, 2), (MUST_BLOCK, 2)])
def test_a_new_tree_starts_clean_whatever_the_last_one_held(vertex, expected):
    """A root with more legal moves than the last tree's root starts on edges the last tree's
    hidden states used; the tree is the one a fresh search makes."""
    graph = TicTacToe()
    params = SearchParams(searchcount=300, threads=4)
    python, compiled, _ = both(graph, params)
    for search in (python, compiled):
        search.run(search.new_root(vertex), np.random.default_rng(1))
    expected_root = python.run(python.new_root(graph.roots[0]), np.random.default_rng(2))
    root = compiled.run(compiled.new_root(graph.roots[0]), np.random.default_rng(2))
    assert root.visits == expected_root.visits and root.values == expected_root.values


def test_the_flat_tree_and_its_hidden_states_grow():
    graph = ConnectFour(rows=6, columns=7)
    params = SearchParams(searchcount=3000, threads=8)
    python, compiled, _ = both(graph, params)
    nodes = compiled.nf.shape[1]
    root = compiled.run(compiled.new_root(graph.roots[0]), np.random.default_rng(0))
    assert compiled.nf.shape[1] > nodes and len(compiled.hidden) >= compiled.nf.shape[1]
    expected = python.run(python.new_root(graph.roots[0]), np.random.default_rng(0))
    assert root.visits == expected.visits


@pytest.mark.parametrize("threads", [1, 4])
def test_a_search_whose_iteration_is_gone_starts_again_as_the_python_one_does(threads):
    graph = TicTacToe()
    params = SearchParams(searchcount=60, threads=threads)
    python, compiled, services = both(graph, params, lambda g: ReloadingService(g, reload_at=3))
    expected = python.run(python.new_root(WIN_IN_ONE), np.random.default_rng(0))
    root = compiled.run(compiled.new_root(WIN_IN_ONE), np.random.default_rng(0))
    assert compiled.restarts == python.restarts == 1
    assert services[1].log == services[0].log
    assert root.visits == expected.visits and sum(root.visits) == 60
    assert root.priors == expected.priors  # the new iteration's, noised afresh


def test_next_root_is_a_new_tree_at_the_position_played():
    graph = TicTacToe()
    _, compiled, _ = both(graph, SearchParams(searchcount=40, threads=4))
    root = compiled.run(compiled.new_root(graph.roots[0]), np.random.default_rng(0))
    index = root.actions.index(4)
    played = root.child_vertices[index]
    following = compiled.next_root(root, index)
    assert following.vertex == played
    assert following.state == NEW and following.total == 0
    with pytest.raises(ValueError, match="not in the search's current tree"):
        compiled.run(root, np.random.default_rng(0))


def test_a_terminal_root_and_the_uniform_stub():
    graph = TicTacToe()
    params = SearchParams(searchcount=50, threads=4)
    search = LatentFlatSearch(graph, uniform_latent_evaluator(9), params)
    reference = LatentSearch(graph, uniform_latent_evaluator(9), params)
    root = search.run(search.new_root(MUST_BLOCK), np.random.default_rng(0))
    expected = reference.run(reference.new_root(MUST_BLOCK), np.random.default_rng(0))
    assert root.visits == expected.visits  # no `submit`: one batch at a time, as the Python
    end = graph.roots[0]
    while graph.children_at(end):
        end = graph.children_at(end)[0]
    last = search.run(search.new_root(end), np.random.default_rng(0))
    assert last.state == TERMINAL and last.value == float(graph.score_at(end))


def test_muzero_self_play_and_the_ceiling_pick_the_core_from_the_config():
    from gamegym.bench.capabilities import stub_search
    from gamegym.config import GymConfig
    from gamegym.learners import get_learner

    graph = TicTacToe()
    learner = get_learner("muzero")
    for core, kind in (("auto", LatentFlatSearch), ("python", LatentSearch)):
        config = GymConfig.from_dict(
            {"game": "games.tictactoe:TicTacToe", "train": {"learner": "muzero"},
             "selfplay": {"search": {"core": core}}}
        )  # fmt: skip
        driver = learner.selfplayer(graph, LocalService(PseudoLatentModel(graph)), config, None)
        assert type(driver.search) is kind
        params = SearchParams.from_selfplay(config.selfplay)
        assert type(stub_search("muzero", graph, params)) is kind
    gumbel = dataclasses.replace(SearchParams(core="auto"), rule="gumbel")
    assert type(make_latent_search(graph, uniform_latent_evaluator(9), gumbel)) is LatentSearch
    from gamegym.config import ConfigError

    with pytest.raises(ConfigError, match="'compiled' cannot be used with train.learner 'muzero'"):
        GymConfig.from_dict(
            {"game": "games.tictactoe:TicTacToe", "train": {"learner": "muzero"},
             "selfplay": {"search": {"rule": "gumbel", "core": "compiled"}}}
        )  # fmt: skip
    with pytest.raises(ValueError, match="latent search with the 'puct' rule only, not 'gumbel'"):
        make_latent_search(
            graph, uniform_latent_evaluator(9), dataclasses.replace(gumbel, core="compiled")
        )
