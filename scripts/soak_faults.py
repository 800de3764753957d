"""The chaos soak's faults (scripts/soak.py): what a cycle injects into the running gym, drawn
from the soak's seed, and where."""

from __future__ import annotations

import argparse
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from soak_checks import writer_of
from soak_gym import Lines, role_pid, running, start_gym, stop, stopped

from gamegym.data.faults import FILE_KINDS
from gamegym.data.fileio import atomic_write_bytes
from gamegym.data.samplefolder import sample_files, sample_iterations
from gamegym.data.session import Session

# how long a stopped process that left the stopped state must live on to count as continued: a
# process the gym killed runs for a moment as it exits (tearing down its memory) before it is
# a zombie
CONTINUED_S = 2.0

# the gym plays on after these (a Selfplayer and the Evaluator are restarted; a stopped gym
# watches its children afresh once continued)
SURVIVED = ("kill_selfplayer", "kill_evaluator", "stop_short", "stop_gym")
KINDS = (
    "kill_trainer",
    "kill_predictor",
    "kill_selfplayer",
    "kill_evaluator",
    "kill_gym",
    "stop_short",
    "stop_long",
    "stop_gym",
    "orphan",
    "exit",
    "disk_full",
    "bad_sample",
)
ROLES_STOPPED = ("trainer", "predictor", "selfplayer0", "selfplayer1", "evaluator")
ORPHAN_ROLES = ("trainer", "predictor", "selfplayer0", "selfplayer1")
# the file kinds a `disk_full` fault fails the writes of (an injected ENOSPC, see
# gamegym/data/faults.py): all but the config (written once, by `new`) and other files; runs.json
# and the lock are written as the gym starts
DISK_KINDS = tuple(kind for kind in FILE_KINDS if kind not in ("config", "other"))


