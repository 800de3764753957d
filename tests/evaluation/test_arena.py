"""Players, matches and ratings (gamegym.evaluation.arena), in-process."""

import numpy as np
import pytest
from conftest import TICTACTOE

from gamegym.config import GymConfig, SearchConfig
from gamegym.evaluation.arena import (
    HumanPlayer,
    MatchResult,
    fit_ratings,
    make_player,
    model_player,
    play_match,
    run_match,
)
from gamegym.game.players import AlphaBetaPlayer, Player, RandomPlayer, SolverPlayer, game_heuristic
from gamegym.runtime.gym import GameGym
from gamegym.search.tree import SearchParams
from gamegym.search.uct import UCTPlayer
from games.tictactoe import TicTacToe


class Counting(Player):
    """Wraps a player; counts the games in which it made the very first move."""

    def __init__(self, inner):
        self.inner, self.first_moves = inner, 0

    def choose(self, graph, vertex, rng):
        if vertex == graph.roots[0]:
            self.first_moves += 1
        return self.inner.choose(graph, vertex, rng)


class Scripted(Player):
    """Plays the given action ids in order (then the first legal move)."""

    def __init__(self, actions):
        self.actions = list(actions)

    def choose(self, graph, vertex, rng):
        return self.actions.pop(0) if self.actions else int(graph.actions_at(vertex)[0])


def test_matches_alternate_who_starts_and_count_from_the_players_view():
    graph, rng = TicTacToe(), np.random.default_rng(1)
    solver, random = Counting(SolverPlayer(hurry=False)), Counting(RandomPlayer())
    result = run_match(graph, solver, random, 10, rng, ("solver", "random"))
    assert (solver.first_moves, random.first_moves) == (5, 5)
    assert result.games == 10 and result.losses == 0 and result.wins >= 5
    assert result.to_dict()["player"] == "solver"
    flipped = run_match(graph, random, solver, 10, np.random.default_rng(1))
    assert flipped.wins == 0 and flipped.losses >= 5


def test_solver_against_itself_draws_every_game_of_tictactoe():
    result = run_match(TicTacToe(), SolverPlayer(), SolverPlayer(), 4, np.random.default_rng(0))
    assert (result.wins, result.draws, result.losses, result.score) == (0, 4, 0, 0.5)


def test_play_match_scores_from_the_first_movers_view():
    graph, rng = TicTacToe(), np.random.default_rng(0)
    # cells 0,1,2 for the first player while the second plays 3,4: the first player wins
    assert play_match(graph, Scripted([0, 1, 2]), Scripted([3, 4]), rng) == 1.0
    assert play_match(graph, Scripted([3, 4, 8]), Scripted([0, 1, 2]), rng) == -1.0
    assert play_match(graph, RandomPlayer(), RandomPlayer(), rng, max_moves=2) == 0.0  # cut


def test_match_result_score():
    assert MatchResult("a", "b", wins=3, draws=2, losses=5).score == pytest.approx(0.4)
    assert MatchResult("a", "b").score == 0.0


def test_human_player_answers_bad_input_and_asks_again():
    graph = TicTacToe()
    answers, shown = iter(["", "x", "-1", "9", " 4 "]), []
    human = HumanPlayer(read=lambda prompt: next(answers), write=shown.append)
    action = human.choose(graph, graph.roots[0], np.random.default_rng(0))
    assert action == int(graph.actions_at(graph.roots[0])[4])
    assert shown[0] == graph.render(graph.roots[0])
    assert shown[1].startswith("your moves: [0] ") and "[8] " in shown[1]
    complaints = shown[2:]
    assert complaints == [
        f"'{a}' is not a move number between 0 and 8; try again" for a in ("", "x", "-1", "9")
    ]


def test_make_player_specs():
    assert isinstance(make_player("random"), RandomPlayer)
    assert make_player("alphabeta:3").depth == 3
    assert make_player("alphabeta:3").heuristic is game_heuristic
    assert make_player("alphabeta0:5").depth == 5 and make_player("alphabeta0:5").heuristic is None
    assert isinstance(make_player("solver"), SolverPlayer)
    assert isinstance(make_player("mcts:1000"), UCTPlayer)
    assert make_player("mcts:1000").simulations == 1000


