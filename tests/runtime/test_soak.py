"""The chaos soak (scripts/soak.py) in small: a real session, faults injected on a seeded
schedule, every invariant checked after every cycle.  `--minutes 0` runs one cycle; with
`--faults kill_gym` it ends in a SIGKILL of the gym after the faults the gym plays on after that
seed 0 draws (the soak CI runs for minutes draws each cycle's fault from every kind).  The
mutation check, which shows that the soak fails when a protection is switched off, runs in CI
(.ci/run: a soak per check is too long for the suite).  How a soak run again on its folder adds
to its counts, and how the mutation check judges its soaks, are tested in
tests/runtime/test_soak_models.py, without processes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
SURVIVED = ("kill_selfplayer", "kill_evaluator", "stop_short", "stop_gym")
# the Selfplayers wait for each new model after 100 positions: the soak's machinery is the
# point here, and they leave the cores to the rest of the suite meanwhile
PAUSE = json.dumps({"selfplay": {"positions_per_iteration": 100}})


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
    # the kill waits for a first sample file: on a loaded machine the soak's few seconds of
    # play can end before any game is written, and the record's games must count one
    args = ("--minutes", "0", "--set", PAUSE, "--faults", "kill_gym", "--wait-writers", "1")
    done, first = soak(tmp_path / "soak", *args)
    assert first["violations"] and not any(first["violations"].values()), done.stderr
    assert done.returncode == 0
    assert first["faults"] >= first["cycles"] >= 1 and first["resumes"] == first["cycles"]
    assert sum(first["faults_by_kind"].values()) == first["faults"]
    assert first["faults_by_kind"]["kill_gym"] == 1 and first["faults"] >= 2
    assert set(first["faults_by_kind"]) <= {"kill_gym", *SURVIVED}
    assert first["stops_by_reason"] == {"killed by SIGKILL": 1}
    assert first["unexpected_stops"] == [] and first["faults_hit_by_file_kind"] == {}
    assert first["games"] > 0 and first["samples"] > 0
    [line] = first["run_log"]  # the run's line of the record
    assert (line["run"], line["seed"], line["violations"]) == (1, 0, 0)
    assert (line["faults"], line["cycles"]) == (first["faults"], first["cycles"])
    config = json.loads((tmp_path / "soak" / "session" / "config.json").read_text())
    assert config["selfplay"]["positions_per_iteration"] == 100


def test_a_bad_sample_file_is_quarantined(tmp_path):
    """The soak publishes a sample file of bad data (results outside [-1, 1]): the Trainer
    moves it to quarantine, which the soak expects (the mutation check "quarantine" shows the
    soak reporting one trained on)."""
    done, summary = soak(
        tmp_path / "soak", "--minutes", "0", "--set", PAUSE, "--faults", "bad_sample"
    )
    assert done.returncode == 0, (summary["violations"], done.stderr[-3000:])
    assert summary["faults_by_kind"].get("bad_sample") == 1, summary
    quarantined = list((tmp_path / "soak" / "session" / "quarantine").iterdir())
    assert [p.name.endswith("-bad.npz") for p in quarantined] == [True]
