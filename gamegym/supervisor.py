"""The gym's process supervisor: spawn, watch, restart Selfplayers, stop everything cleanly."""
from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import time
from dataclasses import dataclass, field

from gamegym.fileio import append_jsonl, disk_full_message, is_disk_full, last_jsonl
from gamegym.process import EXIT_DISK_FULL, derive_seed, log_path
from gamegym.tensorboard import BoardWriter, status_scalars

log = logging.getLogger("gamegym.supervisor")

JOIN_SELFPLAYERS_S = 20.0   # a Selfplayer finishes its move and flushes its games
JOIN_TRAINER_S = 10.0       # a Trainer mid-iteration is cut (nothing half-published)
JOIN_PREDICTOR_S = 5.0
FORCED_JOIN_S = 1.0          # per group, after a second Ctrl+C
MAX_SELFPLAYER_RESTARTS = 5  # per Selfplayer slot, then the gym stops with an error


@dataclass
class Child:
    name: str
    target: object
    args: tuple
    process: multiprocessing.Process | None = None
    restarts: int = 0
    extra: dict = field(default_factory=dict)


class Supervisor:
    """Runs the processes of one GameGym.resume()."""

    def __init__(self, gym, max_seconds: float | None, max_iterations: int | None,
                 roles: tuple = ("predictor", "trainer", "selfplayer", "evaluator")):
        self.gym = gym
        self.roles = roles
        self.session = gym.session
        self.config = gym.config
        self.max_seconds = max_seconds
        self.max_iterations = max_iterations
        self.ctx = multiprocessing.get_context("spawn")
        self.stop_event = self.ctx.Event()
        self.reports = self.ctx.Queue()
        self.children: dict[str, Child] = {}
        self.failure = ""

    # ----- start ----------------------------------------------------------------------------
    def _spawn(self, child: Child) -> None:
        child.process = self.ctx.Process(
            target=child.target, name=child.name,
            args=(self.session.logs_dir, self.config.log_level, child.name, *child.args),
            kwargs={"stop_event": self.stop_event}, daemon=False)
        child.process.start()
        self.gym.monitor.watch(child.name, child.process.pid)
        log.info("started %s (pid %d)", child.name, child.process.pid)

    def start(self) -> None:
        # one BLAS thread per process: the processes already share the cores, and idle BLAS
        # threads spinning in the Predictor take CPU from the Selfplayers
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(name, "1")
        from gamegym.predictor import predictor_main
        from gamegym.selfplay import selfplayer_main
        from gamegym.trainer import trainer_main
        path, cfg = str(self.session.path), self.config
        count = cfg.selfplay.selfplayprocesses
        pipes = [self.ctx.Pipe(duplex=True) for _ in range(count)]
        control_in, control_out = self.ctx.Pipe(duplex=False)
        self.children["predictor"] = Child(
            "predictor", predictor_main, (path, cfg, [p[0] for p in pipes], control_in, self.reports))
        self.children["trainer"] = Child(
            "trainer", trainer_main, (path, cfg, control_out, self.reports, derive_seed(cfg.seed, 2)))
        if cfg.evaluate.every:
            from gamegym.evaluation import evaluator_main
            self.children["evaluator"] = Child(
                "evaluator", evaluator_main, (path, cfg, self.reports, derive_seed(cfg.seed, 3)))
        for i in range(count):
            self.children[f"selfplayer{i}"] = Child(
                f"selfplayer{i}", selfplayer_main,
                (path, cfg, i, pipes[i][1], self.reports, derive_seed(cfg.seed, 1, i, 0)),
                extra={"index": i})
        self.gym.monitor.watch("gym", os.getpid())
        for name in list(self.children):
            if name.rstrip("0123456789") not in self.roles:
                del self.children[name]
        for child in self.children.values():
            self._spawn(child)

    # ----- watch ----------------------------------------------------------------------------
    def run(self) -> int:
        gym = self.gym
        self.start()
        started = time.monotonic()
        first_iteration = self.session.current_iteration()
        gym.monitor.iteration = max(gym.monitor.iteration, first_iteration)
        status_path = self.session.monitoring_dir / "status.jsonl"
        earlier = last_jsonl(status_path) or {}   # the TensorBoard charts go on from there
        gym.monitor.earlier_seconds = float(earlier.get("run_seconds", 0.0))
        board = BoardWriter(self.session.tensorboard_dir, "gym")
        last_status = time.monotonic()
        interval = self.config.status_interval
        try:
            while not gym.stop_requested.is_set():
                self._drain(timeout=0.5)
                self._check_children()
                if self.max_seconds is not None and time.monotonic() - started >= self.max_seconds:
                    gym.request_stop(f"time limit of {self.max_seconds:g} s reached")
                if self.max_iterations is not None and \
                        self.session.current_iteration() - first_iteration >= self.max_iterations:
                    gym.request_stop(f"{self.max_iterations} new iterations trained")
                if interval and time.monotonic() - last_status >= interval:
                    last_status = time.monotonic()
                    status = gym.monitor.status()
                    try:
                        append_jsonl(status_path, status)
                        board.scalars(int(status["run_seconds"]), status_scalars(status))
                    except OSError as error:
                        if not is_disk_full(error):
                            raise
                        self.failure = disk_full_message(self.session.path, error)
                        gym.request_stop(self.failure)
                    print(f"[gamegym] {gym.monitor.status_line(status)}", flush=True)
        finally:
            self.shutdown()
            board.close()
            if interval:   # where it ended: the last figures, the latest rating included
                print(f"[gamegym] final: {gym.monitor.status_line(gym.monitor.status())}",
                      flush=True)
        if self.failure:
            print(f"[gamegym] stopped with an error: {self.failure}", flush=True)
            log.error("stopped with an error: %s", self.failure)
            return 1
        if gym.force:   # joins were cut short: games in flight may be lost
            log.warning("forced stop at iteration %d", self.session.current_iteration())
            return 130
        log.info("stopped cleanly at iteration %d", self.session.current_iteration())
        return 0

    def _drain(self, timeout: float) -> None:
        try:
            report = self.reports.get(timeout=timeout)
        except queue.Empty:
            return
        self.gym.monitor.add(report)
        while True:
            try:
                self.gym.monitor.add(self.reports.get_nowait())
            except queue.Empty:
                return

    def _check_children(self) -> None:
        for child in list(self.children.values()):
            process = child.process
            if process is None or process.is_alive():
                continue
            code = process.exitcode
            if code == EXIT_DISK_FULL:   # a restart would fail the same way
                self.failure = (f"{child.name} could not write ({self._where_to_look(child)}): "
                                f"{disk_full_message(self.session.path)}")
                self.gym.request_stop(self.failure)
                return
            if child.name.startswith("selfplayer") and child.restarts < MAX_SELFPLAYER_RESTARTS:
                child.restarts += 1
                log.warning("%s died (exit code %s); restart %d of %d", child.name, code,
                            child.restarts, MAX_SELFPLAYER_RESTARTS)
                print(f"[gamegym] {child.name} died (exit code {code}); restarting", flush=True)
                args = list(child.args)
                args[-1] = derive_seed(self.config.seed, 1, child.extra["index"], child.restarts)
                child.args = tuple(args)
                self._spawn(child)
                continue
            what = "too many restarts" if child.name.startswith("selfplayer") else \
                f"exit code {code}"
            self.failure = f"{child.name} died ({what}); {self._where_to_look(child)}"
            self.gym.request_stop(self.failure)
            return

    def _where_to_look(self, child) -> str:
        """Where the cause of a child's death is: its log, or the console when it died before
        opening one (e.g. while spawn imported the main script)."""
        path = log_path(self.session.logs_dir, child.name)
        if path.is_file():
            return f"see {path}"
        return "its error is on the console above: it died before it opened its log"

    # ----- stop -----------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Selfplayers flush and exit first, then the Trainer, then the Predictor."""
        self.stop_event.set()
        groups = [([c for n, c in self.children.items() if n.startswith("selfplayer")],
                   JOIN_SELFPLAYERS_S),
                  ([self.children.get("trainer"), self.children.get("evaluator")],
                   JOIN_TRAINER_S),
                  ([self.children.get("predictor")], JOIN_PREDICTOR_S)]
        for group, limit in groups:
            self._join(group, limit)
        self._drain(timeout=0.1)
        self._remove_leftovers()

    def _remove_leftovers(self) -> None:
        """A child killed mid-write (a forced stop) leaves its temporary file behind; once no
        child is alive none of them is being written, so the folder is left tidy."""
        if any(c.process is not None and c.process.is_alive() for c in self.children.values()):
            return
        removed = self.session.tidy()
        if removed:
            log.info("removed %d temporary files left by children stopped mid-write", removed)

    def _join(self, group: list, limit: float) -> None:
        """Wait up to `limit` seconds for the group (1 s once the stop is forced, even when the
        force comes during the wait), then terminate, then kill what is left."""
        started = time.monotonic()

        def waited_enough() -> bool:
            return time.monotonic() - started >= (FORCED_JOIN_S if self.gym.force else limit)

        for child in group:
            if child is None or child.process is None:
                continue
            while child.process.is_alive() and not waited_enough():
                self._drain(timeout=0.05)  # keep the report queue flowing so children can exit
                child.process.join(timeout=0.2)
            if child.process.is_alive():
                log.warning("%s did not stop in time; terminating it", child.name)
                child.process.terminate()
                child.process.join(timeout=3.0)
                if child.process.is_alive():
                    child.process.kill()
                    child.process.join(timeout=3.0)
