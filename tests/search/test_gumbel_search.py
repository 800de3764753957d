"""The Gumbel rule in the real tree searches (gamegym.search.rules on gamegym.search.mcts and
gamegym.search.latent), on tic-tac-toe positions with stub evaluators.

The tree search is checked against `reference_gumbel`: the same search written plainly with
the NumPy functions of gamegym.search.gumbel (recursive, one simulation at a time), so the
list-based interior rule of the hot loop (`interior_index`) is checked against
`interior_action` on whole searches, and on random nodes one by one.
"""

import dataclasses
import math

import numpy as np
import pytest

from gamegym.config import ConfigError, GymConfig, SearchConfig
from gamegym.data.samples import GameRecord
from gamegym.registry import SEARCHES, RegistryError
from gamegym.search.gumbel import (
    RESCALES,
    GumbelParams,
    SequentialHalving,
    gumbel_scores,
    gumbel_top_k,
    improved_policy,
    interior_action,
    interior_index,
    logits_from_priors,
    mean_values,
    to_action_space,
)
from gamegym.search.latent import LatentSearch, uniform_latent_evaluator
from gamegym.search.mcts import Node, Search, SearchParams, uniform_evaluator
from gamegym.search.play import selfplay_game
from gamegym.search.rules import GumbelRule, PuctRule, search_rule
from games.tictactoe import TicTacToe

# tic-tac-toe boards from the mover's view (1 = mine, -1 = theirs), one winning move: cell 2
WIN_OF_TWO = (1, 1, 0, -1, -1, 0, -1, 1, -1)  # 2 empty cells: 2 wins, 5 lets the opponent win at 2
WIN_OF_FOUR = (1, 1, 0, -1, -1, 0, -1, 0, 0)  # 4 empty cells: 2 wins
MUST_BLOCK = (-1, -1, 0, 1, 0, 0, 0, 0, 0)


def gumbel_params(searchcount, threads=1, **kwargs) -> SearchParams:
    return SearchParams(searchcount=searchcount, threads=threads, rule="gumbel", **kwargs)


def pseudo_network(graph):
    """A deterministic, non-uniform evaluator (a hash of the vertex)."""

    def evaluate(vertices):
        probs = np.empty((len(vertices), graph.action_space_size), np.float32)
        values = np.empty(len(vertices), np.float32)
        for row, v in enumerate(vertices):
            rng = np.random.default_rng(abs(hash(v)) % (2**32))
            probs[row] = rng.dirichlet(np.ones(graph.action_space_size))
            values[row] = rng.uniform(-0.9, 0.9)
        return probs, values

    return evaluate


class CountingValuer:
    """Wraps an evaluator; records each batch size.  With `later`, it answers later like the
    Predictor client (submit now, collect later)."""

    def __init__(self, evaluate, later=False):
        self.evaluate, self.batches, self.outstanding = evaluate, [], 0
        if later:
            self.submit = self._submit

    def __call__(self, vertices):
        self.batches.append(len(vertices))
        return self.evaluate(vertices)

    def _submit(self, vertices):
        self.outstanding += 1

        def collect():
            self.outstanding -= 1
            return self(vertices)

        return collect


def search_once(vertex, searchcount, threads=1, evaluate=None, seed=0, **kwargs):
    graph = TicTacToe()
    search = Search(
        graph, evaluate or uniform_evaluator(9), gumbel_params(searchcount, threads, **kwargs)
    )
    root = search.run(search.new_root(vertex), np.random.default_rng(seed))
    return search, root


