"""The compiled search core against the Python core, its reference: the same searches, the same
games, the same counts; and how a config picks the core."""

import dataclasses

import numpy as np
import pytest
from conftest import MUST_BLOCK, WIN_IN_ONE
from test_mcts import AsyncUniform, pseudo_network
from test_model_wait import ChangingService
from test_model_wait import config as model_wait_config

from gamegym.config import ConfigError, GymConfig, SearchConfig
from gamegym.config import search as config_search
from gamegym.data.samples import GameRecord
from gamegym.search.cores import core_for, make_search
from gamegym.search.flat import FlatSearch
from gamegym.search.mcts import Node, Search, SearchParams, choose_action, uniform_evaluator
from gamegym.search.play import SearchSelfplay, selfplay_game
from games.connectfour import ConnectFour
from games.tictactoe import TicTacToe

pytest.importorskip("numba", reason='numba is not installed: pip install -e ".[fast]"')
SEARCH_FIELDS = {f.name for f in dataclasses.fields(SearchConfig)}

GAMES = [TicTacToe, lambda: ConnectFour(rows=6, columns=7)]


def selfplay_config(**settings):
    """A selfplay section: the search section's fields (SearchConfig's) go to its search."""
    search = {k: v for k, v in settings.items() if k in SEARCH_FIELDS}
    selfplay = {k: v for k, v in settings.items() if k not in SEARCH_FIELDS}
    game = "games.tictactoe:TicTacToe"
    return GymConfig.from_dict({"game": game, "selfplay": {**selfplay, "search": search}}).selfplay


def games_of(search, cfg, graph, count, seed):
    rng = np.random.default_rng(seed)
    records = [selfplay_game(graph, search, cfg, rng, GameRecord()) for _ in range(count)]
    return [
        (r.action, [p.tolist() for p in r.pi], r.root_value, r.policy_weight, r.result)
        for r in records
    ]


@pytest.mark.parametrize("make_graph", GAMES)
@pytest.mark.parametrize("threads", [1, 8])
def test_plays_the_games_of_the_python_core(make_graph, threads):
    """Moves, policy targets, root values and results of whole self-play games (Dirichlet noise
    and temperature on, subtrees kept between moves) are those of the Python core."""
    graph = make_graph()
    cfg = selfplay_config(searchcount=120, threads=threads, temperature_drop_move=4)
    params = SearchParams.from_selfplay(cfg)
    python = Search(graph, pseudo_network(graph), params)
    compiled = FlatSearch(graph, pseudo_network(graph), params)
    assert games_of(compiled, cfg, graph, 3, seed=5) == games_of(python, cfg, graph, 3, seed=5)
    assert compiled.searches_done == python.searches_done > 0
    assert compiled.evaluations == python.evaluations > 0


@pytest.mark.parametrize("make_graph", GAMES)
@pytest.mark.parametrize("threads", [1, 8])
def test_forced_playouts_play_the_games_of_the_python_core(make_graph, threads):
    """With forced playouts (k = 2, compiled in the root's walk) and the pruned policy
    targets, whole self-play games are the Python core's, move for move."""
    graph = make_graph()
    cfg = selfplay_config(
        searchcount=120, threads=threads, temperature_drop_move=4, forced_playouts=2.0
    )
    params = SearchParams.from_selfplay(cfg)
    python = Search(graph, pseudo_network(graph), params)
    compiled = FlatSearch(graph, pseudo_network(graph), params)
    games = games_of(python, cfg, graph, 3, seed=5)
    assert games_of(compiled, cfg, graph, 3, seed=5) == games
    assert compiled.searches_done == python.searches_done > 0
    unforced = Search(graph, pseudo_network(graph), dataclasses.replace(params, forced_playouts=0))
    assert games_of(unforced, cfg, graph, 3, seed=5) != games  # the setting changes the games


@pytest.mark.parametrize("make_graph", GAMES)
@pytest.mark.parametrize("threads,rescale", [(1, "score"), (8, "score"), (8, "node")])
def test_the_gumbel_rule_plays_the_games_of_the_python_core(make_graph, threads, rescale):
    """Under the Gumbel rule (sequential halving at the root in Python, the deterministic
    non-root rule compiled) the games, improved-policy targets and counts are the Python
    core's; each move starts from a fresh root, as there."""
    graph = make_graph()
    cfg = selfplay_config(rule="gumbel", searchcount=48, threads=threads, gumbel_rescale=rescale)
    params = SearchParams.from_selfplay(cfg)
    python = Search(graph, pseudo_network(graph), params)
    compiled = FlatSearch(graph, pseudo_network(graph), params)
    assert games_of(compiled, cfg, graph, 2, seed=3) == games_of(python, cfg, graph, 2, seed=3)
    assert compiled.searches_done == python.searches_done > 0
    assert compiled.evaluations == python.evaluations > 0


