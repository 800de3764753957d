"""The chaos soak (scripts/soak.py) in small: a real session, faults injected on a seeded
schedule, every invariant checked after every cycle; then the soak goes on in the same folder
and adds to its counts.  `--minutes 0` runs one cycle; seed 0 draws, in the first run, a SIGKILL
of the gym after three faults the gym plays on after, and in the second a full disk (the
soak CI runs for minutes draws each cycle's fault from every kind)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def soak(folder, *args):
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "soak.py"),
            "--seed",
            "0",
            "--json",
            "--folder",
            str(folder),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert done.stdout.strip(), done.stderr
    return done, json.loads(done.stdout.strip().splitlines()[-1])


def test_a_short_soak_injects_faults_and_finds_no_violation(tmp_path):
    # the Selfplayers wait for each new model after 100 positions: the soak's machinery is
    # the point here, and they leave the cores to the rest of the suite meanwhile
    pause = json.dumps({"selfplay": {"positions_per_iteration": 100}})
    done, first = soak(tmp_path / "soak", "--minutes", "0", "--set", pause)
    assert first["violations"] and not any(first["violations"].values()), done.stderr
    assert done.returncode == 0
    assert first["faults"] >= first["cycles"] >= 1 and first["resumes"] == first["cycles"]
    assert sum(first["faults_by_kind"].values()) == first["faults"]
    assert first["faults_by_kind"]["kill_gym"] == 1 and first["faults"] == 4
    assert set(first["faults_by_kind"]) <= {"kill_gym", "kill_selfplayer", "stop_short"}
    assert first["games"] > 0 and first["samples"] > 0
    done, second = soak(tmp_path / "soak", "--minutes", "0", "--resume")
    assert done.returncode == 0 and not any(second["violations"].values()), done.stderr
    assert second["cycles"] > first["cycles"] and second["faults"] > first["faults"]
    assert second["runs"] == 2 and second["games"] >= first["games"]
    runs = second["run_log"]  # one line per run, adding up to the totals
    assert [line["run"] for line in runs] == [1, 2] and runs[0] == first["run_log"][0]
    for key in ("faults", "cycles"):
        assert sum(line[key] for line in runs) == second[key]
    assert all(line["violations"] == 0 and line["seed"] == 0 for line in runs)
    assert second["faults_by_kind"]["disk_full"] == 1
    config = json.loads((tmp_path / "soak" / "session" / "config.json").read_text())
    assert config["selfplay"]["positions_per_iteration"] == 100
