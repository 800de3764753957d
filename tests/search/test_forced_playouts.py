"""KataGo's forced playouts and policy target pruning (`selfplay.search.forced_playouts`,
gamegym.search.forced): the forced visits at the root, the pruned target on a root computed by
hand, the move drawn from the unpruned visits, the search unchanged when it is off, and the
settings refused where forcing cannot apply.  The compiled core against the Python one with
forcing on: tests/search/test_compiled_core.py and test_compiled_latent.py."""

import math

import numpy as np
import pytest
from test_mcts import pseudo_network, reference_search

from gamegym.config import ConfigError, GymConfig, SearchConfig
from gamegym.search.forced import pruned_visits
from gamegym.search.mcts import Node, Search, SearchParams, visit_policy
from gamegym.search.rules import GumbelRule
from games.tictactoe import TicTacToe

GAME = "games.tictactoe:TicTacToe"
CENTRE = 4
PRIOR = np.full(9, 0.05)
PRIOR[CENTRE] = 0.6  # the centre 0.6, every other cell 0.05


def centre_network(vertices):
    """The hand-made prior everywhere, and a value that says holding the centre wins: +0.9
    for the mover where they hold it, -0.9 where the opponent does, 0 otherwise."""
    probs = np.tile(PRIOR.astype(np.float32), (len(vertices), 1))
    values = np.array([0.9 * v[CENTRE] for v in vertices], np.float32)
    return probs, values


def centre_search(core="python", forced=2.0, searchcount=400, threads=1):
    """A search of the empty board under `centre_network` on `core`, and its root."""
    graph = TicTacToe()
    params = SearchParams(searchcount=searchcount, threads=threads, forced_playouts=forced)
    if core == "compiled":
        pytest.importorskip("numba", reason='numba is not installed: pip install -e ".[fast]"')
        from gamegym.search.flat import FlatSearch

        search = FlatSearch(graph, centre_network, params)
    else:
        search = Search(graph, centre_network, params)
    return search, search.run(search.new_root(graph.roots[0]), np.random.default_rng(0))


@pytest.mark.parametrize("core", ["python", "compiled"])
def test_every_visited_root_child_gets_its_forced_playouts(core):
    """With k = 2 every root child that was visited has at least floor(sqrt(2 P total))
    visits; without forcing the moves PUCT finds bad after their first visit keep 1."""
    _, root = centre_search(core)
    total = sum(root.visits)
    assert total == 400
    floors = [math.floor(math.sqrt(2.0 * p * total)) for p in root.priors]
    visited = [i for i, n in enumerate(root.visits) if n > 0]
    assert len(visited) == 9  # the centre and all eight others
    assert all(root.visits[i] >= floors[i] for i in visited)
    assert floors[0] == 6
    _, plain = centre_search(core, forced=0.0)
    assert [n for i, n in enumerate(plain.visits) if i != CENTRE] == [1] * 8


@pytest.mark.parametrize("threads", [1, 8])
def test_the_policy_target_is_pruned_and_the_move_drawn_from_every_visit(threads):
    """The forced visits of the bad moves are taken off the target (the centre keeps it
    all); the move at temperature 1 is still drawn from the unpruned visits."""
    search, root = centre_search(threads=threads)
    others = [n for i, n in enumerate(root.visits) if i != CENTRE]
    assert min(others) >= 6
    raw = visit_policy(root, 9)
    assert raw[CENTRE] < 0.9
    pi = search.policy_target(root)
    assert pi[CENTRE] == 1.0 and pi.sum() == 1.0
    rng = np.random.default_rng(1)
    moves = {root.actions[search.choose(root, 1.0, rng)] for _ in range(200)}
    assert moves - {CENTRE}  # a forced move is played now and then: the visits decide


def hand_root():
    """Five children: c* (62 visits, Q 0.5, P 0.4) and four others; total 99, so
    c_puct sqrt(total + 1) = 10 with c_puct 1, and c*'s PUCT is 0.5 + 10 * 0.4 / 63."""
    root = Node("root")
    root.actions = (0, 1, 2, 3, 4)
    root.children = [None] * 5
    root.priors = [0.4, 0.3, 0.2, 0.1, 0.0]
    root.visits = [62, 20, 12, 5, 0]
    root.values = [31.0, 0.0, 3.6, -5.0, 0.0]  # Q 0.5, 0.0, 0.3, -1.0
    root.total = 99
    return root


