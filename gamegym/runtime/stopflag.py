"""The gym's stop signal to its children: one byte of shared memory, with no lock.

`multiprocessing.Event` is a condition variable over semaphores.  A process killed while it
waits on one (the Trainer and the Evaluator wait on the stop signal between their rounds)
leaves its place in the condition's sleeper count, and the next `set()` waits for that dead
sleeper to wake: the gym would hang in its shutdown, and every child that tries to stop after
the gym died would hang with it.  A `StopFlag` cannot be left half-held: `set()` writes a byte,
`is_set()` reads it and `wait()` polls it, so any process may die at any moment.
"""

from __future__ import annotations

import multiprocessing
import time

__all__ = ["StopFlag"]

POLL_S = 0.05  # how soon a waiter sees the flag set


class StopFlag:
    """The interface of `multiprocessing.Event` (set, clear, is_set, wait), lock-free.  Made
    by the gym, passed to its children when they are spawned."""

    def __init__(self, ctx=None):
        self._byte = (ctx or multiprocessing).RawValue("b", 0)

    def set(self) -> None:
        self._byte.value = 1

    def clear(self) -> None:
        self._byte.value = 0

    def is_set(self) -> bool:
        return bool(self._byte.value)

    def wait(self, timeout: float | None = None) -> bool:
        """True as soon as the flag is set; False after `timeout` seconds without it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._byte.value:
            left = POLL_S if deadline is None else deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(POLL_S, left))
        return True
