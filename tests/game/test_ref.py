"""A game's one identity, its reference (gamegym.game.ref.GameRef): equal for equal spec and
arguments whatever their order, picklable, built once per process for every equivalent
reference, refused with the spec named when it is not one."""

import pickle
import threading

import pytest

import games.tictactoe
from gamegym.config import GymConfig
from gamegym.game.graph import GameSpecError
from gamegym.game.ref import GameRef, forget_built
from games.tictactoe import TicTacToe, TicTacToeVariant

CONNECTFOUR = "games.connectfour:ConnectFour"


def test_equal_spec_and_arguments_make_one_reference_whatever_their_order():
    a = GameRef(CONNECTFOUR, {"rows": 6, "columns": 7})
    b = GameRef(CONNECTFOUR, {"columns": 7, "rows": 6})
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != GameRef(CONNECTFOUR, {"rows": 5, "columns": 7})
    assert a != GameRef(CONNECTFOUR)  # the same game, but not the same reference
    assert GameRef(CONNECTFOUR) == GameRef(CONNECTFOUR, {})
    assert GymConfig(game=CONNECTFOUR, game_args={"columns": 7, "rows": 6}).game_ref == a
    assert a.settings() == {"game": CONNECTFOUR, "game_args": {"columns": 7, "rows": 6}}
    assert str(a) == 'games.connectfour:ConnectFour {"columns":7,"rows":6}'
    assert str(GameRef(CONNECTFOUR)) == CONNECTFOUR


def test_a_reference_is_frozen_and_its_arguments_are_copies():
    ref = GameRef(CONNECTFOUR, {"rows": 6})
    given = {"rows": 6}
    ref_of_given = GameRef(CONNECTFOUR, given)
    given["rows"] = 5  # a change of the caller's dict does not change the reference
    assert ref_of_given == ref
    ref.args["rows"] = 4  # nor a change of the dict it gives
    assert ref.args == {"rows": 6}
    with pytest.raises(AttributeError, match="frozen"):
        ref.spec = "games.tictactoe:TicTacToe"


def test_a_reference_pickles_to_an_equal_one():
    ref = GameRef("gamegym.adapters.openspiel:OpenSpielGame", {"name": "hex", "params": {"a": 1}})
    copied = pickle.loads(pickle.dumps(ref))
    assert copied == ref and hash(copied) == hash(ref) and copied.args == ref.args
    config = GymConfig(game=CONNECTFOUR, game_args={"rows": 5})
    assert pickle.loads(pickle.dumps(config)).game_ref == config.game_ref  # as a child gets it


@pytest.mark.parametrize(
    "spec, args, message",
    [
        ("games.tictactoe", None, "game 'games.tictactoe' must look like 'package.module:Class"),
        (None, None, "game None must look like"),
        ("/tmp/evil:Game", None, "'/tmp/evil' is not an importable module name"),
        (CONNECTFOUR, [6, 7], "game 'games.connectfour:ConnectFour': its arguments must be a "),
        (CONNECTFOUR, {"rows": object()}, "its arguments .* must be JSON values"),
    ],
)
def test_a_bad_reference_is_refused_naming_it(spec, args, message):
    with pytest.raises(GameSpecError, match=message):
        GameRef(spec, args)


def test_a_reference_that_does_not_build_names_the_spec():
    with pytest.raises(GameSpecError, match="cannot import module 'games.nosuch' for game"):
        GameRef("games.nosuch:Game").build()
    with pytest.raises(GameSpecError, match="module 'games.tictactoe' has no class 'Tic'"):
        GameRef("games.tictactoe:Tic").build()
    with pytest.raises(GameSpecError, match="cannot build games.connectfour:ConnectFour with"):
        GameRef(CONNECTFOUR, {"rows": 6, "colour": "red"}).build()


def test_equivalent_references_build_one_graph_in_a_process(connectfour_builds):
    partial, whole = GameRef(CONNECTFOUR), GameRef(CONNECTFOUR, {"rows": 6, "columns": 7})
    graph = partial.build()
    assert whole.build() is graph and partial.build() is graph
    assert partial.complete() == whole  # the defaults filled in, nothing built
    assert connectfour_builds == [{}]
    other = GameRef(CONNECTFOUR, {"rows": 5, "columns": 6}).build()
    assert other is not graph and other.game_args == {"rows": 5, "columns": 6}
    own = partial.build_new()  # a graph of the caller's own
    assert own is not graph and partial.build() is graph
    assert len(connectfour_builds) == 3
    forget_built()
    assert partial.build() is not graph


def test_threads_that_ask_at_once_get_the_one_graph(connectfour_builds):
    ref, graphs, start = GameRef(CONNECTFOUR), [], threading.Barrier(4)

    def ask():
        start.wait()
        graphs.append(ref.build())

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(graphs) == 4 and all(g is graphs[0] for g in graphs)
    assert connectfour_builds == [{}]


def test_a_graph_built_in_your_code_is_named_by_its_reference(monkeypatch):
    ref = GameRef.of(TicTacToeVariant(blocked=(4,)))
    assert ref == GameRef("games.tictactoe:TicTacToeVariant", {"blocked": [4], "misere": False})
    assert ref.build().game_args == {"blocked": [4], "misere": False}

    class Local(TicTacToe):  # every process rebuilds the game from its reference: none here
        pass

    with pytest.raises(GameSpecError, match="has no class 'test_a_graph_built_in_your_code"):
        GameRef.of(Local())
    monkeypatch.setattr(games.tictactoe, "TicTacToe", TicTacToeVariant)
    with pytest.raises(GameSpecError, match="TicTacToe cannot be rebuilt from its spec"):
        GameRef.of(TicTacToe())
