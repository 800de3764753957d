"""A seeded chaos soak: a real session, faults injected on a seeded schedule, invariants checked.

    python scripts/soak.py --minutes 10 --seed 1 --json [--folder soak] [--resume] [--set JSON]

It runs a tic-tac-toe session with every process kind (Trainer, Predictor, two Selfplayers, the
Evaluator; curious replay, so the replay state is on disk too) in cycles: start the gym, let it
play, inject one fault, let the gym stop (or stop it), and check the folder.  The faults, drawn
from the seed: SIGKILL of each process kind and of the gym itself, SIGSTOP (short: resumed by
SIGCONT; long: the gym's heartbeat deadline kills it), `exit` typed on the console, and a full
disk (a file-size limit on the gym and its children, as a quota would set).

After every cycle it checks: no two processes wrote a game with the same moves, search values
and policy targets (such a repeat is a replayed seed; one process's two equal games are the
coincidence of a collapsed network); iterations never go back; every model file is a sound archive
that loads as the runtime loads it (Keras, as the Trainer and a TensorFlow Predictor do, and its
fast-path file where there is one, as a Predictor on the CPU fast path does), each answering one
batch of positions, the fast form what the model answers; the newest
replay state names only sample files on disk with their row counts; no temporary file after a
clean stop, and nothing in quarantine (no damage is injected); no process of the gym left
running; every sample file seen before is still there and valid.

`--set '{"selfplay": {...}}'` changes the session's settings, section by section, when the soak
makes its session (a resumed soak keeps the session's).  Counts are kept in <folder>/soak.json;
`--resume` adds to them (a long soak is made of runs of
a few hours).  It prints one JSON object: faults, faults_by_kind, resumes, games, samples,
iterations, cycles, minutes, violations (each invariant's name and its count), and run_log
(one line per run: its start, seed, minutes, cycles, faults and violations).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil

from gamegym.config import merged_settings
from gamegym.data.fileio import atomic_write_json
from gamegym.data.replaybuffer import read_state
from gamegym.data.samples import SampleShape, read_sample_file, sample_files, sample_iterations
from gamegym.data.session import Session
from gamegym.game.graph import load_game

GAME = "games.tictactoe:TicTacToe"
CONFIG = {
    "network": {"kind": "dense", "width": 16, "blocks": 1},
    "selfplay": {
        "selfplayprocesses": 2,
        "searchthreadcount": 2,
        "searchcount": 16,
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
    "evaluate": {"every": 1, "games": 4, "searchcount": 8, "opponents": ["random"]},
    "status_interval": 1.0,
    "heartbeat_timeout": 6.0,
}
SURVIVED = ("kill_selfplayer", "stop_short")  # the gym plays on after these
KINDS = (
    "kill_trainer",
    "kill_predictor",
    "kill_selfplayer",
    "kill_evaluator",
    "kill_gym",
    "stop_short",
    "stop_long",
    "exit",
    "disk_full",
)
ROLES_STOPPED = ("trainer", "predictor", "selfplayer0", "selfplayer1", "evaluator")
INVARIANTS = (
    "repeated_game",
    "iteration_went_back",
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
)


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

    def __init__(self, folder: Path, seed: int, resume: bool, changes: dict | None = None):
        self.folder = folder
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
        self.games: dict[bytes, str] = {}  # a game's digest -> the file it is in
        self.seen: set[Path] = set()
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
    def cycle(self) -> None:
        kind = KINDS[int(self.rng.integers(len(KINDS)))]
        limit = kind == "disk_full"
        gym = start_gym(self.session.path, limit)
        watcher = Lines(gym)
        family: set[int] = set()
        started = watcher.wait_for(
            lambda line: "| games " in line or "stopped" in line, 150, gym, family
        )
        if not started and not limit:
            self.violation("gym_did_not_start")
        elif not limit:
            for _extra in range(int(self.rng.integers(0, 4))):  # faults the gym plays on after
                time.sleep(float(self.rng.uniform(1.0, 4.0)))
                family |= descendants(gym)
                survived = SURVIVED[int(self.rng.integers(len(SURVIVED)))]
                self.inject(survived, gym, watcher, family)
                self.count_fault(survived)
            time.sleep(float(self.rng.uniform(1.0, 6.0)))
            family |= descendants(gym)
            self.inject(kind, gym, watcher, family)
        stop(gym, watcher, family, expect_stop=kind not in SURVIVED)
        self.count_fault(kind)
        self.check(family, clean=gym.returncode in (0, 1))  # the gym's own stop: tidy
        self.totals["resumes"] += 1
        self.totals["cycles"] += 1

    def inject(self, kind: str, gym, watcher, family) -> None:
        if kind == "exit":
            gym.stdin.write("exit\n")
            gym.stdin.flush()
            return
        if kind == "kill_gym":
            os.kill(gym.pid, signal.SIGKILL)
            return
        role = {
            "kill_trainer": "trainer",
            "kill_predictor": "predictor",
            "kill_evaluator": "evaluator",
        }.get(kind)
        if role is None:
            role = (
                f"selfplayer{int(self.rng.integers(2))}"
                if kind == "kill_selfplayer"
                else ROLES_STOPPED[int(self.rng.integers(len(ROLES_STOPPED)))]
            )
        pid = role_pid(self.session, role, family)
        if pid is None:
            return  # not running now (an Evaluator between ratings): the fault is the stop
        if kind.startswith("kill"):
            os.kill(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGSTOP)
            pause = 2.0 if kind == "stop_short" else self.config["heartbeat_timeout"] + 6.0
            time.sleep(pause)
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass  # the gym killed it as hung
        time.sleep(float(self.rng.uniform(1.0, 4.0)))

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
        iteration = session.current_iteration()
        self.violation(
            "iteration_went_back",
            int(iteration < self.max_iteration),
            f"{iteration} < {self.max_iteration}",
        )
        self.max_iteration = max(self.max_iteration, iteration)
        unsound = [i for i in session.model_iterations() if not session.model_is_sound(i)]
        self.violation("unsound_model", len(unsound), str(unsound))
        self.check_models_load(set(unsound))
        self.violation("quarantined_file", len(list(session.quarantine_dir.iterdir())))
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
                if path in self.seen:
                    continue
                self.seen.add(path)
                try:
                    arrays = read_sample_file(path, self.shape)
                except ValueError as error:
                    self.violation("sample_file_invalid", 1, str(error))
                    continue
                # the process that wrote it: "<role>-<pid>" of
                # "<role>-<pid>-<number>-<time>-<token>.npz"
                writer = writer_of(path.name)
                name = path.name
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
                    first = self.games.setdefault(key, name)
                    if first != name and writer_of(first) != writer:
                        self.violation("repeated_game", 1, f"{name} {first}")

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
        atomic_write_json(self.record_path, self.totals)


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


def start_gym(session: Path, limit_files: bool):
    def limit():  # a quota-like limit: no file of the gym or its children may grow past 64 KiB
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

    return subprocess.Popen(
        gamegym("resume", session),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=limit if limit_files else None,
    )


def stop(gym, watcher, family: set[int], expect_stop: bool, wait_s: float = 60.0) -> None:
    """Wait for the gym to stop by itself (when the fault stops it, or it was killed); else
    type 'exit'; else kill it.  Then give its children the seconds they take to notice."""
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, required=True)
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
    args = parser.parse_args(argv)
    soak = Soak(args.folder.resolve(), args.seed, args.resume, args.set)
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
        if time.monotonic() - started >= args.minutes * 60:
            break
    summary = soak.summary()
    print(json.dumps(summary, sort_keys=True))
    return 1 if any(summary["violations"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
