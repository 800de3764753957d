"""Sample files: round trip, value targets, damaged files quarantined."""

import numpy as np
import pytest

from gamegym.data.samplefolder import load_samples
from gamegym.data.samples import (
    GameRecord,
    n_step_value_targets,
    read_sample_file,
    write_sample_file,
)


def game(length, result=1.0, truncated=False, size=4, seed=0):
    rng = np.random.default_rng(seed)
    record = GameRecord(result=result, truncated=truncated)
    for step in range(length):
        record.x.append(np.full((2, 2), step, np.float32))
        pi = rng.dirichlet(np.ones(size)).astype(np.float32)
        record.pi.append(pi)
        record.action.append(int(np.argmax(pi)))
        record.root_value.append(0.1 * step)
        record.legal.append(np.ones(size, bool))
    return record


def test_value_targets_alternate_from_the_movers_view():
    assert game(4, result=1.0).value_targets().tolist() == [1, -1, 1, -1]
    assert game(3, result=-1.0).value_targets().tolist() == [-1, 1, -1]
    assert game(3, result=0.0).value_targets().tolist() == [0, 0, 0]


def test_truncated_game_bootstraps_from_the_last_search_value():
    z = game(3, truncated=True).value_targets()  # root values 0.0, 0.1, 0.2
    assert np.allclose(z, [0.2, -0.2, 0.2])


def test_n_step_targets_bootstrap_from_the_search_value_n_plies_later(tmp_path):
    samples = tmp_path / "samples"
    # root values 0.0, 0.1, ... per step; a won game of 5, a lost game of 3, a cut game of 4
    write_sample_file(
        samples / "0" / "a.npz",
        [game(5, result=1.0), game(3, result=-1.0), game(4, truncated=True)],
    )
    batch = load_samples(samples, min_iteration=0, max_count=100)
    assert np.array_equal(n_step_value_targets(batch, 0), batch.z)
    one = [
        -0.1,
        -0.2,
        -0.3,
        -0.4,
        1.0,  # -v[t+1]; at the last position its z, the result
        -0.1,
        -0.2,
        -1.0,  # the lost game (z -1, 1, -1 by mover)
        -0.1,
        -0.2,
        -0.3,
        0.3,
    ]  # the cut game's last z is its own search value
    assert np.allclose(n_step_value_targets(batch, 1), one)
    two = [0.2, 0.3, 0.4, -1.0, 1.0, 0.2, 1.0, -1.0, 0.2, 0.3, -0.3, 0.3]
    assert np.allclose(n_step_value_targets(batch, 2), two)
    assert np.array_equal(n_step_value_targets(batch, 5), batch.z)  # no game is longer than 5

    # row order does not matter; a game whose tail is not in the batch falls back to z
    shuffled = batch.take(np.random.default_rng(0).permutation(len(batch)))
    expected = dict(zip(zip(batch.game.tolist(), batch.step.tolist()), two))
    got = n_step_value_targets(shuffled, 2)
    assert np.allclose(
        got, [expected[key] for key in zip(shuffled.game.tolist(), shuffled.step.tolist())]
    )
    head = batch.take(np.arange(3))  # steps 0-2 of the won game
    assert np.allclose(n_step_value_targets(head, 2), [0.2, -1.0, 1.0])  # z: 1, -1, 1


