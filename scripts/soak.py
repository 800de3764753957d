"""A seeded chaos soak: a real session, faults injected on a seeded schedule, invariants checked.

    python scripts/soak.py --minutes 10 --seed 1 --json [--folder soak] [--resume] [--set JSON]
        [--faults KIND[:TARGET] ...]
    python scripts/soak.py --mutation-check [CHECK ...] --folder DIR

It runs a tic-tac-toe session with every process kind (Trainer, Predictor, two Selfplayers, the
Evaluator; curious replay, so the replay state is on disk too) in cycles: start the gym, let it
play, inject one fault, let the gym stop (or stop it), and check the folder.  The faults, drawn
from the seed (or from --faults): SIGKILL of each process kind and of the gym itself, SIGSTOP of
a process (short: resumed by SIGCONT; long: never resumed, the gym's heartbeat deadline must
kill it), SIGSTOP then SIGCONT of the gym, the lock case (a child stopped, its gym killed: a
new gym must wait, then refuse naming it), `exit` typed on the console, a full disk (an
ENOSPC injected in the writer of one kind of file, GAMEGYM_FAULT_ENOSPC of
gamegym/data/faults.py), and a bad sample file published beside the Selfplayers' (results out
of range: the Trainer must quarantine it).  A fault counts only when it reached a live target.

After every cycle it checks: the gym's exit code and stop reason are the ones its fault must
end in (`expected_stop`); no two processes wrote a game with the same moves, search values and
policy targets (such a repeat is a replayed seed; one process's two equal games are the
coincidence of a collapsed network), across --resume runs too (soak-state.npz keeps the
digests); the current iteration never goes back (read five times a second while the gym
runs, and as it starts) and none is published twice; every model file is a sound
archive that loads as the runtime loads it (Keras, as the Trainer and a TensorFlow Predictor do,
and its fast-path file where there is one, as a Predictor on the CPU fast path does), each
answering one batch of positions, the fast form what the model answers; the newest replay state
names only sample files on disk with their row counts; a bad sample file the soak published is
in quarantine once two iterations were trained after it; no temporary file after a clean stop,
and nothing else in quarantine; no process of the gym left running; every
sample file seen before is still there and valid.

`--set '{"selfplay": {...}}'` changes the session's settings, section by section, when the soak
makes its session (a resumed soak keeps the session's).  Counts are kept in <folder>/soak.json;
`--resume` adds to them (a long soak is made of runs of a few hours).  It prints one JSON
object: faults, faults_by_kind, faults_missed, faults_hit_by_file_kind, stops_by_reason,
unexpected_stops, resumes, games, samples, iterations, cycles, minutes, violations (each
invariant's name and its count), and run_log (one line per run: its start, seed, minutes,
cycles, faults and violations).

`--cycles N` runs at least N cycles (the soak stops after --minutes and N cycles).

`--mutation-check` runs a soak of one or two cycles per check (MUTATION_CHECKS: a protection
switched off in the gym, GAMEGYM_MUTATE, with the fault that exposes it), and exits 1 unless
each reports the violations it names.  Its JSON names the invariants shown to fire and those
not shown (NOT_MUTATED says why).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import psutil

from gamegym.config import merged_settings
from gamegym.data.faults import ENOSPC_VAR, FILE_KINDS, MUTATE_VAR, MUTATIONS, RECORD_VAR
from gamegym.data.fileio import atomic_write_bytes, atomic_write_json
from gamegym.data.replaybuffer import read_state
from gamegym.data.samplefolder import sample_files, sample_iterations
from gamegym.data.samples import SampleShape, read_sample_file
from gamegym.data.session import Session
from gamegym.game.graph import load_game

GAME = "games.tictactoe:TicTacToe"
CONFIG = {
    "network": {"kind": "dense", "width": 16, "blocks": 1},
    "selfplay": {
        "selfplayprocesses": 2,
        "search": {"threads": 2, "searchcount": 16},
        "gamelog_dump_threshold": 4,
        # each Selfplayer plays at most this many positions with one model (the Trainer waits
        # for 100 new ones): every process stays busy, and an 8-hour soak keeps its folder to
        # a few gigabytes (about 2,800 games and 5 MB a minute here; unthrottled, tic-tac-toe
        # self-play wrote some 20,000 games a minute, a file every 4 games)
        "positions_per_iteration": 200,
    },
    "train": {
        "replay": "curious",
        "num_updates_per_train_iter": 8,
        "batchsize": 32,
        "min_samplecount": 100,
        "min_new_samples": 100,
        "replay_capacity": 5000,
        "validation_split": 0.0,
    },
    "evaluate": {"every": 1, "games": 4, "search": {"searchcount": 8}, "opponents": ["random"]},
    "status_interval": 1.0,
    "heartbeat_timeout": 6.0,
}
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
EXIT_TYPED = "'exit' typed on the console"
INVARIANTS = (
    "repeated_game",
    "iteration_went_back",
    "iteration_published_twice",
    "unsound_model",
    "model_does_not_load",
    "fast_form_differs",
    "replay_state_mismatch",
    "temporary_file_left",
    "quarantined_file",
    "orphan_process",
    "sample_file_lost",
    "sample_file_invalid",
    "gym_did_not_start",
    "unexpected_stop",
    "hung_process_not_killed",
    "lock_not_held",
    "live_writer_temp_deleted",
    "bad_sample_not_quarantined",
)


@dataclass(frozen=True)
class MutationCheck:
    """A short soak that must catch one protection switched off in the gym (GAMEGYM_MUTATE,
    gamegym/data/faults.py)."""

    mutation: str  # the protection switched off (MUTATIONS)
    faults: tuple[str, ...]  # the faults its soak draws from
    # the violations it must report: every entry, each one of its "|"-separated names
    catches: tuple[str, ...]
    settings: dict = field(default_factory=dict)  # changes to its session's settings (--set)
    writers: int = 0  # processes whose sample files its cycle waits for before the fault
    cycles: int = 1  # a violation the next start of the gym shows takes two


MUTATION_CHECKS = {
    # a torn model file; the gym trains that iteration again and publishes it a second time
    "atomic_publish:model": MutationCheck(
        "atomic_publish",
        ("disk_full:model",),
        ("unsound_model", "iteration_published_twice"),
        cycles=2,
    ),
    # a torn sample file: the soak reads it, or the Trainer quarantines it first
    "atomic_publish:sample": MutationCheck(
        "atomic_publish", ("disk_full:sample",), ("sample_file_invalid|quarantined_file",)
    ),
    "atomic_publish:replay_state": MutationCheck(
        "atomic_publish", ("disk_full:replay_state",), ("replay_state_mismatch",)
    ),
    # two processes drawing from one seed play the same games only with the same model, so the
    # Trainer of this soak waits for a full buffer (some 800 games) before its first model: one
    # published while a Selfplayer was still starting, as on a loaded machine, would part the
    # two processes' games from their first; a repeat shows once both have written games
    "seed": MutationCheck(
        "seed",
        ("exit",),
        ("repeated_game",),
        settings={
            "selfplay": {"positions_per_iteration": 0},
            "train": {"min_samplecount": 5000, "min_new_samples": 5000},
        },
        writers=2,
    ),
    # the stopped Trainer is never killed: the soak continues it, the gym plays on
    "heartbeat": MutationCheck(
        "heartbeat", ("stop_long:trainer",), ("hung_process_not_killed", "unexpected_stop")
    ),
    "lock": MutationCheck("lock", ("orphan",), ("lock_not_held",)),
    "quarantine": MutationCheck("quarantine", ("bad_sample",), ("bad_sample_not_quarantined",)),
    "tidy": MutationCheck("tidy", ("disk_full:sample",), ("temporary_file_left",)),
    "parent_watch": MutationCheck("parent_watch", ("kill_gym",), ("orphan_process",)),
    # current.json names a model the full disk kept from being written; the next gym goes
    # back to the newest model there is
    "publish_order": MutationCheck(
        "publish_order", ("disk_full:model",), ("iteration_went_back",), cycles=2
    ),
    # the record of the gym killed in the first cycle keeps the second from starting
    "stale_lock": MutationCheck("stale_lock", ("kill_gym",), ("gym_did_not_start",), cycles=2),
    "fast_form": MutationCheck(
        "fast_form",
        ("exit",),
        ("fast_form_differs",),
        settings={"train": {"weight_average": "ema"}},
    ),
}
# the invariants no mutation check shows firing, and why (docs/guides/reliability.md)
NOT_MUTATED = {
    "model_does_not_load": "a torn model file is not a sound archive, counted as unsound_model",
    "sample_file_lost": "nothing in the gym deletes a sample file; only quarantine moves one",
    "live_writer_temp_deleted": "the lock check stops a child mid-write only by chance",
}


def settings(changes: dict) -> dict:
    """The soak session's settings: CONFIG with `changes` ({section: {field: value}}) merged in,
    section by section (the fields themselves are checked by `gamegym new`)."""
    sections = {key for key, value in CONFIG.items() if isinstance(value, dict)}
    if not isinstance(changes, dict) or not all(isinstance(v, dict) for v in changes.values()):
        raise SystemExit('--set needs a JSON object of sections, e.g. {"selfplay": {...}}')
    unknown = sorted(set(changes) - sections)
    if unknown:
        raise SystemExit(f"--set names no section of the soak's settings: {', '.join(unknown)}")
    return merged_settings(CONFIG, changes)


def writer_of(name: str) -> str:
    """The process that wrote a sample file: "<role>-<pid>", its name's first two parts."""
    return "-".join(name.split("-")[:2])


