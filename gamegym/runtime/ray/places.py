"""What the Ray backend keeps of each node and actor: the places actors fill (`Slot`,
`NodeGroup`), when each actor last answered (`Liveness`), and the actors' log files
(`ActorLogs`); the options that pin an actor to its node (`pinned`), and what the backend
says of an actor that is silent (`waits_for_placement`, `hung`).

Liveness: the gym asks every actor something at least every few seconds (a Selfplayer's `take`
returns within `TAKE_WAIT_S`, a Predictor's is made every `PREDICTOR_POLL_S`); each answer is the
actor's heartbeat.  An actor that has left a call unanswered for `heartbeat_timeout` seconds (a
SIGSTOP, a hang that holds the interpreter, a node that stopped answering) is named on the
console and in the log and killed, and then restarted as a dead one is, within the same restart
budget.  An actor that has not answered yet (it imports its modules) gets `STARTUP_GRACE` times
as long, as a child process of the gym does (`gamegym.runtime.heartbeat`); one that Ray has not
placed yet (no node has had room for it) is not running, so its wait counts for nothing: its
grace starts when Ray starts it.
"""

from __future__ import annotations

import logging
import logging.handlers
from dataclasses import dataclass, field
from typing import Any

from gamegym.runtime.backends import (
    MAX_PREDICTOR_RESTARTS,
    MAX_SELFPLAYER_RESTARTS,
    RestartBudget,
)
from gamegym.runtime.heartbeat import STARTUP_GRACE
from gamegym.runtime.process import log_path
from gamegym.runtime.ray.cluster import PLACING, actor_state
from gamegym.runtime.selfplay import SampleWriter

__all__ = [
    "ActorLogs",
    "Liveness",
    "NodeGroup",
    "Slot",
    "first_line",
    "hung",
    "last_line",
    "pinned",
    "waits_for_placement",
]

log = logging.getLogger("gamegym.runtime.ray.backend")  # the backend's log: its watch


class Liveness:
    """How long one actor has left the gym's oldest open call to it unanswered (monotonic
    seconds)."""

    def __init__(self) -> None:
        self.asked: float | None = None  # when the oldest unanswered call was made
        self.started = False  # it answered at least once
        self.unplaced = False  # found not yet placed by Ray (said once)

    def restart(self, now: float) -> None:
        """A new actor in this place, asked something at `now`; it has not answered yet."""
        self.asked, self.started, self.unplaced = now, False, False

    def placing(self, now: float) -> bool:
        """Ray has not placed the actor yet (seen at `now`): its grace starts again.  True the
        first time, when the wait is worth saying."""
        first, self.unplaced, self.asked = not self.unplaced, True, now
        return first

    def ask(self, now: float) -> None:
        """A call to the actor is made at `now`."""
        if self.asked is None:
            self.asked = now

    def answered(self) -> None:
        """It answered: nothing is open (the next call counts from when it is made)."""
        self.asked, self.started = None, True

    def hung(self, now: float, deadline: float) -> float:
        """Seconds its oldest open call has waited when past the deadline (the longer one
        while it has never answered), else 0; a deadline of 0 means never."""
        if self.asked is None or not deadline:
            return 0.0
        silent = now - self.asked
        return silent if silent >= (deadline if self.started else STARTUP_GRACE * deadline) else 0.0


@dataclass
class Slot:
    """One Selfplayer place on a node; its actor is replaced when it dies."""

    name: str
    index: int
    writer: SampleWriter
    actor: Any = None  # a Ray actor handle (Ray has no types)
    take: Any = None  # the open take call (an ObjectRef)
    pid: int | None = None
    restarts: int = 0  # all restarts of the run (each one seeds anew)
    budget: RestartBudget = field(default_factory=lambda: RestartBudget(MAX_SELFPLAYER_RESTARTS))
    closed: bool = False  # stopped, its last files written
    died: str = ""  # why its last actor died
    liveness: Liveness = field(default_factory=Liveness)  # when its actor last answered
    orphaned: float | None = None  # when its node's Predictor failed (the backend's clock):
    #   its actor hands over its finished games and ends, and the slot starts again on the
    #   new Predictor, its budget untouched

    def ending_too_long(self, now: float, limit: float) -> bool:
        """Its actor, left to end when its Predictor failed, has not ended within `limit` s."""
        return self.actor is not None and self.orphaned is not None and now - self.orphaned >= limit


