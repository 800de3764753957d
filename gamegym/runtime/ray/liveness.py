"""Heartbeats of Ray actors: how the gym tells a stopped or hung actor from a busy one.

The gym asks every actor something at least every few seconds (a Selfplayer's `take` returns
within `TAKE_WAIT_S`, a Predictor's is made every `PREDICTOR_POLL_S`); each answer is the actor's
heartbeat.  An actor that has left a call unanswered for `heartbeat_timeout` seconds (a SIGSTOP, a hang
that holds the interpreter, a node that stopped answering) is named on the console and in the
log and killed, and then restarted as a dead one is, within the same restart budget.  An actor
that has not answered yet (Ray is placing it, it imports its modules) gets `STARTUP_GRACE` times
as long, as a child process of the gym does (`gamegym.runtime.heartbeat`).
"""

from __future__ import annotations

from gamegym.runtime.heartbeat import STARTUP_GRACE

__all__ = ["Liveness"]


class Liveness:
    """How long one actor has left the gym's oldest open call to it unanswered (monotonic
    seconds)."""

    def __init__(self) -> None:
        self.asked: float | None = None  # when the oldest unanswered call was made
        self.started = False  # it answered at least once

    def restart(self, now: float) -> None:
        """A new actor in this place, asked something at `now`; it has not answered yet."""
        self.asked, self.started = now, False

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
