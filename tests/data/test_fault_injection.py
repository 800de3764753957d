"""The test-only switches of gamegym/data/faults.py the chaos soak uses: an injected ENOSPC
in the writer of one kind of file (the published file stays as it was, no temporary file is
left, each failure is recorded), and the `atomic_publish` mutation, which leaves the torn
file the soak must see, and the other protections the soak's mutation check switches off
where a unit can show them (the rest, a process's watch of its gym and the fast form of
averaged weights, only a running gym shows: `scripts/soak.py --mutation-check`)."""

import errno
import json

import pytest

from gamegym.data import faults
from gamegym.data.fileio import append_jsonl, atomic_write_bytes, read_jsonl, remove_leftovers
from gamegym.data.session import Session, SessionLockedError


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("s/samples/3/selfplayer0-1-000001-2-ab.npz", "sample"),
        ("s/samples/3/.selfplayer0-1-000001-2-ab.77.tmp.npz", "sample"),
        ("s/models/4.keras", "model"),
        ("s/models/4.fast.npz", "fastmodel"),
        ("s/models/current.json", "current"),
        ("s/runs.json", "runs"),
        ("s/session.lock", "lock"),
        ("s/replay/12.npz", "replay_state"),
        ("s/evaluation/results.jsonl", "results"),
        ("s/evaluation/ratings.json", "ratings"),
        ("s/monitoring/status.jsonl", "status"),
        ("s/train/4.json", "train_report"),
        ("s/plots/loss.png", "other"),
    ],
)
def test_each_session_file_has_its_kind(tmp_path, path, kind):
    assert faults.file_kind(tmp_path / path) == kind
    assert kind in faults.FILE_KINDS


def test_an_injected_enospc_hits_the_nth_write_of_its_kind_and_leaves_the_file_whole(
    tmp_path, monkeypatch
):
    record = tmp_path / "hits.txt"
    monkeypatch.setattr(faults, "_writes", {})
    monkeypatch.setenv(faults.ENOSPC_VAR, "current:2")
    monkeypatch.setenv(faults.RECORD_VAR, str(record))
    current = tmp_path / "models" / "current.json"
    atomic_write_bytes(current, b'{"iteration": 1}')  # the first write of its kind passes
    atomic_write_bytes(tmp_path / "models" / "1.fast.npz", b"x")  # another kind: untouched
    with pytest.raises(OSError) as caught:
        atomic_write_bytes(current, b'{"iteration": 2}')
    assert caught.value.errno == errno.ENOSPC
    assert current.read_bytes() == b'{"iteration": 1}'  # the old file, whole
    assert [p.name for p in current.parent.iterdir() if ".tmp" in p.name] == []
    [line] = record.read_text().splitlines()
    assert line.split()[0] == "current" and line.split()[2] == str(current)


def test_an_injected_enospc_in_an_append_and_the_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(faults, "_writes", {})
    status = tmp_path / "monitoring" / "status.jsonl"
    append_jsonl(status, {"n": 1})
    monkeypatch.setenv(faults.ENOSPC_VAR, "status:1,lock:1")
    with pytest.raises(OSError, match="No space left"):
        append_jsonl(status, {"n": 2})
    assert read_jsonl(status) == [{"n": 1}]  # the torn half line is skipped by the reader
    (tmp_path / "s").mkdir()
    with pytest.raises(OSError, match="No space left"):
        Session(tmp_path / "s").acquire_lock(wait=0)


def test_unset_the_switches_change_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv(faults.ENOSPC_VAR, raising=False)
    monkeypatch.delenv(faults.MUTATE_VAR, raising=False)
    path = tmp_path / "runs.json"
    for n in range(3):
        atomic_write_bytes(path, json.dumps(n).encode())
    assert json.loads(path.read_text()) == 2 and not faults.mutated("atomic_publish")