class Soak:
    """One run of the soak on a folder (see the module docstring)."""

    def __init__(
        self,
        folder: Path,
        seed: int,
        resume: bool,
        changes: dict | None = None,
        faults: tuple[str, ...] = (),
        mutation: str = "",
    ):
        self.folder = folder
        self.faults = faults  # --faults: the kinds drawn from (all when empty)
        self.mutation = mutation  # GAMEGYM_MUTATE for the gym (the mutation check)
        self.session = Session(folder / "session")
        self.config = settings(changes or {})
        self.record_path = folder / "soak.json"
        if resume and self.record_path.is_file():
            if changes:
                raise SystemExit(
                    "--set changes the settings of a new soak's session; a resumed soak keeps "
                    "its session's settings"
                )
            self.totals = json.loads(self.record_path.read_text())
        else:
            if self.record_path.exists():
                raise SystemExit(f"{self.record_path} exists: add --resume to go on with it")
            self.totals = {
                "faults": 0,
                "faults_by_kind": {},
                "resumes": 0,
                "cycles": 0,
                "minutes": 0.0,
                "runs": 0,
                "seed": seed,
                "violations": dict.fromkeys(INVARIANTS, 0),
            }
            self._new_session()
        for key in ("faults_missed", "faults_hit_by_file_kind", "stops_by_reason"):
            self.totals.setdefault(key, {})  # (a record from before these counts)
        self.totals.setdefault("unexpected_stops", [])
        self.totals["runs"] += 1
        self.rng = np.random.default_rng([seed, self.totals["runs"]])
        # one line per run: when it started and what it added (kept up to date every cycle, so
        # a run stopped from outside keeps its line)
        self.run_start = {k: self.totals[k] for k in ("faults", "cycles", "minutes")}
        self.run_start["violations"] = sum(self.totals["violations"].values())
        self.totals.setdefault("run_log", []).append(
            {
                "run": self.totals["runs"],
                "seed": seed,
                "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            }
        )
        self.log_run()
        if resume:  # the settings the session was made with
            self.config = json.loads(self.session.config_path.read_text())
        self.shape = SampleShape.of(load_game(GAME))
        self.state_path = folder / "soak-state.npz"
        self.games: dict[bytes, str] = {}  # a game's digest -> the process that wrote it
        self.seen: set[Path] = set()  # the sample files checked
        self.published: dict[int, tuple[int, int]] = {}  # iteration -> its model's mtime, size
        self.bad_all: set[str] = set()  # the bad sample files the soak published
        self.bad: dict[str, int] = {}  # those not checked yet -> the iteration they came at
        if resume:
            self.load_state()
        self.max_iteration = self.session.current_iteration()
        self.loaded: set[tuple] = set()  # (iteration, mtime, size) of the model files loaded
        # every model file present when the record was last saved had been loaded by that
        # cycle's check: a resumed soak loads only the files written (or rewritten) since
        self.checked_until = (
            self.record_path.stat().st_mtime_ns if self.record_path.is_file() else -1
        )
        self.positions = positions(load_game(GAME))

    def _new_session(self) -> None:
        """The session, made here as `gamegym new --game GAME --config folder/config.json`
        makes it; its first model too, with TensorFlow, which this process imports anyway to
        load every model the gym publishes."""
        from gamegym.config import ConfigError, GymConfig
        from gamegym.nets.tfsetup import configure_tensorflow
        from gamegym.runtime.gym import GameGym, GymError

        self.folder.mkdir(parents=True, exist_ok=True)
        config = self.folder / "config.json"
        config.write_text(json.dumps(self.config))
        configure_tensorflow(use_gpu=False, threads=1)  # as `load_as_runtime` does
        try:
            GameGym(self.session.path, config=GymConfig.from_dict({**self.config, "game": GAME}))
        except (ConfigError, GymError, OSError) as error:
            raise SystemExit(f"cannot make the soak session: {error}") from None

    # ----- one cycle ------------------------------------------------------------------------
    def draw(self) -> tuple[str, str | None]:
        """This cycle's fault and its target (a role, or a file kind for `disk_full`): from
        the seed, or from --faults ("kind" or "kind:target")."""
        if self.faults:
            kind, _, target = self.faults[int(self.rng.integers(len(self.faults)))].partition(":")
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

    def cycle(self) -> None:
        kind, target = self.draw()
        record = self.folder / "enospc.txt"  # the writes a disk_full fault failed
        record.unlink(missing_ok=True)
        env = dict(os.environ) | self.mutation_env()
        if kind == "disk_full":
            env[ENOSPC_VAR], env[RECORD_VAR] = f"{target}:1", str(record)
        watch = IterationWatch(self.session, self.max_iteration)
        gym = start_gym(self.session.path, env)
        watcher = Lines(gym)
        family: set[int] = set()
        started = watcher.wait_for(
            lambda line: "| games " in line or "stopped" in line, 150, gym, family
        )
        reached = False
        if not started and kind != "disk_full":
            self.violation("gym_did_not_start")
        elif started:
            for _extra in range(int(self.rng.integers(0, 4))):  # faults the gym plays on after
                time.sleep(float(self.rng.uniform(1.0, 4.0)))
                family |= descendants(gym)
                survived, role = self.draw_survived()
                if self.inject(survived, role, gym, watcher, family):
                    self.count_fault(survived)
            time.sleep(float(self.rng.uniform(1.0, 6.0)))
            writers = [c.writers for c in MUTATION_CHECKS.values() if c.mutation == self.mutation]
            if max(writers, default=0):
                self.wait_for_samples(gym, writers=max(writers))
            family |= descendants(gym)
            if kind == "disk_full":  # the gym meets the full disk at that kind's next write
                deadline = time.monotonic() + 90.0
                while gym.poll() is None and time.monotonic() < deadline and not record.exists():
                    time.sleep(0.5)
            else:
                reached = self.inject(kind, target, gym, watcher, family)
        ends = kind == "disk_full" or (reached and expected_stop(kind, target)[0] != {0})
        code, reason = stop(gym, watcher, family, expect_stop=ends)
        if kind == "disk_full":
            hit = hits(record)
            reached = bool(hit)
            for file_kind in hit:
                by_kind = self.totals["faults_hit_by_file_kind"]
                by_kind[file_kind] = by_kind.get(file_kind, 0) + 1
        if reached:
            self.count_fault(kind)
        else:
            missed = self.totals["faults_missed"]
            missed[kind] = missed.get(kind, 0) + 1
        self.check_stop(kind if reached else "exit", target, code, reason)
        self.check_bad_samples()
        for detail in watch.stop():
            self.violation("iteration_went_back", 1, detail)
        self.max_iteration = max(self.max_iteration, watch.highest)
        self.check(family, clean=code in (0, 1, 2))  # the gym's own stop: tidy
        self.totals["resumes"] += 1
        self.totals["cycles"] += 1

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
            while time.monotonic() < deadline and running(pid):
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

    def check_bad_samples(self) -> None:
        """Each bad sample file the soak published is in quarantine once the Trainer has
        trained two iterations after it (the second read every file published before the
        first), else `bad_sample_not_quarantined`: it was trained on, or left in place."""
        folder = self.session.quarantine_dir
        moved = [p.name for p in folder.iterdir()] if folder.is_dir() else []
        iteration = self.session.current_iteration()
        for key, at in list(self.bad.items()):
            path = Path(key)
            if any(name.endswith(f"-{path.parent.name}-{path.name}") for name in moved):
                del self.bad[key]
            elif iteration >= at + 2:
                del self.bad[key]
                where = "left in samples/" if (self.session.path / key).exists() else "gone"
                self.violation(
                    "bad_sample_not_quarantined",
                    1,
                    f"{key}, published at iteration {at}: {where} at iteration {iteration}",
                )

    def mutation_env(self) -> dict[str, str]:
        return {MUTATE_VAR: self.mutation} if self.mutation else {}

    def check_stop(self, kind: str, target: str | None, code: int, reason: str) -> None:
        """Compare the gym's exit code and stop reason with what the fault must end in."""
        codes, want = expected_stop(kind, target)
        key = stop_key(code, reason)
        by_reason = self.totals["stops_by_reason"]
        by_reason[key] = by_reason.get(key, 0) + 1
        if code not in codes or want not in reason:
            detail = (
                f"after {kind}{f' of {target}' if target else ''}: expected exit code "
                f"{'/'.join(map(str, sorted(codes)))} and a reason with {want!r}; saw exit code "
                f"{code}, {reason!r}"
            )
            self.violation("unexpected_stop", 1, detail)
            self.totals["unexpected_stops"] = [*self.totals["unexpected_stops"], detail][-20:]

    def count_fault(self, kind: str) -> None:
        self.totals["faults"] += 1
        by_kind = self.totals["faults_by_kind"]
        by_kind[kind] = by_kind.get(kind, 0) + 1

    def violation(self, name: str, count: int = 1, detail: str = "") -> None:
        if count:
            violations = self.totals["violations"]  # (a record from before an invariant)
            violations[name] = violations.get(name, 0) + count
            print(f"[soak] violation {name} x{count} {detail}", file=sys.stderr, flush=True)

    # ----- invariants -----------------------------------------------------------------------
    def check(self, family: set[int], clean: bool) -> None:
        session = self.session
        alive = [p for p in family if running(p)]
        if alive:  # (describe reads every log)
            self.violation("orphan_process", len(alive), describe(alive, session.logs_dir))
        for pid in alive:  # so that the next cycle starts clean; the violation is counted
            try:
                psutil.Process(pid).kill()
            except psutil.Error:
                pass
        unsound = [i for i in session.model_iterations() if not session.model_is_sound(i)]
        self.violation("unsound_model", len(unsound), str(unsound))
        self.check_models_load(set(unsound))
        expected = {f"-{Path(key).parent.name}-{Path(key).name}" for key in self.bad_all}
        moved = [
            p for p in session.quarantine_dir.iterdir() if not any(map(p.name.endswith, expected))
        ]
        self.violation("quarantined_file", len(moved), str([p.name for p in moved[:3]]))
        if clean:
            self.violation("temporary_file_left", len(list(session.path.rglob(".*.tmp*"))))
        self.check_samples()
        self.check_replay_state()

    def check_models_load(self, unsound: set[int]) -> None:
        """Load each model file not loaded before, by this run or (older than the record's
        last save) by an earlier one; a file a later run rewrote is new."""
        from gamegym.learners import get_learner

        learner = get_learner(self.session.load_config().train.learner)
        for iteration in self.session.model_iterations():
            path = self.session.model_path(iteration)
            try:
                stat = path.stat()
            except FileNotFoundError:
                continue  # pruned
            key = (iteration, stat.st_mtime_ns, stat.st_size)
            first = self.published.setdefault(iteration, key[1:])
            if first != key[1:]:  # published again: a second writer, or a step back
                self.violation("iteration_published_twice", 1, f"{path.name}: {first} {key[1:]}")
                self.published[iteration] = key[1:]
            if key in self.loaded or iteration in unsound or stat.st_mtime_ns < self.checked_until:
                continue
            self.loaded.add(key)
            for name, detail in load_as_runtime(learner, path, iteration, self.positions):
                self.violation(name, 1, f"{path.name}: {detail}")

    def check_samples(self) -> None:
        gone = [p for p in self.seen if not p.exists()]
        self.violation("sample_file_lost", len(gone), str(gone[:3]))
        self.seen -= set(gone)
        for it in sample_iterations(self.session.samples_dir):
            for path in sample_files(self.session.samples_dir, it):
                if path in self.seen or str(path.relative_to(self.session.path)) in self.bad_all:
                    continue  # (a bad file the soak published: check_bad_samples)
                self.seen.add(path)
                try:
                    arrays = read_sample_file(path, self.shape)
                except ValueError as error:
                    self.violation("sample_file_invalid", 1, str(error))
                    continue
                # the process that wrote it: "<role>-<pid>" of
                # "<role>-<pid>-<number>-<time>-<token>.npz"
                writer, name = writer_of(path.name), path.name
                for game in range(len(arrays["result"])):
                    rows = arrays["game"] == game
                    # a digest of the game (16 bytes, not the arrays: a soak of hours sees
                    # millions of games and keeps one key for each)
                    digest = hashlib.blake2b(digest_size=16)
                    digest.update(arrays["action"][rows].tobytes())
                    digest.update(arrays["root_value"][rows].round(6).tobytes())
                    digest.update(arrays["pi"][rows].round(6).tobytes())
                    key = digest.digest()
                    # one process draws its noise from one generator, so a game it plays twice
                    # is a coincidence of a network that has collapsed (tic-tac-toe's few games);
                    # the same game from two processes is what a reused seed writes
                    first = self.games.setdefault(key, writer)
                    if first != writer:
                        self.violation("repeated_game", 1, f"{name}, first from {first}")

    def check_replay_state(self) -> None:
        states = sorted(
            self.session.replay_dir.glob("*.npz"),
            key=lambda p: int(p.stem) if p.stem.isdigit() else -1,
        )
        if not states:
            return
        try:
            state = read_state(states[-1].read_bytes())
        except Exception as error:  # noqa: BLE001 - any failure is the violation
            self.violation("replay_state_mismatch", 1, str(error))
            return
        for key, (_iteration, file_rows, _, _) in zip(state["keys"], state["rows"]):
            path = self.session.samples_dir / key
            try:
                rows = len(read_sample_file(path)["z"])
            except (OSError, ValueError):
                rows = -1
            if rows != file_rows:
                self.violation("replay_state_mismatch", 1, f"{key}: {rows} != {file_rows}")

    # ----- the record -----------------------------------------------------------------------
    def summary(self) -> dict:
        samples = games = 0
        for it in sample_iterations(self.session.samples_dir):
            for path in sample_files(self.session.samples_dir, it):
                try:
                    with np.load(path) as data:
                        samples += len(data["z"])
                        games += len(data["result"])
                except (OSError, ValueError):
                    continue
        return {
            **self.totals,
            "games": games,
            "samples": samples,
            "iterations": max(0, self.session.current_iteration()),
        }

    def log_run(self) -> None:
        """This run's line of the run log: what it added to the totals so far."""
        line = self.totals["run_log"][-1]
        for key in ("faults", "cycles"):
            line[key] = self.totals[key] - self.run_start[key]
        line["minutes"] = round(self.totals["minutes"] - self.run_start["minutes"], 3)
        line["violations"] = sum(self.totals["violations"].values()) - self.run_start["violations"]

    def save(self) -> None:
        self.log_run()
        self.save_state()
        atomic_write_json(self.record_path, self.totals)

    def save_state(self) -> None:
        """What the checks have seen, for the next run on the folder (`--resume`): the
        digest of every game and its writer, the sample files checked, each model file's
        mtime and size."""
        writers = sorted(set(self.games.values()))
        index = {writer: i for i, writer in enumerate(writers)}
        buffer = io.BytesIO()
        np.savez(
            buffer,
            digests=np.frombuffer(b"".join(self.games), np.uint8).reshape(-1, 16),
            writer=np.array([index[w] for w in self.games.values()], np.int32),
            writers=np.array(writers, dtype=str),
            seen=np.array(sorted(str(p.relative_to(self.session.path)) for p in self.seen), str),
            published=np.array(
                [(it, *key) for it, key in sorted(self.published.items())], np.int64
            ).reshape(-1, 3),
            bad=np.array(sorted(self.bad_all), str),
            bad_pending=np.array(sorted(self.bad), str),
            bad_at=np.array([self.bad[key] for key in sorted(self.bad)], np.int64),
        )
        atomic_write_bytes(self.state_path, buffer.getvalue())

    def load_state(self) -> None:
        if not self.state_path.is_file():
            return
        with np.load(self.state_path) as state:
            writers = [str(w) for w in state["writers"]]
            self.games = {
                bytes(d): writers[i] for d, i in zip(state["digests"], state["writer"].tolist())
            }
            self.seen = {self.session.path / str(p) for p in state["seen"]}
            self.published = {int(r[0]): (int(r[1]), int(r[2])) for r in state["published"]}
            if "bad" in state.files:  # (a state from before the bad_sample fault)
                self.bad_all = {str(key) for key in state["bad"]}
                self.bad = {
                    str(key): int(at) for key, at in zip(state["bad_pending"], state["bad_at"])
                }


def positions(graph, count: int = 8) -> np.ndarray:
    """The first positions of a game along first moves: a small batch a model answers."""
    vertex, found = graph.roots[0], []
    while len(found) < count and not graph.terminal_at(vertex):
        found.append(graph.numpify(vertex))
        vertex = graph.children_at(vertex)[0]
    return np.stack(found)


def load_as_runtime(learner, path: Path, iteration: int, x: np.ndarray) -> list[tuple[str, str]]:
    """Load a model file with Keras as the Trainer and a TensorFlow Predictor do, and its fast
    file (when there is one not older than it) as a Predictor on the CPU fast path does; each
    answers `x`.  Returns the violations: (invariant, detail)."""
    from gamegym.data.session import fast_model_file
    from gamegym.nets.portable import evaluator_from_bytes
    from gamegym.nets.tfsetup import configure_tensorflow, import_keras, load_model

    configure_tensorflow(use_gpu=False, threads=1)
    import_keras().backend.clear_session()  # Keras' global name state grows with every load
    try:
        model = learner.make_evaluator(load_model(path), iteration, fast=False)
        want = model.run("evaluate", {"x": x})
    except Exception as error:  # noqa: BLE001 - any failure is the violation
        return [("model_does_not_load", f"{type(error).__name__}: {error}")]
    fast = fast_model_file(path)
    try:
        if fast.stat().st_mtime_ns < path.stat().st_mtime_ns:
            return []  # the runtime would make it again from the model
        got = evaluator_from_bytes(fast.read_bytes(), iteration, str(fast)).run(
            "evaluate", {"x": x}
        )
    except FileNotFoundError:
        return []  # no fast form: the runtime uses Keras
    except Exception as error:  # noqa: BLE001
        return [("model_does_not_load", f"{fast.name}: {type(error).__name__}: {error}")]
    differs = [
        name
        for name in want
        if name not in got or not np.allclose(got[name], want[name], atol=1e-4, rtol=1e-4)
    ]
    return [("fast_form_differs", f"{fast.name}: {differs}")] if differs else []


class IterationWatch:
    """The session's current iteration (models/current.json), read five times a second by a
    thread from before a gym starts until `stop`: it must never go back, also for a moment
    (a gym that steps back at its start, then trains past the iteration again)."""

    def __init__(self, session: Session, highest: int, interval: float = 0.2):
        self.session, self.highest, self.interval = session, highest, interval
        self.last = highest  # the iteration read last
        self.backsteps: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            stopping = self._stop.is_set()  # (one last look after the gym has stopped)
            try:
                iteration = self.session.current_iteration()
            except Exception:  # noqa: BLE001 - no model to name yet: nothing to compare
                iteration = self.last
            if iteration < self.last:  # (one step back, however long it is read)
                self.backsteps.append(f"{iteration} after {self.highest}")
            self.last, self.highest = iteration, max(self.highest, iteration)
            if stopping:
                return
            self._stop.wait(self.interval)

    def stop(self) -> list[str]:
        """Stop watching; each step back seen ("<iteration> after <the highest before>")."""
        self._stop.set()
        self._thread.join()
        return self.backsteps


class Lines:
    """The gym's console, read by a thread (so a full pipe never blocks the gym)."""

    def __init__(self, process):
        self.lines: list[str] = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, args=(process,), daemon=True).start()

    def _read(self, process) -> None:
        for line in process.stdout:
            with self.cond:
                self.lines.append(line)
                self.cond.notify_all()
        with self.cond:
            self.lines.append("")  # the end
            self.cond.notify_all()

    def wait_for(self, test, timeout: float, process, family: set[int]) -> bool:
        deadline = time.monotonic() + timeout
        seen = 0
        with self.cond:
            while time.monotonic() < deadline:
                family |= descendants(process)
                for line in self.lines[seen:]:
                    if line == "":
                        return False
                    if test(line):
                        return True
                seen = len(self.lines)
                self.cond.wait(timeout=1.0)
        return False


