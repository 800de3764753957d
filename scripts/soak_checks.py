"""The chaos soak's invariants (scripts/soak.py): the checks after every cycle, what they have
seen (kept for the next run on the folder, `--resume`), the watch of the current iteration while
the gym runs, and the stop each fault must end in."""

from __future__ import annotations

import hashlib
import io
import re
import signal
import sys
import threading
from pathlib import Path

import numpy as np
import psutil
from soak_gym import describe, running

from gamegym.data.fileio import atomic_write_bytes
from gamegym.data.replaybuffer import read_state
from gamegym.data.samplefolder import sample_files, sample_iterations
from gamegym.data.samples import SampleShape, read_sample_file
from gamegym.data.session import Session

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


EXIT_TYPED = "'exit' typed on the console"


class Checks:
    """The invariants of a soak's session (`session`), counted in `totals["violations"]`, and
    what the checks have seen: the Soak of scripts/soak.py is one."""

    session: Session
    totals: dict

    def start_checks(self, graph, state_path: Path, resume: bool, checked_until: int) -> None:
        """Nothing seen yet, or (`resume`) what the last run on the folder saw; the model files
        older than `checked_until` (ns) were loaded by then."""
        self.shape = SampleShape.of(graph)
        self.state_path = state_path
        self.games: dict[bytes, str] = {}  # a game's digest -> the process that wrote it
        self.seen: set[Path] = set()  # the sample files checked
        self.published: dict[int, tuple[int, int]] = {}  # iteration -> its model's mtime, size
        self.bad_all: set[str] = set()  # the bad sample files the soak published
        self.bad: dict[str, int] = {}  # those not checked yet -> the iteration they came at
        if resume:
            self.load_state()
        self.max_iteration = self.session.current_iteration()
        self.loaded: set[tuple] = set()  # (iteration, mtime, size) of the model files loaded
        self.checked_until = checked_until
        self.positions = positions(graph)

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

    def violation(self, name: str, count: int = 1, detail: str = "") -> None:
        if count:
            violations = self.totals["violations"]  # (a record from before an invariant)
            violations[name] = violations.get(name, 0) + count
            print(f"[soak] violation {name} x{count} {detail}", file=sys.stderr, flush=True)

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
        last save) by an earlier one; a file a later run rewrote is new.  A model is published
        once current.json names it (or a later one): a file beyond that, whose current.json
        could not be written, is trained and written again by the next gym, not published
        twice."""
        from gamegym.learners import get_learner

        learner = get_learner(self.session.load_config().train.learner)
        current = self.session.current_iteration()
        for iteration in self.session.model_iterations():
            path = self.session.model_path(iteration)
            try:
                stat = path.stat()
            except FileNotFoundError:
                continue  # pruned
            key = (iteration, stat.st_mtime_ns, stat.st_size)
            first = self.published.setdefault(iteration, key[1:]) if iteration <= current else None
            if first is not None and first != key[1:]:  # a second writer, or a step back
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


def writer_of(name: str) -> str:
    """The process that wrote a sample file: "<role>-<pid>", its name's first two parts."""
    return "-".join(name.split("-")[:2])


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