# ----- the fast interior rule against the NumPy reference ---------------------------------------
def test_interior_index_matches_interior_action_on_random_nodes():
    """Random nodes: priors with zeros, fractional visits (virtual loss), negative sums, no
    visits at all, most children unvisited (as in MuZero's hidden states); other constants of
    sigma."""
    for seed in range(600):
        rng = np.random.default_rng(seed)
        size = int(rng.integers(1, 80))  # up to a hidden state of Santorini (73 action ids)
        priors = rng.dirichlet(np.full(size, 0.3))
        priors[rng.random(size) < 0.1] = 0.0
        priors = priors / priors.sum() if priors.sum() > 0 else np.full(size, 1 / size)
        visits = rng.integers(0, 6, size).astype(float) * (rng.random() < 0.9)
        if rng.random() < 0.4:
            visits[rng.random(size) < 0.85] = 0.0  # most children never visited
        if rng.random() < 0.3:
            visits += rng.random(size) < 0.3  # virtual loss on some children
        sums = np.where(visits > 0, rng.uniform(-1, 1, size) * visits, 0.0)
        value = float(rng.uniform(-1, 1))
        params = GumbelParams(
            value_scale=float(rng.choice([0.1, 1.0, 0.0])),
            maxvisit_init=float(rng.choice([50.0, 0.0, 5.0])),
            rescale=str(rng.choice(RESCALES)),
        )
        if params.rescale == "score" and rng.random() < 0.5:
            sums = sums * 1.5  # some q past the score range (MuZero's reward - value)
        expected = interior_action(
            logits_from_priors(priors), value, mean_values(sums, visits), visits, params
        )
        got = interior_index(
            priors.tolist(),
            value,
            sums.tolist(),
            visits.tolist(),
            params.value_scale,
            params.maxvisit_init,
            params.epsilon,
            params.rescale,
        )
        assert got == expected, seed


def test_interior_index_where_every_weight_underflows():
    """Tens of thousands of visits and the best child without prior: every weight but that
    child's underflows, and the answer is still the reference's (sigma outweighs the prior)."""
    priors, visits = [0.0, 0.5, 0.5], [20000.0, 10000.0, 10000.0]
    sums = [20000.0, -10000.0, -9000.0]
    expected = interior_action(
        logits_from_priors(priors), 0.0, mean_values(sums, visits), np.asarray(visits)
    )
    assert interior_index(priors, 0.0, sums, visits) == expected == 0


@pytest.mark.parametrize(
    "priors",
    [[0.0, 0.0, 0.0], [0.0, 0.4, 0.6, 0.6], [0.5, 0.0, 0.5]],
    ids=["no-prior", "tie-after-a-zero", "tie-at-the-start"],
)
def test_interior_index_of_an_unvisited_node_is_the_references(priors):
    """No child visited: the largest prior (the lowest index on a tie), or the first child
    when every prior is zero, as the NumPy reference says."""
    zeros = [0.0] * len(priors)
    expected = interior_action(
        logits_from_priors(priors), 0.2, mean_values(zeros, zeros), np.asarray(zeros)
    )
    assert interior_index(priors, 0.2, zeros, zeros) == expected


def reference_gumbel(graph, evaluate, vertex, count, seed, params=GumbelParams()):
    """A plain recursive Gumbel search with gamegym.search.gumbel's NumPy functions: (root
    visits [A], the move, the policy target over action ids)."""

    def new_node(v):
        children = graph.children_at(v)
        if not children:
            return {"terminal": True, "value": graph.score_at(v)}
        probs, values = evaluate([v])
        prior = np.array([probs[0][a] for a in graph.actions_at(v)], np.float64)
        return {
            "terminal": False,
            "value": float(values[0]),
            "children": list(children),
            "actions": graph.actions_at(v),
            "prior": prior / prior.sum(),
            "N": np.zeros(len(children)),
            "W": np.zeros(len(children)),
            "sub": [None] * len(children),
        }

    def simulate(node, i=None):
        if node["terminal"]:
            return node["value"]
        if i is None:
            i = interior_action(
                logits_from_priors(node["prior"]),
                node["value"],
                mean_values(node["W"], node["N"]),
                node["N"],
                params,
            )
        if node["sub"][i] is None:
            node["sub"][i] = new_node(node["children"][i])
            value = -node["sub"][i]["value"]
        else:
            value = -simulate(node["sub"][i])
        node["N"][i] += 1
        node["W"][i] += value
        return value

    root = new_node(vertex)
    logits = logits_from_priors(root["prior"])
    gumbel, considered = gumbel_top_k(logits, params.max_considered, np.random.default_rng(seed))
    halving = SequentialHalving(considered, count)

    def scores():
        return gumbel_scores(
            gumbel, logits, root["value"], mean_values(root["W"], root["N"]), root["N"], params
        )

    while (index := halving.next_action(scores)) is not None:
        simulate(root, index)
    policy = improved_policy(
        logits, root["value"], mean_values(root["W"], root["N"]), root["N"], params
    )
    return (
        root["N"],
        halving.choose(scores()),
        to_action_space(policy, root["actions"], graph.action_space_size),
    )