def test_pruning_on_a_root_computed_by_hand():
    """k = 2, c* = child 0 with PUCT 0.563492.  Child 1 (n_forced = sqrt(59.4) = 7.7): PUCT
    3 / m stays below c*'s all the way, so the cap takes 7 off: 13.  Child 2 (n_forced 6.3):
    0.3 + 2 / m is below c*'s down to 8 visits and not at 7: 7.  Child 3 (n_forced 4.45):
    4 taken off leaves 1, pruned to 0.  Child 4 was never visited."""
    root = hand_root()
    kept = pruned_visits(root, 2.0, 1.0)
    assert kept == [62, 13, 7, 0.0, 0]
    pi = visit_policy(root, 5, kept)
    assert pi.tolist() == pytest.approx([62 / 82, 13 / 82, 7 / 82, 0.0, 0.0])


def test_pruning_with_q_normalised_as_muzero_does():
    """With Q mapped to [0, 1] by (Q + 1) / 2 (MuZero's PUCT), c*'s PUCT is 0.813492 and
    child 2 (0.65 + 2 / m) is at 0.8167 already with all 12 visits: it keeps them."""
    kept = pruned_visits(hand_root(), 2.0, 1.0, low=-1.0, span=2.0)
    assert kept == [62, 13, 12, 0.0, 0]


def test_off_the_search_is_the_plain_puct_search():
    """forced_playouts 0 (the default): the root's selection is PUCT's, the visits are the
    plain recursive reference's and the target is the visits normalised; and a fast search
    (explore=False, playout caps) with forcing configured is the search without it."""
    assert SearchConfig().forced_playouts == 0.0 and SearchParams().forced_playouts == 0.0
    graph = TicTacToe()
    evaluate, vertex = pseudo_network(graph), graph.roots[0]
    search = Search(graph, evaluate, SearchParams(searchcount=300))
    assert search._select_root is search._select
    root = search.run(Node(vertex), np.random.default_rng(0), searchcount=299)
    assert root.visits == reference_search(graph, evaluate, vertex, 299, 1.5)
    assert search.policy_target(root).tolist() == visit_policy(root, 9).tolist()
    forcing = Search(graph, evaluate, SearchParams(searchcount=300, forced_playouts=2.0))
    fast = forcing.run(Node(vertex), np.random.default_rng(0), 299, explore=False)
    assert fast.visits == root.visits
    assert forcing.policy_target(fast).tolist() == visit_policy(root, 9).tolist()
    full = forcing.run(Node(vertex), np.random.default_rng(0), 299)
    assert full.visits != root.visits  # a full search forces


def test_the_setting_reaches_self_play_only_and_is_refused_where_it_cannot_apply():
    config = GymConfig(game=GAME, selfplay={"search": {"forced_playouts": 2}})
    assert SearchParams.from_selfplay(config.selfplay).forced_playouts == 2
    assert SearchParams.from_selfplay(config.selfplay, noise=False).forced_playouts == 0
    muzero = GymConfig.from_dict(
        {
            "game": GAME,
            "train": {"learner": "muzero"},
            "selfplay": {"search": {"rule": "puct", "forced_playouts": 2}},
        }
    )
    assert muzero.selfplay.search.forced_playouts == 2
    with pytest.raises(
        ConfigError,
        match=r"'selfplay.search.forced_playouts' \(2.0\) cannot be used with search.rule "
        r"'gumbel', which picks every root child itself: only the 'puct' rule",
    ):
        GymConfig(game=GAME, selfplay={"search": {"rule": "gumbel", "forced_playouts": 2.0}})
    with pytest.raises(ConfigError, match=r"'selfplay.search.forced_playouts' must be in"):
        GymConfig(game=GAME, selfplay={"search": {"forced_playouts": -1}})
    with pytest.raises(ConfigError, match="'selfplay.search.forced_playouts' must be a number"):
        GymConfig(game=GAME, selfplay={"search": {"forced_playouts": "2"}})
    with pytest.raises(
        ConfigError, match=r"'evaluate.search.forced_playouts' must be 0, got 2: a player's"
    ):
        GymConfig(game=GAME, evaluate={"search": {"forced_playouts": 2}})
    with pytest.raises(ValueError, match="'gumbel' rule picks every root child itself"):
        GumbelRule(SearchParams(rule="gumbel", forced_playouts=2.0))
