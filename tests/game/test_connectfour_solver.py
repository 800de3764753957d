"""The exact Connect Four solver (games.connectfour_solver): known positions, an independent
slower search, negamax consistency, the compiled and the plain-Python runs agreeing, its time
limit, and the `solver` player on Connect Four."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from gamegym.evaluation.arena import make_player
from gamegym.game.players import RandomPlayer, play_game
from games.connectfour import ConnectFour
from games.connectfour_solver import (
    ConnectFourSolver,
    SolverTimeout,
    moves_of,
    numba_available,
    plies_to_end,
    vertex_from_moves,
)

GAME = ConnectFour()
CELLS = 42

# positions with their exact scores, from Pascal Pons's published test sets (Test_L3_R1,
# "end-easy", and Test_L2_R1, "middle-easy"; scores as in games.connectfour_solver)
KNOWN = [
    ("2252576253462244111563365343671351441", -1),
    ("7422341735647741166133573473242566", 1),
    ("23163416124767223154467471272416755633", 0),
    ("65214673556155731566316327373221417", -1),
    ("52677675164321472411331752454", 0),
    ("233377345754465174223731671122611552", 1),
    ("6763525635134453444361412671365712", -1),
    ("67152117737262713366376314254", 6),
    ("2762751722231276466633475674533", 5),
    ("3642756176227637211322113551637574556", 2),
    ("427566236745127177115664464254", 2),
    ("3575316255751336464276636772271112", -3),
    ("43745416472735", -13),
]

RUNS = [
    pytest.param(False, id="python"),
    pytest.param(
        True,
        id="compiled",
        marks=pytest.mark.skipif(not numba_available(), reason="numba is not installed"),
    ),
]


@functools.cache
def solver(compiled: bool) -> ConnectFourSolver:
    return ConnectFourSolver(GAME, compiled=compiled, table_bits=18)


def discs(vertex: int) -> int:
    return GAME.cells(vertex).count(0) and CELLS - GAME.cells(vertex).count(0)


def random_position(rng, at_least: int, at_most: int) -> int:
    """A position with that many discs from uniformly random moves, not over."""
    while True:
        vertex, target = GAME.roots[0], int(rng.integers(at_least, at_most + 1))
        for _ in range(target):
            actions = GAME.actions_at(vertex)
            vertex = GAME.child_by_action(vertex, actions[rng.integers(len(actions))])
            if not GAME.children_at(vertex):
                break
        if GAME.children_at(vertex) and discs(vertex) == target:
            return vertex


def reference_score(vertex: int, alpha: int = -100, beta: int = 100) -> int:
    """Pons's score by plain alpha-beta over the GameGraph's own rules (no table, no move
    ordering, no bitboard tricks): a move that makes four with the n-th disc of the game scores
    (cells + 2 - n) // 2 for its player."""
    n = discs(vertex)
    best = -100
    for child in GAME.children_at(vertex):
        if GAME.score_at(child) == -1.0:
            score = (CELLS + 1 - n) // 2
        elif not GAME.children_at(child):
            score = 0
        else:
            score = -reference_score(child, -beta, -max(alpha, best))
        best = max(best, score)
        if best >= beta:
            break
    return best


@pytest.mark.parametrize("compiled", RUNS)
def test_known_positions_score_as_published(compiled):
    s = solver(compiled)
    for moves, score in KNOWN:
        assert s.score(vertex_from_moves(GAME, moves)) == score, moves
        assert s.score(vertex_from_moves(GAME, moves), weak=True) == np.sign(score), moves


def test_hand_checked_positions():
    s = solver(numba_available())
    # 37 discs, O to move: only columns 6 and 7 are open, and both lose (Pons: -1)
    v = vertex_from_moves(GAME, KNOWN[0][0])
    assert set(s.move_scores(v)) == {5, 6}
    assert all(score < 0 for score in s.move_scores(v).values())
    # after 6, 7 and 7 X (to move, 40 discs) completes four in column 7 or elsewhere at once:
    # the winning move scores (cells + 1 - 40) // 2 = 1 and ends the game
    v = vertex_from_moves(GAME, KNOWN[0][0] + "677")
    scores = s.move_scores(v)
    best = max(scores, key=scores.__getitem__)
    assert scores[best] == 1 and GAME.score_at(GAME.child_by_action(v, best)) == -1.0
    # one disc earlier, O to move at 39 discs cannot stop it: -1
    assert s.score(vertex_from_moves(GAME, KNOWN[0][0] + "67")) == -1


