"""gamegym.game.checker and `gamegym check`: correct games pass (two tiny ones here; every bundled
game in tests/test_games.py), each broken rule is reported as exactly its kind at the vertex that
broke it, and run_check and the command line print and exit as documented."""

import io
import subprocess
import sys

import numpy as np
import pytest
from nim import TwoPileNim

from gamegym.game.checker import GraphChecker, check_graph
from gamegym.game.checkreport import run_check
from gamegym.game.graph import GameGraph
from games.tictactoe import TicTacToe

ROOT, PAIR, END = (2, 3), (1, 1), (0, 0)  # the two roots of Nim and the end of every game


class Nim(TwoPileNim):
    """TwoPileNim from the roots ROOT and PAIR: games alternate between them, so both are
    checked early."""

    def __init__(self):
        super().__init__(roots=(ROOT, PAIR))


class Countdown(GameGraph):
    """A correct tiny game on the defaults (one root, action_space_size = outdegree_max, no
    symmetry): take 1 or 2 from a counter; who cannot move has lost."""

    def __init__(self, start=6):
        super().__init__()
        self.start = start

    @property
    def roots(self):
        return (self.start,)

    @property
    def outdegree_max(self):
        return 2

    def expansion(self, vertex):
        takes = [t for t in (1, 2) if t <= vertex]
        return tuple(vertex - t for t in takes), tuple(t - 1 for t in takes)

    def score_at(self, vertex):
        return -1.0 if vertex == 0 else 0.0

    def numpify(self, vertex):
        x = np.zeros(self.start + 1, np.float32)
        x[vertex] = 1
        return x

    def unnumpify(self, array):
        return int(np.argmax(array))


# ----- one broken rule each -----------------------------------------------------------------------
class Raises(Nim):
    def numpify(self, vertex):
        if vertex == PAIR:
            raise RuntimeError("boom")
        return super().numpify(vertex)


class ScoreOutOfRange(Nim):
    def score_at(self, vertex):
        return 1.5 if vertex == PAIR else super().score_at(vertex)


class WonAtNonTerminal(Nim):
    def score_at(self, vertex):
        return 1.0 if vertex == PAIR else super().score_at(vertex)


class ChildrenAtTerminal(Nim):
    def terminal_at(self, vertex):
        return vertex == PAIR or super().terminal_at(vertex)


class TerminalMismatch(Nim):
    def terminal_at(self, vertex):
        return False


class WrongDtype(Nim):
    def numpify(self, vertex):
        return super().numpify(vertex).astype(np.float64)


class ShapeChanges(Nim):
    def numpify(self, vertex):
        array = super().numpify(vertex)
        return np.append(array, np.float32(0)) if vertex == PAIR else array


class BadRoundTrip(Nim):
    def unnumpify(self, array):
        a, b = super().unnumpify(array)
        return (b, a)


class ManyMisordered(Nim):
    """numpify_many gives the rows of a batch in reverse order."""

    def numpify_many(self, vertices):
        return np.stack([self.numpify(v) for v in vertices][::-1])


class ManyWrongDtype(Nim):
    def numpify_many(self, vertices):
        return super().numpify_many(vertices).astype(np.float64)


class NoUnnumpify(Nim):
    def unnumpify(self, array):
        raise NotImplementedError("no inverse")


class BrokenRootActions(Nim):
    """Base for breaking the action ids of the root only."""

    def root_actions(self, actions):
        raise NotImplementedError

    def expansion(self, vertex):
        children, actions = super().expansion(vertex)
        return children, (self.root_actions(actions) if vertex == ROOT else actions)


class DuplicateAction(BrokenRootActions):
    def root_actions(self, actions):
        return (0, 0) + actions[2:]


class ActionOutOfRange(BrokenRootActions):
    def root_actions(self, actions):
        return actions[:-1] + (4,)


class ActionCount(BrokenRootActions):
    def root_actions(self, actions):
        return actions[:-1]


class TooManyChildren(Nim):
    @property
    def outdegree_max(self):
        return 3


class AlwaysOpen(Nim):
    """Claims every vertex is open (and lets it be expanded again)."""

    def open_at(self, vertex):
        return True

    def expand_at(self, vertex):
        self._children.pop(vertex, None)
        super().expand_at(vertex)


class ExpandTwice(Nim):
    """expand_at of the expanded root does not raise."""

    def expand_at(self, vertex):
        if vertex == ROOT and not self.open_at(vertex):
            return
        super().expand_at(vertex)


class NotDeterministic(Nim):
    calls = 0

    def expansion(self, vertex):
        self.calls += 1
        children, actions = super().expansion(vertex)
        return (children[::-1], actions[::-1]) if self.calls % 2 == 0 else (children, actions)


