"""Where the Selfplayers and their Predictor run: the Supervisor's one seam for them.

The Supervisor keeps the Trainer and the Evaluator as child processes of the gym and asks a
*backend* (`selfplay.backend`) for everything about self-play:

  start()             start the Predictor(s) and the Selfplayers
  model_channel()     the connection on which the Trainer announces each published iteration
                      (a `Reload`); the backend gets it to every Predictor
  poll()              called about twice a second: take reports and finished games, restart
                      dead Selfplayers; returns why the gym must stop, or ""
  status()            backend, nodes, Selfplayers alive, searches/s per node (status line)
  stop_selfplayers()  Selfplayers finish their move, their games are written, they exit
  stop()              then everything else the backend started
  alive()             whether anything it started still runs

`ProcessBackend` ("processes", the default) is one Predictor and `selfplayprocesses`
Selfplayer processes on this machine; `gamegym.runtime.ray.backend.RayBackend` ("ray") runs them as
Ray actors on the nodes of a cluster.  Each is given its *host*, the Supervisor: the session,
the config, the gym (its monitor and stop request), and how to spawn and join child processes.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Sequence
from multiprocessing.connection import Connection
from multiprocessing.context import SpawnContext
from typing import TYPE_CHECKING, Any, Protocol

from gamegym.data.fileio import disk_full_message
from gamegym.registry import BACKENDS
from gamegym.runtime.messages import NewClient
from gamegym.runtime.process import (
    EXIT_DISK_FULL,
    SEED_SELFPLAYER,
    Child,
    process_seed,
    where_to_look,
)

if TYPE_CHECKING:
    from gamegym.config import GymConfig
    from gamegym.data.session import Session

__all__ = [
    "SelfplayBackend",
    "BackendHost",
    "ProcessBackend",
    "RestartBudget",
    "MAX_SELFPLAYER_RESTARTS",
    "MAX_PREDICTOR_RESTARTS",
    "MAX_EVALUATOR_RESTARTS",
    "RESTART_WINDOW_S",
    "JOIN_SELFPLAYERS_S",
    "JOIN_PREDICTOR_S",
]

log = logging.getLogger("gamegym.runtime.backends")

JOIN_SELFPLAYERS_S = 20.0  # a Selfplayer finishes its move and flushes its games
JOIN_PREDICTOR_S = 5.0
# restarts within RESTART_WINDOW_S, per role, before the gym stops with an error
MAX_SELFPLAYER_RESTARTS = 5  # of one Selfplayer slot
MAX_PREDICTOR_RESTARTS = 5  # of a Predictor (each one restarts its Selfplayers with it)
MAX_EVALUATOR_RESTARTS = 5  # of the Evaluator
RESTART_WINDOW_S = 3600.0  # older restarts no longer count


class Restarting(Protocol):
    """What is restarted: a child process, a Ray slot or node group."""

    restarts: int  # all its restarts in this run (each one seeds anew)


class RestartBudget:
    """At most `limit` restarts within any `window` seconds: a crash now and then over a
    week-long session never stops it, a slot that keeps dying does."""

    def __init__(self, limit: int, window: float = RESTART_WINDOW_S):
        self.limit, self.window = limit, window
        self.times: deque[float] = deque()

    def take(self, now: float) -> bool:
        """Count a restart at `now` (monotonic seconds); False when the budget is spent."""
        while self.times and self.times[0] <= now - self.window:
            self.times.popleft()
        if len(self.times) >= self.limit:
            return False
        self.times.append(now)
        return True

    def spent(self) -> str:
        """The failure's words: how many restarts in how long."""
        return f"{len(self.times)} restarts in {self.window / 60:g} minutes"

    def tally(
        self,
        now: float,
        thing: Restarting,
        what: str,
        how: str,
        where: str,
        action: str = "restarting it",
    ) -> str:
        """Count a restart of `what` (`thing`), which `how` ("died (exit code -9)", "was
        killed (no heartbeat for 20 s)"), at `now`.  Within the budget: `thing.restarts` goes
        up, the restart is logged and said on the console with `action`, and "" is returned
        (the caller restarts it); past it, the failure that stops the gym, naming `where` its
        log is."""
        if not self.take(now):
            return f"{what} {how}, too many restarts ({self.spent()}); {where}"
        thing.restarts += 1
        log.warning(
            "%s %s; restart %d (%d of %d within %g minutes); %s",
            what,
            how,
            thing.restarts,
            len(self.times),
            self.limit,
            self.window / 60,
            action,
        )
        print(f"[gamegym] {what} {how}; {action}", flush=True)
        return ""


