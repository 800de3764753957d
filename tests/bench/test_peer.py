"""`gamegym bench peer openspiel` on tiny budgets: every side's figures, the ratios taken from
the report's own rates, OpenSpiel's C++ side skipped with its reason when pyspiel lacks it, the
moonshot ratio against a stand-in for the end-to-end run, and the JSON keys."""

import json
import re
import statistics

import pytest

from gamegym.bench import peer
from gamegym.bench.peer import PeerSettings, print_peer_report, run_peer_bench
from gamegym.bench.throughput import ThroughputSettings
from gamegym.cli.main import parse_args

pyspiel = pytest.importorskip("pyspiel", reason="the optional extra openspiel is not installed")

TICTACTOE = "games.tictactoe:TicTacToe"
TINY = {"seconds": 0.2, "searchcount": 10, "threads": 4, "slices": 2, "games": (TICTACTOE,)}
SIDES = ("ours_1", "ours_4", "openspiel", "openspiel_cpp")
# the keys the JSON had before the C++ side and the moonshot; they keep their meaning
TOP_KEYS = {"searchcount", "threads", "exploration_const", "seconds", "slices", "games"}
ROW_KEYS = {"game", "game_args", "openspiel_game", "ratio_1", "ratio_threads"}
SIDE_KEYS = {"searches_per_s", "searches_per_wall_s", "games", "seconds", "cpu_seconds"}


def _bench_figures() -> dict:
    """What the throughput bench's end-to-end run returns, as a stand-in: 3,000 searches/s on
    2 cores, 1,600 per CPU-second, efficiency 0.4."""
    return {
        "searches_per_s": 3000.0,
        "searches_per_cpu_s": 1600.0,
        "positions_per_s": 30.0,
        "efficiency": 0.4,
        "cpu_efficiency": 0.45,
        "cpu_by_role": {"selfplayer": 180.0},
        "network_path": "onnx, in the Selfplayers",
        "mean_batch": 16.0,
        "config": {"cores": 2},
    }


def _close(ratio: float, numerator: float, denominator: float, digits: int) -> bool:
    """The ratio as the report rounded it, from rates the report rounded to 0.1."""
    return ratio == pytest.approx(numerator / denominator, abs=10**-digits, rel=1e-3)


def test_every_side_plays_and_the_ratios_are_its_own_rates():
    figures = run_peer_bench(PeerSettings(**TINY))
    (row,) = figures["games"]
    assert row["openspiel_game"] == "tic_tac_toe"
    for side in SIDES:
        assert set(row[side]) >= SIDE_KEYS
        assert row[side]["games"] >= 1 and row[side]["searches_per_s"] > 0
    rate = {side: row[side]["searches_per_s"] for side in SIDES}
    assert _close(row["ratio_1"], rate["ours_1"], rate["openspiel"], 2)
    assert _close(row["ratio_threads"], rate["ours_4"], rate["openspiel"], 2)
    assert _close(row["ratio_cpp_1"], rate["ours_1"], rate["openspiel_cpp"], 3)
    assert _close(row["ratio_cpp_threads"], rate["ours_4"], rate["openspiel_cpp"], 3)
    assert _close(row["cpp_vs_python"], rate["openspiel_cpp"], rate["openspiel"], 2)
    assert "RandomRolloutEvaluator with 1 rollout" in figures["openspiel_cpp_evaluator"]
    assert figures["openspiel_cpp_skipped"] is None
    assert figures["end_to_end_runs"] == 0 and "moonshot" not in row


def test_a_pyspiel_without_the_cpp_bot_skips_that_side_and_says_why(monkeypatch, capsys):
    monkeypatch.delattr(pyspiel, "MCTSBot")
    figures = run_peer_bench(PeerSettings(**TINY))
    (row,) = figures["games"]
    assert "openspiel_cpp" not in row and row["openspiel"]["games"] >= 1
    assert row["ratio_cpp_1"] is row["ratio_cpp_threads"] is row["cpp_vs_python"] is None
    assert figures["openspiel_cpp_evaluator"] is None
    assert "skipped" in figures["openspiel_cpp_skipped"]
    assert "MCTSBot" in figures["openspiel_cpp_skipped"]
    print_peer_report(figures)
    out = capsys.readouterr().out
    assert "OpenSpiel's C++ side: skipped: this pyspiel has no MCTSBot" in out