@pytest.mark.parametrize("count", [2, 7, 50, 200])
@pytest.mark.parametrize("rescale", RESCALES)
def test_one_thread_equals_the_reference_gumbel_search(count, rescale):
    graph = TicTacToe()
    evaluate = pseudo_network(graph)
    params = GumbelParams(rescale=rescale)
    for seed in range(3):
        for vertex in (graph.roots[0], MUST_BLOCK):
            search, root = search_once(
                vertex,
                count,
                evaluate=evaluate,
                seed=seed,
                gumbel_rescale=rescale,
            )
            visits, move, policy = reference_gumbel(graph, evaluate, vertex, count, seed, params)
            assert root.visits == visits.tolist()
            assert search.choose(root, 1.0, None) == move
            np.testing.assert_allclose(search.policy_target(root), policy, rtol=1e-6)


# ----- known positions -------------------------------------------------------------------------
@pytest.mark.parametrize("threads", [1, 4])
@pytest.mark.parametrize("vertex,simulations", [(WIN_OF_TWO, 2), (WIN_OF_FOUR, 4)])
def test_finds_the_win_in_one_with_as_many_simulations_as_moves(vertex, simulations, threads):
    """Uniform prior, value 0 everywhere but the win (its terminal score): every legal move
    gets one simulation. With q rescaled by the node's spread (mctx's) the win is played and
    is the policy target's largest entry."""
    for seed in range(10):
        search, root = search_once(vertex, simulations, threads, seed=seed, gumbel_rescale="node")
        assert root.visits == [1] * simulations
        assert root.actions[search.choose(root, 0.0, None)] == 2, seed
        assert np.argmax(search.policy_target(root)) == 2


@pytest.mark.parametrize("threads", [1, 4])
@pytest.mark.parametrize("vertex,simulations", [(WIN_OF_TWO, 2), (WIN_OF_FOUR, 4)])
def test_by_the_score_range_the_win_is_the_target_and_drawn_as_often_as_it_says(
    vertex, simulations, threads
):
    """q rescaled by the score range: a win over a 0 is sigma (50 + 1) * 0.1 * 0.5 = 2.55 in
    logits, so the target puts e^2.55 / (e^2.55 + k) on it (k other moves: 0.93 of 2 moves,
    0.81 of 4), and with every move a finalist the move is argmax(g + logits + sigma), a draw
    from that target (the Gumbel-max trick): over 400 seeds as often as it says."""
    share = math.exp(2.55) / (math.exp(2.55) + simulations - 1)
    played = 0
    for seed in range(400):
        search, root = search_once(vertex, simulations, threads, seed=seed)
        target = search.policy_target(root)
        assert np.argmax(target) == 2 and target[2] == pytest.approx(share, rel=1e-6)
        played += root.actions[search.choose(root, 0.0, None)] == 2
    assert abs(played / 400 - share) < 4 * math.sqrt(share * (1 - share) / 400)


@pytest.mark.parametrize("rescale", RESCALES)
def test_blocks_and_wins_with_a_larger_budget(rescale):
    """The block and the win are the target's largest entry; by the node's spread they are
    also the move (by the score range the move is a softer draw, see above)."""
    for vertex, expected in ((MUST_BLOCK, 2), (WIN_OF_FOUR, 2)):
        for seed in range(5):
            search, root = search_once(vertex, 100, 4, seed=seed, gumbel_rescale=rescale)
            assert np.argmax(search.policy_target(root)) == expected
            if rescale == "node":
                assert root.actions[search.choose(root, 0.0, None)] == expected


