"""Solved-position benchmarks (gamegym.game.positions) and `gamegym bench accuracy`: the file
format and its errors, the shares a player scores, the committed Connect Four file, and the
command end to end on the starter network."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gamegym.bench.accuracy import measure_accuracy
from gamegym.cli.main import main
from gamegym.game.players import Player
from gamegym.game.positions import BenchmarkPosition, load_positions, write_positions
from gamegym.presets import INITIAL_MODELS
from games.connectfour import ConnectFour
from games.connectfour_solver import ConnectFourSolver, numba_available

GAME = ConnectFour()
HEADER = {
    "game": "games.connectfour:ConnectFour",
    "game_args": {"rows": 6, "columns": 7},
    "action_space_size": 7,
    "bands": {"middle": [13, 24], "late": [25, 42]},
    "made_by": "tests/bench/test_accuracy.py",
}


def solved_positions(count: int, seed: int = 0) -> tuple[list, list]:
    """(positions, vertices): random late positions where a mistake is possible, solved."""
    solver = ConnectFourSolver(GAME, table_bits=16)
    rng = np.random.default_rng(seed)
    positions, vertices = [], []
    while len(positions) < count:
        vertex, actions = GAME.roots[0], []
        for _ in range(int(rng.integers(26, 34))):
            legal = GAME.actions_at(vertex)
            actions.append(int(legal[rng.integers(len(legal))]))
            vertex = GAME.child_by_action(vertex, actions[-1])
            if not GAME.children_at(vertex):
                break
        if not GAME.children_at(vertex):
            continue
        scores = solver.move_scores(vertex)
        values = {a: int(np.sign(s)) for a, s in scores.items()}
        if len(set(values.values())) > 1:
            positions.append(BenchmarkPosition("late", tuple(actions), values, scores))
            vertices.append(vertex)
    return positions, vertices


class Fixed(Player):
    """Plays what `pick(position)` says for each benchmark position."""

    def __init__(self, positions, vertices, pick):
        self.moves = {v: pick(p) for p, v in zip(positions, vertices)}

    def choose(self, graph, vertex, rng) -> int:
        return self.moves[vertex]


def test_a_file_written_reads_back_the_same(tmp_path):
    positions, vertices = solved_positions(5)
    positions[0] = BenchmarkPosition("late", positions[0].actions, positions[0].values, None)
    write_positions(tmp_path / "b.tsv", HEADER, positions)
    benchmark = load_positions(tmp_path / "b.tsv")
    assert benchmark.positions == tuple(positions)
    assert benchmark.bands == ("middle", "late")
    assert benchmark.vertices(GAME) == vertices
    assert benchmark.positions[0].exactly_optimal is None


def test_shares_count_optimal_and_exactly_optimal_moves(tmp_path):
    positions, vertices = solved_positions(12, seed=1)
    write_positions(tmp_path / "b.tsv", HEADER, positions)
    benchmark = load_positions(tmp_path / "b.tsv")
    rng = np.random.default_rng(0)

    def exact(p):
        return min(p.exactly_optimal)

    def wrong(p):
        return min(set(p.values) - p.optimal)

    figures = measure_accuracy(GAME, Fixed(positions, vertices, exact), benchmark, vertices, rng)
    assert figures["late"]["search"] == {
        "optimal": 1.0,
        "exactly_optimal": 1.0,
        "exact_positions": 12,
    }
    assert figures["middle"] == {
        "positions": 0,
        "search": {"optimal": None, "exactly_optimal": None, "exact_positions": 0},
    }
    assert "policy" not in figures["late"]  # a player without a policy network
    figures = measure_accuracy(GAME, Fixed(positions, vertices, wrong), benchmark, vertices, rng)
    assert figures["late"]["search"]["optimal"] == 0.0
    # half the positions right: 0.5; a sample of 4 a band counts 4
    half = {
        v: (exact(p) if i % 2 else wrong(p)) for i, (p, v) in enumerate(zip(positions, vertices))
    }
    player = Fixed(positions, vertices, exact)
    player.moves = half
    assert (
        measure_accuracy(GAME, player, benchmark, vertices, rng)["late"]["search"]["optimal"] == 0.5
    )
    assert (
        measure_accuracy(GAME, player, benchmark, vertices, rng, per_band=4)["late"]["positions"]
        == 4
    )


@pytest.mark.parametrize(
    "text, problem",
    [
        ("", "no '# {...}' header"),
        ("# {not json\n", "header line is not JSON"),
        ('# {"format": "other"}\n', "format is not"),
        ('# {"format": "gamegym-positions", "version": 9}\n', "version 9"),
        ("HEADER\nlate\t3 3\t0 1 0 0 0 0 0\n", "3 tab-separated fields"),
        ("HEADER\nearly\t3 3\t0 1 0 0 0 0 0\t? ? ? ? ? ? ?\n", "band 'early'"),
        ("HEADER\nlate\t3 x\t0 1 0 0 0 0 0\t? ? ? ? ? ? ?\n", "actions are not integers"),
        ("HEADER\nlate\t3 3\t0 1 0 0 0 0\t? ? ? ? ? ?\n", "6 entries where the game has 7"),
        ("HEADER\nlate\t3 3\t0 2 0 0 0 0 0\t? ? ? ? ? ? ?\n", "values must be -1, 0 or 1"),
        ("HEADER\nlate\t3 3\t0 w 0 0 0 0 0\t? ? ? ? ? ? ?\n", "'w' is not a number"),
        ("HEADER\nlate\t3 3\t0 1 0 0 0 0 0\t1 . 2 3 4 5 6\n", "scores' legal actions differ"),
    ],
)
def test_a_malformed_file_is_named_with_its_line(tmp_path, text, problem):
    header = "# " + json.dumps({"format": "gamegym-positions", "version": 1, **HEADER})
    (tmp_path / "b.tsv").write_text(text.replace("HEADER", header))
    with pytest.raises(ValueError, match=problem):
        load_positions(tmp_path / "b.tsv")


def test_a_file_for_another_game_fails_on_its_first_position(tmp_path):
    positions, _ = solved_positions(2)
    write_positions(tmp_path / "b.tsv", HEADER, positions)
    with pytest.raises(ValueError, match="not for this game"):
        load_positions(tmp_path / "b.tsv").vertices(ConnectFour(rows=6, columns=5))


def test_the_connect_four_benchmark_is_solved_informative_and_without_repeats():
    benchmark = load_positions(GAME.benchmark_positions)
    vertices = benchmark.vertices(GAME)
    assert benchmark.header["game"] == "games.connectfour:ConnectFour"
    assert benchmark.bands == ("early", "middle", "late")
    for band, (low, high) in benchmark.header["bands"].items():
        in_band = [p for p in benchmark.positions if p.band == band]
        assert len(in_band) >= 300, band
        assert all(low <= len(p.actions) <= high for p in in_band)
    assert all(p.optimal != set(p.values) for p in benchmark.positions)  # a mistake is possible
    keys = {min(v, GAME.transform(v, 1)) for v in vertices}
    assert len(keys) == len(vertices)  # no position twice, up to the mirror
    # a sample of the middle and late positions solved again agrees with the file
    solver = ConnectFourSolver(GAME, table_bits=20)
    rng = np.random.default_rng(0)
    late = [i for i, p in enumerate(benchmark.positions) if p.band in ("middle", "late")]
    for i in rng.choice(late, size=30 if numba_available() else 5, replace=False):
        position, vertex = benchmark.positions[i], vertices[i]
        weak = {a: int(np.sign(s)) for a, s in solver.move_scores(vertex, weak=True).items()}
        assert weak == position.values
        if position.scores is not None and len(position.actions) >= 20:
            assert solver.move_scores(vertex) == position.scores


def test_the_command_measures_the_starter_network_band_by_band(capsys):
    model = INITIAL_MODELS / "connectfour.keras"
    argv = ["bench", "accuracy", str(model), "--game", "games.connectfour:ConnectFour"]
    assert main([*argv, "--per-band", "4", "--searchcount", "8", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert set(record["bands"]) == {"early", "middle", "late"}
    for row in record["bands"].values():
        assert row["positions"] == 4
        for kind in ("policy", "search"):
            figures = row[kind]
            assert 0.0 <= figures["optimal"] <= 1.0
            assert figures["exact_positions"] <= 4  # those with every score known
            if figures["exact_positions"]:
                assert 0.0 <= figures["exactly_optimal"] <= 1.0
            else:
                assert figures["exactly_optimal"] is None


@pytest.mark.parametrize(
    "argv, problem",
    [
        (["nowhere"], "neither a session folder nor a model file"),
        ([str(INITIAL_MODELS / "connectfour.keras")], "needs --game"),
        (
            [str(INITIAL_MODELS / "tictactoe.keras"), "--game", "games.tictactoe:TicTacToe"],
            "has no solved-position benchmark",
        ),
    ],
)
def test_bad_targets_are_named(argv, problem, capsys):
    assert main(["bench", "accuracy", *argv]) == 2
    assert problem in capsys.readouterr().err
