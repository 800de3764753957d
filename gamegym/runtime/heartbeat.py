"""Heartbeats: how the gym tells a stopped or hung child from a busy one.

Each child process the gym starts gets a `Heartbeat`: a counter in shared memory that a thread
of the child increments every `BEAT_S` seconds.  The gym reads the counters as it watches its
children; a child whose counter has not moved for `heartbeat_timeout` seconds (a SIGSTOP, a
hang that holds the interpreter) is named on the console and in the log and killed, and its
death is then handled as a crash is.  A child still starting up (no beat yet: spawn imports
its modules) gets `STARTUP_GRACE` times as long.
"""

from __future__ import annotations

import multiprocessing
import threading

__all__ = ["Heartbeat", "BEAT_S", "STARTUP_GRACE"]

BEAT_S = 1.0
STARTUP_GRACE = 3.0


class Heartbeat:
    """One child's counter (made by the gym, passed to the child when it is spawned)."""

    def __init__(self, ctx=None):
        self.counter = (ctx or multiprocessing).RawValue("Q", 0)
        self._count = 0
        self._since: float | None = None

    # ----- the child's side -------------------------------------------------------------------
    def beat(self) -> None:
        self.counter.value += 1

    def start_beating(self) -> None:
        """Beat every BEAT_S from a daemon thread (it stops with the process)."""
        stop = threading.Event()

        def run():
            while not stop.wait(BEAT_S):
                self.beat()

        self.beat()
        threading.Thread(target=run, name="heartbeat", daemon=True).start()

    # ----- the gym's side ---------------------------------------------------------------------
    def seen(self, now: float) -> None:
        """Start watching at `now` (the child was just started)."""
        self._count, self._since = self.counter.value, now

    @property
    def started(self) -> bool:
        return self.counter.value > 0

    def silent_for(self, now: float) -> float:
        """Seconds since the counter last moved (0 when it moved since the last look)."""
        count = self.counter.value
        if self._since is None or count != self._count:
            self._count, self._since = count, now
            return 0.0
        return now - self._since

    def __getstate__(self):  # the child needs only the counter
        return {"counter": self.counter, "_count": 0, "_since": None}