@pytest.mark.parametrize(
    "settings,seed",
    [
        ({"searchcount": 80, "fast_searchcount": 10, "forced_playouts": 2.0}, 2),
        ({"rule": "gumbel", "searchcount": 32, "fast_searchcount": 4}, 4),
    ],
    ids=["forced-playouts", "gumbel"],
)
def test_playout_caps_with_a_submitting_evaluator_play_the_same_games(settings, seed):
    """Playout caps with forced playouts (the fast searches force nothing, the full ones do)
    and with the Gumbel rule, the batches pipelined by an evaluator that submits them: the
    Python core's games, with as many batches outstanding at most."""
    graph = ConnectFour(rows=5, columns=5)
    cfg = selfplay_config(**settings, playout_cap_probability=0.25, threads=8)
    params = SearchParams.from_selfplay(cfg)
    python = Search(graph, AsyncUniform(graph.action_space_size), params)
    compiled = FlatSearch(graph, AsyncUniform(graph.action_space_size), params)
    games = games_of(python, cfg, graph, 2, seed=seed)
    assert games_of(compiled, cfg, graph, 2, seed=seed) == games
    assert compiled.evaluate.max_outstanding == python.evaluate.max_outstanding


def test_playout_caps_play_the_same_games():
    graph = ConnectFour(rows=5, columns=5)
    cfg = selfplay_config(
        searchcount=80, fast_searchcount=10, playout_cap_probability=0.25, threads=4
    )
    params = SearchParams.from_selfplay(cfg)
    python = Search(graph, pseudo_network(graph), params)
    compiled = FlatSearch(graph, pseudo_network(graph), params)
    assert games_of(compiled, cfg, graph, 2, seed=1) == games_of(python, cfg, graph, 2, seed=1)


@pytest.mark.parametrize("virtualloss", [0.0, 1.0, 3.0])
def test_the_same_visits_and_values_under_virtual_loss(virtualloss):
    graph = ConnectFour(rows=5, columns=5)
    params = SearchParams(searchcount=700, threads=16, virtualloss=virtualloss)
    python = Search(graph, pseudo_network(graph), params)
    compiled = FlatSearch(graph, pseudo_network(graph), params)
    rng = np.random.default_rng(0)
    expected = python.run(python.new_root(graph.roots[0]), rng)
    root = compiled.run(compiled.new_root(graph.roots[0]), np.random.default_rng(0))
    assert root.visits == expected.visits
    assert root.values == expected.values
    assert root.priors == expected.priors
    assert root.mean_value() == expected.mean_value()
    assert sum(root.visits) == 700  # the virtual loss fully taken off


@pytest.mark.parametrize(
    "make_graph,vertex,expected",
    [(TicTacToe, WIN_IN_ONE, 2), (TicTacToe, MUST_BLOCK, 2), (ConnectFour, None, None)],
)
def test_pipelined_batches_are_those_of_the_python_core(make_graph, vertex, expected):
    """With an evaluator that answers later (the Predictor client) the next batch is gathered
    while one is in flight, and the searches are those of the Python core doing the same."""
    graph = make_graph()
    vertex = graph.roots[0] if vertex is None else vertex
    params = SearchParams(searchcount=400, threads=8)
    evaluate = AsyncUniform(graph.action_space_size)
    search = FlatSearch(graph, evaluate, params)
    root = search.run(search.new_root(vertex), np.random.default_rng(0))
    reference = AsyncUniform(graph.action_space_size)
    expected_root = Search(graph, reference, params).run(Node(vertex), np.random.default_rng(0))
    assert root.visits == expected_root.visits
    assert evaluate.max_outstanding == reference.max_outstanding
    assert search.searches_done == 400 and sum(root.visits) == 400
    if expected is not None:
        assert root.actions[choose_action(root, 0.0, np.random.default_rng(0))] == expected
    else:
        assert evaluate.max_outstanding == 2  # a batch was gathered while one was in flight


def test_the_flat_tree_grows_and_a_new_tree_starts_clean():
    graph = ConnectFour(rows=6, columns=7)
    params = SearchParams(searchcount=3000, threads=8)
    search = FlatSearch(graph, uniform_evaluator(7), params)
    nodes, edges = search.nf.shape[1], search.ef.shape[1]
    first = search.run(search.new_root(graph.roots[0]), np.random.default_rng(0)).visits
    assert search.nf.shape[1] > nodes and search.ef.shape[1] > edges  # outgrew the start
    again = search.run(search.new_root(graph.roots[0]), np.random.default_rng(0)).visits
    reference = Search(graph, uniform_evaluator(7), params)
    assert first == again == reference.run(Node(graph.roots[0]), np.random.default_rng(0)).visits


def test_next_root_keeps_the_subtree_and_old_roots_are_refused():
    graph = TicTacToe()
    search = FlatSearch(graph, pseudo_network(graph), SearchParams(searchcount=200, threads=4))
    root = search.run(search.new_root(graph.roots[0]), np.random.default_rng(0))
    best = choose_action(root, 0.0, np.random.default_rng(0))
    child = search.next_root(root, best)
    assert child.vertex == root.child_vertices[best]
    assert child.total == root.visits[best] - 1  # every visit but the one that opened it
    assert child.state == Node.EXPANDED
    search.new_root(graph.roots[0])
    with pytest.raises(ValueError, match="not in the search's current tree"):
        search.run(child, np.random.default_rng(0))