def test_round_trip_and_window(tmp_path):
    samples = tmp_path / "samples"
    write_sample_file(samples / "0" / "a.npz", [game(3), game(2, result=-1.0)])
    write_sample_file(samples / "1" / "b.npz", [game(4)])
    data = read_sample_file(samples / "0" / "a.npz")
    assert data["x"].shape == (5, 2, 2) and data["x"].dtype == np.float32
    assert data["game"].tolist() == [0, 0, 0, 1, 1] and data["step"].tolist() == [0, 1, 2, 0, 1]
    assert data["result"].tolist() == [1.0, -1.0]
    batch = load_samples(samples, min_iteration=0, max_count=100)
    assert len(batch) == 9
    assert sorted(set(batch.iteration.tolist())) == [0, 1]
    assert len(set(batch.game.tolist())) == 3  # game ids unique across files
    newest = load_samples(samples, min_iteration=1, max_count=100)
    assert len(newest) == 4 and set(newest.iteration.tolist()) == {1}
    sources = {}
    capped = load_samples(samples, min_iteration=0, max_count=6, sources=sources)
    assert len(capped) == 6 and capped.iteration.tolist() == [1, 1, 1, 1, 0, 0]  # newest first
    assert sources == {"1/b.npz": 4, "0/a.npz": 2}  # the oldest file cut at max_count


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_damaged_file_is_quarantined_and_the_rest_loads(tmp_path, damage):
    samples = tmp_path / "samples"
    write_sample_file(samples / "0" / "good.npz", [game(3)])
    bad = samples / "0" / "bad.npz"
    write_sample_file(bad, [game(50, size=64, seed=1)])
    raw = bytearray(bad.read_bytes())
    if damage == "truncate":
        bad.write_bytes(bytes(raw[: len(raw) // 2]))
    else:
        middle = len(raw) // 2
        raw[middle : middle + 8] = bytes(b ^ 0xFF for b in raw[middle : middle + 8])
        bad.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="damaged sample file"):
        read_sample_file(bad)
    quarantine = tmp_path / "quarantine"
    batch = load_samples(samples, 0, 1000, quarantine_dir=quarantine)
    assert len(batch) == 3
    assert not bad.exists()
    assert [p.name.endswith("bad.npz") for p in quarantine.iterdir()] == [True]


def test_temporary_files_of_a_writer_are_not_samples(tmp_path):
    from gamegym.data.fileio import temporary_path
    from gamegym.data.samplefolder import SampleCounter, sample_files

    samples = tmp_path / "samples"
    write_sample_file(samples / "0" / "a.npz", [game(3)])
    temporary_path(samples / "0" / "b.npz").write_bytes(b"half-written")
    assert [p.name for p in sample_files(samples, 0)] == ["a.npz"]
    assert SampleCounter(samples).per_iteration() == {0: (3, 1)}
    assert len(load_samples(samples, 0, 100, quarantine_dir=tmp_path / "q")) == 3
    assert not (tmp_path / "q").exists()


def test_a_learners_own_columns_travel_with_the_samples(tmp_path):
    samples = tmp_path / "samples"
    games = [game(3, seed=1), game(2, seed=2)]
    for g, record in enumerate(games):
        record.extra["mask"] = [np.array([g, step, 1], np.float32) for step in range(len(record))]
    write_sample_file(samples / "0" / "a.npz", games)
    write_sample_file(samples / "1" / "b.npz", [game(4, seed=3)])  # a file without the column
    assert read_sample_file(samples / "0" / "a.npz")["mask"].shape == (5, 3)
    batch = load_samples(samples, min_iteration=0, max_count=100)
    assert len(batch) == 9 and "mask" not in batch.extra  # not in every file: left out
    (samples / "1" / "b.npz").unlink()
    only_a = load_samples(samples, min_iteration=0, max_count=100)
    assert only_a.extra["mask"].tolist() == [[0, 0, 1], [0, 1, 1], [0, 2, 1], [1, 0, 1], [1, 1, 1]]
    taken = only_a.take(np.array([4, 0]))
    assert taken.extra["mask"].tolist() == [[1, 1, 1], [0, 0, 1]]
    with pytest.raises(ValueError, match="one row per position"):
        bad = game(2)
        bad.extra["mask"] = [np.zeros(3)]
        write_sample_file(samples / "0" / "c.npz", [bad])
    with pytest.raises(ValueError, match="may not be named 'pi'"):
        bad = game(1)
        bad.extra["pi"] = [np.zeros(3)]
        write_sample_file(samples / "0" / "d.npz", [bad])


def test_writers_in_one_process_never_reuse_a_file_name(tmp_path):
    # a single-process run makes a writer per round; two rounds within one second once wrote
    # the same name, and the second file replaced the first
    from gamegym.runtime.selfplay import SampleWriter

    for _ in range(3):
        writer = SampleWriter(tmp_path, "debug")
        writer.add(game(3), 0)
        assert writer.flush() == 3
    assert len(list((tmp_path / "0").glob("*.npz"))) == 3
    assert len(load_samples(tmp_path, 0, 100)) == 9