def test_bad_player_specs_are_named():
    bad = {
        "alphabeta": "needs alphabeta:DEPTH with depth >= 1",
        "alphabeta:0": "needs alphabeta:DEPTH with depth >= 1",
        "alphabeta:x": "needs alphabeta:DEPTH",
        "minimax:2": "unknown player 'minimax:2'; use",
        "alphabeta0:x": "player 'alphabeta0:x' needs alphabeta0:DEPTH with depth >= 1",
        "mcts:0": "player 'mcts:0' needs mcts:SIMULATIONS with simulations >= 1",
        "mcts:x": "player 'mcts:x' needs mcts:SIMULATIONS",
        "mcts:-5": "needs mcts:SIMULATIONS",
        "mcts": "needs mcts:SIMULATIONS",
        "solver:1": "player 'solver' takes no ':1'",
        "iteration:3": "cannot be made here without a session",
        "previous": "cannot be made here",
    }  # the Evaluator's own name for an iteration
    for spec, message in bad.items():
        with pytest.raises(ValueError, match=message):
            make_player(spec)


def test_ratings_anchor_random_at_zero_and_order_the_players():
    results = [
        {"player": "iteration:1", "opponent": "random", "wins": 6, "draws": 2, "losses": 2},
        {"player": "iteration:2", "opponent": "random", "wins": 9, "draws": 1, "losses": 0},
        {"player": "iteration:2", "opponent": "iteration:1", "wins": 7, "draws": 1, "losses": 2},
        {"player": "alphabeta:2", "opponent": "random", "wins": 8, "draws": 2, "losses": 0},
    ]
    ratings = fit_ratings(results)
    assert ratings["random"] == 0
    assert 0 < ratings["iteration:1"] < ratings["iteration:2"]
    assert ratings["alphabeta:2"] > 0
    # an even result gives equal ratings, and Elo differences follow the logistic scale:
    # scoring 75% is about +191 Elo
    even = fit_ratings([{"player": "a", "opponent": "random", "wins": 5, "draws": 0, "losses": 5}])
    assert abs(even["a"]) < 1
    strong = fit_ratings(
        [{"player": "a", "opponent": "random", "wins": 75, "draws": 0, "losses": 25}], steps=5000
    )
    assert strong["a"] == pytest.approx(191, abs=10)
    assert fit_ratings([]) == {}


def test_mcts_player_from_a_session_plays_well_enough_and_names_missing_iterations(tmp_path):
    import tensorflow  # noqa: F401 - the first model is made here, not in a child process

    gym = GameGym(tmp_path / "s", config=GymConfig(game=TICTACTOE))
    graph = gym.config.game_ref.build()  # the graph the player plays on: this process's
    search = SearchConfig(searchcount=200, core="python")
    player = model_player(gym.session, 0, search)
    assert player.params == SearchParams.from_config(search, noise=False)  # the one mapping
    default = model_player(gym.session, 0).params  # the session's evaluate.search
    assert (default.searchcount, default.threads, default.core) == (50, 8, "python")
    assert default.dirichlet_fraction == 0.0  # a player searches without noise
    rng = np.random.default_rng(0)
    # with 200 searches even the untrained model takes a win in one and never plays illegally
    win_in_one = graph.roots[0]
    for action in (0, 3, 1, 4):
        win_in_one = graph.child_by_action(win_in_one, action)
    assert player.choose(graph, win_in_one, rng) == 2
    result = run_match(graph, player, AlphaBetaPlayer(1), 2, rng)
    assert result.games == 2
    with pytest.raises(ValueError, match=r"has no model iteration 5 \(it has \[0\]\)"):
        model_player(gym.session, 5)


def test_results_are_split_by_the_side_the_player_moved_first_or_second():
    # both take the lowest free cell: the first mover holds 0, 2, 4, 6 and wins on the diagonal
    graph, rng = TicTacToe(), np.random.default_rng(0)
    result = run_match(graph, Scripted([]), Scripted([]), 4, rng)
    assert (result.wins, result.draws, result.losses) == (2, 0, 2)
    assert result.by_side == {
        "first": {"wins": 2, "draws": 0, "losses": 0},
        "second": {"wins": 0, "draws": 0, "losses": 2},
    }
    assert result.to_dict()["by_side"] == result.by_side
    assert result.sides_text() == "as first 2-0-0, as second 0-0-2 (wins-draws-losses)"
