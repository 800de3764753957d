"""`gamegym bench training`: the training step's paths side by side on a learner's own
self-play samples or a session's window, and the Trainer's share of a session's run."""

import json

import pytest
from conftest import TICTACTOE

from gamegym.bench.training import TrainingPath, parse_paths, reanalysed_share, trainer_share
from gamegym.cli.main import main
from gamegym.data.session import Session


def test_the_trainer_share_is_training_against_the_wall_time_between_reports():
    reports = [
        {"iteration": 1, "time": 100.0, "timing": {"load": 1.0, "train": 9.0}},
        # 30 s later: 2 + 17 + 1 trained (the sampler's seconds are inside train), 10 waited
        {
            "iteration": 2,
            "time": 130.0,
            "timing": {"load": 2.0, "train": 17.0, "sampler": 5.0, "publish": 1.0},
        },
        {"iteration": 3, "time": 150.0, "seconds": 5.0},  # no timing: its seconds
    ]
    share = trainer_share(reports)
    assert share == {
        "iterations": 2,
        "first_iteration": 2,
        "last_iteration": 3,
        "wall_seconds": 50.0,
        "training_seconds": 25.0,
        "waiting_seconds": 25.0,
        "training_share": 0.5,
    }
    assert trainer_share(reports[:1]) == {}


def test_the_reanalysed_share_counts_the_samples_trained_on_with_reanalysed_targets():
    reports = [
        {"iteration": 1, "samples": 300},  # nothing reanalysed yet: no key
        {"iteration": 2, "samples": 500, "reanalysed": 100},
        {"iteration": 3, "samples": 200, "reanalysed": 150},
    ]
    assert reanalysed_share(reports) == {"samples": 1000, "reanalysed": 250, "share": 0.25}
    assert reanalysed_share([]) == {"samples": 0, "reanalysed": 0, "share": 0.0}


def test_paths_are_a_compile_setting_at_a_batch_size():
    assert parse_paths("traced, xla,xla@2x,traced@96,xla", 64) == [
        TrainingPath("traced", 64),
        TrainingPath("xla", 64),
        TrainingPath("xla", 128),
        TrainingPath("traced", 96),
    ]
    assert TrainingPath("xla", 128).label(64) == "xla@128"
    for bad, message in (
        ("jit", "the path is 'traced' or 'xla'"),
        ("xla@0", "BATCH is a minibatch size"),
        ("xla@twice", "BATCH is a minibatch size"),
        (",", "names no path"),
    ):
        with pytest.raises(ValueError, match=message):
            parse_paths(bad, 64)


def test_the_bench_times_each_path_on_the_learners_own_samples(capsys):
    code = main(
        [
            "bench",
            "training",
            "--game",
            TICTACTOE,
            "--learner",
            "alphazero",
            "--steps",
            "3",
            "--rounds",
            "1",
            "--path",
            "traced,xla,traced@2x",
            "--json",
        ]
    )
    assert code == 0
    printed = capsys.readouterr()
    progress = printed.err.strip().splitlines()
    assert any(line.startswith("[bench] training xla: round 1/1") for line in progress)
    (line,) = printed.out.strip().splitlines()  # --json: one object on stdout, nothing else
    figures = json.loads(line)
    assert figures["learner"] == "alphazero" and figures["preset"] == "tictactoe"
    assert figures["window"]["samples"] >= 3 * 64
    assert figures["default_compile"] == "traced"
    paths = figures["paths"]
    assert set(paths) == {"traced", "xla", "traced@128"}
    assert paths["xla"]["ran"] == "xla" and paths["traced@128"]["batchsize"] == 128
    assert paths["traced@128"]["learning_rate"] == pytest.approx(
        2 * paths["traced"]["learning_rate"]
    )
    for figure in paths.values():
        assert figure["samples_per_cpu_s"] > 0 and figure["samples_per_s"] > 0
        assert len(figure["losses"]) == 2  # the first round and the counted one
    assert paths["xla"]["loss_difference"] < 1e-3
    assert "loss_difference" not in paths["traced@128"]  # other minibatches: not comparable
    assert paths["traced"]["cpu_speedup"] == 1.0


def test_with_a_session_it_trains_on_its_window_and_reports_the_trainer_share(new_session, capsys):
    from gamegym.bench.windows import self_play_window
    from gamegym.data.samples import write_sample_file
    from gamegym.game.graph import load_game
    from gamegym.nets.tfsetup import configure_tensorflow, load_model

    path = new_session()
    session = Session(path)
    config = session.load_config()
    configure_tensorflow(use_gpu=False)
    model = load_model(session.model_path(0))
    window = self_play_window(load_game(TICTACTOE), config, model, 100, 2, seed=1)
    for n in (1, 2):
        session.write_train_report(
            n, {"iteration": n, "time": 10.0 * n, "timing": {"load": 0.5, "train": 2.5}}
        )
    records = []
    from gamegym.data.samples import GameRecord

    for game in sorted(set(window.game.tolist())):  # the window's games, as sample files
        rows = window.game == game
        records.append(
            GameRecord(
                x=list(window.x[rows]),
                pi=list(window.pi[rows]),
                action=list(window.action[rows]),
                root_value=list(window.root_value[rows]),
                legal=list(window.legal[rows]),
                result=1.0,
            )
        )
    write_sample_file(session.samples_dir / "0" / "played.npz", records)
    before = sorted(p.name for p in session.samples_dir.rglob("*"))
    code = main(["bench", "training", "--session", str(path), "--steps", "1", "--rounds", "1"])
    assert code == 0
    out = capsys.readouterr().out
    assert "traced" in out and "xla@" in out
    assert "training 3 s of 10 s (30%), waiting for samples 7 s" in out
    assert sorted(p.name for p in session.samples_dir.rglob("*")) == before  # read only


def test_a_game_and_a_session_at_once_are_refused(new_session, capsys):
    code = main(["bench", "training", "--game", TICTACTOE, "--session", str(new_session())])
    assert code == 2
    assert "give --game or --session, not both" in capsys.readouterr().err
