"""Heartbeats and progress: how the gym tells a stopped or hung child from a busy one.

Each child process the gym starts gets a `Heartbeat`: two counters in shared memory that a
thread of the child writes every `BEAT_S` seconds: the beats themselves, and the work the
process has counted (`gamegym.workmeter`: training steps, requests served, searches, turns of
a waiting loop), which only its working code advances.  The gym reads both as it watches its
children:

- a child whose beats have not moved for `heartbeat_timeout` seconds (a SIGSTOP, a hang that
  holds the interpreter) is named on the console and in the log and killed;
- a child that beats but whose work has not moved for `progress_timeout` seconds (blocked in a
  call that released the interpreter: a pipe, a lock, TensorFlow or ONNX Runtime) is named and
  killed the same way;

and its death is then handled as a crash is.  A child still starting up (no beat, or no work
counted yet: spawn imports its modules) gets `STARTUP_GRACE` times as long.  When the gym
itself was stopped and continued (Ctrl+Z of the whole process group), no child could beat
either: the gym starts every child's watch again (`restart`).
"""

from __future__ import annotations

import multiprocessing
import threading

from gamegym import workmeter

__all__ = ["Heartbeat", "BEAT_S", "STARTUP_GRACE"]

BEAT_S = 1.0
STARTUP_GRACE = 3.0


class Heartbeat:
    """One child's counters (made by the gym, passed to the child when it is spawned)."""

    def __init__(self, ctx=None):
        self.counter = (ctx or multiprocessing).RawValue("Q", 0)
        self.work = (ctx or multiprocessing).RawValue("Q", 0)
        self._count = self._done = 0
        self._since: float | None = None
        self._working_since: float | None = None

    # ----- the child's side -------------------------------------------------------------------
    def beat(self) -> None:
        self.counter.value += 1
        self.work.value = workmeter.total()

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
        """Start watching at `now` (the child was just started, or the gym was not running
        for a while and starts its watch again)."""
        self._count, self._since = self.counter.value, now
        self._done, self._working_since = self.work.value, now

    restart = seen

    @property
    def started(self) -> bool:
        return self.counter.value > 0

    @property
    def working(self) -> bool:
        """Whether the child has counted any work yet."""
        return self.work.value > 0

    def silent_for(self, now: float) -> float:
        """Seconds since the beats last moved (0 when they moved since the last look)."""
        count = self.counter.value
        if self._since is None or count != self._count:
            self._count, self._since = count, now
            return 0.0
        return now - self._since

    def idle_for(self, now: float) -> float:
        """Seconds since the work counted last moved (0 when it moved since the last look)."""
        done = self.work.value
        if self._working_since is None or done != self._done:
            self._done, self._working_since = done, now
            return 0.0
        return now - self._working_since

    def __getstate__(self):  # the child needs only the counters
        return {
            "counter": self.counter,
            "work": self.work,
            "_count": 0,
            "_done": 0,
            "_since": None,
            "_working_since": None,
        }
