"""TensorBoard event files: what each process writes, read back with TensorBoard's own reader;
a record torn by a kill loses nothing written before it, and a resume goes on in the same run."""

from conftest import read_scalars

from gamegym.runtime.tensorboard import (
    BoardWriter,
    evaluation_scalars,
    status_scalars,
    train_scalars,
)


def test_scalars_of_two_runs_and_a_torn_record_read_back_as_one_run(tmp_path):
    first = BoardWriter(tmp_path, "trainer")
    for step in (1, 2):
        first.scalars(
            step,
            {"train/loss": 1.0 / step, "train/note": "not a number", "train/nan": float("nan")},
        )
    files = list(tmp_path.iterdir())
    assert len(files) == 1 and ".trainer." in files[0].name
    with open(files[0], "ab") as handle:  # killed in the middle of its next record
        handle.write(b"\x20\x00\x00\x00\x00\x00\x00\x00\x12\x34")
    second = BoardWriter(tmp_path, "trainer")  # the resumed run: a file of its own
    second.scalars(3, {"train/loss": 1.0 / 3})
    second.close()
    assert read_scalars(tmp_path) == {"train/loss": [(1, 1.0), (2, 0.5), (3, 1.0 / 3)]}


def test_a_writer_that_cannot_write_turns_itself_off(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    writer = BoardWriter(blocked / "tensorboard", "gym")
    writer.scalars(1, {"a": 1.0})  # logged, not raised
    writer.scalars(2, {"a": 2.0})
    assert writer._failed


def test_what_each_role_writes():
    report = {
        "iteration": 3,
        "samples": 500,
        "seconds": 1.5,
        "losses": {"loss": 1.2, "policy_loss": 0.9, "value_loss": 0.3},
    }
    assert train_scalars(report, 1e-3) == {
        "train/loss": 1.2,
        "train/policy_loss": 0.9,
        "train/value_loss": 0.3,
        "train/samples": 500,
        "train/seconds": 1.5,
        "train/learning_rate": 1e-3,
    }
    rows = [
        {"opponent": "random", "score": 0.75},
        {"opponent": "alphabeta:2", "score": 0.5},
        {"opponent": "iteration:2", "score": 0.625},
    ]
    assert evaluation_scalars(3, {"iteration:3": 250.0, "random": 0.0}, rows) == {
        "rating/elo": 250.0,
        "match/score_vs_random": 0.75,
        "match/score_vs_alphabeta2": 0.5,
        "match/score_vs_previous": 0.625,
    }
    status = {
        "searches_per_s": 900.0,
        "positions_per_s": 40.0,
        "games_per_s": 4.0,
        "samples_per_s": 38.0,
        "mean_batch": 7.5,
        "resources": {
            "gym": {"cpu_percent": 1.0, "rss_mib": 40.0},
            "selfplayer": {"cpu_percent": 95.0, "rss_mib": 90.0},
        },
    }
    assert status_scalars(status) == {
        "throughput/searches_per_s": 900.0,
        "throughput/positions_per_s": 40.0,
        "throughput/games_per_s": 4.0,
        "throughput/samples_per_s": 38.0,
        "predictor/mean_batch": 7.5,
        "memory/gym_rss_mib": 40.0,
        "cpu/gym_percent": 1.0,
        "memory/selfplayer_rss_mib": 90.0,
        "cpu/selfplayer_percent": 95.0,
    }