def test_the_moonshot_is_each_end_to_end_run_over_the_python_bot_around_it(capsys):
    calls = []

    def fake_self_play(settings):
        calls.append(settings)
        rate = 1000.0 * len(calls)  # a different figure each run
        return {
            "searches_per_s": 2 * rate,
            "searches_per_cpu_s": rate,
            "searches_per_s_per_core": rate,
            "efficiency": 0.5,
        }

    settings = PeerSettings(**TINY, end_to_end_seconds=3.0, end_to_end_runs=2, selfplayers=2)
    figures = run_peer_bench(settings, self_play=fake_self_play)
    # on the bench's core, with the preset's network and precision, no network paths
    assert calls == [
        ThroughputSettings(
            TICTACTOE, {}, 3.0, selfplayers=2, threads=4, searchcount=10, network_seconds=0.0,
            core="auto",
        )
    ] * 2  # fmt: skip
    (row,) = figures["games"]
    peers = row["moonshot_peer_searches_per_s"]
    assert len(peers) == 2 and all(rate > 0 for rate in peers)
    for ratio, run, rate in zip(row["moonshot_runs"], row["end_to_end"], peers, strict=True):
        assert _close(ratio, run["searches_per_cpu_s"], rate, 3)
    assert row["moonshot"] == pytest.approx(statistics.median(row["moonshot_runs"]), abs=1e-3)
    assert row["moonshot_wall"] > 0
    assert figures["end_to_end_runs"] == 2 and "CPU-second" in figures["moonshot_unit"]
    print_peer_report(figures)
    out = capsys.readouterr().out
    assert f"moonshot {row['moonshot']:.2f}x" in out and "per core" in out


def test_the_end_to_end_runs_take_the_network_and_precision_asked_for(monkeypatch, capsys):
    from gamegym.bench import throughput

    asked = []

    def fake_run_bench(settings):
        asked.append(settings)
        return _bench_figures()

    monkeypatch.setattr(throughput, "run_bench", fake_run_bench)
    network = {"kind": "residual", "width": 24, "blocks": 3}
    figures = run_peer_bench(
        PeerSettings(**TINY, end_to_end_seconds=1.0, network=network, precision="int8")
    )
    (settings,) = asked
    assert (settings.network_seconds, settings.core) == (0.0, "auto")
    assert (settings.network, settings.precision) == (network, "int8")
    assert figures["end_to_end_network"] == network
    assert figures["end_to_end_precision"] == "int8"
    print_peer_report(figures)
    out = capsys.readouterr().out
    assert 'with the network {"kind": "residual", "width": 24, "blocks": 3}, int8' in out
    with pytest.raises(ValueError, match=r"precision must be one of .*'int8'.*got 'int4'"):
        PeerSettings(**TINY, end_to_end_seconds=1.0, precision="int4")
    with pytest.raises(ValueError, match=r"'network\.widht'; did you mean 'network\.width'"):
        PeerSettings(**TINY, end_to_end_seconds=1.0, network={"widht": 24})
    assert len(asked) == 1  # neither ran


def test_one_end_to_end_run_is_measured_against_the_whole_race():
    def fake_self_play(settings):
        return {"searches_per_cpu_s": 5000.0, "searches_per_s_per_core": 5000.0}

    figures = run_peer_bench(PeerSettings(**TINY, end_to_end_seconds=1.0), self_play=fake_self_play)
    (row,) = figures["games"]
    assert row["moonshot_peer_searches_per_s"] == [
        pytest.approx(row["openspiel"]["searches_per_s"], abs=0.1)
    ]
    assert _close(row["moonshot"], 5000.0, row["openspiel"]["searches_per_s"], 3)


def test_the_end_to_end_figures_come_from_the_throughput_bench_per_core(monkeypatch):
    from gamegym.bench import throughput

    def fake_run_bench(settings):
        # no network paths, only the end to end, on the core asked for
        assert (settings.network_seconds, settings.core) == (0.0, "python")
        return _bench_figures()

    monkeypatch.setattr(throughput, "run_bench", fake_run_bench)
    run = peer.alphazero_self_play(
        ThroughputSettings(TICTACTOE, {}, 5.0, 4, 24, 100, network_seconds=0.0, core="python")
    )
    assert run["cores"] == 2  # four Selfplayers on two cores
    assert run["searches_per_s_per_core"] == 1500.0
    assert run["searches_per_cpu_s"] == 1600.0 and run["efficiency"] == 0.4