def gamegym(*args) -> list[str]:
    return [sys.executable, "-m", "gamegym", *map(str, args)]


def start_gym(session: Path, env: dict[str, str]):
    return subprocess.Popen(
        gamegym("resume", session),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )


def stop(gym, watcher, family: set[int], expect_stop: bool, wait_s: float = 60.0):
    """Wait for the gym to stop by itself (when the fault stops it, or it was killed); else
    type 'exit'; else kill it.  Then give its children the seconds they take to notice.
    Returns the gym's exit code and its stop reason (its 'stopping:' line, else its last)."""
    try:
        gym.wait(timeout=20.0 if expect_stop else 0.5)
    except subprocess.TimeoutExpired:
        family |= descendants(gym)
        try:
            gym.stdin.write("exit\n")
            gym.stdin.flush()
        except OSError:
            pass
        try:
            gym.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            gym.kill()
            gym.wait()
    deadline = time.monotonic() + 20.0  # orphans leave within ~8 s of the gym's death
    while time.monotonic() < deadline and any(running(p) for p in family):
        time.sleep(0.5)
    deadline = time.monotonic() + 5.0  # the console's last lines
    while time.monotonic() < deadline and (not watcher.lines or watcher.lines[-1] != ""):
        time.sleep(0.1)
    lines = [line.strip() for line in watcher.lines if line.strip()]
    stops = [line.split(STOPPING, 1)[1] for line in lines if STOPPING in line]
    return gym.returncode, stops[0] if stops else (lines[-1] if lines else "")