class Faults:
    """The faults of a soak (`faults`: the kinds --faults names, all when empty) on its session
    and its gym, drawn from `rng`: the Soak of scripts/soak.py is one, and its `violation`
    (soak_checks.Checks) and `mutation_env` are the Soak's."""

    session: Session
    config: dict
    faults: tuple[str, ...]
    in_order: bool
    totals: dict
    run_start: dict
    rng: np.random.Generator
    bad: dict[str, int]
    bad_all: set[str]

    def draw(self) -> tuple[str, str | None]:
        """This cycle's fault and its target (a role, or a file kind for `disk_full`): from
        the seed, or from --faults ("kind" or "kind:target")."""
        if self.faults:
            turn = self.totals["cycles"] - self.run_start["cycles"]  # (this run's cycles so far)
            pick = (
                turn % len(self.faults)
                if self.in_order
                else int(self.rng.integers(len(self.faults)))
            )
            kind, _, target = self.faults[pick].partition(":")
            if target:
                return kind, target
        else:
            kind = KINDS[int(self.rng.integers(len(KINDS)))]
        if kind == "disk_full":
            return kind, DISK_KINDS[int(self.rng.integers(len(DISK_KINDS)))]
        if kind == "kill_selfplayer":
            return kind, f"selfplayer{int(self.rng.integers(2))}"
        if kind in ("stop_short", "stop_long"):
            return kind, ROLES_STOPPED[int(self.rng.integers(len(ROLES_STOPPED)))]
        if kind == "orphan":
            return kind, ORPHAN_ROLES[int(self.rng.integers(len(ORPHAN_ROLES)))]
        role = {"kill_trainer": "trainer", "kill_predictor": "predictor"}
        return kind, role.get(kind, "evaluator" if kind == "kill_evaluator" else None)

    def draw_survived(self) -> tuple[str, str | None]:
        survived = SURVIVED[int(self.rng.integers(len(SURVIVED)))]
        if survived == "kill_selfplayer":
            return survived, f"selfplayer{int(self.rng.integers(2))}"
        if survived == "stop_short":
            return survived, ROLES_STOPPED[int(self.rng.integers(len(ROLES_STOPPED)))]
        return survived, "evaluator" if survived == "kill_evaluator" else None

    def inject(self, kind: str, role: str | None, gym, watcher, family) -> bool:
        """Inject one fault; False when its target was not running (nothing injected)."""
        if gym.poll() is not None:
            return False
        if kind == "exit":
            gym.stdin.write("exit\n")
            gym.stdin.flush()
            return True
        if kind == "kill_gym":
            os.kill(gym.pid, signal.SIGKILL)
            return True
        if kind == "stop_gym":  # as Ctrl+Z then `fg` of the gym alone
            os.kill(gym.pid, signal.SIGSTOP)
            time.sleep(float(self.rng.uniform(2.0, self.config["heartbeat_timeout"] + 4.0)))
            os.kill(gym.pid, signal.SIGCONT)
            time.sleep(float(self.rng.uniform(1.0, 4.0)))
            return True
        if kind == "bad_sample":
            return self.bad_sample(gym)
        pid = role_pid(self.session, role or "", family)
        if pid is None:
            return False  # not running now (an Evaluator between ratings, a restart)
        if kind == "orphan":
            self.orphan(gym, pid, role or "", family)
        elif kind.startswith("kill"):
            os.kill(pid, signal.SIGKILL)
        elif kind == "stop_short":
            os.kill(pid, signal.SIGSTOP)
            time.sleep(2.0)
            os.kill(pid, signal.SIGCONT)
        else:  # stop_long: the gym must see the stopped heartbeat and kill the process
            os.kill(pid, signal.SIGSTOP)
            deadline = time.monotonic() + self.config["heartbeat_timeout"] + 15.0
            seen_stopped = False
            while time.monotonic() < deadline and running(pid):
                if stopped(pid):
                    seen_stopped = True
                elif seen_stopped and lives_on(pid):  # continued, not by the soak, not killed
                    print(f"[soak] {role} (pid {pid}) was continued from outside", file=sys.stderr)
                    return False
                time.sleep(0.5)
            if running(pid):
                self.violation("hung_process_not_killed", 1, f"{role} (pid {pid})")
                os.kill(pid, signal.SIGCONT)
        time.sleep(float(self.rng.uniform(1.0, 4.0)))
        return True

    def orphan(self, gym, pid: int, role: str, family: set[int]) -> None:
        """The lock case: a child stopped, its gym killed.  A new gym must wait, then refuse
        naming the stopped process, and delete no temporary file of it; then the child is
        continued, notices that its gym is gone and exits."""
        os.kill(pid, signal.SIGSTOP)
        time.sleep(0.5)
        # the stopped child's temporary files (named with its pid: fileio.temporary_path)
        temporary = set(self.session.path.rglob(f".*.{pid}.tmp*"))
        os.kill(gym.pid, signal.SIGKILL)
        gym.wait()
        time.sleep(1.0)
        second = start_gym(self.session.path, dict(os.environ) | self.mutation_env())
        lines = Lines(second)
        try:
            second.wait(timeout=60.0)
        except subprocess.TimeoutExpired:  # it took the lock from a living child
            stop(second, lines, family, expect_stop=False)
        text = "".join(lines.lines)
        if second.returncode != 2 or f"pid {pid}" not in text:
            self.violation(
                "lock_not_held",
                1,
                f"a new gym with {role} (pid {pid}) stopped: exit code {second.returncode}, "
                f"{text.strip().splitlines()[-1:] or 'no output'}",
            )
        gone = [p for p in temporary if not p.exists()]
        self.violation("live_writer_temp_deleted", len(gone), str(gone[:3]))
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass

    def bad_sample(self, gym) -> bool:
        """Publish a sample file of bad data beside the Selfplayers' newest one (a copy of it
        whose results `z` are 3, outside [-1, 1]: what a writer with a bug might write), then
        wait until the Trainer has moved it to quarantine, or has trained two iterations
        since (it has read it by then: `check_bad_samples` counts it)."""
        newest = self.wait_for_samples(gym, writers=1)
        if not newest:
            return False  # nothing to copy: the gym stopped, or played no game in 120 s
        with np.load(newest[-1]) as data:
            arrays = {name: data[name] for name in data.files}
        arrays["z"] = np.full_like(arrays["z"], 3.0)
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        count = len(self.bad_all) + 1
        path = newest[-1].parent / f"soak-{os.getpid()}-{count:06d}-{int(time.time())}-bad.npz"
        atomic_write_bytes(path, buffer.getvalue())
        key = str(path.relative_to(self.session.path))
        at = self.session.current_iteration()
        self.bad[key] = at
        self.bad_all.add(key)
        deadline = time.monotonic() + 120.0
        while (
            gym.poll() is None
            and time.monotonic() < deadline
            and path.exists()
            and self.session.current_iteration() < at + 2
        ):
            time.sleep(0.5)
        return True

    def wait_for_iterations(self, gym, count: int, since: int, timeout: float = 120.0) -> None:
        """Wait until the gym has trained `count` iterations after `since`, or has stopped, or
        `timeout` has passed."""
        deadline = time.monotonic() + timeout
        while gym.poll() is None and time.monotonic() < deadline:
            if self.session.current_iteration() >= since + count:
                return
            time.sleep(0.5)

    def wait_for_samples(self, gym, writers: int, timeout: float = 120.0) -> list[Path]:
        """The Selfplayers' sample files (the soak's own left out), once `writers` processes
        have written one: a loaded machine starts its Selfplayers many seconds after the gym's
        first status line.  Fewer when the gym stops or `timeout` passes first."""
        samples = self.session.samples_dir
        deadline = time.monotonic() + timeout
        while True:
            files = [
                p
                for it in sample_iterations(samples)
                for p in sample_files(samples, it)
                if not p.name.startswith("soak-")  # (a bad file the soak published)
            ]
            if len({writer_of(p.name) for p in files}) >= writers:
                return files
            if gym.poll() is not None or time.monotonic() > deadline:
                return files
            time.sleep(0.5)


def fault_spec(text: str) -> str:
    """One --faults entry: a fault kind, or "kind:target" (a role, a file kind)."""
    kind, _, target = text.partition(":")
    targets = {"disk_full": DISK_KINDS, "orphan": ORPHAN_ROLES}.get(kind, ROLES_STOPPED)
    if kind not in KINDS:
        raise argparse.ArgumentTypeError(f"no fault kind {kind!r}; the kinds: {', '.join(KINDS)}")
    if target and target not in targets:
        raise argparse.ArgumentTypeError(
            f"no target {target!r} of {kind}; the targets: {', '.join(targets)}"
        )
    return text


def lives_on(pid: int) -> bool:
    """Whether a process that left the stopped state runs on (continued) rather than dying
    (killed: it leaves the stopped state to exit) within CONTINUED_S seconds."""
    deadline = time.monotonic() + CONTINUED_S
    while time.monotonic() < deadline:
        if not running(pid):
            return False
        time.sleep(0.1)
    return running(pid) and not stopped(pid)