@pytest.mark.parametrize("later", [False, True])
@pytest.mark.parametrize("threads", [1, 8])
def test_spends_exactly_the_searchcount(threads, later):
    """Every simulation is backed up once and virtual loss is gone, with the simulations of a
    halving phase in flight together (batches of several leaves)."""
    graph = TicTacToe()
    for count in (2, 16, 100, 333):
        evaluate = CountingValuer(pseudo_network(graph), later)
        search, root = search_once(graph.roots[0], count, threads, evaluate)
        assert sum(root.visits) == root.total == search.searches_done == count
        assert all(v == int(v) and v >= 0 for v in root.visits)
        if threads > 1 and count >= 16:
            assert max(evaluate.batches) > 1
        assert evaluate.outstanding == 0


def test_the_policy_target_is_the_improved_policy_of_the_root():
    graph = TicTacToe()
    search, root = search_once(MUST_BLOCK, 60, 4, pseudo_network(graph))
    visits = np.asarray(root.visits, np.float64)
    expected = improved_policy(
        logits_from_priors(root.priors),
        root.value,
        mean_values(root.values, visits),
        visits,
        GumbelParams(rescale=search.params.gumbel_rescale),
    )
    target = search.policy_target(root)
    np.testing.assert_allclose(target[list(root.actions)], expected, rtol=1e-6)
    assert target[[0, 1, 3]].sum() == 0 and math.isclose(target.sum(), 1.0, rel_tol=1e-6)


def test_never_plays_an_illegal_move_when_the_prior_favours_it():
    occupied = [i for i, c in enumerate(MUST_BLOCK) if c]

    def evaluate(vertices):
        probs = np.full((len(vertices), 9), 1e-3, np.float32)
        probs[:, occupied] = 10.0
        return probs, np.zeros(len(vertices), np.float32)

    for seed in range(10):
        search, root = search_once(MUST_BLOCK, 20, 4, evaluate, seed=seed)
        assert root.actions[search.choose(root, 1.0, None)] not in occupied
        assert search.policy_target(root)[occupied].sum() == 0


def test_with_the_solver_a_proven_win_is_the_move_and_the_whole_target():
    for seed in range(5):
        search, root = search_once(WIN_OF_FOUR, 50, 4, seed=seed, solver=True)
        assert root.proven == 1.0 and search.searches_done < 50  # stops once proven
        assert root.actions[search.choose(root, 0.0, None)] == 2
        target = search.policy_target(root)
        assert target[2] == 1.0 and target.sum() == 1.0


def test_the_rule_answers_only_for_the_root_it_searched():
    search, root = search_once(MUST_BLOCK, 10)
    other = search.run(search.new_root(TicTacToe().roots[0]), np.random.default_rng(0))
    assert search.choose(other, 0.0, None) in range(9)
    with pytest.raises(ValueError, match="root it last searched"):
        search.policy_target(root)


# ----- self-play ---------------------------------------------------------------------------------
def selfplay_config(**settings):
    """A Gumbel selfplay section: the search section's fields (SearchConfig's) go to its
    search."""
    fields = {f.name for f in dataclasses.fields(SearchConfig)}
    search = {"rule": "gumbel", "searchcount": 16}
    search.update({k: v for k, v in settings.items() if k in fields})
    selfplay = {k: v for k, v in settings.items() if k not in fields}
    return GymConfig(
        game="games.tictactoe:TicTacToe", selfplay={**selfplay, "search": search}
    ).selfplay


def play(cfg, seed, threads=None, search_class=Search):
    graph = TicTacToe()
    params = SearchParams.from_selfplay(cfg)
    if threads is not None:
        params = SearchParams(**{**vars(params), "threads": threads})
    evaluate = pseudo_network(graph) if search_class is Search else uniform_latent_evaluator(9)
    search = search_class(graph, evaluate, params)
    return selfplay_game(graph, search, cfg, np.random.default_rng(seed), GameRecord()), search


def test_same_seed_and_one_thread_play_the_same_game():
    cfg = selfplay_config(threads=1)
    first, _ = play(cfg, 5)
    again, _ = play(cfg, 5)
    assert first.action == again.action
    np.testing.assert_array_equal(np.stack(first.pi), np.stack(again.pi))
    other = [play(cfg, seed)[0].action for seed in range(6, 12)]
    assert any(actions != first.action for actions in other)  # the Gumbel noise explores