STOPPING = "[gamegym] stopping: "


def expected_stop(kind: str, target: str | None) -> tuple[set[int], str]:
    """The exit codes a gym may end with after a fault, and what its stop reason says."""
    if kind in ("kill_gym", "orphan"):
        return {-signal.SIGKILL}, ""
    if kind == "kill_trainer":
        return {1}, "trainer died"
    if kind == "stop_long" and target == "trainer":
        return {1}, "trainer stopped responding"
    if kind == "disk_full":  # the lock and runs.json are written as the gym starts
        return ({2} if target in ("lock", "runs") else {1}), "is full"
    return {0}, EXIT_TYPED  # the gym played on; the soak typed 'exit'


def stop_key(code: int, reason: str) -> str:
    """A stop's kind, for the count of stops by reason."""
    if code < 0:
        return f"killed by {signal.Signals(-code).name}"
    if "is full" in reason:
        return "disk full"
    return re.split(r" \(|;|: ", reason.removeprefix("gamegym: error: "))[0] or f"exit {code}"


def hits(record: Path) -> set[str]:
    """The file kinds an injected ENOSPC hit (the lines GAMEGYM_FAULT_RECORD collected)."""
    try:
        return {line.split()[0] for line in record.read_text().splitlines() if line.strip()}
    except FileNotFoundError:
        return set()


