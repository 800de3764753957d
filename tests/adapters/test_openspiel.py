"""The OpenSpiel adapter and OpenSpiel's bots (the extra .[openspiel]; skipped without it)."""

import json
import subprocess
import sys

import numpy as np
import pytest

pyspiel = pytest.importorskip(
    "pyspiel", reason='OpenSpiel is not installed: pip install -e ".[openspiel]" adds it'
)

from gamegym.adapters.openspiel import OpenSpielGame, UnsuitableGame, suitability, to_openspiel  # noqa: E402
from gamegym.evaluation.arena import make_player, run_match  # noqa: E402
from gamegym.game.checker import check_graph  # noqa: E402
from gamegym.game.graph import GameSpecError, load_game  # noqa: E402
from gamegym.game.players import AlphaBetaPlayer, Solver, SolverPlayer  # noqa: E402
from games.connectfour import ConnectFour  # noqa: E402
from games.tictactoe import TicTacToe  # noqa: E402

SPEC = "gamegym.adapters.openspiel:OpenSpielGame"
CHECKED = [
    {"name": "tic_tac_toe"},
    {"name": "connect_four"},
    {"name": "breakthrough", "params": {"rows": 6, "columns": 5}},
    {"name": "hex", "params": {"board_size": 5}},
    {"name": "othello"},
    {"name": "clobber"},
]


def test_tic_tac_toe_agrees_with_ours_move_by_move():
    theirs, ours = OpenSpielGame("tic_tac_toe"), TicTacToe()
    rng = np.random.default_rng(3)
    for _ in range(300):
        u, v = theirs.roots[0], ours.roots[0]
        while True:
            assert theirs.actions_at(u) == ours.actions_at(v)  # same legal moves, same ids
            assert theirs.score_at(u) == ours.score_at(v)  # same result, mover's view
            if not ours.children_at(v):
                assert not theirs.children_at(u)
                break
            action = ours.actions_at(v)[rng.integers(len(ours.actions_at(v)))]
            u, v = theirs.child_by_action(u, action), ours.child_by_action(v, action)


def test_vertices_observations_and_scores_follow_the_contract():
    game = OpenSpielGame("connect_four")
    assert game.roots == ((),) and game.action_space_size == 7
    assert game.numpify(()).shape == (6, 7, 3)  # OpenSpiel's [3, 6, 7], planes moved last
    vertex = ()
    for column in (3, 3, 4, 4, 5, 5):
        vertex = game.child_by_action(vertex, column)
    assert vertex == (3, 3, 4, 4, 5, 5) and game.mover(vertex) == 0
    won = game.child_by_action(vertex, 6)
    assert game.children_at(won) == () and game.score_at(won) == -1.0  # the mover has lost
    assert game.score_at(vertex) == 0.0
    game.forget()  # states are rebuilt from the history
    assert game.score_at(won) == -1.0 and "player 0 to move" in game.render(vertex)
    assert game.describe_action(vertex, 6) == "x6"
    assert load_game(SPEC, {"name": "connect_four"}).game_args == {
        "name": "connect_four",
        "params": None,
    }


@pytest.mark.parametrize("args", CHECKED, ids=lambda a: a["name"])
def test_gamegym_check_passes(args):
    graph = OpenSpielGame(**args)
    assert check_graph(graph, games=15, seed=1) == []


@pytest.mark.parametrize(
    "name, property_",
    [
        ("kuhn_poker", "it has chance nodes"),
        ("leduc_poker", "not a game of perfect information"),
        ("backgammon", "it has chance nodes"),
        ("matrix_rps", "its moves are not sequential"),
        ("bridge", "it has 4 players, not 2"),
        ("catch", "it has 1 players, not 2"),
        ("bargaining", "it is not zero-sum"),
        ("dots_and_boxes", "turns do not strictly alternate"),
        ("checkers", "turns do not strictly alternate"),
    ],
)
def test_unsuitable_games_are_refused_naming_the_property(name, property_):
    with pytest.raises(UnsuitableGame, match=property_):
        OpenSpielGame(name)