class WrongActionMap(Nim):
    """Symmetry 1 swaps the piles but keeps the action ids."""

    def transform_actions(self, k):
        return np.arange(4)


class IllegalImage(Nim):
    def transform(self, vertex, k):
        return (3, 3) if (k, vertex) == (1, ROOT) else super().transform(vertex, k)


class BadIdentity(Nim):
    def transform(self, vertex, k):
        return (vertex[1], vertex[0])


class Mirror(Countdown):
    """A symmetry that fixes every vertex but swaps the action ids of the two moves."""

    @property
    def symmetry_count(self):
        return 2

    def transform(self, vertex, k):
        return vertex

    def transform_actions(self, k):
        return np.array([0, 1]) if k == 0 else np.array([1, 0])


class Cycle(Countdown):
    """One move from each vertex: 6, 5, ..., 1 and back to the root 6, so the game never ends;
    with max_moves=30 the checker gives up at the 32nd vertex of the game, which is 5."""

    def expansion(self, vertex):
        return ((vertex - 1 if vertex > 1 else self.start),), (0,)


class HeuristicOutOfRange(Countdown):
    """The heuristic says 1.5 at the root."""

    def heuristic_at(self, vertex):
        return 1.5 if vertex == self.start else 0.0


class NotAntisymmetric(Countdown):
    """Swapping the players changes nothing in Countdown, so only 0 is antisymmetric; this
    heuristic is 0.5 wherever the game goes on."""

    def heuristic_at(self, vertex):
        return 0.5 if vertex else -0.5

    def swap_players(self, vertex):
        return vertex


class WrongView(Countdown):
    """The heuristic of the player who just moved: it likes the end of the game (0, lost for
    the player to move there)."""

    def heuristic_at(self, vertex):
        return 0.75 if vertex == 0 else 0.0


class Lopsided(Nim):
    """The heuristic prefers a bigger left pile, though swapping the piles is a symmetry."""

    def heuristic_at(self, vertex):
        return 0.1 * (vertex[0] - vertex[1])


BROKEN = [  # graph, the only kind it breaks, the first vertex that breaks it
    pytest.param(TwoPileNim(roots=()), "no-roots", "None", id="NoRoots"),
    pytest.param(TwoPileNim(roots=([2, 3],)), "unhashable", "[2, 3]", id="Unhashable"),
    pytest.param(Raises(), "exception", repr(PAIR), id="Raises"),
    pytest.param(ScoreOutOfRange(), "score-out-of-range", repr(PAIR), id="ScoreOutOfRange"),
    pytest.param(WonAtNonTerminal(), "score-at-nonterminal", repr(PAIR), id="WonAtNonTerminal"),
    pytest.param(ChildrenAtTerminal(), "children-at-terminal", repr(PAIR), id="ChildrenAtTerminal"),
    pytest.param(TerminalMismatch(), "terminal-mismatch", repr(END), id="TerminalMismatch"),
    pytest.param(WrongDtype(), "numpify-type", repr(ROOT), id="WrongDtype"),
    pytest.param(ShapeChanges(), "numpify-shape", repr(PAIR), id="ShapeChanges"),
    pytest.param(BadRoundTrip(), "unnumpify", repr(ROOT), id="BadRoundTrip"),
    pytest.param(DuplicateAction(), "duplicate-action", repr(ROOT), id="DuplicateAction"),
    pytest.param(ActionOutOfRange(), "action-out-of-range", repr(ROOT), id="ActionOutOfRange"),
    pytest.param(ActionCount(), "action-count", repr(ROOT), id="ActionCount"),
    pytest.param(TooManyChildren(), "outdegree", repr(ROOT), id="TooManyChildren"),
    pytest.param(AlwaysOpen(), "open-after-expand", repr(ROOT), id="AlwaysOpen"),
    pytest.param(ExpandTwice(), "expand-not-open", repr(ROOT), id="ExpandTwice"),
    pytest.param(NotDeterministic(), "nondeterministic", repr(ROOT), id="NotDeterministic"),
    pytest.param(WrongActionMap(), "symmetry", repr(ROOT), id="WrongActionMap"),
    pytest.param(IllegalImage(), "symmetry", repr(ROOT), id="IllegalImage"),
    pytest.param(BadIdentity(), "symmetry", repr(ROOT), id="BadIdentity"),
    pytest.param(Mirror(), "symmetry", "6", id="Mirror"),
    pytest.param(Cycle(), "too-long", "5", id="Cycle"),
    pytest.param(HeuristicOutOfRange(), "heuristic-out-of-range", "6", id="HeuristicOutOfRange"),
    pytest.param(NotAntisymmetric(), "heuristic-antisymmetric", "6", id="NotAntisymmetric"),
    pytest.param(WrongView(), "heuristic-view", "0", id="WrongView"),
    pytest.param(Lopsided(), "heuristic-symmetry", repr(ROOT), id="Lopsided"),
]