def descendants(process) -> set[int]:
    try:
        return {c.pid for c in psutil.Process(process.pid).children(recursive=True)}
    except psutil.Error:
        return set()


def describe(pids: list[int], logs_dir: Path) -> str:
    """Each process: pid, the role whose log has its 'starting' line, state, seconds alive and
    the command line's tail."""
    roles = {}
    for log in logs_dir.glob("*.log*"):
        try:
            text = log.read_text(errors="replace")
        except OSError:
            continue
        for pid in pids:
            if f" starting (pid {pid})" in text:
                roles[pid] = log.name
    parts = []
    for pid in pids:
        try:
            process = psutil.Process(pid)
            with process.oneshot():
                age = time.time() - process.create_time()
                tail = " ".join(process.cmdline()[-3:])[-80:]
                role = roles.get(pid, "?")
                parts.append(f"{pid} {role} {process.status()} {age:.0f}s [{tail}]")
        except psutil.Error:
            parts.append(f"{pid} gone")
    return "; ".join(parts)


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def role_pid(session: Session, role: str, family: set[int]) -> int | None:
    """The pid in the newest 'starting' line of a role's log, if it is one of this gym's."""
    try:
        text = (session.logs_dir / f"{role}.log").read_text()
    except OSError:
        return None
    lines = [line for line in text.splitlines() if " starting (pid " in line]
    if not lines:
        return None
    pid = int(lines[-1].split("(pid ")[1].rstrip(")"))
    return pid if pid in family and running(pid) else None