def test_every_move_starts_from_a_fresh_root():
    """The Gumbel rule does not keep the played child's subtree (PUCT does)."""
    graph = TicTacToe()
    gumbel, root = search_once(graph.roots[0], 50)
    index = gumbel.choose(root, 0.0, None)
    assert root.children[index] is not None and root.children[index].state == Node.EXPANDED
    fresh = gumbel.next_root(root, index)
    assert fresh is not root.children[index] and fresh.state == Node.NEW
    assert fresh.vertex == root.child_vertices[index]
    puct = Search(graph, uniform_evaluator(9), SearchParams(searchcount=50))
    root = puct.run(puct.new_root(graph.roots[0]), np.random.default_rng(0))
    assert puct.next_root(root, 4) is root.children[4]


def test_a_selfplay_game_records_legal_moves_and_the_rules_targets():
    record, search = play(selfplay_config(), 3)
    graph, vertex = TicTacToe(), TicTacToe().roots[0]
    for action, pi, legal in zip(record.action, record.pi, record.legal):
        assert legal[action] and pi[~legal].sum() == 0
        assert math.isclose(float(pi.sum()), 1.0, rel_tol=1e-5)
        vertex = graph.child_by_action(vertex, action)
    assert search.searches_done == 16 * len(record) and not record.policy_weight


def test_dirichlet_noise_is_the_rules_default_unless_set():
    puct = GymConfig(game="games.tictactoe:TicTacToe").selfplay
    assert puct.search.dirichlet_fraction is None
    assert SearchParams.from_selfplay(puct).dirichlet_fraction == 0.25
    assert SearchParams.from_selfplay(selfplay_config()).dirichlet_fraction == 0.0
    noised = selfplay_config(dirichlet_fraction=0.3)
    assert SearchParams.from_selfplay(noised).dirichlet_fraction == 0.3
    assert SearchParams.from_selfplay(noised, noise=False).dirichlet_fraction == 0.0
    # asked for, the noise changes the priors the Gumbel rule starts from (seeded)
    graph = TicTacToe()
    roots = []
    for _ in range(2):
        search = Search(graph, uniform_evaluator(9), SearchParams.from_selfplay(noised))
        roots.append(search.run(search.new_root(graph.roots[0]), np.random.default_rng(1)))
    assert roots[0].priors == roots[1].priors
    assert roots[0].raw_priors == pytest.approx([1 / 9] * 9)
    assert roots[0].priors != pytest.approx([1 / 9] * 9)


# ----- MuZero's latent search ---------------------------------------------------------------------
@pytest.mark.parametrize("threads", [1, 8])
def test_latent_search_with_the_gumbel_rule(threads):
    """Legal moves at the root only, every action id below it; exactly the searchcount."""
    graph = TicTacToe()
    search = LatentSearch(graph, uniform_latent_evaluator(9), gumbel_params(40, threads))
    root = search.run(search.new_root(MUST_BLOCK), np.random.default_rng(0))
    assert root.actions == graph.actions_at(MUST_BLOCK)
    assert sum(root.visits) == search.searches_done == 40
    inner = [c for c in root.children if c is not None and c.children]
    assert inner and all(c.actions == tuple(range(9)) for c in inner)
    target = search.policy_target(root)
    assert target[[0, 1, 3]].sum() == 0 and math.isclose(target.sum(), 1.0, rel_tol=1e-6)
    assert root.actions[search.choose(root, 0.0, None)] in root.actions


def oracle_latent_evaluator(graph):
    """A perfect model of tic-tac-toe for a LatentSearch: the hidden state is (board, ended);
    the reward is the real outcome for the mover, an illegal move loses; uniform policy, value
    0 everywhere."""

    def evaluate(nodes):
        hidden, rewards = [], []
        for node in nodes:
            reward, state = 0.0, (node.vertex, False)
            if node.parent is not None:
                board, ended = node.parent.hidden
                state = (None, True)
                if not ended and node.action not in graph.actions_at(board):
                    reward = -1.0
                elif not ended:
                    child = graph.child_by_action(board, node.action)
                    if graph.children_at(child):
                        state = (child, False)
                    else:
                        reward = -float(graph.score_at(child))
            hidden.append(state)
            rewards.append(reward)
        n = len(nodes)
        return (
            np.full((n, 9), 1 / 9, np.float32),
            np.zeros(n, np.float32),
            np.asarray(rewards, np.float32),
            hidden,
        )

    return evaluate


