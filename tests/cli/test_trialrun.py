"""The main job as a user meets it: `python script_trialrun.py` on a fresh session runs the gym,
stops by itself, and ends with one line saying how strong the newest model is (the line the README
and getting-started show, apart from its numbers); its console has no TensorFlow noise and the
gym's own process never imported TensorFlow."""

import re
import subprocess
import sys

import pytest
from conftest import ROOT, user_env

pytestmark = pytest.mark.slow


def numbers_apart(line: str) -> str:
    return re.sub(r"\d+", "N", line)


def test_trial_run_trains_and_ends_with_a_verdict(tmp_path):
    session = tmp_path / "trialrun"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "script_trialrun.py"),
            "--session",
            str(session),
            "--max-seconds",
            "3",  # a short run: the verdict line is the point (iteration 0 or later)
        ],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        env=user_env(),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == "", done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert re.fullmatch(
        r"\[gamegym\] iteration \d+ against the perfect player \(exact "
        r"solver\): \d+ wins, \d+ draws, \d+ losses in 20 games \(\d+ s\)",
        last,
    ), done.stdout
    for page in (ROOT / "README.md", ROOT / "docs" / "getting-started.md"):  # as they show it
        lines = page.read_text(encoding="utf-8").splitlines()
        shown = [x for x in lines if x.startswith("[gamegym] iteration")]
        assert [numbers_apart(x) for x in shown] == [numbers_apart(last)], page
    assert "gym exiting (TensorFlow not imported)" in (session / "logs" / "gym.log").read_text()