def test_every_game_in_the_registry_is_taken_or_refused_with_a_reason():
    taken, refused = [], {}
    for name in pyspiel.registered_names():
        try:
            game = pyspiel.load_game(name)
        except Exception:  # pyspiel.SpielError, or nfg_game's IndexError
            with pytest.raises(ValueError, match=f"OpenSpiel cannot load {name}"):
                OpenSpielGame(name)  # needs parameters: said so
            continue
        reasons = suitability(game)
        try:
            OpenSpielGame(name)
        except UnsuitableGame as error:
            assert all(r in str(error) for r in reasons)
            assert reasons or "turns do not strictly alternate" in str(error)
            refused[name] = str(error)
            continue
        assert not reasons
        taken.append(name)
    assert {"tic_tac_toe", "connect_four", "hex", "breakthrough"} <= set(taken)
    assert {"kuhn_poker", "chess"} & set(refused) == {"kuhn_poker"}


def test_a_bad_name_or_parameter_is_a_clear_error():
    with pytest.raises(GameSpecError, match="OpenSpiel has no game 'tic_tac_toes'"):
        load_game(SPEC, {"name": "tic_tac_toes"})
    with pytest.raises(GameSpecError, match="cannot load hex with parameters"):
        load_game(SPEC, {"name": "hex", "params": {"board_size": "big"}})


def test_bundled_games_map_to_openspiel_states_with_the_same_moves():
    for graph in (TicTacToe(), ConnectFour()):
        rng = np.random.default_rng(5)
        for _ in range(40):
            vertex = graph.roots[0]
            while graph.children_at(vertex):
                state = to_openspiel(graph, vertex)
                assert sorted(state.legal_actions()) == sorted(graph.actions_at(vertex))
                actions = graph.actions_at(vertex)
                vertex = graph.child_by_action(vertex, actions[rng.integers(len(actions))])


def test_openspiel_mcts_takes_a_win_and_our_players_hold_it_to_draws():
    rng = np.random.default_rng(0)
    graph = ConnectFour()
    vertex = graph.roots[0]
    for column in (3, 3, 4, 4, 5, 5):  # the mover can win in column 2 or 6
        vertex = graph.child_by_action(vertex, column)
    assert make_player("openspiel-mcts:200").choose(graph, vertex, rng) in (2, 6)
    ours = TicTacToe()
    assert make_player("openspiel-random").choose(ours, ours.roots[0], rng) in range(9)
    # the exact solver and our alpha-beta never lose to OpenSpiel's MCTSBot at tic-tac-toe
    for player in (SolverPlayer(solver=Solver(ours)), AlphaBetaPlayer(9)):
        result = run_match(ours, player, make_player("openspiel-mcts:300"), 6, rng)
        assert result.losses == 0
    opponent = make_player("openspiel-mcts:50")
    same = [
        run_match(
            OpenSpielGame("tic_tac_toe"),
            opponent,
            make_player("random"),
            4,
            np.random.default_rng(9),
        ).to_dict()
        for _ in range(2)
    ]
    assert same[0] == same[1]  # seeded by the match's rng


@pytest.mark.slow
def test_new_and_resume_a_session_on_an_openspiel_game(tmp_path):
    from conftest import SMALL, create_session, merged

    settings = merged(SMALL, {"train": {"max_samplecount": 200}, "status_interval": 0})
    # as `gamegym new ost --game SPEC --game-args '{"name": "tic_tac_toe"}' --config FILE`
    session = create_session(tmp_path / "ost", SPEC, settings, {"name": "tic_tac_toe"})

    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "gamegym", *args],
            capture_output=True,
            text=True,
            timeout=240,
            stdin=subprocess.DEVNULL,
        )

    done = cli("resume", str(session), "--max-iterations", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    status = json.loads(cli("status", str(session), "--json").stdout)
    assert status["iteration"] >= 2 and status["samples"] > 0
    done = cli(
        "evaluate",
        str(session),
        "--opponent",
        "openspiel-mcts:20",
        "--games",
        "2",
        "--searchcount",
        "8",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["games"] == 2
