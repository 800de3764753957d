"""`gamegym check`: the bundled games pass; each kind of broken graph is caught at its vertex."""
import io
import subprocess
import sys

import numpy as np
import pytest

from games.connectfour import ConnectFour
from games.santorini import Santorini
from games.tictactoe import TicTacToe
from gamegym.checker import check_graph, run_check
from gamegym.graph import GameGraph


class Countdown(GameGraph):
    """A correct tiny game: take 1 or 2 from a counter; who cannot move has lost."""

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


class ScoreOutOfRange(Countdown):
    def score_at(self, vertex):
        return 2.0 if vertex == 3 else super().score_at(vertex)


class WonAtNonTerminal(Countdown):
    def score_at(self, vertex):
        return 1.0 if vertex == 4 else super().score_at(vertex)


class ChildrenAtTerminal(Countdown):
    def terminal_at(self, vertex):
        return vertex <= 1


class ShapeChanges(Countdown):
    def numpify(self, vertex):
        return np.zeros(vertex + 1, np.float32)


class WrongDtype(Countdown):
    def numpify(self, vertex):
        return super().numpify(vertex).astype(np.float64)


class BadRoundTrip(Countdown):
    def unnumpify(self, array):
        return int(np.argmax(array)) + 1


class DuplicateActions(Countdown):
    def expansion(self, vertex):
        children, _ = super().expansion(vertex)
        return children, tuple(0 for _ in children)


class ActionOutOfRange(Countdown):
    def expansion(self, vertex):
        children, actions = super().expansion(vertex)
        return children, tuple(a + 5 for a in actions)


class TooManyChildren(Countdown):
    @property
    def outdegree_max(self):
        return 1

    @property
    def action_space_size(self):
        return 2


class NotDeterministic(Countdown):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def expansion(self, vertex):
        self.calls += 1
        children, actions = super().expansion(vertex)
        if self.calls % 2 == 0 and len(children) == 2:
            return children[::-1], actions[::-1]
        return children, actions


class Mirror(Countdown):
    """A broken symmetry: 'transform 1' maps a vertex to itself but swaps the action ids."""

    @property
    def symmetry_count(self):
        return 2

    def transform(self, vertex, k):
        return vertex

    def transform_actions(self, k):
        return np.array([0, 1]) if k == 0 else np.array([1, 0])


class Cycle(Countdown):
    def expansion(self, vertex):
        return ((self.start,), (0,)) if vertex < 3 else super().expansion(vertex)


class Raises(Countdown):
    def score_at(self, vertex):
        if vertex == 2:
            raise RuntimeError("boom")
        return super().score_at(vertex)


@pytest.mark.parametrize("graph", [Countdown(), TicTacToe(), ConnectFour(), ConnectFour(4, 5),
                                   Santorini(3, 1), Santorini(4, 2), Santorini(5, 2)],
                         ids=lambda g: type(g).__name__)
def test_correct_graphs_pass(graph):
    assert check_graph(graph, games=10, seed=1) == []


@pytest.mark.parametrize("broken,kind,vertex", [
    (ScoreOutOfRange(), "score-out-of-range", "3"),
    (WonAtNonTerminal(), "score-at-nonterminal", "4"),
    (ChildrenAtTerminal(), "children-at-terminal", "1"),
    (ShapeChanges(), "numpify-shape", None),
    (WrongDtype(), "numpify-type", "6"),
    (BadRoundTrip(), "unnumpify", "6"),
    (DuplicateActions(), "duplicate-action", "6"),
    (ActionOutOfRange(), "action-out-of-range", "6"),
    (TooManyChildren(), "outdegree", "6"),
    (NotDeterministic(), "nondeterministic", None),
    (Mirror(), "symmetry", "6"),
    (Cycle(), "too-long", None),
    (Raises(), "exception", "2"),
])
def test_each_broken_graph_is_caught_with_its_vertex(broken, kind, vertex):
    violations = check_graph(broken, games=10, seed=0, max_moves=50)
    kinds = {v.kind for v in violations}
    assert kind in kinds, violations
    if vertex is not None:
        assert vertex in [v.vertex for v in violations if v.kind == kind]


def test_run_check_report_and_exit_status():
    out = io.StringIO()
    assert run_check("tests.test_check_contract:ScoreOutOfRange", {}, 5, 0, out) == 1
    text = out.getvalue()
    assert "score-out-of-range" in text and "score 2.0 is not in [-1, 1]" in text
    assert "at vertex 3" in text
    out = io.StringIO()
    assert run_check("tests.test_check_contract:Countdown", {"start": 5}, 5, 0, out) == 0
    assert "no contract violations found" in out.getvalue()
    out = io.StringIO()
    assert run_check("no.such.module:Game", {}, 5, 0, out) == 2
    assert "cannot import module 'no.such.module'" in out.getvalue()
    assert run_check("numpy:ndarray", {}, 5, 0, out) == 2
    assert "is not a gamegym.GameGraph subclass" in out.getvalue()


@pytest.mark.parametrize("spec,args", [("games.tictactoe:TicTacToe", "{}"),
                                       ("games.connectfour:ConnectFour", "{}"),
                                       ("games.santorini:Santorini",
                                        '{"dimension": 3, "units_per_player": 1}')])
def test_gamegym_check_command_on_bundled_games(spec, args):
    done = subprocess.run([sys.executable, "-m", "gamegym.cli", "check", spec, "--game-args",
                           args, "--games", "20"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no contract violations found" in done.stdout