# ----- correct games ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "graph,games",
    [
        pytest.param(Nim(), 20, id="Nim"),
        pytest.param(Countdown(), 20, id="Countdown"),
    ],
)
def test_correct_graphs_pass(graph, games):
    checker = GraphChecker(graph, seed=0)
    assert checker.run(games) == []
    assert checker.notes == []
    assert checker.games_played == games
    assert checker.positions > 2 * games  # every game has a root, a move and an end at least


def test_same_seed_same_walk():
    runs = [GraphChecker(Nim(), seed=5) for _ in range(2)]
    assert [c.run(10) for c in runs] == [[], []]
    assert runs[0].positions == runs[1].positions


# ----- broken games -------------------------------------------------------------------------------
@pytest.mark.parametrize("graph,kind,vertex", BROKEN)
def test_each_broken_rule_is_reported_as_exactly_its_kind(graph, kind, vertex):
    violations = check_graph(graph, games=6, seed=0, max_moves=30)
    assert [v.kind for v in violations] == [kind], violations
    assert violations[0].vertex == vertex
    assert violations[0].count >= 1 and violations[0].message


def test_messages_say_what_broke():
    def message(graph):
        return check_graph(graph, games=4, seed=0, max_moves=30)[0].message

    assert message(Raises()) == "numpify raised RuntimeError: boom"
    assert message(ScoreOutOfRange()) == "score 1.5 is not in [-1, 1]"
    assert message(BadIdentity()) == "symmetry 0: transform 0 is not the identity"
    assert message(Cycle()) == "game not over after 30 moves (a cycle?)"
    assert "image (3, 3)" in message(IllegalImage())
    assert message(WrongActionMap()).startswith("symmetry 1: transform_actions maps")
    assert message(Mirror()) == (
        "symmetry 1: transform_actions maps an action id to 0 but the "
        "image child 4 has action id(s) [1]"
    )


def test_heuristic_messages_and_notes():
    checker = GraphChecker(HeuristicOutOfRange(), seed=0)
    assert checker.run(3)[0].message == "heuristic 1.5 is not in [-1, 1]"
    assert checker.notes == [
        "swap_players is not implemented: the heuristic's antisymmetry is not checked"
    ]
    assert check_graph(NotAntisymmetric(), games=2)[0].message == (
        "heuristic 0.5 here but 0.5 with the players swapped (expected its negative)"
    )
    assert (
        "favours the player to move at 3 of the 3 vertices where that player has lost"
        in check_graph(WrongView(), games=3)[0].message
    )
    out = io.StringIO()
    assert run_check("games.connectfour:ConnectFour", {}, 3, 0, out) == 0
    assert "heuristic checked" in out.getvalue()


@pytest.mark.parametrize(
    "graph,message",
    [
        (ManyMisordered(), "numpify_many differs from numpify"),
        (ManyWrongDtype(), "numpify_many gave ndarray float64"),
    ],
)
def test_a_numpify_many_unlike_numpify_is_reported(graph, message):
    violations = check_graph(graph, games=6, seed=0, max_moves=30)
    assert [v.kind for v in violations] == ["numpify-many"], violations
    assert message in violations[0].message


@pytest.mark.parametrize("rows,columns", [(6, 7), (9, 9)])
def test_connect_fours_numpify_many_is_its_numpify_stacked(rows, columns):
    from games.connectfour import ConnectFour

    graph = ConnectFour(rows=rows, columns=columns)  # 9x9 is past 64 bits: numpify one by one
    checker = GraphChecker(graph, seed=1)
    assert checker._many and checker.run(5) == []
    leaves = [graph.roots[0], *graph.children_at(graph.roots[0])]
    assert graph.numpify_many(leaves).shape == (len(leaves), rows, columns, 2)


def test_missing_unnumpify_is_a_note_not_a_violation():
    checker = GraphChecker(NoUnnumpify(), seed=0)
    assert checker.run(5) == []
    assert checker.notes == [
        "unnumpify is not implemented: the numpify round trip is not checked",
        # Nim has two symmetries: without unnumpify training cannot show their images
        "without unnumpify, training shows no symmetric images of the samples "
        "(train.augment_symmetries has no effect on this game)",
    ]


def test_symmetries_without_unnumpify_are_noted_as_no_augmentation():
    from games.tictactoe import TicTacToe

    class SymmetricWithoutUnnumpify(TicTacToe):
        def unnumpify(self, array):
            raise NotImplementedError

    checker = GraphChecker(SymmetricWithoutUnnumpify(), seed=0)
    assert checker.run(3) == []
    assert any("train.augment_symmetries has no effect" in note for note in checker.notes)


