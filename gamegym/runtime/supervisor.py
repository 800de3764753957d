"""The gym's process supervisor: spawn, watch, restart Selfplayers, stop everything cleanly.

The Trainer and the Evaluator are child processes of the gym; where the Selfplayers and their
Predictor run is the backend's business (`gamegym.runtime.backends`: processes on this machine, or Ray
actors on a cluster).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import time

from gamegym.data.faults import mutated
from gamegym.data.fileio import append_jsonl, disk_full_message, is_disk_full, last_jsonl
from gamegym.registry import BACKENDS
from gamegym.runtime.backends import (
    JOIN_PREDICTOR_S,
    JOIN_SELFPLAYERS_S,
    MAX_EVALUATOR_RESTARTS,
    RestartBudget,
    SelfplayBackend,
)
from gamegym.runtime.heartbeat import BEAT_S, STARTUP_GRACE, Heartbeat
from gamegym.runtime.messages import ReportInbox
from gamegym.runtime.process import (
    EXIT_DISK_FULL,
    SEED_EVALUATOR,
    SEED_TRAINER,
    Child,
    process_seed,
    where_to_look,
)
from gamegym.runtime.stopflag import StopFlag
from gamegym.runtime.tensorboard import BoardWriter, status_scalars

__all__ = ["Supervisor", "Child", "JOIN_SELFPLAYERS_S", "JOIN_TRAINER_S", "JOIN_PREDICTOR_S"]

log = logging.getLogger("gamegym.runtime.supervisor")

JOIN_TRAINER_S = 10.0  # a Trainer mid-iteration is cut (nothing half-published)
FORCED_JOIN_S = 1.0  # per group, after a second Ctrl+C


def make_backend(host) -> SelfplayBackend:
    """The backend `selfplay.backend` names (gamegym.registry.BACKENDS)."""
    return BACKENDS.get(host.config.selfplay.backend)(host)


class Supervisor:
    """Runs the processes of one GameGym.resume()."""

    def __init__(
        self,
        gym,
        max_seconds: float | None,
        max_iterations: int | None,
        roles: tuple = ("trainer", "evaluator"),
    ):
        self.gym = gym
        self.roles = roles
        self.session = gym.session
        self.config = gym.config
        self.run_number = gym.run_number  # every process seed derives from it
        self.max_seconds = max_seconds
        self.max_iterations = max_iterations
        self.ctx = multiprocessing.get_context("spawn")
        self.stop_event = StopFlag(self.ctx)  # not ctx.Event(): see gamegym.runtime.stopflag
        self.reports = ReportInbox(self.ctx)  # a pipe per child: see messages.ReportSender
        self.children: dict[str, Child] = {}  # the Trainer and the Evaluator
        self.backend = make_backend(self)  # the Selfplayers and their Predictor
        self.failure = ""
        self.clock = time.monotonic
        self._continued = 0  # the gym's count of SIGCONTs when the children were last watched
        self.evaluator_budget = RestartBudget(MAX_EVALUATOR_RESTARTS)

    # ----- start ----------------------------------------------------------------------------
    def spawn(self, child: Child) -> None:
        child.heartbeat, child.hung = Heartbeat(self.ctx), ""
        reports = self.reports.sender()  # this incarnation's own report pipe
        child.process = self.ctx.Process(
            target=child.target,
            name=child.name,
            args=(self.session.logs_dir, self.config.log_level, child.name, *child.args),
            kwargs={
                "stop_event": self.stop_event,
                "heartbeat": child.heartbeat,
                "reports": reports,
                # the child holds the session lock with the gym: a new gym cannot start
                # beside it, even once this one is gone (gamegym.data.sessionlock.HeldLock)
                "session_lock": self.session.held_lock(),
            },
            daemon=False,
        )
        try:
            child.process.start()
        finally:
            reports.close()  # the child has its copy: its death is then the pipe's EOF
        child.heartbeat.seen(self.clock())
        self.session.record_child(child.name, child.process.pid)
        self.gym.monitor.watch(child.name, child.process.pid)
        log.info("started %s (pid %d)", child.name, child.process.pid)

    def start(self) -> None:
        # one BLAS thread per process: the processes already share the cores, and idle BLAS
        # threads spinning in the Predictor take CPU from the Selfplayers
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(name, "1")
        from gamegym.runtime.trainer import trainer_main

        path, cfg = str(self.session.path), self.config
        self.gym.monitor.watch("gym", os.getpid())
        self.gym.monitor.backend = self.backend
        self.backend.start()
        if "trainer" in self.roles:
            self.children["trainer"] = Child(
                "trainer",
                trainer_main,
                (
                    path,
                    cfg,
                    self.backend.model_channel(),
                    process_seed(cfg.seed, SEED_TRAINER, self.run_number),
                ),
            )
        if cfg.evaluate.every and "evaluator" in self.roles:
            from gamegym.runtime.evaluator import evaluator_main

            self.children["evaluator"] = Child(
                "evaluator",
                evaluator_main,
                (path, cfg, process_seed(cfg.seed, SEED_EVALUATOR, self.run_number)),
            )
        for child in self.children.values():
            self.spawn(child)

    # ----- watch ----------------------------------------------------------------------------
    def run(self) -> int:
        gym = self.gym
        started = time.monotonic()
        first_iteration = self.session.current_iteration()
        gym.monitor.iteration = max(gym.monitor.iteration, first_iteration)
        status_path = self.session.monitoring_dir / "status.jsonl"
        earlier = last_jsonl(status_path) or {}  # the TensorBoard charts go on from there
        gym.monitor.earlier_seconds = float(earlier.get("run_seconds", 0.0))
        board = BoardWriter(self.session.tensorboard_dir, "gym")
        last_status = time.monotonic()
        interval = self.config.status_interval
        try:
            self.start()  # inside: a start that fails half-way stops what it started
            while not gym.stop_requested.is_set():
                self._drain(timeout=0.5)
                self._check_heartbeats()
                self._check_children()
                self._poll_backend()
                if self.max_seconds is not None and time.monotonic() - started >= self.max_seconds:
                    gym.request_stop(f"time limit of {self.max_seconds:g} s reached")
                if (
                    self.max_iterations is not None
                    and self.session.current_iteration() - first_iteration >= self.max_iterations
                ):
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
            if interval:  # where it ended: the last figures, the latest rating included
                print(
                    f"[gamegym] final: {gym.monitor.status_line(gym.monitor.status())}", flush=True
                )
        if self.failure:
            print(f"[gamegym] stopped with an error: {self.failure}", flush=True)
            log.error("stopped with an error: %s", self.failure)
            return 1
        if gym.force:  # joins were cut short: games in flight may be lost
            log.warning("forced stop at iteration %d", self.session.current_iteration())
            return 130
        log.info("stopped cleanly at iteration %d", self.session.current_iteration())
        return 0

    def _drain(self, timeout: float) -> None:
        for report in self.reports.take(timeout):
            self.gym.monitor.add(report)

    def _check_children(self) -> None:
        """A dead Trainer stops the gym, naming it and where its error is; a dead Evaluator
        (training does not need it) is restarted with a seed of its own, as a Selfplayer is,
        until its restart budget is spent."""
        for child in list(self.children.values()):
            process = child.process
            if process is None or process.is_alive():
                continue
            code = process.exitcode
            where = where_to_look(self.session.logs_dir, child.name)
            how = f"was killed ({child.hung})" if child.hung else f"died (exit code {code})"
            if code != EXIT_DISK_FULL and child.name == "evaluator":
                failure = self._restart_evaluator(child, how, where)
                if not failure:
                    continue
                self.failure = failure
            elif code == EXIT_DISK_FULL:  # a restart would fail the same way
                self.failure = (
                    f"{child.name} could not write ({where}): "
                    f"{disk_full_message(self.session.path)}"
                )
            elif child.hung:
                self.failure = (
                    f"{child.name} stopped responding and was killed ({child.hung}); {where}"
                )
            else:
                self.failure = f"{child.name} died (exit code {code}); {where}"
            self.gym.request_stop(self.failure)
            return

    def _restart_evaluator(self, child: Child, how: str, where: str) -> str:
        """Start the Evaluator again; past its restart budget, the failure instead."""
        failure = self.evaluator_budget.tally(self.clock(), child, child.name, how, where)
        if failure:
            return failure
        path, cfg, _ = child.args
        child.args = (
            path,
            cfg,
            process_seed(cfg.seed, SEED_EVALUATOR, self.run_number, child.restarts),
        )
        self.spawn(child)
        return ""

    def _check_heartbeats(self) -> None:
        """Kill a child whose heartbeat stopped, or that beats but has counted no work for
        `progress_timeout` seconds (see gamegym.runtime.heartbeat), naming it; its death is
        then handled as a crash (a Selfplayer, the Evaluator or the Predictor is restarted, a
        Trainer stops the gym with the reason).  A heartbeat_timeout or progress_timeout of 0
        turns that watch off.  When the gym itself was stopped and continued (Ctrl+Z of the
        process group, then `fg`: its children could not beat either), every watch starts
        again instead."""
        if mutated("heartbeat"):  # (the soak's mutation check: no liveness watch)
            return
        now = self.clock()
        children = [*self.children.values(), *getattr(self.backend, "children", {}).values()]
        continued = getattr(self.gym, "continued", 0)  # SIGCONTs the gym received
        if continued != self._continued:
            self._continued = continued
            log.warning("the gym was stopped and continued; watching every process afresh")
            for child in children:
                if child.heartbeat is not None:
                    child.heartbeat.restart(now)
            return
        beats, work = self.config.heartbeat_timeout, self.config.progress_timeout
        by_name = {child.name: child for child in children}
        for child in children:
            beat, process = child.heartbeat, child.process
            if beat is None or process is None or child.hung or not process.is_alive():
                continue
            silent, idle = beat.silent_for(now), beat.idle_for(now)
            if beats and silent >= (beats if beat.started else STARTUP_GRACE * beats):
                child.hung = f"no heartbeat for {silent:.0f} s"
                message = (
                    f"{child.name} is not responding (no heartbeat for {silent:.0f} s: "
                    "stopped or hung); killing it"
                )
            elif (
                work
                and idle >= (work if beat.working else STARTUP_GRACE * work)
                and not self._waits_on_stuck(child, by_name, now, work)
            ):
                child.hung = f"no progress for {idle:.0f} s"
                how = (
                    "its heartbeat goes on: hung in a call"
                    if silent < BEAT_S * 5
                    else f"no heartbeat either for {silent:.0f} s: stopped or hung"
                )
                message = f"{child.name} made no progress for {idle:.0f} s ({how}); killing it"
            else:
                continue
            log.error(message)
            print(f"[gamegym] {message}", flush=True)
            process.kill()

    @staticmethod
    def _waits_on_stuck(child: Child, by_name: dict[str, Child], now: float, work: float) -> bool:
        """Whether the process `child` waits on (a Selfplayer's Predictor: `extra["waits_on"]`)
        was killed as hung or has made no progress for half of `work` seconds itself: then it,
        not `child`, is the one stuck; `child` exits by itself once it is killed, and writes
        its finished games first."""
        upstream = by_name.get(child.extra.get("waits_on", ""))
        if upstream is None or upstream.heartbeat is None:
            return False
        return bool(upstream.hung) or upstream.heartbeat.idle_for(now) >= work / 2

    def _poll_backend(self) -> None:
        try:
            failure = self.backend.poll()
        except OSError as error:  # the gym itself writes the sample files of a Ray backend
            if not is_disk_full(error):
                raise
            failure = disk_full_message(self.session.path, error)
        if failure and not self.failure:
            self.failure = failure
            self.gym.request_stop(failure)

    # ----- stop -----------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Selfplayers flush and exit first, then the Trainer, then the Predictor."""
        self.stop_event.set()
        self.backend.stop_selfplayers()
        self.join([self.children.get("trainer"), self.children.get("evaluator")], JOIN_TRAINER_S)
        self.backend.stop()
        self._drain(timeout=0.1)
        self.reports.close()
        self._remove_leftovers()

    def _remove_leftovers(self) -> None:
        """A child killed mid-write (a forced stop) leaves its temporary file behind; once no
        child is alive none of them is being written, so the folder is left tidy."""
        if self.backend.alive() or any(
            c.process is not None and c.process.is_alive() for c in self.children.values()
        ):
            return
        removed = self.session.tidy()
        if removed:
            log.info("removed %d temporary files left by children stopped mid-write", removed)

    def join(self, group: list, limit: float) -> None:
        """Wait up to `limit` seconds for the group (1 s once the stop is forced, even when the
        force comes during the wait), then terminate, then kill what is left."""
        started = time.monotonic()

        def waited_enough() -> bool:
            return time.monotonic() - started >= (FORCED_JOIN_S if self.gym.force else limit)

        for child in group:
            if child is None or child.process is None:
                continue
            while child.process.is_alive() and not waited_enough():
                self._drain(timeout=0.05)  # keep the report pipes flowing so children can exit
                child.process.join(timeout=0.2)
            if child.process.is_alive():
                log.warning("%s did not stop in time; terminating it", child.name)
                child.process.terminate()
                child.process.join(timeout=3.0)
                if child.process.is_alive():
                    child.process.kill()
                    child.process.join(timeout=3.0)
