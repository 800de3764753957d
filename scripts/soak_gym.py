"""The chaos soak's dealings with a running gym (scripts/soak.py): it starts `gamegym resume`,
reads its console, stops it and waits for its processes, and finds them by role."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

from gamegym.data.session import Session

STOPPING = "[gamegym] stopping: "


class Lines:
    """The gym's console, read by a thread (so a full pipe never blocks the gym)."""

    def __init__(self, process):
        self.lines: list[str] = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, args=(process,), daemon=True).start()

    def _read(self, process) -> None:
        for line in process.stdout:
            with self.cond:
                self.lines.append(line)
                self.cond.notify_all()
        with self.cond:
            self.lines.append("")  # the end
            self.cond.notify_all()

    def wait_for(self, test, timeout: float, process, family: set[int]) -> bool:
        deadline = time.monotonic() + timeout
        seen = 0
        with self.cond:
            while time.monotonic() < deadline:
                family |= descendants(process)
                for line in self.lines[seen:]:
                    if line == "":
                        return False
                    if test(line):
                        return True
                seen = len(self.lines)
                self.cond.wait(timeout=1.0)
        return False


def gamegym(*args) -> list[str]:
    return [sys.executable, "-m", "gamegym", *map(str, args)]


GYMS: list[subprocess.Popen] = []  # this cycle's gyms (`interrupt_gyms`; soak.py clears it)


def start_gym(session: Path, env: dict[str, str]):
    """`gamegym resume` in a session of its own: no job control outside reaches its processes.
    In the soak's process group, the exit of the shell that started the soak would leave that
    group orphaned, and the kernel sends an orphaned group that holds a stopped process SIGHUP
    and SIGCONT (POSIX job control), continuing a process the soak stopped."""
    gym = subprocess.Popen(
        gamegym("resume", session),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )
    GYMS.append(gym)
    return gym


def interrupt_gyms(wait_s: float = 60.0) -> None:
    """Ctrl+C of the soak: send the process group of each of this cycle's gyms what the
    terminal sends its own (the gyms are in sessions of their own): SIGCONT for a process the
    soak stopped (a killed gym's stopped child too), then SIGINT, the gym's clean stop; wait
    for each gym, and SIGKILL its group after `wait_s`."""
    running_gyms = [gym for gym in GYMS if gym.poll() is None]
    for gym in GYMS:
        for sig in (signal.SIGCONT, signal.SIGINT):
            try:
                os.killpg(gym.pid, sig)
            except ProcessLookupError:
                pass
    for gym in running_gyms:
        try:
            gym.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(gym.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            gym.wait()


def stop(gym, watcher, family: set[int], expect_stop: bool, wait_s: float = 60.0):
    """Wait for the gym to stop by itself (when the fault stops it, or it was killed); else
    type 'exit'; else kill it.  Then give its children the seconds they take to notice.
    Returns the gym's exit code and its stop reason (its 'stopping:' line, else its last)."""
    try:
        gym.wait(timeout=20.0 if expect_stop else 0.5)
    except subprocess.TimeoutExpired:
        family |= descendants(gym)
        try:
            gym.stdin.write("exit\n")
            gym.stdin.flush()
        except OSError:
            pass
        try:
            gym.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            gym.kill()
            gym.wait()
    deadline = time.monotonic() + 20.0  # orphans leave within ~8 s of the gym's death
    while time.monotonic() < deadline and any(running(p) for p in family):
        time.sleep(0.5)
    deadline = time.monotonic() + 5.0  # the console's last lines
    while time.monotonic() < deadline and (not watcher.lines or watcher.lines[-1] != ""):
        time.sleep(0.1)
    lines = [line.strip() for line in watcher.lines if line.strip()]
    stops = [line.split(STOPPING, 1)[1] for line in lines if STOPPING in line]
    return gym.returncode, stops[0] if stops else (lines[-1] if lines else "")


def hits(record: Path) -> set[str]:
    """The file kinds an injected ENOSPC hit (the lines GAMEGYM_FAULT_RECORD collected)."""
    try:
        return {line.split()[0] for line in record.read_text().splitlines() if line.strip()}
    except FileNotFoundError:
        return set()


def descendants(process) -> set[int]:
    try:
        return {c.pid for c in psutil.Process(process.pid).children(recursive=True)}
    except psutil.Error:
        return set()


def describe(pids: list[int], logs_dir: Path) -> str:
    """Each process: pid, the role whose log has its 'starting' line, state, seconds alive and
    the command line's tail."""
    roles = {}
    for log in logs_dir.glob("*.log*"):
        try:
            text = log.read_text(errors="replace")
        except OSError:
            continue
        for pid in pids:
            if f" starting (pid {pid})" in text:
                roles[pid] = log.name
    parts = []
    for pid in pids:
        try:
            process = psutil.Process(pid)
            with process.oneshot():
                age = time.time() - process.create_time()
                tail = " ".join(process.cmdline()[-3:])[-80:]
                role = roles.get(pid, "?")
                parts.append(f"{pid} {role} {process.status()} {age:.0f}s [{tail}]")
        except psutil.Error:
            parts.append(f"{pid} gone")
    return "; ".join(parts)


def status(pid: int) -> str | None:
    """The process's state (psutil's STATUS_*), None when there is no such process."""
    try:
        return psutil.Process(pid).status()
    except psutil.Error:
        return None


def running(pid: int) -> bool:
    return status(pid) not in (None, psutil.STATUS_ZOMBIE)


def stopped(pid: int) -> bool:
    """Whether the process is stopped (SIGSTOP), not continued since."""
    return status(pid) == psutil.STATUS_STOPPED


def role_pid(session: Session, role: str, family: set[int]) -> int | None:
    """The pid in the newest 'starting' line of a role's log, if it is one of this gym's."""
    try:
        text = (session.logs_dir / f"{role}.log").read_text()
    except OSError:
        return None
    lines = [line for line in text.splitlines() if " starting (pid " in line]
    if not lines:
        return None
    pid = int(lines[-1].split("(pid ")[1].rstrip(")"))
    return pid if pid in family and running(pid) else None