@pytest.mark.parametrize("threads", [1, 4])
@pytest.mark.parametrize("rescale", RESCALES)
def test_latent_search_with_the_gumbel_rule_takes_a_win_of_an_oracle_model(threads, rescale):
    """The win is the target's largest entry, and the move where q is rescaled by the node's
    spread (by the score range the move is a draw from the target, as above)."""
    graph = TicTacToe()
    params = gumbel_params(4, threads, gumbel_rescale=rescale)
    search = LatentSearch(graph, oracle_latent_evaluator(graph), params)
    root = search.run(search.new_root(WIN_OF_FOUR), np.random.default_rng(0))
    assert root.visits == [1, 1, 1, 1]
    assert np.argmax(search.policy_target(root)) == 2
    if rescale == "node":
        assert root.actions[search.choose(root, 0.0, None)] == 2


def test_latent_selfplay_with_the_gumbel_rule_plays_whole_games():
    cfg = selfplay_config(threads=4, playout_cap_probability=0.5, fast_searchcount=4)
    record, search = play(cfg, 0, search_class=LatentSearch)
    assert len(record) >= 5 and len(record.policy_weight) == len(record)
    assert all(legal[a] for a, legal in zip(record.action, record.legal))


# ----- the registry and the config -----------------------------------------------------------
def test_search_rules_are_a_registry():
    assert SEARCHES.get("puct") is PuctRule and SEARCHES.get("gumbel") is GumbelRule
    with pytest.raises(RegistryError, match="gumbel, puct"):
        search_rule("alphabeta")

    @SEARCHES.register
    class Greedy(PuctRule):
        name = "test-greedy"

    try:  # a registered rule is a valid config value at once
        cfg = GymConfig(
            game="games.tictactoe:TicTacToe", selfplay={"search": {"rule": "test-greedy"}}
        )
        assert isinstance(
            Search(
                TicTacToe(), uniform_evaluator(9), SearchParams.from_selfplay(cfg.selfplay)
            ).rule,
            Greedy,
        )
    finally:
        SEARCHES.unregister("test-greedy")


@pytest.mark.parametrize(
    "selfplay,message",
    [
        (
            {"search": {"rule": "Gumbel"}},
            r"selfplay.search.rule' must be one of \['gumbel', 'puct'\]",
        ),
        ({"search": {"gumbel_considered": 0}}, "selfplay.search.gumbel_considered"),
        ({"search": {"gumbel_value_scale": -1}}, "selfplay.search.gumbel_value_scale"),
        (
            {"search": {"gumbel_rescale": "minmax"}},
            r"selfplay.search.gumbel_rescale' must be one of \['node', 'score'\], got 'minmax'",
        ),
        ({"playout_cap_probability": 0}, "selfplay.playout_cap_probability"),
        (
            {
                "playout_cap_probability": 0.25,
                "search": {"searchcount": 10},
                "fast_searchcount": 20,
            },
            r"fast_searchcount' \(20\) must be <= selfplay.search.searchcount \(10\)",
        ),
        ({"search": {"dirichlet_fraction": 1.5}}, "selfplay.search.dirichlet_fraction"),
    ],
)
def test_config_refuses_bad_search_settings(selfplay, message):
    with pytest.raises(ConfigError, match=message):
        GymConfig(game="games.tictactoe:TicTacToe", selfplay=selfplay)


def test_a_small_searchcount_is_fine_while_playout_caps_are_off():
    cfg = GymConfig(game="games.tictactoe:TicTacToe", selfplay={"search": {"searchcount": 8}})
    assert cfg.selfplay.fast_searchcount > cfg.selfplay.search.searchcount
