"""`gamegym bench JOB`: one subcommand per benchmark module, each with only its own flags and
an example in its help; a bare `gamegym bench` lists them and runs nothing."""

import json
import time

import pytest
from conftest import TICTACTOE

from gamegym import bench
from gamegym.bench import learning, throughput
from gamegym.bench.learning import LearningSettings
from gamegym.cli.main import build_parser, main, parse_args

NAMES = {"throughput", "learning", "training", "accuracy", "replay", "calibrate", "peer"}


def test_the_bench_collects_one_subcommand_per_module(capsys):
    assert {module.COMMAND for module in bench.SUBCOMMANDS} == NAMES
    with pytest.raises(SystemExit) as stop:
        parse_args(["bench", "--help"])
    assert stop.value.code == 0
    listed = capsys.readouterr().out
    assert all(f"    {name}" in listed for name in NAMES)


@pytest.mark.parametrize("name", sorted(NAMES))
def test_each_subcommand_has_a_help_text_with_an_example(name, capsys):
    with pytest.raises(SystemExit) as stop:
        parse_args(["bench", name, "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    assert f"usage: gamegym bench {name}" in text
    example = text[text.index("example") :]
    assert f"gamegym bench {name}" in example


@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "learning", "--game", TICTACTOE, "--network-seconds", "3"],  # a throughput flag
        ["bench", "throughput", "--interval-seconds", "3"],  # a learning flag
        ["bench", "calibrate", "--learner", "muzero"],  # nobody's flag there
        ["bench", "peer", "openspiel", "--player", "random"],  # a calibrate flag
        ["bench", "replay", "--game", TICTACTOE, "--keep", "folder"],  # a learning flag
    ],
)
def test_a_subcommand_takes_only_its_own_flags(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(argv)
    assert stop.value.code == 2
    assert "unrecognized arguments" in capsys.readouterr().err


def test_a_bare_bench_lists_its_subcommands_and_runs_nothing(capsys, monkeypatch):
    for module in bench.SUBCOMMANDS:  # nothing may start: every job's command fails the test
        for name in dir(module):
            if name.startswith("cmd_"):
                monkeypatch.setattr(module, name, lambda args: pytest.fail("a bench ran"))
    assert main(["bench"]) == 2
    printed = capsys.readouterr()
    assert printed.out == "" and printed.err.startswith("usage: gamegym bench")
    assert all(f"    {name}" in printed.err for name in NAMES)


# ----- the learning bench's runs side by side --------------------------------------------------
def test_minutes_to_a_threshold_counts_from_where_the_curve_stays_there():
    from gamegym.bench.curve import minutes_to

    def point(minutes, losses, optimal, score):
        return {
            "minutes": minutes,
            "optimal_move_rate": optimal,
            "by_opponent": {
                "solver": {"losses": losses, "score": 0.5},
                "mcts:1000": {"losses": 0, "score": score},
            },
        }

    curve = [
        point(0, 5, 0.5, 0.2),
        point(2, 0, 0.92, 0.95),
        point(4, 1, 0.95, 0.7),
        point(6, 0, 0.96, 0.91),
        point(8, 0, 0.97, 0.93),
    ]
    assert minutes_to(curve) == {
        "no losses vs solver": 6,
        "90% vs mcts:1000": 6,
        "90% optimal moves": 2,
    }
    assert minutes_to(curve, score=0.99, optimal=0.99) == {
        "no losses vs solver": 6,
        "99% vs mcts:1000": None,
        "99% optimal moves": None,
    }
    assert minutes_to([]) == {}


def test_variants_and_seeds_make_one_run_each_with_the_same_budget(monkeypatch, tmp_path):

    calls = []

    def fake_run(settings, solver=None):
        calls.append(settings)
        return {
            "learner": settings.learner,
            "curve": [
                {"minutes": 0.0, "by_opponent": {"solver": {"losses": 3, "score": 0.2}}},
                {"minutes": 1.0, "by_opponent": {"solver": {"losses": 0, "score": 0.5}}},
            ],
        }

    monkeypatch.setattr(learning, "run_learning_bench", fake_run)
    monkeypatch.setattr(learning, "plot_curves", lambda runs, path: None)
    gumbel = {"selfplay": {"search": {"rule": "gumbel"}}}
    figures = learning.run_learning_benches(
        LearningSettings("games.tictactoe:TicTacToe", minutes=2.0, plot=tmp_path / "plot.png"),
        ["alphazero"],
        variants={"puct": {}, "gumbel": gumbel},
        seeds=(0, 1),
    )
    assert [(c.overrides, c.seed, c.minutes) for c in calls] == [
        (None, 0, 2.0),
        (None, 1, 2.0),
        (gumbel, 0, 2.0),
        (gumbel, 1, 2.0),
    ]
    assert [r["label"] for r in figures["runs"]] == [
        "puct seed 0",
        "puct seed 1",
        "gumbel seed 0",
        "gumbel seed 1",
    ]
    assert figures["minutes_to"]["gumbel seed 1"] == {"no losses vs solver": 1.0}


def test_a_variant_is_a_name_and_a_json_object():
    from gamegym.cli.main import build_parser

    args = build_parser().parse_args(
        [
            "bench",
            "learning",
            "--game",
            "games.tictactoe:TicTacToe",
            "--variant",
            "puct={}",
            "--variant",
            'gumbel={"selfplay": {"search": {"rule": "gumbel"}}}',
            "--seed",
            "0,1",
        ]
    )
    assert args.variant == [("puct", {}), ("gumbel", {"selfplay": {"search": {"rule": "gumbel"}}})]
    assert args.seed == [0, 1]
    for bad in ("gumbel", "=1", "x=[1]"):
        with pytest.raises(SystemExit):
            build_parser().parse_args(
                ["bench", "learning", "--game", "games.tictactoe:TicTacToe", "--variant", bad]
            )


def test_throughput_runs_each_precision_and_compares_it_with_the_first(monkeypatch, capsys):
    """`--precision float32,int8`: one run per learner and precision, in that order, each with
    its precision in the session config, the ratios labelled by learner and precision; an
    unknown precision and a batch size under 1 are named before anything runs."""
    calls = []

    def fake_run_bench(settings, bars=None):
        learner, precision = settings.learner, settings.precision
        calls.append((learner, precision))
        rate = 100.0 if precision == "float32" else 250.0
        label = learner if precision == "float32" else f"{learner} {precision}"
        return {"learner": learner, "label": label, "positions_per_s": rate, "searches_per_s": rate}

    monkeypatch.setattr(throughput, "run_bench", fake_run_bench)
    args = parse_args(["bench", "throughput", "--precision", "float32,int8", "--json"])
    assert args.run(args) == 0
    assert calls == [("alphazero", "float32"), ("alphazero", "int8")]
    figures = json.loads(capsys.readouterr().out)
    assert figures["vs_first"] == {
        "alphazero int8": {"positions_per_s": 2.5, "searches_per_s": 2.5}
    }
    with pytest.raises(SystemExit):
        parse_args(["bench", "throughput", "--precision", "float16"])
    assert "unknown float16; the known ones are float32, int8" in capsys.readouterr().err
    args = parse_args(["bench", "throughput", "--network-batchsize", "8,0"])
    with pytest.raises(ValueError, match=r"--network-batchsize \[8, 0\]: a batch holds at least 1"):
        args.run(args)
    assert len(calls) == 2


def test_throughput_runs_each_search_core_and_compares_it_with_the_first(monkeypatch, capsys):
    """`--core python,compiled`: one run per core, in that order, the ratios labelled by core;
    without the flag one run on the preset's core (None); an unknown core is named."""
    calls = []

    def fake_run_bench(settings, bars=None):
        core = settings.core
        calls.append(core)
        rate = 100.0 if core != "compiled" else 180.0
        label = "alphazero" if core is None else f"alphazero {core}"
        return {"label": label, "positions_per_s": rate, "searches_per_s": rate}

    monkeypatch.setattr(throughput, "run_bench", fake_run_bench)
    args = parse_args(["bench", "throughput", "--core", "python,compiled", "--json"])
    assert args.run(args) == 0
    assert calls == ["python", "compiled"]
    figures = json.loads(capsys.readouterr().out)
    assert figures["vs_first"] == {
        "alphazero compiled": {"positions_per_s": 1.8, "searches_per_s": 1.8}
    }
    args = parse_args(["bench", "throughput", "--json"])
    assert args.run(args) == 0 and calls[-1] is None
    with pytest.raises(SystemExit):
        parse_args(["bench", "throughput", "--core", "cython"])
    assert "--core: unknown cython; the known ones are auto, python" in capsys.readouterr().err


def test_throughput_runs_each_search_rule_on_each_core(monkeypatch, capsys):
    """`--search puct,gumbel --core python,compiled`: one run per rule and core, rules outer;
    an unknown rule is named with the registered ones."""
    calls = []

    def fake_run_bench(settings, bars=None):
        core, search = settings.core, settings.search
        calls.append((search, core))
        return {
            "label": f"alphazero {search} {core}",
            "positions_per_s": 1.0,
            "searches_per_s": 1.0,
        }

    monkeypatch.setattr(throughput, "run_bench", fake_run_bench)
    argv = ["bench", "throughput", "--search", "puct,gumbel", "--core", "python,compiled", "--json"]
    args = parse_args(argv)
    assert args.run(args) == 0
    assert calls == [
        ("puct", "python"), ("puct", "compiled"), ("gumbel", "python"), ("gumbel", "compiled")
    ]  # fmt: skip
    assert len(json.loads(capsys.readouterr().out)["vs_first"]) == 3
    with pytest.raises(SystemExit):
        parse_args(["bench", "throughput", "--search", "alphabeta"])
    assert "unknown alphabeta; the known ones are gumbel, puct" in capsys.readouterr().err


@pytest.mark.parametrize(
    "logged, evaluate_in_selfplayers, label",
    [
        ("onnx", True, "onnx, in the Selfplayers"),
        ("onnx int8", True, "onnx int8, in the Selfplayers"),
        ("onnx int8", False, "onnx int8, in the Predictor"),
        ("numpy", True, "numpy, in the Selfplayers"),
        ("tensorflow", True, "tensorflow, in the Predictor"),
    ],
)
def test_the_network_path_names_the_runner_its_precision_and_where_it_ran(
    tmp_path, logged, evaluate_in_selfplayers, label
):
    """The throughput figure's `network_path` from the Predictor's log line (its last load)."""
    from types import SimpleNamespace

    from gamegym.bench.endtoend import session_network_path
    from gamegym.config import GymConfig
    from gamegym.runtime.predictor import _path_name

    logs = tmp_path / "logs"
    logs.mkdir()
    model = tmp_path / "models" / "0.keras"
    runner, _, precision = logged.partition(" ")
    evaluator = SimpleNamespace(path=runner, precision=precision or "float32")
    (logs / "predictor.log").write_text(
        f"x INFO loaded model iteration 0 from {model} (tensorflow)\n"
        f"x INFO loaded model iteration 1 from {model} ({_path_name(evaluator)})\n"
    )
    config = GymConfig(
        game="games.tictactoe:TicTacToe",
        predict={"evaluate_in_selfplayers": evaluate_in_selfplayers},
    )
    session = SimpleNamespace(logs_dir=logs)
    assert session_network_path(config, session) == label
    assert session_network_path(config, SimpleNamespace(logs_dir=tmp_path / "none")) == "unknown"


class SlowFirstSide:
    """A side whose first game takes `first` seconds (a compiled search loading its kernels)
    and whose later games are quick; 10 searches a game."""

    def __init__(self, first: float):
        self.first, self.searches, self.games = first, 0, 0

    def play_game(self) -> None:
        time.sleep(self.first if self.games == 0 else 0.001)
        self.searches += 10
        self.games += 1


def test_the_race_plays_one_uncounted_game_per_side_first():
    from gamegym.bench.peersides import race

    sides = {"ours": SlowFirstSide(0.3), "peer": SlowFirstSide(0.0)}
    tally = race(sides, slice_seconds=0.05, slices=2)
    for name, side in sides.items():
        assert tally[name].games == side.games - 1  # all but the first
        assert tally[name].searches == 10 * tally[name].games
    assert tally["ours"].wall < 0.3  # the slow first game is not in the slices


def test_the_search_ceiling_leaves_out_its_first_game(monkeypatch):
    from gamegym.bench import ceiling
    from gamegym.config import GymConfig
    from games.tictactoe import TicTacToe

    played = []

    def game(graph, search, cfg, rng, record):
        time.sleep(0.3 if not played else 0.001)  # the first: kernels compiled or loaded
        played.append(search.searches_done)
        search.searches_done += 10

    monkeypatch.setattr(ceiling, "selfplay_game", game)
    cfg = GymConfig(
        game="games.tictactoe:TicTacToe", selfplay={"search": {"searchcount": 10}}
    ).selfplay
    figures = ceiling.search_ceiling(TicTacToe(), cfg, 0.1)
    assert len(played) > 2 and played[1] == 0  # the count starts again after the first game
    counted = len(played) - 1
    assert figures["games_per_s"] * 0.1 == pytest.approx(counted, rel=0.5)
    assert figures["searches_per_s"] == pytest.approx(10 * figures["games_per_s"])


def test_the_throughput_config_is_the_preset_with_the_runs_settings():
    """One way to a config: the learner preset's, with the run's self-play and predict
    settings; a network given replaces the preset's whole; Selfplayers never wait for a
    Trainer; a learner preset without settings for the game is named."""
    from gamegym.bench.throughput import ThroughputSettings, bench_config

    connectfour = "games.connectfour:ConnectFour"
    config = bench_config(ThroughputSettings(connectfour, threads=3, batchsize=8))
    assert (config.network.kind, config.network.width, config.network.blocks) == (
        "residual", 32, 3
    )  # fmt: skip
    assert (config.selfplay.search.threads, config.predict.batchsize) == (3, 8)
    assert config.selfplay.temperature_drop_move == 10  # the preset's
    assert config.status_interval == 0.0 and config.game_args == {"rows": 6, "columns": 7}
    dense = {"kind": "dense", "width": 16}
    config = bench_config(ThroughputSettings(connectfour, network=dense))
    assert (config.network.kind, config.network.width, config.network.blocks) == ("dense", 16, 2)
    config = bench_config(ThroughputSettings(connectfour, learner="bootstrapped"))
    assert config.learner_config.positions_per_iteration == 0
    assert config.learner_config.concurrent_games == 64  # the preset's own section
    settings = ThroughputSettings("games.santorini:Santorini", {"dimension": 4}, learner="muzero")
    assert bench_config(settings).train.learner == "muzero"  # no preset: defaults
    with pytest.raises(ValueError, match="'dqn' is only defined for the bundled games"):
        bench_config(ThroughputSettings("games.santorini:Santorini", learner="dqn"))


def test_the_curves_go_beside_the_run_never_into_the_current_folder(tmp_path, monkeypatch):
    """`--plot` where asked; else in the kept session's plots folder (several runs: the folder
    that holds them); else a new file in the temporary folder."""
    import tempfile
    from pathlib import Path

    monkeypatch.chdir(tmp_path)
    where = learning.plot_destination
    assert where(Path("mine.png"), tmp_path / "kept", 1, "learning") == Path("mine.png")
    assert where(None, tmp_path / "kept", 1, "learning") == tmp_path / "kept/plots/learning.png"
    assert where(None, tmp_path / "kept", 4, "learning") == tmp_path / "kept/learning.png"
    first, second = where(None, None, 1, "replay"), where(None, None, 1, "learning")
    assert first.parent == second.parent == Path(tempfile.gettempdir())
    assert first.name.startswith("gamegym-bench-replay-") and first.suffix == ".png"
    assert not any(tmp_path.iterdir())  # nothing made here, nor in the temporary folder yet
    assert not first.exists()
