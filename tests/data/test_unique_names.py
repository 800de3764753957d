"""Names never collide into an overwrite: a sample file is published under a name of its own
(a random token, not the clock or the pid) and never over an existing file; a quarantined file
never replaces an earlier one; appends and quarantine moves are fsynced."""

import errno
import itertools

import numpy as np
import pytest

from gamegym.data import fileio
from gamegym.data.samples import GameRecord, read_sample_file
from gamegym.runtime import selfplay
from gamegym.runtime.selfplay import SampleWriter


def game(n=3, value=0.5):
    record = GameRecord()
    for i in range(n):
        record.x.append(np.zeros((2,), np.float32))
        record.pi.append(np.full(4, 0.25, np.float32))
        record.action.append(i)
        record.root_value.append(value)
        record.legal.append(np.ones(4, bool))
    return record


@pytest.fixture(params=["links", "no links"])
def links(request, monkeypatch):
    """Both ways of publishing without replacing: a hard link, and (on a file system without
    hard links) a rename after a check."""
    if request.param == "no links":

        def refuse(source, target):
            raise OSError(errno.EPERM, "no hard links here")

        monkeypatch.setattr(fileio.os, "link", refuse)
    return request.param


def test_a_file_published_under_its_own_name_never_replaces_one_there(tmp_path, links):
    path = tmp_path / "samples" / "0" / "a.npz"
    fileio.atomic_write_bytes(path, b"first", replace=False)
    with pytest.raises(FileExistsError):
        fileio.atomic_write_bytes(path, b"second", replace=False)
    assert path.read_bytes() == b"first"
    assert [p.name for p in path.parent.iterdir()] == ["a.npz"]  # no temporary file left


def test_sample_file_names_are_unique_when_the_clock_steps_back_and_a_pid_is_reused(
    tmp_path, monkeypatch, links
):
    """Two Selfplayer processes of two runs with the same pid, the same sequence numbers and the
    clock set back between them: the second run's file once replaced the first run's."""
    monkeypatch.setattr(selfplay.time, "time", lambda: 1_700_000_000.0)
    monkeypatch.setattr(selfplay.os, "getpid", lambda: 4242)
    for value in (0.25, -0.25):
        monkeypatch.setattr(selfplay, "_FILE_NUMBERS", itertools.count(1))  # a new process
        writer = SampleWriter(tmp_path, "selfplayer0")
        writer.add(game(value=value), 0)
        assert writer.flush() == 3
    files = sorted((tmp_path / "0").glob("*.npz"))
    assert len(files) == 2
    assert sorted(float(read_sample_file(p)["root_value"][0]) for p in files) == [-0.25, 0.25]


def test_a_taken_sample_file_name_is_kept_and_the_file_goes_under_another(
    tmp_path, monkeypatch, caplog, links
):
    tokens = iter(["same", "same", "other"])
    monkeypatch.setattr(selfplay.secrets, "token_hex", lambda n: next(tokens))
    monkeypatch.setattr(selfplay.time, "time", lambda: 1_700_000_000.0)
    for value in (0.25, -0.25):
        monkeypatch.setattr(selfplay, "_FILE_NUMBERS", itertools.count(1))
        writer = SampleWriter(tmp_path, "selfplayer0")
        writer.add(game(value=value), 0)
        writer.flush()
    first = next((tmp_path / "0").glob("*-same.npz"))
    second = next((tmp_path / "0").glob("*-other.npz"))
    assert float(read_sample_file(first)["root_value"][0]) == 0.25  # not overwritten
    assert float(read_sample_file(second)["root_value"][0]) == -0.25
    assert "exists already" in caplog.text


def test_two_quarantines_of_one_name_within_a_second_keep_both_files(tmp_path, monkeypatch, links):
    monkeypatch.setattr(fileio.time, "time", lambda: 1_700_000_000.0)
    folder, quarantine = tmp_path / "samples" / "0", tmp_path / "quarantine"
    folder.mkdir(parents=True)
    moved = []
    for content in (b"first", b"second", b"third"):
        (folder / "a.npz").write_bytes(content)
        moved.append(fileio.quarantine(folder / "a.npz", quarantine))
    assert len(set(moved)) == 3 and all(p.name.endswith("-0-a.npz") for p in moved)
    assert sorted(p.read_bytes() for p in quarantine.iterdir()) == [b"first", b"second", b"third"]
    assert not (folder / "a.npz").exists()


def test_a_quarantine_move_is_made_durable_in_both_folders(tmp_path, monkeypatch):
    synced = []
    real = fileio._fsync_dir
    monkeypatch.setattr(fileio, "_fsync_dir", lambda folder: synced.append(folder) or real(folder))
    folder = tmp_path / "samples" / "0"
    folder.mkdir(parents=True)
    (folder / "a.npz").write_bytes(b"damaged")
    synced.clear()
    fileio.quarantine(folder / "a.npz", tmp_path / "quarantine")
    assert folder in synced and tmp_path / "quarantine" in synced


def test_an_appended_line_is_fsynced_and_a_new_file_made_durable_in_its_folder(
    tmp_path, monkeypatch
):
    files, folders = [], []
    real_fsync, real_dir = fileio.os.fsync, fileio._fsync_dir
    monkeypatch.setattr(fileio.os, "fsync", lambda fd: files.append(fd) or real_fsync(fd))
    monkeypatch.setattr(
        fileio, "_fsync_dir", lambda folder: folders.append(folder) or real_dir(folder)
    )
    path = tmp_path / "evaluation" / "results.jsonl"
    path.parent.mkdir()
    fileio.append_jsonl(path, {"iteration": 1})
    assert folders == [path.parent]
    written = len(files)
    assert written >= 2  # the file and its folder
    fileio.append_jsonl(path, {"iteration": 2})
    assert len(files) == written + 1 and folders == [path.parent]  # the file only
    assert [r["iteration"] for r in fileio.read_jsonl(path)] == [1, 2]