def test_a_game_the_bench_does_not_have_is_named_with_its_games():
    with pytest.raises(ValueError, match=r"no game games\.nope:Nope; its games are .*TicTacToe"):
        run_peer_bench(PeerSettings(**{**TINY, "games": ("games.nope:Nope",)}))
    with pytest.raises(ValueError, match=r"end-to-end runs >= 1 .*got 1.0, 0, 4"):
        PeerSettings(**TINY, end_to_end_seconds=1.0, end_to_end_runs=0)


def test_the_command_prints_the_json_keys_of_before_and_the_new_ones(capsys):
    args = parse_args(
        [
            "bench",
            "peer",
            "openspiel",
            "--game",
            TICTACTOE,
            "--seconds",
            "0.2",
            "--searchcount",
            "10",
            "--threads",
            "4",
            "--slices",
            "1",
            "--json",
        ]
    )
    assert args.run(args) == 0
    figures = json.loads(capsys.readouterr().out)
    new_top = {"openspiel_cpp_evaluator", "openspiel_cpp_skipped", "end_to_end_runs"}
    assert TOP_KEYS | new_top <= set(figures)
    (row,) = figures["games"]
    assert ROW_KEYS | {"ratio_cpp_1", "ratio_cpp_threads", "cpp_vs_python"} <= set(row)
    assert all(set(row[side]) >= SIDE_KEYS for side in SIDES)


def test_our_sides_search_on_the_core_asked_for(monkeypatch):
    pytest.importorskip("numba", reason='numba is not installed: pip install -e ".[fast]"')
    from gamegym.bench import peersides

    made = []
    real = peersides.make_search

    def recording(*args):
        made.append(real(*args))
        return made[-1]

    monkeypatch.setattr(peersides, "make_search", recording)
    for core, kind in (("python", "Search"), ("compiled", "FlatSearch")):
        made.clear()
        figures = run_peer_bench(PeerSettings(**TINY, core=core))
        assert figures["search_core"] == core
        assert [type(search).__name__ for search in made] == [kind, kind]  # ours_1, ours_4
    with pytest.raises(ValueError, match=r"core must be one of \['auto', 'python', 'compiled'\]"):
        PeerSettings(**TINY, core="fast")


def test_the_command_reads_the_end_to_end_network_and_precision(capsys):
    base = ["bench", "peer", "openspiel", "--end-to-end-seconds", "5"]
    args = parse_args([*base, "--network", '{"width": 24}', "--precision", "int8"])
    assert args.network == {"width": 24} and args.precision == "int8"
    defaults = parse_args(base)
    assert defaults.network is None and defaults.precision == "float32"
    for wrong, says in (
        (["--network", "[24]"], "must be a JSON object"),
        (["--precision", "int4"], "invalid choice: 'int4'"),
    ):
        with pytest.raises(SystemExit):
            parse_args([*base, *wrong])
        assert says in capsys.readouterr().err


def test_the_bench_draws_each_games_slices_and_end_to_end_runs():
    """On a terminal: one bar per game, a step per side's slice and per end-to-end run (the
    command draws them on stderr, gamegym.console)."""
    import io

    from gamegym.console import ProgressBars

    def fake_self_play(*args, **options):
        return {"searches_per_cpu_s": 5000.0, "searches_per_s_per_core": 5000.0}

    out = io.StringIO()
    with ProgressBars(enabled=True, file=out) as bars:
        settings = PeerSettings(**TINY, end_to_end_seconds=1.0)
        run_peer_bench(settings, self_play=fake_self_play, bars=bars)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())  # without colours
    sides = 4 if peer.cpp_missing(pyspiel) is None else 3
    steps = sides * 2 * 2 + 1  # sides x slices x groups of slices, and the run
    assert "TicTacToe(): slices" in text
    assert f"{steps}/{steps} steps" in text