def test_reports_are_deduplicated_by_kind():
    violations = check_graph(WrongDtype(), games=10, seed=0)
    assert len(violations) == 1
    only = violations[0]
    assert only.count > 10  # every vertex of every game
    assert len(only.examples) == 2  # the first one plus two more examples are kept
    assert only.subject == ROOT


# ----- run_check and the command line -------------------------------------------------------------
def test_run_check_reports_and_exit_status():
    out, err = io.StringIO(), io.StringIO()
    assert run_check(f"{__name__}:ScoreOutOfRange", None, 4, 0, out, err) == 1
    text = err.getvalue()  # the violations: on stderr
    assert "score-out-of-range: 2 time(s)" in text
    assert "score 1.5 is not in [-1, 1]\n    at vertex (1, 1)" in text
    assert text.splitlines()[-1].endswith("violation(s) of the GameGraph contract, 1 kind(s)")
    assert out.getvalue().startswith(f"checked {__name__}:ScoreOutOfRange ")  # what was checked
    assert "violation" not in out.getvalue()

    out = io.StringIO()
    assert run_check(f"{__name__}:Nim", {}, 4, 0, out) == 0
    assert out.getvalue().splitlines()[-1] == "no contract violations found"

    out = io.StringIO()  # the game arguments reach the constructor
    assert run_check(f"{__name__}:Countdown", {"start": 5}, 5, 0, out) == 0
    assert out.getvalue().startswith(
        f"checked {__name__}:Countdown {{'start': 5}}: 5 random games (seed 0), "
    )
    assert out.getvalue().splitlines()[-1] == "no contract violations found"


@pytest.mark.parametrize(
    "spec,error",
    [
        ("no_such_module_here:Game", "cannot import module 'no_such_module_here' for game "),
        ("numpy:ndarray", "'numpy:ndarray' is not a gamegym.GameGraph subclass"),
    ],
)
def test_run_check_cannot_load_the_game(spec, error):
    out, err = io.StringIO(), io.StringIO()
    assert run_check(spec, None, 4, 0, out, err) == 2
    assert err.getvalue().startswith(f"gamegym check: error: {error}")
    assert err.getvalue().count("\n") == 1 and out.getvalue() == ""


class WinsAtStart(TicTacToe):
    """Scores +1 at the empty board."""

    def score_at(self, vertex):
        return 1.0 if not any(vertex) else super().score_at(vertex)


def test_run_check_renders_the_vertex_and_rejects_bad_arguments():
    out, err = io.StringIO(), io.StringIO()
    assert run_check(f"{__name__}:WinsAtStart", None, 2, 0, out, err) == 1
    assert "at vertex (0, 0, 0, 0, 0, 0, 0, 0, 0)\n    ...\n    ...\n    ...\n" in err.getvalue()

    out, err = io.StringIO(), io.StringIO()
    assert run_check("games.santorini:Santorini", {"dimension": 9}, 2, 0, out, err) == 2
    assert err.getvalue().startswith("gamegym check: error: cannot build games.santorini:Santorini")
    assert err.getvalue().count("\n") == 1 and out.getvalue() == ""


def test_gamegym_check_prints_violations_on_stderr(capsys):
    from gamegym.cli.main import main

    assert main(["check", "--game", f"{__name__}:ScoreOutOfRange", "--games", "4"]) == 1
    printed = capsys.readouterr()
    assert printed.out.startswith(f"checked {__name__}:ScoreOutOfRange ")
    assert "score-out-of-range: 2 time(s)" in printed.err and "violation" not in printed.out
    assert main(["check", "--game", "no_such_module_here:Game"]) == 2
    printed = capsys.readouterr()
    assert printed.err.startswith("gamegym check: error: cannot import module") and not printed.out


@pytest.mark.slow
def test_gamegym_check_command():
    # the bundled games pass the checker in tests/test_games.py; this is the command's wiring
    spec, args = "games.santorini:Santorini", '{"dimension": 3, "units_per_player": 1}'
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gamegym",
            "check",
            "--game",
            spec,
            "--game-args",
            args,
            "--games",
            "20",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"checked {spec} ") and ": 20 random games (seed 0), " in lines[0]
    assert lines[1:] == ["no contract violations found"]


def test_the_readme_example_game_passes_the_checker():
    """The one-heap Nim of the README ("Adding your own game") is run from the README's own
    text, so that copy of a Nim game stays correct; the tests' own is tests/nim.py."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    code = re.search(
        r"```python\n(import numpy as np\nfrom gamegym import GameGraph\n.*?)```", readme, re.S
    )
    assert code, "the README's example game is gone"
    namespace: dict = {}
    exec(compile(code.group(1), "README.md", "exec"), namespace)
    checker = GraphChecker(namespace["Nim"](10), seed=0)
    assert checker.run(20) == [] and checker.notes == []
    assert checker.games_played == 20
