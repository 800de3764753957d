"""What every child process does at its entry point: logging, signals, watching the parent."""

from __future__ import annotations

import functools
import logging
import logging.handlers
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import numpy as np

from gamegym.data.faults import mutated
from gamegym.data.fileio import is_disk_full
from gamegym.parentwatch import watch_parent

# a child's exit code when a write found the disk full: the gym stops instead of restarting it
EXIT_DISK_FULL = 75

log = logging.getLogger("gamegym")
_held: list = []  # what this process keeps open for its life (the session lock)


# the role numbers of process_seed
SEED_SELFPLAYER, SEED_TRAINER, SEED_EVALUATOR = 1, 2, 3


def derive_seed(seed: int, *path: int) -> int:
    """A per-process seed from the master seed (only entry points seed)."""
    return int(np.random.SeedSequence([seed, *path]).generate_state(1)[0])


def process_seed(seed: int, role: int, run: int, *slot: int) -> int:
    """The seed of a process of run `run` of a session (runs.json counts the runs): different
    for every run, role, slot and restart, and the same again for the same ones."""
    if mutated("seed"):  # (the soak's mutation check: every process replays one seed)
        return seed
    return derive_seed(seed, role, run, *slot)


def log_path(logs_dir: Path, role: str) -> Path:
    """The log file of a process role (the one setup_logging writes)."""
    return logs_dir / f"{role}.log"


def where_to_look(logs_dir: Path, name: str) -> str:
    """Where the cause of a child's death is: its log, or the console when it died before
    opening one (e.g. while spawn imported the main script)."""
    path = log_path(logs_dir, name)
    if path.is_file():
        return f"see {path}"
    return "its error is on the console above: it died before it opened its log"


@dataclass
class Child:
    """A child process of the gym: its entry point and arguments, the running process, and how
    often its slot was restarted."""

    name: str
    target: Callable[..., object]
    args: tuple[Any, ...]
    process: BaseProcess | None = None
    restarts: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    heartbeat: Any = None  # its Heartbeat (gamegym.runtime.heartbeat), new at each spawn
    hung: str = ""  # why the gym killed it as hung ("" when it did not)


def setup_logging(logs_dir: Path | None, role: str, level: str = "INFO") -> logging.Logger:
    """Log to logs/<role>.log (rotated), one file per process role."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_gamegym", False):
            root.removeHandler(handler)
            handler.close()
    root.setLevel(level)
    if logs_dir is not None:
        logs_dir.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(
            log_path(logs_dir, role), maxBytes=5_000_000, backupCount=3, encoding="utf-8"
        )
        handler.setFormatter(
            logging.Formatter(
                f"%(asctime)s %(levelname)s {role}[%(process)d] %(name)s: %(message)s"
            )
        )
        handler._gamegym = True  # type: ignore[attr-defined]  # our mark on a stdlib handler
        root.addHandler(handler)
    return logging.getLogger(f"gamegym.{role}")


def child_entry(role: str):
    """Decorator for a process entry point `fn(session_path, config, ..., stop_event)`.

    Sets up the per-role log (Python warnings included: the console is the gym's), ignores
    SIGINT (the gym coordinates shutdown), keeps the session lock it is given open until it
    exits, exits when the parent dies, and logs start, any
    traceback, and an 'exiting' line that says whether the process imported TensorFlow.  A
    failure also gets one line on the console: the role and the error, without the traceback.
    """

    def wrap(fn):
        @functools.wraps(fn)
        def run(logs_dir, level, name, *args, **kwargs):
            logger = setup_logging(logs_dir, name or role, level)
            logging.captureWarnings(True)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            stop_event = kwargs.get("stop_event")
            heartbeat = kwargs.pop("heartbeat", None)
            # the session lock, held with the gym until this process exits (never closed)
            _held.append(kwargs.pop("session_lock", None))
            if heartbeat is not None:
                heartbeat.start_beating()
            orphaned = threading.Event()

            def parent_died():
                # the timer first: nothing below may keep this process alive past it
                timer = threading.Timer(8.0, lambda: os._exit(3))
                timer.daemon = True
                timer.start()
                logger.error("gym process died; stopping")
                orphaned.set()
                if stop_event is not None:
                    stop_event.set()

            if not mutated("parent_watch"):  # (the soak's mutation check: an orphan plays on)
                watch_parent(parent_died)
            logger.info("%s starting (pid %d)", name or role, os.getpid())
            code = 0
            try:
                fn(*args, **kwargs)
            except OSError as error:
                logger.exception("%s failed", name or role)
                if is_disk_full(error):
                    logger.error("no room to write (%s): the disk is full", error)
                    code = EXIT_DISK_FULL
                else:
                    code = 1
                    _say_failure(name or role, error)
            except BaseException as error:
                logger.exception("%s failed", name or role)
                code = 1
                _say_failure(name or role, error)
            finally:
                logger.info(
                    "%s exiting (%s)",
                    name or role,
                    "TensorFlow imported"
                    if "tensorflow" in sys.modules
                    else "TensorFlow not imported",
                )
                logging.shutdown()
            if orphaned.is_set():
                # the gym is gone: no one reads the report queue, and the interpreter's exit
                # would wait on its feeder thread (until the timer above: 8 s); every file is
                # already published whole, so nothing is lost by leaving at once
                os._exit(code)
            sys.exit(code)

        return run

    return wrap


def _say_failure(name: str, error: BaseException) -> None:
    """One console line for a child's failure (the traceback is in its log)."""
    first = next((line for line in str(error).splitlines() if line.strip()), "")
    print(
        f"[gamegym] {name} failed: {type(error).__name__}: {first}"[:300],
        file=sys.stderr,
        flush=True,
    )


def in_spawned_child() -> bool:
    """Whether this process is a child started by multiprocessing's spawn (or forkserver)
    method that is running the parent's main script again as it starts up.  The child runs the
    script under the name '__mp_main__' (so code under `if __name__ == "__main__":` does not
    run there, and code outside it does); while it does, sys.modules['__mp_main__'] is that
    script's module, and otherwise the same module as sys.modules['__main__'] (multiprocessing
    makes the one an alias of the other)."""
    running = sys.modules.get("__mp_main__")
    return running is not None and running is not sys.modules.get("__main__")
