"""A dummy run of the real thing: real processes, a temporary session, resume (a quiet console,
TensorFlow in the Trainer only), then resume again and stop it with `exit` on the console."""

import json
import re
import subprocess
import sys
import threading
import time

import numpy as np
import psutil
import pytest
from conftest import SMALL, assert_quiet_start, gamegym, read_scalars, user_env

pytestmark = pytest.mark.slow


@pytest.fixture
def session(new_session):
    # the search core of a user's session (the default), where the other tests' SMALL
    # sessions search on the Python core; the Selfplayers below the Trainer's priority
    return new_session(changes={"selfplay": {"search": {"core": "auto"}, "nice": 5}})


def test_new_resume_files_and_resume_again(session):
    # until two iterations are trained: every role has started and worked (a time limit could
    # stop the gym before a Selfplayer, slow to start on a loaded machine, got going)
    done = gamegym("resume", str(session), "--max-iterations", "2", env=user_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert_quiet_start(done, session)  # a user's console: no TensorFlow noise
    assert "2 new iterations trained" in done.stdout
    current = json.loads((session / "models" / "current.json").read_text())
    assert current["iteration"] >= 2
    for it in range(current["iteration"] + 1):
        assert (session / "models" / f"{it}.keras").is_file()
    for it in (1, 2):
        report = json.loads((session / "train" / f"{it}.json").read_text())
        assert report["iteration"] == it and report["samples"] >= 54
        assert np.isfinite(report["losses"]["loss"])
    files = sorted((session / "samples").glob("*/*.npz"))
    assert files and (session / "samples" / "0").is_dir()
    with np.load(files[0]) as data:
        assert data["x"].shape[1:] == (3, 3, 2) and data["pi"].shape[1] == 9
        assert np.allclose(data["pi"].sum(axis=1), 1.0, atol=1e-5)
    assert (session / "plots" / "loss.png").stat().st_size > 1000
    for role in ("gym", "predictor", "trainer", "selfplayer0"):
        log = (session / "logs" / f"{role}.log").read_text()
        assert "starting" in log or role == "gym"
        assert "Traceback" not in log, log
    assert not (session / "session.lock").exists()
    # the model runs on the CPU fast path, in the Selfplayer itself (predict defaults)
    played = re.search(
        r"(\d+) batches evaluated here", (session / "logs" / "selfplayer0.log").read_text()
    )
    assert played and int(played.group(1)) > 0
    # numba is installed with the test extras, so the default core is the compiled one
    assert "searching on the compiled core" in (session / "logs" / "selfplayer0.log").read_text()
    nice = re.search(r"running at nice (\d+)", (session / "logs" / "selfplayer0.log").read_text())
    assert nice and int(nice.group(1)) >= 5  # selfplay.nice, added to the gym's own

    status = json.loads(gamegym("status", str(session), "--json").stdout)
    assert status["iteration"] == current["iteration"] and status["samples"] > 0
    assert status["running"] is False

    first_run = read_scalars(session / "tensorboard")
    exit_on_the_console_once_trained(session, current["iteration"] + 1)
    after = json.loads((session / "models" / "current.json").read_text())["iteration"]
    assert after >= current["iteration"] + 1

    # TensorBoard: one run, the second resume goes on from the first (iterations and seconds)
    scalars = read_scalars(session / "tensorboard")
    assert [step for step, _ in scalars["train/loss"]] == list(range(1, after + 1))
    assert (
        scalars["train/learning_rate"][0][1]
        == json.loads((session / "config.json").read_text())["train"]["learning_rate"]
    )
    for tag in (
        "throughput/searches_per_s",
        "throughput/games_per_s",
        "predictor/mean_batch",
        "memory/gym_rss_mib",
        "memory/selfplayer_rss_mib",
        "cpu/trainer_percent",
    ):
        assert tag in scalars, sorted(scalars)
    steps = [step for step, _ in scalars["throughput/searches_per_s"]]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
    assert len(steps) > len(first_run["throughput/searches_per_s"])  # more of the same run


def exit_on_the_console_once_trained(session, iteration):
    """Resume the gym, and once it has trained `iteration` (or more), type 'status' and 'exit' on its
    console: it stops everything within 15 s, with exit code 0, its finished games flushed."""
    before = set((session / "samples").glob("*/*.npz"))
    gym = subprocess.Popen(
        [sys.executable, "-m", "gamegym", "resume", str(session)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    killer = threading.Timer(180, gym.kill)  # a gym that never gets there fails the test
    killer.start()
    try:
        lines = []
        for line in gym.stdout:  # wait until the iteration has been trained
            lines.append(line)
            shown = re.search(r"\bit (\d+) \| games [1-9]", line)
            if shown and int(shown.group(1)) >= iteration:
                break
        else:
            raise AssertionError(f"the gym never reached iteration {iteration}:\n{''.join(lines)}")
        killer.cancel()
        children = psutil.Process(gym.pid).children(recursive=True)
        assert len(children) >= 3
        started = time.monotonic()
        gym.stdin.write("status\nexit\n")
        gym.stdin.flush()
        code = gym.wait(timeout=15)
        elapsed = time.monotonic() - started
    finally:
        killer.cancel()
        if gym.poll() is None:
            gym.kill()
    output = "".join(lines) + gym.stdout.read()
    gym.stdout.close()
    gym.stdin.close()
    assert code == 0, output
    assert elapsed < 15
    assert "'exit' typed on the console" in output
    # every child (multiprocessing's resource tracker included) is gone within the 15 s
    _, alive = psutil.wait_procs(children, timeout=max(0.1, 15 - elapsed))
    assert not alive
    assert set((session / "samples").glob("*/*.npz")) > before, "finished games were flushed"


def test_debug_single_process_trains_in_one_process(tmp_path):
    from gamegym import GameGym, GymConfig

    config = GymConfig(game="games.tictactoe:TicTacToe", debug_single_process=True, **SMALL)
    gym = GameGym(tmp_path / "debug", config=config)
    assert gym.resume(max_iterations=1, console=False) == 0
    assert gym.session.current_iteration() == 1
    assert (tmp_path / "debug" / "train" / "1.json").is_file()
    assert list((tmp_path / "debug" / "samples" / "0").glob("debug-*.npz"))
    assert not (tmp_path / "debug" / "session.lock").exists()