@dataclass
class NodeGroup:
    """A node's Predictor actor and Selfplayer slots."""

    node_id: str
    label: str
    selfplayers: int  # how many the node holds
    gpus: float = 0.0
    predictor: Any = None  # the node's Predictor actor (a Ray handle)
    address: Any = None  # where the node's Selfplayers connect
    address_ref: Any = None  # the open address call, until it answers
    poll_ref: Any = None  # the open take call to the Predictor
    pid: int | None = None  # the Predictor's process id (on its node)
    tensorflow: bool = False  # its process imported TensorFlow (off the CPU fast path)
    last_poll: float = 0.0
    restarts: int = 0
    budget: RestartBudget = field(default_factory=lambda: RestartBudget(MAX_PREDICTOR_RESTARTS))
    died: str = ""  # why its last Predictor died
    liveness: Liveness = field(default_factory=Liveness)  # when its Predictor last answered
    slots: list = field(default_factory=list)

    def forget_predictor(self) -> None:
        """Its Predictor actor is gone (killed): it has no address, and no call open."""
        self.predictor = self.address = self.address_ref = self.poll_ref = None

    def orphan(self, why: str, now: float) -> None:
        """Its Predictor failed at `now` for `why`: each Selfplayer is left to end by itself
        (`Slot.orphaned`), then to start again on the next Predictor."""
        self.forget_predictor()
        self.died = why
        for slot in self.slots:
            if not slot.closed and slot.orphaned is None:
                slot.orphaned = now


class ActorLogs:
    """The actors' log lines, written by the gym into logs/<actor name>.log (rotated)."""

    def __init__(self, logs_dir):
        self.logs_dir = logs_dir
        self.handlers: dict[str, logging.Handler] = {}

    def write(self, name: str, lines: list[str]) -> None:
        if not lines:
            return
        handler = self.handlers.get(name)
        if handler is None:
            handler = logging.handlers.RotatingFileHandler(
                log_path(self.logs_dir, name), maxBytes=5_000_000, backupCount=3, encoding="utf-8"
            )
            self.handlers[name] = handler
        for line in lines:
            handler.emit(logging.makeLogRecord({"msg": line, "levelno": logging.INFO}))

    def close(self) -> None:
        for handler in self.handlers.values():
            handler.close()
        self.handlers.clear()


def pinned(group: NodeGroup, **resources: Any) -> dict:
    """The options of an actor of `group`: on its node and nowhere else (so a Selfplayer's
    requests never leave its node), never restarted by Ray (the backend restarts it), with
    `resources`."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return dict(
        scheduling_strategy=NodeAffinitySchedulingStrategy(group.node_id, soft=False),
        max_restarts=0,
        max_concurrency=4,
        **resources,
    )


def waits_for_placement(actor: Any, liveness: Liveness, what: str, now: float) -> bool:
    """True when a silent actor that never answered has not been placed by Ray yet (its
    node has had no room for it): it is not hung, and its grace starts again from `now`.
    Said once per actor, on the console and in the log."""
    if liveness.started or actor_state(actor) not in PLACING:
        return False
    if liveness.placing(now):
        message = (
            f"{what} waits for Ray to place it (the node has no room for it yet: "
            "`ray status` shows what it holds)"
        )
        log.warning(message)
        print(f"[gamegym] {message}", flush=True)
    return True


def first_line(error: object) -> str:
    """An error's first line (a Ray error's headline), "" for none."""
    lines = str(error).strip().splitlines()
    return lines[0] if lines else ""


def last_line(traceback: str) -> str:
    """A traceback's last line (the exception), "" for none."""
    lines = traceback.strip().splitlines()
    return lines[-1] if lines else ""


def hung(what: str, silent: float) -> str:
    """Say that an actor is killed for its silence; returns why it died."""
    why = f"no answer for {silent:.0f} s: stopped or hung"
    message = f"{what} is not responding ({why}); killing it"
    log.error(message)
    print(f"[gamegym] {message}", flush=True)
    return why