class BackendHost(Protocol):
    """What a backend uses of its host, the Supervisor."""

    @property
    def session(self) -> Session: ...

    @property
    def config(self) -> GymConfig: ...

    @property
    def ctx(self) -> SpawnContext: ...  # multiprocessing's "spawn" context

    @property
    def gym(self) -> Any: ...  # the GameGym: its monitor, its stop request

    @property
    def run_number(self) -> int: ...  # this run of the session (runs.json)

    def spawn(self, child: Child) -> None:
        """Start a child process (and remember it in `child.process`)."""
        ...

    def join(self, group: Sequence[Child | None], limit: float) -> None:
        """Wait up to `limit` seconds for the children to exit, then end them."""
        ...


class SelfplayBackend(ABC):
    """The interface (see the module docstring); `host` is the Supervisor."""

    name = ""
    local_folder = True  # its Selfplayers see the session folder (train.reanalyze reads it)

    @classmethod
    def check_available(cls, config: GymConfig) -> None:
        """Raise an error naming what is missing (an extra, a cluster) before a run with
        `config` starts; default: nothing is needed."""

    @classmethod
    def describe(cls, config: GymConfig) -> dict[str, Any]:
        """Where `config` runs self-play, for `gamegym status` of a session not running."""
        return {"name": cls.name}

    def __init__(self, host: BackendHost) -> None:
        self.host = host
        self.session = host.session
        self.config = host.config

    @abstractmethod
    def start(self) -> None:
        """Start the Predictor(s) and the Selfplayers."""

    @abstractmethod
    def model_channel(self) -> Connection:
        """Where the Trainer announces each published iteration (a Reload)."""

    @abstractmethod
    def poll(self) -> str:
        """Reports, finished games, restarts; why the gym must stop, or ""."""

    @abstractmethod
    def status(self) -> dict[str, Any]:
        """name, nodes, selfplayers, selfplayers_alive (and on Ray more) for the status line."""

    @abstractmethod
    def stop_selfplayers(self) -> None:
        """Selfplayers finish their move, their games are written, they exit."""

    @abstractmethod
    def stop(self) -> None:
        """Stop everything else the backend started."""

    @abstractmethod
    def alive(self) -> bool:
        """Whether anything the backend started still runs."""

    def pids(self) -> dict[str, int]:
        """Process ids on this machine by name (the bench measures their CPU time); default:
        none known."""
        return {}


def release_unclaimed_handles() -> None:
    """Close this process's copies of the pipe ends it sent to another process that never
    took them: multiprocessing keeps each one open (in its resource sharer) until the
    receiver takes it, so a pipe end sent to a process that died first would never close.
    Called when no live process is owed one (the Predictor is dead)."""
    from multiprocessing import resource_sharer

    resource_sharer.stop(timeout=5.0)


def restart_seed(seed: int, run: int, index: int, restarts: int) -> int:
    """The seed of Selfplayer slot `index` after `restarts` restarts in run `run` of the
    session (no run and no restart replays the games of another)."""
    return process_seed(seed, SEED_SELFPLAYER, run, index, restarts)


