"""A process's count of the work it has done: the gym's proof that a child is not hung.

The code that does a process's work counts it as it goes (`tick()`: a training step, a batch
of requests served, a turn of a waiting loop) or names a counter it keeps anyway
(`count_from`: a Selfplayer's searches).  In a child of the gym the heartbeat thread copies the
total to the gym (`gamegym.runtime.heartbeat`), which restarts a child whose total has not
moved for `progress_timeout` seconds: a process blocked in a call that released the
interpreter (a pipe, a lock, a native library) beats on but counts nothing.  Outside a child of
the gym the count is kept and read by no one.  Imports nothing, so any layer may count.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["tick", "count_from", "total"]

_done = 0
_sources: list[Callable[[], int]] = []


def tick(amount: int = 1) -> None:
    """Count work done (threads may race on the count: only its moving matters)."""
    global _done
    _done += amount


def count_from(source: Callable[[], int]) -> None:
    """Count a total the process keeps anyway (read from the heartbeat thread: a plain read)."""
    _sources.append(source)


def total() -> int:
    """All the work counted in this process so far."""
    return _done + sum(int(source()) for source in _sources)