def test_a_terminal_root_and_zero_priors():
    graph = TicTacToe()
    search = FlatSearch(graph, uniform_evaluator(9), SearchParams(searchcount=10))
    root = search.new_root(graph.roots[0])

    def zeros(vertices):
        return np.zeros((len(vertices), 9), np.float32), np.zeros(len(vertices), np.float32)

    search.evaluate = zeros
    search.run(root, np.random.default_rng(0))
    assert root.priors == [1 / 9] * 9  # priors that sum to 0 become uniform
    end = graph.roots[0]
    while graph.children_at(end):
        end = graph.children_at(end)[0]
    last = search.new_root(end)
    assert search.run(last, np.random.default_rng(0)).state == Node.TERMINAL
    assert last.value == float(graph.score_at(end))


def test_core_for_picks_and_explains():
    params = SearchParams()
    assert core_for(dataclasses.replace(params, core="python")) == "python"
    assert core_for(dataclasses.replace(params, core="auto")) == "compiled"
    assert core_for(dataclasses.replace(params, core="compiled")) == "compiled"
    gumbel = dataclasses.replace(params, core="auto", rule="gumbel")
    assert core_for(gumbel) == core_for(dataclasses.replace(gumbel, core="compiled"))
    assert core_for(gumbel) == "compiled"
    assert core_for(dataclasses.replace(params, core="auto", solver=True)) == "python"
    with pytest.raises(ValueError, match="'gumbel' and 'puct' rules without.*MCTS-solver"):
        core_for(dataclasses.replace(params, core="compiled", solver=True))
    with pytest.raises(ValueError, match="must be one of"):
        core_for(dataclasses.replace(params, core="fast"))
    graph = TicTacToe()
    assert isinstance(make_search(graph, uniform_evaluator(9), params), Search)
    compiled = dataclasses.replace(params, core="compiled")
    assert isinstance(make_search(graph, uniform_evaluator(9), compiled), FlatSearch)


def test_the_config_names_what_the_compiled_core_cannot_do(monkeypatch):
    assert selfplay_config(core="compiled").search.core == "compiled"
    with pytest.raises(
        ConfigError, match="search.core.*'gumbel' and 'puct' rules without.*MCTS-solver"
    ):
        selfplay_config(core="compiled", solver=True)
    with pytest.raises(ConfigError, match="search.core.*must be one of"):
        selfplay_config(core="numba")
    with pytest.raises(ConfigError, match="os_threads.*must be false"):
        selfplay_config(core="compiled", os_threads=True)
    monkeypatch.setattr(config_search, "compiled_core_available", lambda: False)
    with pytest.raises(ConfigError, match=r"needs numba.*gamegym\[fast\]"):
        selfplay_config(core="compiled")
    assert core_for(SearchParams(core="auto")) == "python"  # auto falls back without numba


@pytest.mark.parametrize("core", ["auto", "python", "compiled"])
def test_os_threads_are_refused_by_the_config_and_by_the_python_core_only(core):
    """No core runs OS threads: the config refuses them whatever the core, and search
    parameters made in code go to the Python core, which refuses them naming the setting;
    the compiled core's coverage is a matter of the rule and the solver only."""
    with pytest.raises(ConfigError, match="search.os_threads' must be false"):
        selfplay_config(core=core, os_threads=True)
    params = SearchParams(core=core, os_threads=True)
    with pytest.raises(ValueError, match="search.os_threads: the search has one driver thread"):
        make_search(TicTacToe(), uniform_evaluator(9), params)
    assert config_search.compiled_core_problem("puct", solver=False) is None


def four_games(driver) -> list:
    played: list = []
    for finished in driver.play(lambda: len(played) >= 4):
        record, _ = finished
        played.append((record.action, [p.tolist() for p in record.pi], record.result))
    return played


def test_a_selfplayer_on_the_compiled_core_plays_the_python_cores_games():
    """The Selfplayer's driver builds its search from the config: through the model service,
    the evaluation cache and the pipelined batches both cores play the same games."""
    graph = TicTacToe()
    games = {}
    for core, kind in (("python", "Search"), ("compiled", "FlatSearch")):
        config = model_wait_config(
            0, search={"core": core, "threads": 4, "searchcount": 30}, evaluation_cache=1000
        )
        service = ChangingService(graph, every=10**9)
        driver = SearchSelfplay(graph, service, config, np.random.default_rng(3), GameRecord)
        assert type(driver.search).__name__ == kind
        games[core] = four_games(driver)
    assert games["compiled"] == games["python"]


def test_the_throughput_bench_ceiling_names_the_core_it_ran():
    from gamegym.bench.ceiling import search_ceiling

    graph = TicTacToe()
    for core in ("python", "compiled"):
        cfg = selfplay_config(core=core, searchcount=16, threads=4)
        ceiling = search_ceiling(graph, cfg, 0.2)
        assert ceiling["core"] == core and ceiling["searches_per_s"] > 0