@BACKENDS.register
class ProcessBackend(SelfplayBackend):
    """One Predictor process and `selfplayprocesses` Selfplayer processes on this machine, one
    duplex pipe between each Selfplayer process and the Predictor (a restarted Selfplayer gets
    a new one).  A Predictor that dies, or that the gym killed as hung, is started again with
    every Selfplayer (see `_restart_predictor`)."""

    name = "processes"

    def __init__(self, host: BackendHost) -> None:
        super().__init__(host)
        self.children: dict[str, Child] = {}
        self.budgets: dict[str, RestartBudget] = {}
        self.predictor_budget = RestartBudget(MAX_PREDICTOR_RESTARTS)
        self.clock = time.monotonic
        self._control: Connection | None = None
        self._control_in: Connection | None = None  # the Predictor's end of the Trainer's
        #   announcements, kept by the gym: a restarted Predictor reads on from it
        self._joins: Connection | None = None  # the gym's end of the pipe that hands the
        #                                         Predictor new clients

    def start(self) -> None:
        from gamegym.runtime.predictor import predictor_main
        from gamegym.runtime.selfplay import selfplayer_main

        host, path, cfg = self.host, str(self.session.path), self.config
        self._control_in, self._control = host.ctx.Pipe(duplex=False)
        self.children["predictor"] = Child("predictor", predictor_main, ())
        for i in range(cfg.selfplay.selfplayprocesses):
            self.children[f"selfplayer{i}"] = Child(
                f"selfplayer{i}",
                selfplayer_main,
                (path, cfg, i, None, restart_seed(cfg.seed, host.run_number, i, 0)),
                # a Selfplayer that waits on a hung Predictor counts no work either: the gym
                # kills the Predictor, not it (the Selfplayer then writes its finished games)
                extra={"index": i, "waits_on": "predictor"},
            )
        self._start_all()

    def _start_all(self) -> None:
        """Start the Predictor and every Selfplayer, each Selfplayer on a new pipe to it."""
        host, selfplayers = self.host, self.selfplayers()
        pipes = [host.ctx.Pipe(duplex=True) for _ in selfplayers]
        if self._joins is not None:  # (the pipe of a Predictor that is gone)
            self._joins.close()
        joins_in, self._joins = host.ctx.Pipe(duplex=False)
        predictor = self.children["predictor"]
        predictor.args = (
            str(self.session.path),
            self.config,
            [p[0] for p in pipes],
            self._control_in,
            joins_in,
        )
        for child, (_, selfplayer_end) in zip(selfplayers, pipes):
            path, cfg, index, _, seed = child.args
            child.args = (path, cfg, index, selfplayer_end, seed)
        try:
            for child in (predictor, *selfplayers):
                host.spawn(child)
        finally:
            # the gym keeps no end of a Selfplayer's pipe: when one dies, the Predictor reads
            # its end to the EOF (a message torn by the death included) and drops it; when the
            # Predictor dies, each Selfplayer finds its pipe closed
            for ends in pipes:
                for end in ends:
                    end.close()
            joins_in.close()

    def _restart_predictor(self, predictor: Child, how: str) -> str:
        """Start a Predictor that died or was killed as hung again, with every Selfplayer:
        theirs lost their pipes to it and exit, each writing the games it finished first
        (waited for up to JOIN_SELFPLAYERS_S); each starts again on a new pipe with a seed of
        its own, not counted against its slot's budget (the fault was not its own).  Up to
        MAX_PREDICTOR_RESTARTS within RESTART_WINDOW_S; returns the failure past that, or
        when a Selfplayer found the disk full as it wrote its games, else ""."""
        logs = self.session.logs_dir
        failure = self.predictor_budget.tally(
            self.clock(),
            predictor,
            "predictor",
            how,
            where_to_look(logs, "predictor"),
            "restarting it and its Selfplayers",
        )
        if failure:
            return failure
        # a pipe end handed to the dead Predictor (a NewClient) that it never took is held
        # by this process until taken: let it go, so that Selfplayer finds its pipe closed too
        release_unclaimed_handles()
        selfplayers = self.selfplayers()
        self.host.join(selfplayers, JOIN_SELFPLAYERS_S)
        for child in selfplayers:
            if child.process is not None and child.process.exitcode == EXIT_DISK_FULL:
                return (
                    f"{child.name} could not write ({where_to_look(logs, child.name)}): "
                    f"{disk_full_message(self.session.path)}"
                )
        for child in selfplayers:
            child.restarts += 1  # all restarts of the run: each one seeds anew
            path, cfg, index, conn, _ = child.args
            seed = restart_seed(self.config.seed, self.host.run_number, index, child.restarts)
            child.args = (path, cfg, index, conn, seed)
        self._start_all()
        return ""

    def _respawn(self, child: Child, seed: int) -> None:
        """Start a dead Selfplayer's slot again on a pipe of its own; the Predictor gets the
        other end (a NewClient)."""
        predictor_end, selfplayer_end = self.host.ctx.Pipe(duplex=True)
        path, cfg, index, _, _ = child.args
        child.args = (path, cfg, index, selfplayer_end, seed)
        try:
            self.host.spawn(child)
            assert self._joins is not None, "start() makes the joins pipe"
            try:
                self._joins.send(NewClient(predictor_end))
            except OSError:  # the Predictor died since this poll looked: the next one says so
                log.warning("%s restarted, but the Predictor is gone", child.name)
        finally:
            predictor_end.close()
            selfplayer_end.close()

    def model_channel(self) -> Connection:
        if self._control is None:
            raise RuntimeError("the model channel is asked for before start()")
        return self._control

    def selfplayers(self) -> list[Child]:
        return [c for n, c in self.children.items() if n.startswith("selfplayer")]

    def poll(self) -> str:
        """Restart a dead Selfplayer (up to MAX_SELFPLAYER_RESTARTS per slot within
        RESTART_WINDOW_S), and a dead or hung Predictor with every Selfplayer (up to
        MAX_PREDICTOR_RESTARTS); too many restarts or a full disk stop the gym."""
        for child in list(self.children.values()):
            process = child.process
            if process is None or process.is_alive():
                continue
            code = process.exitcode
            logs = self.session.logs_dir
            if code == EXIT_DISK_FULL:  # a restart would fail the same way
                return (
                    f"{child.name} could not write ({where_to_look(logs, child.name)}): "
                    f"{disk_full_message(self.session.path)}"
                )
            how = f"was killed ({child.hung})" if child.hung else f"died (exit code {code})"
            if child.name == "predictor":
                return self._restart_predictor(child, how)  # every Selfplayer restarts with it
            budget = self.budgets.setdefault(child.name, RestartBudget(MAX_SELFPLAYER_RESTARTS))
            where = where_to_look(logs, child.name)
            failure = budget.tally(self.clock(), child, child.name, how, where)
            if failure:
                return failure
            self._respawn(
                child,
                restart_seed(
                    self.config.seed, self.host.run_number, child.extra["index"], child.restarts
                ),
            )
        return ""

    def status(self) -> dict[str, Any]:
        selfplayers = self.selfplayers()
        return {
            "name": self.name,
            "nodes": 1,
            "selfplayers": len(selfplayers),
            "selfplayers_alive": sum(
                1 for c in selfplayers if c.process is not None and c.process.is_alive()
            ),
        }

    def stop_selfplayers(self) -> None:
        self.host.join(self.selfplayers(), JOIN_SELFPLAYERS_S)

    def stop(self) -> None:
        self.host.join([self.children.get("predictor")], JOIN_PREDICTOR_S)
        if self._control_in is not None:
            self._control_in.close()

    def alive(self) -> bool:
        return any(c.process is not None and c.process.is_alive() for c in self.children.values())

    def pids(self) -> dict[str, int]:
        """Process ids by name (the bench measures their CPU time)."""
        return {
            n: c.process.pid
            for n, c in self.children.items()
            if c.process is not None and c.process.pid is not None
        }
