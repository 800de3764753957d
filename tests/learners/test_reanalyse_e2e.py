"""MuZero Reanalyze on real processes: a session with `train.reanalyze` > 0 writes reanalysed
targets from its Selfplayer, the Trainer trains on them, and a Selfplayer killed while it
reanalyses is restarted with nothing lost or counted twice.  (The targets themselves, on known
positions: test_reanalyse.py.)"""

import json
import os
import signal
import subprocess
import time

import pytest
from conftest import create_session, finish, gamegym_command

from gamegym.data.reanalysis import REANALYSIS_FOLDER, read_reanalysis
from gamegym.data.samples import read_sample_file

pytestmark = pytest.mark.slow

TICTACTOE = "games.tictactoe:TicTacToe"
SETTINGS = {
    "network": {"width": 16, "blocks": 1},
    "muzero": {"hidden_size": 8, "num_unroll_steps": 3},
    "selfplay": {
        "selfplayprocesses": 1,
        "search": {"threads": 4, "searchcount": 16, "core": "python"},
        "gamelog_dump_threshold": 5,
        "positions_per_iteration": 100,
    },
    "train": {
        "learner": "muzero",
        "min_samplecount": 60,
        "min_new_samples": 60,
        "batchsize": 32,
        "epochs": 1,
        "reanalyze": 0.5,
        "value_td_steps": 3,
    },
    "status_interval": 1.0,
}
ITERATIONS = 4


def started_pids(log_text: str) -> list[int]:
    return [
        int(line.split("(pid ")[1].split(")")[0])
        for line in log_text.splitlines()
        if " starting (pid " in line
    ]


def wait_for_reanalysis(session, gym, timeout=240.0) -> int:
    """The pid of the Selfplayer once its log says it began reanalysing a file."""
    log = session / "logs" / "selfplayer0.log"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert gym.poll() is None, "the gym ended before the Selfplayer reanalysed anything"
        text = log.read_text() if log.exists() else ""
        if "reanalysing " in text:
            return started_pids(text)[-1]
        time.sleep(0.02)
    raise AssertionError("the Selfplayer never began reanalysing a file")


def test_reanalysed_targets_are_trained_on_and_survive_a_kill_of_the_reanalysing_process(
    tmp_path,
):
    session = create_session(tmp_path / "rz", TICTACTOE, SETTINGS)
    gym = subprocess.Popen(
        gamegym_command("resume", str(session), "--max-iterations", ITERATIONS),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        killed = wait_for_reanalysis(session, gym)
        os.kill(killed, signal.SIGKILL)
        out, _ = gym.communicate(timeout=300)
    finally:
        finish(gym)
    assert gym.returncode == 0, out
    assert f"{ITERATIONS} new iterations trained" in out, out
    assert "selfplayer0 died" in out and "restarting" in out, out
    log = (session / "logs" / "selfplayer0.log").read_text()
    assert started_pids(log)[-1] != killed and "Traceback" not in log, log

    # every reanalysis file is whole and belongs to a sample file; none was left half written
    written = 0
    for folder in (session / "samples").glob(f"*/{REANALYSIS_FOLDER}"):
        for path in folder.iterdir():
            if path.name.startswith("."):  # a temporary name of the killed writer
                continue
            sample = folder.parent / path.name
            rows = len(read_sample_file(sample)["z"])
            assert read_reanalysis(sample, rows, 9).iteration >= 1
            written += 1
    assert written >= 1

    # the Trainer trained on them, each sample once
    reports = [
        json.loads((session / "train" / f"{it}.json").read_text())
        for it in range(1, ITERATIONS + 1)
    ]
    for report in reports:
        assert sum(report["sources"].values()) == report["samples"]
        assert report.get("reanalysed", 0) <= report["samples"]
    assert any(report.get("reanalysed", 0) > 0 for report in reports), reports
    trainer_log = (session / "logs" / "trainer.log").read_text()
    assert "with reanalysed targets (train.reanalyze)" in trainer_log
    assert "reanalysed " in log  # finished files, before or after the kill


def test_every_role_in_one_process_reanalyses_too(tmp_path):
    from gamegym.config import GymConfig
    from gamegym.runtime.gym import GameGym

    config = GymConfig.from_dict({**SETTINGS, "game": TICTACTOE, "debug_single_process": True})
    gym = GameGym(tmp_path / "one", config=config)
    # iteration 0's files are due once half the window was played after them: by model 2
    assert gym.resume(max_iterations=3, console=False) == 0
    report = json.loads((tmp_path / "one" / "train" / "3.json").read_text())
    assert 0 < report["reanalysed"] <= report["samples"]
    assert list((tmp_path / "one" / "samples" / "0" / REANALYSIS_FOLDER).glob("debug-*.npz"))
