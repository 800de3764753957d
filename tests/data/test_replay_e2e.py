"""Curious replay with real processes: a gym killed with SIGKILL (all its processes at once)
resumes with the replay state of its last published iteration, and a session continued into
changed rules carries its samples and their priorities.  (MuZero and the bootstrapped learner
train with curious replay in their own end-to-end tests, tests/learners/.)"""

import json
import re
import shutil
import subprocess

import numpy as np
import psutil
import pytest
from conftest import assert_state_matches_the_files, built_once, finish, gamegym, gamegym_command

from gamegym.data.samples import read_sample_file

pytestmark = pytest.mark.slow

CURIOUS = {
    "selfplay": {
        "selfplayprocesses": 1,
        "search": {"threads": 4, "searchcount": 16},
        "gamelog_dump_threshold": 5,
        "positions_per_iteration": 100,
    },
    "train": {
        "replay": "curious",
        "num_updates_per_train_iter": 8,
        "replay_capacity": 400,
        "min_samplecount": 60,
        "min_new_samples": 60,
        "batchsize": 32,
    },
    "status_interval": 1.0,
}


def new_session(folder, config=CURIOUS, name="ttt"):
    """A new tic-tac-toe session with `config`, made in this process (TensorFlow is imported
    here once, instead of by a `gamegym new` process per session; tests/cli test `new`)."""
    import tensorflow  # noqa: F401 - then the first model is made here, not in a child

    from gamegym import GameGym, GymConfig

    path = folder / name
    config = GymConfig.from_dict({"game": "games.tictactoe:TicTacToe", **config})
    GameGym(path, config=config)
    assert (path / "models" / "0.keras").is_file()
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A curious-replay session trained to iteration 2 by `gamegym resume`, made once for the
    tests here: they only read it, or copy it (with its replay state on disk) to change it."""

    def build(folder):
        session = new_session(folder)
        first = gamegym("resume", str(session), "--max-iterations", "2")
        assert first.returncode == 0, first.stdout + first.stderr
        assert current(session) == 2 and not (session / "replay" / "0.npz").exists()
        assert sorted(p.name for p in (session / "replay").iterdir()) == ["1.npz", "2.npz"]

    return built_once(tmp_path_factory, "curious", build) / "ttt"


def current(session) -> int:
    return json.loads((session / "models" / "current.json").read_text())["iteration"]


def test_sigkill_at_any_moment_keeps_the_state_of_the_published_iteration(tmp_path, trained):
    session = tmp_path / "ttt"
    shutil.copytree(trained, session)
    gym = subprocess.Popen(
        gamegym_command("resume", str(session)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    try:
        for line in gym.stdout:  # the kill comes while iteration 4 is being trained
            lines.append(line)
            shown = re.search(r"\bit (\d+) \|", line)
            if shown and int(shown.group(1)) >= 3:
                break
        else:
            raise AssertionError("the gym never reached iteration 3:\n" + "".join(lines))
        assert "replay x" in "".join(lines)  # the status line has the replay part
    finally:
        processes = [psutil.Process(gym.pid), *psutil.Process(gym.pid).children(recursive=True)]
        for process in processes:  # everything at once
            process.kill()
        psutil.wait_procs(processes, timeout=10)
        finish(gym)
    killed_at = current(session)
    state = assert_state_matches_the_files(session, killed_at)
    assert state["count"].sum() > 0  # it has trained: counts were saved

    done = gamegym("resume", str(session), "--max-iterations", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    log = (session / "logs" / "trainer.log").read_text()
    assert f"restored from {session / 'replay' / f'{killed_at}.npz'}" in log
    assert "rebuilt" not in log and "damaged" not in log and "Traceback" not in log
    after = current(session)
    assert after == killed_at + 1
    assert_state_matches_the_files(session, after)
    report = json.loads((session / "train" / f"{after}.json").read_text())
    figures = report["replay_figures"]
    assert report["replay"] == "curious" and 0 <= figures["new_share"] <= 1
    assert figures["mean_replays"] > 0 and figures["priority_p90"] >= figures["priority_p10"]
    assert (session / "plots" / "replay.png").stat().st_size > 1000


def test_continue_into_changed_rules_carries_samples_and_priorities(tmp_path, trained):
    session, trained = trained, 2  # `continue` only reads the session it carries on from
    old_state = assert_state_matches_the_files(session, trained)

    blocked = tmp_path / "blocked"
    done = gamegym(
        "continue",
        str(session),
        str(blocked),
        "--game",
        "games.tictactoe:TicTacToeVariant",
        "--game-args",
        '{"blocked": [0, 4]}',
    )
    assert done.returncode == 0, done.stderr
    assert current(blocked) == trained + 1
    config = json.loads((blocked / "config.json").read_text())
    assert config["game_args"] == {"blocked": [0, 4], "misere": False}
    assert config["train"]["replay"] == "curious"
    carried = assert_state_matches_the_files(blocked, trained + 1)
    assert carried["keys"] == old_state["keys"]
    assert np.array_equal(carried["priority"], old_state["priority"])

    again = gamegym("resume", str(blocked), "--max-iterations", "1")
    assert again.returncode == 0, again.stdout + again.stderr
    log = (blocked / "logs" / "trainer.log").read_text()
    assert "restored from" in log and "rebuilt" not in log
    report = json.loads((blocked / "train" / f"{trained + 2}.json").read_text())
    new_files = [k for k in report["sources"] if int(k.split("/")[0]) == trained + 1]
    assert new_files  # games under the new rules
    for key in new_files:  # nobody marked a blocked cell
        data = read_sample_file(blocked / "samples" / key)
        assert not data["legal"][:, [0, 4]].any() and not np.isin(data["action"], [0, 4]).any()
