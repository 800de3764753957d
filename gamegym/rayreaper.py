"""A reaper for the Ray a gym started: should the gym die (even by SIGKILL), the Ray processes
it started are terminated within seconds.

Ray stops its head processes when the process that started them dies, but some of its agents
linger for a minute or more; the gym promises that nothing it started outlives it by seconds.
The reaper is a small child process that waits for the gym's death and then terminates exactly
the processes it was given (checked by pid and start time, so a reused pid is left alone).
"""
from __future__ import annotations

import multiprocessing
import signal
from multiprocessing.connection import wait

import psutil

__all__ = ["start_reaper", "Reaper"]


class Reaper:
    """The running reaper: `watched` pids; `stop()` when the gym stopped Ray itself."""

    def __init__(self, process, stop_conn, watched: list[int]):
        self.process = process
        self._stop = stop_conn
        self.watched = watched

    def stop(self) -> None:
        try:
            self._stop.send(None)
        except OSError:
            pass
        self.process.join(timeout=5.0)
        if self.process.is_alive():
            self.process.kill()


def start_reaper(ctx, pids: list[int]) -> Reaper:
    """Watch the gym for the Ray processes `pids` (started by it)."""
    processes = []
    for pid in pids:
        try:
            processes.append((pid, psutil.Process(pid).create_time()))
        except psutil.Error:
            continue
    stop_in, stop_out = ctx.Pipe(duplex=False)
    process = ctx.Process(target=reap_when_orphaned, args=(processes, stop_in),
                          name="ray-reaper", daemon=True)
    process.start()
    return Reaper(process, stop_out, [pid for pid, _ in processes])


def reap_when_orphaned(processes: list[tuple[int, float]], stop_conn) -> None:
    """The reaper's entry point: wait for the gym's death or a stop; on death, terminate."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl+C is the gym's to handle
    parent = multiprocessing.parent_process()
    if parent is None:
        return
    ready = wait([parent.sentinel, stop_conn])
    if stop_conn in ready:
        return
    alive = []
    for pid, started in processes:
        try:
            process = psutil.Process(pid)
            if abs(process.create_time() - started) < 1e-3:
                process.terminate()
                alive.append(process)
        except psutil.Error:
            continue
    _, left = psutil.wait_procs(alive, timeout=3.0)
    for process in left:
        try:
            process.kill()
        except psutil.Error:
            pass