def json_text(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"not JSON ({error}): {text!r}") from None


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


def mutation_check(folder: Path, seed: int, names: list[str]) -> int:
    """A short soak per mutation check (one protection switched off, GAMEGYM_MUTATE), each
    with the faults that expose it: every one must report the violations it names.  Prints one
    JSON object: checks ({check: {caught, violations}}), shown (the invariants some check saw
    fire) and not_shown (the others, each with why); exit status 1 unless every check caught its violations."""
    report = {}
    for name in names:
        check = MUTATION_CHECKS[name]
        run_folder = folder / name.replace(":", "-")
        command = [sys.executable, __file__, "--minutes", "0", "--cycles", str(check.cycles)]
        command += ["--seed", str(seed), "--json", "--folder", str(run_folder)]
        command += ["--mutate", check.mutation, "--faults", *check.faults]
        if check.settings:
            command += ["--set", json.dumps(check.settings)]
        done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        try:
            violations = json.loads(done.stdout.strip().splitlines()[-1])["violations"]
        except (IndexError, json.JSONDecodeError, KeyError):
            violations = {}
            print(f"[soak] the soak of check {name} failed: {done.stderr[-2000:]}", flush=True)
        found = {v: n for v, n in violations.items() if n}
        caught = all(any(found.get(v) for v in entry.split("|")) for entry in check.catches)
        report[name] = {"caught": caught, "violations": found}
    shown = sorted({v for r in report.values() for v in r["violations"]})
    print(
        json.dumps(
            {
                "checks": report,
                "shown": shown,
                "not_shown": {
                    v: NOT_MUTATED.get(v, "no check reported it")
                    for v in INVARIANTS
                    if v not in shown
                },
            },
            sort_keys=True,
        )
    )
    return 0 if all(r["caught"] for r in report.values()) else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=None, help="run cycles this long")
    parser.add_argument("--cycles", type=int, default=None, help="run at least this many cycles")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folder", type=Path, default=Path("soak"))
    parser.add_argument("--resume", action="store_true", help="add to the soak in --folder")
    parser.add_argument("--json", action="store_true", help="print only the JSON summary")
    parser.add_argument(
        "--set",
        type=json_text,
        default={},
        metavar="JSON",
        help="changes to the settings of a new soak session, e.g. '{\"selfplay\": {...}}'",
    )
    parser.add_argument(
        "--faults",
        nargs="+",
        type=fault_spec,
        default=(),
        metavar="KIND[:TARGET]",
        help="draw the faults from these only (a target: a role, or a file kind of disk_full)",
    )
    parser.add_argument(
        "--mutate",
        choices=sorted(MUTATIONS),
        default="",
        help="switch one protection off in the gym (test only: the soak must then fail)",
    )
    parser.add_argument(
        "--mutation-check",
        nargs="*",
        choices=sorted(MUTATION_CHECKS),
        metavar="CHECK",
        help="a short soak per mutation check (all, or those named) in --folder/<check>; "
        "fails unless each reports its violations",
    )
    args = parser.parse_args(argv)
    if args.mutation_check is not None:
        return mutation_check(
            args.folder.resolve(), args.seed, args.mutation_check or sorted(MUTATION_CHECKS)
        )
    if args.minutes is None:
        parser.error("--minutes is required (except with --mutation-check)")
    if args.cycles is not None and args.cycles < 1:
        parser.error(f"--cycles must be at least 1, not {args.cycles}")
    soak = Soak(
        args.folder.resolve(), args.seed, args.resume, args.set, tuple(args.faults), args.mutate
    )
    started = time.monotonic()
    while True:
        cycle_start = time.monotonic()
        soak.cycle()
        soak.totals["minutes"] = round(
            soak.totals["minutes"] + (time.monotonic() - cycle_start) / 60, 3
        )
        soak.save()
        if not args.json:
            print(
                f"[soak] cycle {soak.totals['cycles']}: {soak.totals['faults_by_kind']}", flush=True
            )
        ran = soak.totals["cycles"] - soak.run_start["cycles"]
        if time.monotonic() - started >= args.minutes * 60 and ran >= (args.cycles or 1):
            break
    summary = soak.summary()
    print(json.dumps(summary, sort_keys=True))
    return 1 if any(summary["violations"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
