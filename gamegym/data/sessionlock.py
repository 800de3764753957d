"""The session lock: which process may run a gym on a session folder.

The lock is the operating system's (flock; LockFileEx on Windows) on session.lock, held as long
as the gym keeps the session: it goes with the process however it ends, so there is no stale
lock to take over, and it holds across machines on a shared folder whose file system supports
locks (NFSv4, SMB).  The pid, host and start time written in the file (the lock record) are
information for the user, never the test of who holds it.  The gym's children hold the lock
with it (`HeldLock`), so it is free only once the last process of a run has exited.

`SessionLock` is what a `gamegym.data.session.Session` keeps; the session raises its own
errors (SessionLockedError) from `LockHeld`.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import psutil

from gamegym.data.faults import disk_full_here, mutated

__all__ = ["OLD_RUN_WAIT_S", "HeldLock", "LockHeld", "SessionLock"]

# how long a gym waits for the processes of a run whose gym died to exit (they stop by
# themselves within 8 s of their gym's death: gamegym.runtime.process.child_entry)
OLD_RUN_WAIT_S = 15.0


class LockHeld(Exception):
    """Another process holds the lock; the message names it."""


class SessionLock:
    """The lock of the session folder `folder` (its file `path`), as one process takes,
    shares with its children and releases it."""

    def __init__(self, folder: Path, path: Path):
        self.folder, self.path = folder, path
        self.locked = False
        self._fd: int | None = None
        self._started = 0.0  # when this process took the lock (the record says)
        self._children: dict[str, dict] = {}  # the record's processes holding the lock with it

    def acquire(self, wait: float = OLD_RUN_WAIT_S, waiting=None) -> None:
        """Take the lock, or raise LockHeld naming who holds it.

        A lock held by processes of a run whose gym is gone (they exit by themselves within
        seconds of it) is waited for up to `wait` seconds, telling `waiting(message)` once;
        then refused, naming them.  Where the OS lock is the process's own (Windows), the
        processes recorded in the file are checked the same way."""
        if self.locked:
            return
        deadline = time.monotonic() + wait
        told = False
        for _ in range(100_000):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            locked = _try_lock(fd)
            if locked and not _same_file(fd, self.path):  # released and removed meanwhile
                _unlock(fd)
                os.close(fd)
                continue
            holder = self.read_record()
            if locked and holder and mutated("stale_lock"):  # (the soak's mutation check)
                _unlock(fd)
                os.close(fd)
                raise LockHeld(f"session {self.folder} is in use: {self.path} names a gym")
            # (the soak's mutation check: the processes of a dead gym's run are not waited for)
            survivors = [] if mutated("lock") else _survivors(holder)
            if locked and not survivors:
                self._children, self._started = {}, time.time()
                self._write_record(fd)
                self._fd = fd
                self.locked = True
                return
            if locked:
                _unlock(fd)
            os.close(fd)
            if not locked and (not holder or _on_host(holder) or _process_alive(holder)):
                raise LockHeld(
                    f"session {self.folder} is in use by gym process {holder.get('pid', '?')}"
                    f"{_on_host(holder)} (started {time.ctime(holder.get('started', 0))}); "
                    "stop it first (type 'exit' in its console or send it SIGTERM)"
                )
            # the gym of the record is gone; processes it started still hold the session
            if time.monotonic() >= deadline:
                raise LockHeld(_survivors_message(self.folder, holder, survivors))
            if not told and waiting is not None:
                waiting(
                    f"waiting up to {wait:g} s for the processes of the previous run of this "
                    f"session to exit (its gym, pid {holder.get('pid', '?')}, is gone)"
                    + "".join(f"; {s['name']} (pid {s['pid']})" for s in survivors)
                )
                told = True
            time.sleep(0.25)
        raise LockHeld(f"could not take the lock {self.path}")

    def held(self) -> HeldLock | None:
        """The lock as a child process keeps it (None: this process does not hold it)."""
        if not self.locked or self._fd is None:
            return None
        return HeldLock(self._fd)

    def record_child(self, name: str, pid: int) -> None:
        """Name a child process (by its role) in the lock record: a gym that finds the lock
        held after this gym died names the processes that still hold it."""
        if not self.locked or self._fd is None:
            return
        try:
            created = psutil.Process(pid).create_time()
        except psutil.Error:
            return  # gone already: it holds nothing
        self._children[name] = {"pid": pid, "create_time": created}
        self._write_record(self._fd)

    def _write_record(self, fd: int) -> None:
        me = psutil.Process()
        record = {
            "pid": me.pid,
            "create_time": me.create_time(),
            "started": self._started,
            "host": socket.gethostname(),
            "children": {n: dict(c) for n, c in sorted(self._children.items())},
        }
        data = json.dumps(record).encode()
        disk_full_here(self.path)  # a test switch (data/faults.py)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, data)  # then cut the rest: a reader sees the old record or the new one
        os.ftruncate(fd, len(data))
        os.fsync(fd)

    def read_record(self) -> dict:
        """The lock record ({} when there is none or it is unreadable)."""
        try:
            record = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return record if isinstance(record, dict) else {}

    def recorded_holder(self) -> dict | None:
        """The lock record when the process it names still runs on this machine, else None
        (the lock itself is not touched)."""
        record = self.read_record()
        return record if _process_alive(record) and not _on_host(record) else None

    def holder(self) -> dict | None:
        """The lock record ({} when unreadable) if a process holds the lock, else None."""
        if self.locked:
            return self.read_record()
        try:
            fd = os.open(self.path, os.O_RDWR)
        except OSError:
            return None
        try:
            if _try_lock(fd):
                _unlock(fd)
                return None
            return self.read_record()
        finally:
            os.close(fd)

    def release(self) -> None:
        if self.locked:
            if os.name != "nt":  # removed while still held: a waiter sees another file
                self.path.unlink(missing_ok=True)
            if self._fd is not None:
                _unlock(self._fd)
                os.close(self._fd)
            self._fd = None
            self.locked = False


# ----- the OS lock ----------------------------------------------------------------------------
if os.name == "nt":
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]  # Windows only
            return True
        except OSError:
            return False

    def _unlock(fd: int) -> None:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]  # Windows only
        except OSError:
            pass
else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


class HeldLock:
    """The session lock as a child process of its holder keeps it: the holder's open lock
    file, handed to the child when multiprocessing spawns it (on POSIX the child gets the
    same open file, and with it the flock).  Elsewhere (pickled for anything but a spawn, or
    on Windows, where the lock is the process's own) it carries nothing; the lock record names
    the child instead (`SessionLock.record_child`)."""

    def __init__(self, fd: int | None):
        self.fd = fd

    def __reduce__(self):
        from multiprocessing import context, reduction

        if os.name == "nt" or self.fd is None or context.get_spawning_popen() is None:
            return (HeldLock, (None,))
        return (_held_in_child, (reduction.DupFd(self.fd),))


def _held_in_child(duplicate) -> HeldLock:
    fd = duplicate.detach()
    if mutated("lock"):  # (the soak's mutation check: the child lets go of the lock)
        os.close(fd)
        return HeldLock(None)
    return HeldLock(fd)


def _process_alive(record: dict) -> bool:
    """Whether the process a record names (pid and create_time) runs on this machine."""
    try:
        process = psutil.Process(int(record["pid"]))
        return abs(process.create_time() - float(record["create_time"])) < 1.0
    except (KeyError, TypeError, ValueError, psutil.Error):
        return False


def _survivors(record: dict) -> list[dict]:
    """The processes of a lock record's run still alive on this machine when its gym is not:
    [{"name", "pid", "status"}] ([] for a record of another host, or one whose gym lives)."""
    if _on_host(record) or _process_alive(record):
        return []
    children = record.get("children")
    found = []
    for name, child in sorted(children.items() if isinstance(children, dict) else []):
        if isinstance(child, dict) and _process_alive(child):
            try:
                status = psutil.Process(int(child["pid"])).status()
            except psutil.Error:
                continue
            if status != psutil.STATUS_ZOMBIE:
                found.append({"name": name, "pid": int(child["pid"]), "status": status})
    return found


def _survivors_message(path: Path, record: dict, survivors: list[dict]) -> str:
    listed = ", ".join(
        f"{s['name']} (pid {s['pid']}{', stopped' if s['status'] == psutil.STATUS_STOPPED else ''})"
        for s in survivors
    )
    stopped = [str(s["pid"]) for s in survivors if s["status"] == psutil.STATUS_STOPPED]
    advice = (
        f"a stopped process exits once continued (kill -CONT {' '.join(stopped)}); "
        if stopped
        else ""
    )
    pids = " ".join(str(s["pid"]) for s in survivors) or "PID"
    return (
        f"session {path} is still held by processes of its previous run, whose gym (pid "
        f"{record.get('pid', '?')}) is gone: {listed or 'processes it started'}; they may "
        f"still write to the folder, so no new run starts beside them. {advice}"
        f"End them (kill {pids}) or let them exit, then resume again"
    )


def _same_file(fd: int, path: Path) -> bool:
    """Whether the open file is still the one at `path` (not removed or replaced)."""
    try:
        mine, there = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino)


def _on_host(record: dict) -> str:
    host = record.get("host")
    return f" on {host}" if host and host != socket.gethostname() else ""
