"""The session folder: lock, model registry, atomic files."""

import json
import os
import subprocess
import sys

import pytest

from gamegym.config import GymConfig
from gamegym.data.fileio import (
    append_jsonl,
    atomic_write_json,
    read_jsonl,
    remove_leftovers,
    temporary_path,
)
from gamegym.data.session import Session, SessionError, SessionLockedError


def make_session(tmp_path):
    session = Session(tmp_path / "s")
    session.create(GymConfig(game="games.tictactoe:TicTacToe"))
    return session


def test_create_makes_the_layout(tmp_path):
    session = make_session(tmp_path)
    for name in ("models", "samples", "train", "monitoring", "plots", "logs"):
        assert (session.path / name).is_dir()
    assert session.load_config().game == "games.tictactoe:TicTacToe"
    with pytest.raises(SessionError, match="already exists"):
        session.create(GymConfig(game="games.tictactoe:TicTacToe"))


def test_missing_or_foreign_folder(tmp_path):
    with pytest.raises(SessionError, match="no session folder"):
        Session(tmp_path / "nothing").load_config()
    (tmp_path / "plain").mkdir()
    with pytest.raises(SessionError, match="is not a gamegym session"):
        Session(tmp_path / "plain").load_config()


@pytest.mark.slow
def test_second_lock_names_the_holder_and_stale_lock_is_taken_over(tmp_path):
    session = make_session(tmp_path)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys,time; from gamegym.data.session import Session; s=Session(sys.argv[1]); "
                "s.acquire_lock(); print('locked', flush=True); time.sleep(60)"
            ),
            str(session.path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(SessionLockedError, match=f"in use by gym process {holder.pid}"):
            Session(session.path).acquire_lock()
    finally:
        holder.kill()  # SIGKILL: the lock file stays behind
        holder.wait()
    assert session.lock_path.exists()
    other = Session(session.path)
    other.acquire_lock()  # stale: taken over
    assert json.loads(session.lock_path.read_text())["pid"] == os.getpid()
    other.release_lock()
    assert not session.lock_path.exists()


def test_atomic_json_and_leftovers(tmp_path):
    path = tmp_path / "a" / "x.json"
    atomic_write_json(path, {"k": 1})
    assert json.loads(path.read_text()) == {"k": 1}
    leftover = temporary_path(path)
    leftover.write_text("half")
    assert remove_leftovers(tmp_path) == 1
    assert not leftover.exists() and path.exists()


def test_a_line_appended_after_a_torn_one_is_kept(tmp_path):
    path = tmp_path / "evaluation" / "results.jsonl"
    append_jsonl(path, {"iteration": 1})
    with open(path, "a") as handle:  # a writer killed in the middle of its line
        handle.write('{"iteration": 2, "sco')
    append_jsonl(path, {"iteration": 3})
    append_jsonl(path, {"iteration": 4})
    assert read_jsonl(path) == [{"iteration": 1}, {"iteration": 3}, {"iteration": 4}]
    assert path.read_text().count("\n") == 4


def test_current_iteration_falls_back_to_newest_model_file(tmp_path):
    session = make_session(tmp_path)
    assert session.current_iteration() == -1
    (session.models_dir / "0.keras").write_bytes(b"x")
    (session.models_dir / "3.keras").write_bytes(b"x")
    (session.models_dir / "current.json").write_text("{broken")
    assert session.current_iteration() == 3


def test_damaged_newest_model_is_quarantined_and_the_previous_one_used(tmp_path):
    import zipfile

    session = make_session(tmp_path)
    for it in (0, 1, 2):
        with zipfile.ZipFile(session.model_path(it), "w") as archive:
            archive.writestr("config.json", "{}" * 500)
            archive.writestr("model.weights.h5", bytes(range(256)) * 40)
        atomic_write_json(session.models_dir / "current.json", {"iteration": it})
    data = session.model_path(2).read_bytes()
    session.model_path(2).write_bytes(data[: len(data) // 2])  # truncated
    raw = bytearray(session.model_path(1).read_bytes())
    raw[200:210] = bytes(b ^ 0xFF for b in raw[200:210])  # flipped bytes
    session.model_path(1).write_bytes(bytes(raw))
    assert session.recover_models() == 0
    assert session.current_iteration() == 0
    assert sorted(p.name.split("-")[-1] for p in session.quarantine_dir.iterdir()) == [
        "1.keras",
        "2.keras",
    ]
    assert session.model_iterations() == [0]


@pytest.mark.slow
def test_resume_with_a_config_on_a_running_session_is_refused_and_changes_nothing(tmp_path):
    session = make_session(tmp_path)
    before = session.config_path.read_bytes()
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps({"selfplay": {"search": {"searchcount": 7}}}))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys,time; from gamegym.data.session import Session; s=Session(sys.argv[1]); "
                "s.acquire_lock(); print('locked', flush=True); time.sleep(60)"
            ),
            str(session.path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "gamegym",
                "resume",
                str(session.path),
                "--config",
                str(changed),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode != 0
    assert f"in use by gym process {holder.pid}" in done.stderr
    assert session.config_path.read_bytes() == before


HOLD = (
    "import sys,time; from gamegym.data.session import Session; s=Session(sys.argv[1]); "
    "s.acquire_lock(); print('locked', flush=True); time.sleep(60)"
)


def test_a_lock_file_naming_a_live_process_of_another_host_but_held_by_none_is_taken_over(tmp_path):
    """The OS lock decides, not the pid in the file (on a shared folder it may be another
    machine's pid, alive here by chance)."""
    import psutil

    session = make_session(tmp_path)
    init = psutil.Process(1)
    session.lock_path.write_text(
        json.dumps(
            {"pid": 1, "create_time": init.create_time(), "started": 0, "host": "another-machine"}
        )
    )
    session.acquire_lock()
    assert json.loads(session.lock_path.read_text())["pid"] == os.getpid()
    session.release_lock()


@pytest.mark.slow
def test_a_held_lock_is_refused_whatever_its_file_says(tmp_path):
    session = make_session(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(session.path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        session.lock_path.write_text("")  # torn or emptied by hand, long ago
        os.utime(session.lock_path, (0, 0))
        with pytest.raises(SessionLockedError, match="is in use"):
            Session(session.path).acquire_lock()
        assert Session(session.path).lock_holder() is not None
    finally:
        holder.kill()
        holder.wait()
    assert Session(session.path).lock_holder() is None


@pytest.mark.slow
def test_of_many_gyms_racing_for_a_stale_lock_exactly_one_wins(tmp_path):
    session = make_session(tmp_path)
    session.lock_path.write_text(json.dumps({"pid": 999999, "create_time": 0, "started": 0}))
    race = (
        "import sys,time; from gamegym.data.session import Session, SessionLockedError\n"
        "s = Session(sys.argv[1]); time.sleep(max(0, float(sys.argv[2]) - time.time()))\n"
        "try:\n    s.acquire_lock(); print('won', flush=True); time.sleep(3)\n"
        "except SessionLockedError:\n    print('lost', flush=True)\n"
    )
    import time

    start = str(time.time() + 2.0)
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", race, str(session.path), start],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    outcomes = sorted(r.communicate(timeout=60)[0].strip() for r in racers)
    assert outcomes == ["lost"] * 5 + ["won"]


class ZipModel:
    """Saves a small zip with a config.json, as a Keras model file is."""

    def save(self, path):
        import zipfile

        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("config.json", "{}")


@pytest.mark.parametrize(
    "keep, kept", [(0, [0, 1, 2, 3, 4, 5]), (1, [0, 5]), (2, [0, 4, 5]), (9, [0, 1, 2, 3, 4, 5])]
)
def test_keep_models_keeps_the_newest_files_and_iteration_0(tmp_path, keep, kept):
    session = make_session(tmp_path)
    for iteration in range(6):
        session.publish_model(ZipModel(), iteration, keep=keep)
        assert session.current_iteration() == iteration
        assert session.model_path(iteration).is_file()  # the new one never goes
    assert session.model_iterations() == kept
    resumed = Session(session.path)
    assert resumed.recover_models() == 5 and resumed.model_is_sound(5)


def test_keep_models_is_checked():
    from gamegym.config import ConfigError

    with pytest.raises(ConfigError, match="keep_models"):
        GymConfig(game="games.tictactoe:TicTacToe", train={"keep_models": -1})


# a gym in miniature: takes the lock, starts a child that holds it with it, says so, waits
GYM_WITH_A_CHILD = """
import multiprocessing, os, signal, sys, time
from gamegym.data.session import Session

def child(lock, stop_first):
    if stop_first == "stop":
        os.kill(os.getpid(), signal.SIGSTOP)
    time.sleep(float(sys.argv[3]))

if __name__ == "__main__":
    s = Session(sys.argv[1])
    s.acquire_lock()
    ctx = multiprocessing.get_context("spawn")
    p = ctx.Process(target=child, args=(s.held_lock(), sys.argv[2]))
    p.start()
    s.record_child("trainer", p.pid)
    print(p.pid, flush=True)
    time.sleep(60)
"""


def start_gym_with_a_child(tmp_path, session, how: str, child_seconds: float):
    script = tmp_path / "gym.py"
    script.write_text(GYM_WITH_A_CHILD)
    gym = subprocess.Popen(
        [sys.executable, str(script), str(session.path), how, str(child_seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    return gym, int(gym.stdout.readline())


@pytest.mark.slow
def test_the_lock_holds_until_the_last_child_of_a_killed_gym_has_exited(tmp_path):
    """`kill -STOP <child>; kill -9 <gym>`: a new gym is refused, naming the stopped child,
    until it is gone; a child that exits by itself within the wait is waited for."""
    import signal
    import time

    import psutil

    session = make_session(tmp_path)
    gym, child = start_gym_with_a_child(tmp_path, session, "stop", 60)
    try:
        deadline = time.monotonic() + 30
        while psutil.Process(child).status() != psutil.STATUS_STOPPED:
            assert time.monotonic() < deadline, "the child never stopped"
            time.sleep(0.05)
        gym.kill()
        gym.wait()
        gym.stdout.close()
        told = []
        with pytest.raises(SessionLockedError) as refused:
            Session(session.path).acquire_lock(wait=1.0, waiting=told.append)
        message = str(refused.value)
        assert f"whose gym (pid {gym.pid}) is gone: trainer (pid {child}, stopped)" in message
        assert f"kill -CONT {child}" in message
        assert len(told) == 1 and f"trainer (pid {child})" in told[0]
    finally:
        os.kill(child, signal.SIGKILL)
    wait_gone(child)
    other = Session(session.path)
    # the last one gone, the lock is free: a process shows as a zombie once its first thread
    # has exited, and its other threads may hold the lock's file a moment longer
    other.acquire_lock(wait=5.0)
    other.release_lock()

    gym, child = start_gym_with_a_child(tmp_path, session, "run", 2.0)
    gym.kill()
    gym.wait()
    gym.stdout.close()
    told = []
    waited = Session(session.path)
    waited.acquire_lock(wait=30.0, waiting=told.append)  # the child ends within it
    wait_gone(child)  # it exited: nothing else let the lock go
    assert len(told) == 1 and "waiting up to 30 s for the processes of the previous run" in told[0]
    waited.release_lock()


def wait_gone(pid: int) -> None:
    """Until the process has exited (a zombie has: no one may reap an orphan here)."""
    import time

    import psutil

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} is still running")
