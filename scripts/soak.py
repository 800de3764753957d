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
runs, and as it starts) and none is published twice (once current.json names it); every model
file is a sound archive that loads as the runtime loads it (Keras, as the Trainer and a
TensorFlow Predictor do, and its fast-path file where there is one, as a Predictor on the CPU
fast path does), each answering one batch of positions, the fast form what the model answers;
the newest replay state names only sample files on disk with their row counts; a bad sample
file the soak published is in quarantine once two iterations were trained after it; no
temporary file after a clean stop, and nothing else in quarantine; no process of the gym left
running; every sample file seen before is still there and valid.

`--set '{"selfplay": {...}}'` changes the session's settings, section by section, when the soak
makes its session (a resumed soak keeps the session's).  Counts are kept in <folder>/soak.json;
`--resume` adds to them (a long soak is made of runs of a few hours).  It prints one JSON
object: faults, faults_by_kind, faults_missed, faults_hit_by_file_kind, stops_by_reason,
unexpected_stops, resumes, games, samples, iterations, cycles, minutes, violations (each
invariant's name and its count), and run_log (one line per run: its start, seed, minutes,
cycles, faults and violations).

The soak's parts: its faults (scripts/soak_faults.py), its invariants
(scripts/soak_checks.py), the gym's process (scripts/soak_gym.py) and the mutation check
(scripts/soak_mutations.py); this file runs them and keeps the record.

Each gym runs in a session of its own, so no job control outside the soak continues a process
it stopped; Ctrl+C stops the soak and the gym it runs (`interrupt_gyms`).
`--cycles N` runs at least N cycles (the soak stops after --minutes and N cycles).
`--faults-in-order` takes the --faults one a cycle, in turn, instead of drawing them; before each
cycle's fault, `--wait-writers N` waits until N processes have written sample files and
`--wait-iterations N` until the gym has trained N iterations (each up to 120 s): the mutation
check's soaks use them.

`--mutation-check` runs a soak of one or two cycles per check (MUTATION_CHECKS: a protection
switched off in the gym, GAMEGYM_MUTATE, with the fault that exposes it), and exits 1 unless
each reports the violations it names.  Its JSON names the invariants shown to fire and those
not shown (NOT_MUTATED says why).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from soak_checks import INVARIANTS, Checks, IterationWatch, expected_stop
from soak_faults import Faults, fault_spec
from soak_gym import GYMS, Lines, descendants, hits, interrupt_gyms, start_gym, stop
from soak_mutations import MUTATION_CHECKS, mutation_check

from gamegym.config import merged_settings
from gamegym.data.faults import ENOSPC_VAR, MUTATE_VAR, MUTATIONS, RECORD_VAR
from gamegym.data.fileio import atomic_write_json
from gamegym.data.samplefolder import sample_files, sample_iterations
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


class Soak(Faults, Checks):
    """One run of the soak on a folder (see the module docstring)."""

    def __init__(
        self,
        folder: Path,
        seed: int,
        resume: bool,
        changes: dict | None = None,
        faults: tuple[str, ...] = (),
        mutation: str = "",
        in_order: bool = False,
        wait_writers: int = 0,
        wait_iterations: int = 0,
    ):
        self.folder = folder
        self.faults = faults  # --faults: the kinds drawn from (all when empty)
        self.in_order = in_order  # --faults-in-order: one a cycle, in turn, not drawn
        self.mutation = mutation  # GAMEGYM_MUTATE for the gym (the mutation check)
        # before each fault: processes that have written sample files, iterations trained
        self.wait_writers, self.wait_iterations = wait_writers, wait_iterations
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
        # every model file present when the record was last saved had been loaded by that
        # cycle's check: a resumed soak loads only the files written (or rewritten) since
        checked_until = self.record_path.stat().st_mtime_ns if self.record_path.is_file() else -1
        self.start_checks(load_game(GAME), folder / "soak-state.npz", resume, checked_until)

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
    def cycle(self) -> None:
        GYMS.clear()  # the gyms a Ctrl+C stops: this cycle's
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
            if self.wait_writers:
                self.wait_for_samples(gym, writers=self.wait_writers)
            if self.wait_iterations:
                self.wait_for_iterations(gym, self.wait_iterations, since=self.max_iteration)
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

    def mutation_env(self) -> dict[str, str]:
        return {MUTATE_VAR: self.mutation} if self.mutation else {}

    def count_fault(self, kind: str) -> None:
        self.totals["faults"] += 1
        by_kind = self.totals["faults_by_kind"]
        by_kind[kind] = by_kind.get(kind, 0) + 1

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


def json_text(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"not JSON ({error}): {text!r}") from None


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
        "--faults-in-order",
        action="store_true",
        help="take the --faults one a cycle, in turn, instead of drawing them",
    )
    parser.add_argument(
        "--wait-writers",
        type=int,
        default=0,
        metavar="N",
        help="before each cycle's fault, wait (up to 120 s) until N processes wrote sample files",
    )
    parser.add_argument(
        "--wait-iterations",
        type=int,
        default=0,
        metavar="N",
        help="before each cycle's fault, wait (up to 120 s) until the gym trained N iterations",
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
        args.folder.resolve(),
        args.seed,
        args.resume,
        args.set,
        tuple(args.faults),
        args.mutate,
        args.faults_in_order,
        args.wait_writers,
        args.wait_iterations,
    )
    started = time.monotonic()
    while True:
        cycle_start = time.monotonic()
        try:
            soak.cycle()
        except KeyboardInterrupt:
            interrupt_gyms()
            raise SystemExit(
                f"[soak] interrupted: the gym was stopped; {soak.record_path} holds the "
                "cycles before this one"
            ) from None
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