@pytest.mark.parametrize("seed", range(3))
def test_scores_match_an_independent_plain_search(seed):
    rng = np.random.default_rng(seed)
    s = solver(numba_available())
    for _ in range(8):
        vertex = random_position(rng, 31, 34)
        got = s.move_scores(vertex)
        for action, child in zip(GAME.actions_at(vertex), GAME.children_at(vertex)):
            if GAME.score_at(child) == -1.0:
                expected = (CELLS + 1 - discs(vertex)) // 2
            elif not GAME.children_at(child):
                expected = 0
            else:
                expected = -reference_score(child)
            assert got[action] == expected, (moves_of([]), GAME.render(vertex), action)
        assert s.score(vertex) == reference_score(vertex) == max(got.values())


@pytest.mark.parametrize("seed", range(4))
def test_every_value_is_negamax_consistent_with_its_children(seed):
    """The score of a position is the best of its moves', and each move's is the negative of
    the position it leads to (or a win at once, or a draw on a full board)."""
    rng = np.random.default_rng(100 + seed)
    s = solver(numba_available())
    for _ in range(10):
        vertex = random_position(rng, 14, 36)
        scores = s.move_scores(vertex)
        assert s.score(vertex) == max(scores.values())
        weak = s.move_scores(vertex, weak=True)
        assert weak == {a: int(np.sign(v)) for a, v in scores.items()}
        for action, child in zip(GAME.actions_at(vertex), GAME.children_at(vertex)):
            if GAME.score_at(child) == -1.0:
                assert scores[action] == (CELLS + 1 - discs(vertex)) // 2
            elif not GAME.children_at(child):
                assert scores[action] == 0
            else:
                assert scores[action] == -s.score(child)


def test_the_compiled_and_the_python_runs_agree():
    if not numba_available():
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(7)
    for _ in range(12):
        vertex = random_position(rng, 20, 34)
        assert solver(True).move_scores(vertex) == solver(False).move_scores(vertex)


def test_plies_to_end_counts_the_winning_line():
    rng = np.random.default_rng(3)
    s = solver(numba_available())
    checked = 0
    while checked < 6:
        vertex = random_position(rng, 28, 36)
        score = s.score(vertex)
        if score == 0:
            continue
        plies = plies_to_end(score, discs(vertex))
        # follow the fastest win / slowest loss for both sides: the game ends after `plies`
        v, n = vertex, 0
        while GAME.children_at(v):
            best = max(s.move_scores(v).items(), key=lambda item: item[1])[0]
            v = GAME.child_by_action(v, best)
            n += 1
        assert GAME.score_at(v) == -1.0 and n == plies == s.plies_to_end(vertex)
        checked += 1
    assert plies_to_end(0, 10) is None


def test_a_solve_past_its_time_limit_names_the_position_and_the_solver_stays_usable():
    s = ConnectFourSolver(GAME, seconds=0.05, table_bits=16)
    with pytest.raises(SolverTimeout, match=r"within 0.05 s .* with 0 discs"):
        s.move_scores(GAME.roots[0])
    moves, score = KNOWN[0]
    assert s.score(vertex_from_moves(GAME, moves)) == score


def test_bad_input_gets_a_clear_error():
    with pytest.raises(ValueError, match="at most 64 bits"):
        ConnectFourSolver(ConnectFour(rows=8, columns=8))
    with pytest.raises(TypeError, match="solves ConnectFour"):
        ConnectFourSolver(object())  # type: ignore[arg-type]
    over = vertex_from_moves(GAME, "1212121")  # X's four in column 1
    with pytest.raises(ValueError, match="the game is over"):
        solver(False).score(over)
    with pytest.raises(ValueError, match="column 8 is full|'8' is not a column"):
        vertex_from_moves(GAME, "8")
    with pytest.raises(ValueError, match="column 1 is full"):
        vertex_from_moves(GAME, "1111111")


def test_the_solver_player_plays_connect_four_perfectly_from_the_middle():
    player = make_player("solver")
    rng = np.random.default_rng(0)
    s = solver(numba_available())
    for _ in range(4):
        start = random_position(rng, 16, 24)
        value = np.sign(s.score(start))
        record = play_game(GAME, [player, RandomPlayer()], rng, start=start)
        assert record.outcome >= value  # the solver's side never does worse than the value


def test_the_solver_player_names_a_position_it_cannot_solve_in_time():
    player = make_player("solver")
    rng = np.random.default_rng(0)
    player.solver_for(GAME).seconds = 0.05
    with pytest.raises(SolverTimeout, match="positions nearer the start take longer"):
        player.choose(GAME, GAME.roots[0], rng)


def test_a_time_limit_that_falls_after_the_search_leaves_its_answer_whole():
    """The timer may fire between the search's return and its cancel: only a search that saw
    the flag (and so returned early) is a timeout."""
    s = ConnectFourSolver(GAME, seconds=60, table_bits=16)
    vertex = vertex_from_moves(GAME, KNOWN[0][0])

    def finished_then_flagged():
        answer = s.score(vertex)
        s.ctl[1] = 1  # the timer's flag, set after the search ended
        return answer

    assert s._run(vertex, finished_then_flagged) == KNOWN[0][1]