def test_the_atomic_publish_mutation_leaves_a_torn_file(tmp_path, monkeypatch):
    """What the soak's mutation check relies on: with the protection off, a write that finds
    the disk full leaves half a file under the published name."""
    monkeypatch.setattr(faults, "_writes", {})
    monkeypatch.setenv(faults.MUTATE_VAR, "atomic_publish")
    monkeypatch.setenv(faults.ENOSPC_VAR, "ratings:2")
    path = tmp_path / "evaluation" / "ratings.json"
    atomic_write_bytes(path, b"0123456789")
    with pytest.raises(OSError):
        atomic_write_bytes(path, b"abcdefghij")
    assert path.read_bytes() == b"abcde"


def test_the_atomic_publish_mutation_tears_a_sample_file_in_place_and_never_replaces_one(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(faults, "_writes", {})
    monkeypatch.setenv(faults.MUTATE_VAR, "atomic_publish")
    monkeypatch.setenv(faults.ENOSPC_VAR, "sample:2")
    folder = tmp_path / "samples" / "3"
    atomic_write_bytes(folder / "a.npz", b"0123456789", replace=False)
    with pytest.raises(FileExistsError):  # a published name stays taken, mutated or not
        atomic_write_bytes(folder / "a.npz", b"abcdefghij", replace=False)
    with pytest.raises(OSError, match="No space left"):
        atomic_write_bytes(folder / "b.npz", b"abcdefghij", replace=False)
    assert (folder / "a.npz").read_bytes() == b"0123456789"
    assert (folder / "b.npz").read_bytes() == b"abcde"  # torn, under its own name


def test_the_tidy_mutation_leaves_a_failed_write_s_temporary_file(tmp_path, monkeypatch):
    monkeypatch.setattr(faults, "_writes", {})
    monkeypatch.setenv(faults.ENOSPC_VAR, "sample:1")
    folder = tmp_path / "samples" / "3"
    with pytest.raises(OSError):
        atomic_write_bytes(folder / "a.npz", b"0123456789", replace=False)
    assert list(folder.iterdir()) == []  # the protection: the writer removes its temporary
    monkeypatch.setenv(faults.MUTATE_VAR, "tidy")
    with pytest.raises(OSError):
        atomic_write_bytes(folder / "b.npz", b"0123456789", replace=False)
    [left] = folder.iterdir()
    assert left.name.startswith(".b.") and ".tmp" in left.name
    assert remove_leftovers(tmp_path) == 0 and left.exists()  # and no tidy-up removes it
    monkeypatch.delenv(faults.MUTATE_VAR)
    assert remove_leftovers(tmp_path) == 1 and not left.exists()


class TornSave:
    """A model whose file cannot be written: the disk is full."""

    def save(self, path):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))


def test_the_publish_order_mutation_names_a_model_that_is_not_there(tmp_path, monkeypatch):
    """current.json names a model only once its file is in place; switched off, a model that
    could not be written is named, and the gym's next start steps back to the one there is."""
    session = Session(tmp_path / "s")
    session.models_dir.mkdir(parents=True)
    (session.models_dir / "0.keras").write_bytes(zipped())
    with pytest.raises(OSError):
        session.publish_model(TornSave(), 1)
    assert session.current_iteration() == -1  # current.json was never written
    monkeypatch.setenv(faults.MUTATE_VAR, "publish_order")
    with pytest.raises(OSError):
        session.publish_model(TornSave(), 1)
    assert session.current_iteration() == 1 and not session.model_path(1).exists()
    assert session.recover_models() == 0 == session.current_iteration()  # back it goes


def test_the_stale_lock_mutation_takes_a_dead_gym_s_record_for_a_held_lock(tmp_path, monkeypatch):
    session = Session(tmp_path / "s")
    session.path.mkdir()
    dead = {"pid": 2**22 + 1, "create_time": 0.0, "started": 0.0, "host": "", "children": {}}
    session.lock_path.write_text(json.dumps(dead))  # left by a gym killed with SIGKILL
    session.acquire_lock(wait=0)  # the OS lock is free: the record is only information
    session.lock.release()
    session.lock_path.write_text(json.dumps(dead))
    monkeypatch.setenv(faults.MUTATE_VAR, "stale_lock")
    with pytest.raises(SessionLockedError, match="is in use"):
        session.acquire_lock(wait=0)


def zipped() -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("config.json", "{}")
    return buffer.getvalue()
