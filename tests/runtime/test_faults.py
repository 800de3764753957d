"""Fault tests with real processes: SIGKILL, a second gym, dead workers, orphans."""

import json
import os
import re
import signal
import subprocess
import time

import psutil
import pytest
from conftest import finish, gamegym_command

from gamegym.data.samples import read_sample_file

pytestmark = pytest.mark.slow

CHANGES = {  # two Selfplayers, so one can die while the other plays on
    "selfplay": {"selfplayprocesses": 2, "gamelog_dump_threshold": 3},
    "train": {"max_samplecount": 20000},
    "status_interval": 1.0,
}


@pytest.fixture
def session(new_session):
    return new_session(changes=CHANGES)


def start_gym(session):
    return subprocess.Popen(
        gamegym_command("resume", str(session)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for_line(process, needle, timeout=120):
    deadline = time.monotonic() + timeout
    lines = []
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
        if needle(line):
            return lines
    raise AssertionError("never saw the expected line:\n" + "".join(lines))


def playing(line):
    return re.search(r"\| games [1-9]", line) is not None


def children_of(process):
    return psutil.Process(process.pid).children(recursive=True)


def wait_gone(processes, timeout):
    """The processes still running after up to `timeout` seconds.  A zombie has exited: when
    the gym was killed nobody may reap its children (init does not, on some machines)."""
    deadline = time.monotonic() + timeout
    while True:
        alive = [p for p in processes if _running(p)]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.2)


def _running(process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_sigkill_of_the_gym_leaves_no_orphans_and_resume_continues(session):
    gym = start_gym(session)
    # (iterations can come faster than status lines: any iteration from 1 on)
    wait_for_line(gym, lambda line: trained(line) >= 1, timeout=180)
    children = children_of(gym)
    assert len(children) >= 4
    finish(gym)
    assert not wait_gone(children, timeout=10), "children outlived the gym by 10 s"
    assert (session / "session.lock").exists()  # stale lock left behind ...
    before = json.loads((session / "models" / "current.json").read_text())["iteration"]
    for path in (session / "samples").glob("*/*.npz"):  # ... every visible file loads
        read_sample_file(path)
    files_before = {
        f"{p.parent.name}/{p.name}": len(read_sample_file(p)["z"])
        for p in (session / "samples").glob("*/*.npz")
    }
    done = subprocess.run(
        gamegym_command("resume", str(session), "--max-iterations", "1"),
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr  # ... and does not block the resume
    after = json.loads((session / "models" / "current.json").read_text())["iteration"]
    assert after == before + 1
    report = json.loads((session / "train" / f"{after}.json").read_text())
    assert report["window"][1] == before
    assert_window_read_in_order(report, files_before, CHANGES["train"]["max_samplecount"])
    assert all((session / "samples" / name).is_file() for name in report["sources"])


def trained(line: str) -> int:
    """The iteration a status line shows (-1 for any other line)."""
    shown = re.search(r"\bit (\d+) \|", line)
    return int(shown.group(1)) if shown else -1


def assert_window_read_in_order(report, files_before, max_samplecount):
    """Every file flushed before the kill, in the window, was trained on whole, except where
    the window held more than `max_samplecount` samples: then the newest files were taken
    (the window's order: newest iteration first, files by name from the last) and only the
    oldest of those cut; the older ones were left out.  (Self-play can outrun the first
    training and fill the window before the kill: once it wrote 21,120 samples.)  Every
    sample of the iteration came from a distinct published file: none was read twice."""

    def key(name):
        iteration, file = name.split("/")
        return int(iteration), file

    sources = report["sources"]
    assert sum(sources.values()) == report["samples"] <= max_samplecount
    full = report["samples"] == max_samplecount
    cut = min(map(key, sources))
    partial = [
        name for name, n in sources.items() if name in files_before and n < files_before[name]
    ]
    assert partial in ([], [name for name in sources if key(name) == cut]), partial
    assert not partial or full
    in_window = {
        name: n
        for name, n in files_before.items()
        if int(name.split("/")[0]) >= report["window"][0]
    }
    for name, n in in_window.items():
        if key(name) > cut:
            assert sources.get(name) == n, f"{name} ({n} samples) not read whole"
        elif key(name) < cut:
            assert full and name not in sources, f"{name} left out of a window not full"


def test_dead_selfplayer_is_restarted_and_a_dead_predictor_comes_back_with_its_selfplayers(
    session,
):
    gym = start_gym(session)
    try:
        wait_for_line(gym, playing)
        selfplayer = find_role(session, "selfplayer0")
        os.kill(selfplayer, signal.SIGKILL)
        wait_for_line(gym, lambda line: "selfplayer0 died" in line and "restarting" in line, 30)
        lines = wait_for_line(gym, playing, 60)
        predictor = find_role(session, "predictor")
        os.kill(predictor, signal.SIGKILL)
        lines += wait_for_line(gym, lambda line: "restarting it and its Selfplayers" in line, 60)
        assert "predictor died (exit code -9); restarting it and its Selfplayers" in lines[-1]
        lines += wait_for_line(gym, lambda line: find_role(session, "predictor") != predictor, 60)
        games = shown_games(lines)  # (the old Selfplayers' last games included)
        wait_for_line(gym, lambda line: shown_games([line]) > games, 120)  # new games
        gym.send_signal(signal.SIGINT)
        assert gym.wait(timeout=60) == 0
    finally:
        finish(gym)
    assert not (session / "session.lock").exists()


def find_role(session, role):
    """The pid in the newest 'starting' line of a role's log."""
    text = (session / "logs" / f"{role}.log").read_text()
    line = [s for s in text.splitlines() if " starting (pid " in s][-1]
    return int(line.split("(pid ")[1].rstrip(")"))


def test_second_sigint_forces_the_stop_and_loses_no_published_file(session):
    gym = start_gym(session)
    try:
        wait_for_line(gym, playing)
        children = children_of(gym)
        # a stopped Selfplayer never flushes: the clean stop would wait its 20 s for it
        psutil.Process(find_role(session, "selfplayer0")).suspend()
        # as if it was suspended mid-write (it sometimes is): the killed writer's temporary file
        half_written = session / "samples" / "0" / ".selfplayer0-1-000001-1.99999.tmp.npz"
        half_written.write_bytes(b"PK\x03\x04 cut short")
        gym.send_signal(signal.SIGINT)
        wait_for_line(gym, lambda line: "stopping: signal SIGINT" in line, 30)
        time.sleep(1.0)
        started = time.monotonic()
        gym.send_signal(signal.SIGINT)
        code = gym.wait(timeout=60)
        forced_in = time.monotonic() - started
        output = gym.stdout.read()
    finally:
        finish(gym)
    assert "second Ctrl+C: forcing the stop" in output
    assert code == 130
    assert forced_in < 15, f"the forced stop took {forced_in:.1f} s"
    assert not wait_gone(children, timeout=5), "a child outlived the forced stop"
    assert not (session / "session.lock").exists()
    assert not list(session.rglob(".*.tmp*")), "a killed writer's temporary file was left"
    for path in (session / "samples").glob("*/*.npz"):
        read_sample_file(path)
    done = subprocess.run(
        gamegym_command("resume", str(session), "--max-iterations", "1"),
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def games_played(session):
    """(actions, search values) of every game in the session's sample files."""
    from gamegym.data.samplefolder import sample_files, sample_iterations

    games = []
    for iteration in sample_iterations(session / "samples"):
        for path in sample_files(session / "samples", iteration):
            arrays = read_sample_file(path)
            for game in range(len(arrays["result"])):
                rows = arrays["game"] == game
                games.append(
                    (tuple(arrays["action"][rows]), tuple(arrays["root_value"][rows].round(6)))
                )
    return games


def wait_until(condition, gym, timeout):
    """Poll `condition` until it holds; fail if the gym exits first or `timeout` passes (a
    bound for a hung gym, not a measurement)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert gym.poll() is None, "the gym stopped early:\n" + gym.stdout.read()
        assert time.monotonic() < deadline, f"not reached in {timeout} s"
        time.sleep(0.5)


def assert_second_gym_fails_at_once_naming_the_first(session, first):
    second = subprocess.run(
        gamegym_command("resume", str(session)),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert second.returncode == 2
    assert f"in use by gym process {first.pid}" in second.stderr
    assert first.poll() is None  # the running gym is untouched


def assert_sigint_stopped_cleanly(session, output, children):
    assert "stopping: signal SIGINT" in output and "forcing" not in output
    assert not wait_gone(children, timeout=5)
    assert not (session / "session.lock").exists()
    assert "stopped cleanly" in (session / "logs" / "gym.log").read_text()


def test_resumes_write_no_game_twice_a_second_gym_is_refused_and_signals_stop_cleanly(
    new_session,
):
    """Two runs on the same model, each stopped once it has written 2 more games: the first
    by SIGTERM while a second gym on the folder is refused, the second by SIGINT."""
    # no training (the model stays iteration 0), one search thread: a run's games follow
    # from its seeds alone
    session = new_session(
        changes={
            "selfplay": {
                "selfplayprocesses": 1,
                "search": {"threads": 1},
                "gamelog_dump_threshold": 2,
                "positions_per_iteration": 0,
            },
            "train": {"min_samplecount": 100000, "max_samplecount": 100000},
        }
    )
    counts = [0]
    for stop_signal in (signal.SIGTERM, signal.SIGINT):
        gym = start_gym(session)
        try:
            wait_until(lambda: len(games_played(session)) >= counts[-1] + 2, gym, timeout=180)
            if stop_signal == signal.SIGTERM:
                assert_second_gym_fails_at_once_naming_the_first(session, gym)
            children = children_of(gym)
            gym.send_signal(stop_signal)
            code = gym.wait(timeout=60)
            output = gym.stdout.read()
        finally:
            finish(gym)
        assert code == 0, output
        counts.append(len(games_played(session)))
    assert_sigint_stopped_cleanly(session, output, children)
    games = games_played(session)
    assert counts[1] >= 2 and counts[2] > counts[1]
    repeats = len(games) - len(set(games))
    assert repeats == 0, f"{repeats} of {len(games)} games repeat an earlier one"
    assert json.loads((session / "runs.json").read_text())["runs"] == 2  # none for the refused
    # a Trainer that never had samples enough loads neither the model nor TensorFlow
    trainer_log = (session / "logs" / "trainer.log").read_text()
    assert trainer_log.count("trainer exiting (TensorFlow not imported)") == 2, trainer_log


def test_a_stopped_trainer_is_named_killed_and_stops_the_gym(new_session):
    session = new_session(changes={**CHANGES, "heartbeat_timeout": 4.0})
    gym = start_gym(session)
    try:
        wait_for_line(gym, playing)
        os.kill(find_role(session, "trainer"), signal.SIGSTOP)
        lines = wait_for_line(gym, lambda line: "stopped with an error" in line, 90)
        text = "".join(lines)
        assert "trainer is not responding (no heartbeat for" in text
        assert "trainer stopped responding and was killed" in text
        assert gym.wait(timeout=60) == 1
    finally:
        finish(gym)
    assert "trainer is not responding" in (session / "logs" / "gym.log").read_text()
    assert not (session / "session.lock").exists()


def shown_games(lines) -> int:
    """The games count of the last status line among `lines` (-1 without one)."""
    counts = [int(m.group(1)) for m in map(re.compile(r"\| games (\d+)").search, lines) if m]
    return counts[-1] if counts else -1


def games_on_disk(session) -> int:
    return sum(len(read_sample_file(p)["result"]) for p in (session / "samples").glob("*/*.npz"))


def test_a_stopped_predictor_is_killed_and_comes_back_with_its_selfplayers_losing_no_game(
    new_session,
):
    """SIGSTOP of the Predictor: the gym sees its heartbeat stop, kills it and starts it again
    with every Selfplayer.  The Selfplayers, whose requests went unanswered, are not killed:
    each finds its pipe closed, writes the games it finished and exits; the new ones play on
    with the new Predictor, which loads each iteration the Trainer announces; at the clean
    stop every game the Selfplayers reported is on disk."""
    session = new_session(changes={**CHANGES, "heartbeat_timeout": 4.0})
    gym = start_gym(session)
    try:
        lines = wait_for_line(gym, playing)
        first = find_role(session, "predictor")
        os.kill(first, signal.SIGSTOP)
        lines += wait_for_line(gym, lambda line: "restarting it and its Selfplayers" in line, 90)
        text = "".join(lines)
        assert "predictor is not responding (no heartbeat for" in text, text
        assert "predictor was killed (no heartbeat for" in lines[-1]
        games, iteration = shown_games(lines), max(trained(line) for line in lines)
        lines = wait_for_line(
            gym, lambda line: shown_games([line]) > games and trained(line) > iteration, 180
        )
        gym.send_signal(signal.SIGINT)
        output = "".join(lines) + gym.stdout.read()
        assert gym.wait(timeout=60) == 0, output
    finally:
        finish(gym)
    assert not re.search(r"selfplayer\d (is not responding|made no progress|died)", text + output)
    final = [line for line in output.splitlines() if "final:" in line]
    assert final and shown_games(final) == games_on_disk(session) > games
    for index in (0, 1):  # each wrote its finished games as its Predictor went
        log = (session / "logs" / f"selfplayer{index}.log").read_text()
        assert "the Predictor is gone; the games finished are written" in log
    second = (session / "logs" / "predictor.log").read_text().split("starting (pid ")[-1]
    assert second.count("loaded model iteration") >= 2  # the newest, then announced ones


def test_a_stopped_trainer_of_a_killed_gym_keeps_the_session_until_it_is_gone(session, capsys):
    """`kill -STOP <trainer>; kill -9 <gym>; gamegym resume S; kill -CONT <trainer>`: the
    resume is refused, naming the stopped Trainer, and deletes nothing (its temporary file is
    left to it); once continued the Trainer exits by itself, and the resume goes on."""
    from gamegym.cli.main import main

    gym = start_gym(session)
    try:
        wait_for_line(gym, playing)
        trainer = find_role(session, "trainer")
        os.kill(trainer, signal.SIGSTOP)
        others = [  # multiprocessing's resource tracker lives while the Trainer does
            p
            for p in children_of(gym)
            if p.pid != trainer and "resource_tracker" not in " ".join(p.cmdline())
        ]
        gym.kill()
        gym.wait()
        assert not wait_gone(others, timeout=15)  # they see the gym gone and exit
        writing = session / "models" / f".99.{trainer}.tmp.keras"  # as if being written
        writing.write_bytes(b"half a model")
        capsys.readouterr()
        assert main(["resume", str(session), "--max-iterations", "1"]) != 0
        out = capsys.readouterr()
        text = out.out + out.err
        assert f"trainer (pid {trainer}, stopped)" in text, text
        assert "is still held by processes of its previous run" in text
        assert writing.exists()  # the new gym did not tidy beside a live writer
        assert json.loads((session / "runs.json").read_text())["runs"] == 1  # no run counted
    finally:
        os.kill(trainer, signal.SIGCONT)
        finish(gym)
    assert not wait_gone([psutil.Process(trainer)], timeout=20), "the Trainer never exited"
    writing.unlink()
    done = subprocess.run(
        gamegym_command("resume", str(session), "--max-seconds", "1"),
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_predictor_hung_in_a_call_is_found_by_its_lack_of_progress_and_restarted(
    new_session, tmp_path
):
    """Its heartbeat thread beats on; its work count stands still: the gym names and kills it
    within progress_timeout, instead of the Selfplayers timing out one restart after another,
    and starts it again with its Selfplayers; the new one (it does not hang) serves them."""
    from conftest import ROOT

    session = new_session(changes={**CHANGES, "plugins": ["hangplugin"], "progress_timeout": 8.0})
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")]),
        "GAMEGYM_TEST_HANG": "predictor",
        "GAMEGYM_TEST_HANG_ONCE": str(tmp_path / "hung"),  # the first Predictor hangs
    }
    gym = subprocess.Popen(
        gamegym_command("resume", str(session), "--trust"),  # the test's own plug-in
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        lines = wait_for_line(gym, lambda line: "restarting it and its Selfplayers" in line, 90)
        text = "".join(lines)
        assert "predictor made no progress for" in text, text
        assert "(its heartbeat goes on: hung in a call); killing it" in text, text
        assert "predictor was killed (no progress for" in lines[-1]
        assert "no heartbeat" not in text  # it beat all along
        assert not re.search(r"selfplayer\d (made no progress|is not responding)", text)
        wait_for_line(gym, playing, 120)  # games played with the new Predictor
        gym.send_signal(signal.SIGINT)
        assert gym.wait(timeout=60) == 0
    finally:
        finish(gym)
    assert (tmp_path / "hung").exists()
