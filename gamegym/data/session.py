"""The session folder: layout, lock, model registry (iteration -> file) and training history.

  config.json        the full GymConfig, game spec included (resume needs nothing else), and
                     the folder's format version (gamegym.data.formats)
  session.lock       pid and start time of the running gym
  runs.json          how many times a gym has run on the session (the run number seeds the
                     processes of each run: no run replays the games of another)
  models/<it>.keras  model iterations; models/current.json names the newest
  samples/<it>/      sample files of games played with model <it>
  train/<it>.json    training report of the iteration that produced model <it>
  replay/<it>.npz    the replay buffer's counts and priorities after iteration <it> (replays
                     "uniform", "prioritized", "curious"; see gamegym.data.replay)
  evaluation/ monitoring/ plots/ logs/ quarantine/
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import time
import zipfile
from pathlib import Path

import psutil

from gamegym.config import ConfigError, GymConfig
from gamegym.data.formats import CONFIG_FORMAT, FormatError, check_format
from gamegym.data.fileio import atomic_publish, atomic_write_json, quarantine, remove_leftovers, temporary_path

__all__ = ["Session", "SessionError", "SessionLockedError"]

log = logging.getLogger(__name__)
FOLDERS = ("models", "samples", "train", "replay", "evaluation", "monitoring", "tensorboard",
           "plots", "logs", "quarantine")


class SessionError(Exception):
    """The session folder is missing, unreadable or inconsistent; the message says which."""


class SessionLockedError(SessionError):
    """Another gym is running on this session folder."""


class Session:
    """A session folder on disk.  Cheap to construct; nothing is touched until asked."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path).resolve()
        self.config_path = self.path / "config.json"
        self.lock_path = self.path / "session.lock"
        self.models_dir = self.path / "models"
        self.samples_dir = self.path / "samples"
        self.train_dir = self.path / "train"
        self.replay_dir = self.path / "replay"
        self.evaluation_dir = self.path / "evaluation"
        self.monitoring_dir = self.path / "monitoring"
        self.plots_dir = self.path / "plots"
        self.tensorboard_dir = self.path / "tensorboard"
        self.logs_dir = self.path / "logs"
        self.quarantine_dir = self.path / "quarantine"
        self.runs_path = self.path / "runs.json"
        self._locked = False

    def __repr__(self) -> str:
        return f"Session({str(self.path)!r})"

    # ----- creation and config --------------------------------------------------------------
    def exists(self) -> bool:
        return self.config_path.is_file()

    def create(self, config: GymConfig) -> None:
        """Make the folders and write config.json for a new session."""
        if self.exists():
            raise SessionError(f"session {self.path} already exists; use resume")
        if self.path.exists() and not self.path.is_dir():
            raise SessionError(f"{self.path} exists and is not a folder")
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            self.make_folders()
            self.save_config(config)
        except OSError as error:
            raise SessionError(f"cannot create session folder {self.path}: {error}") from error

    def discard_new(self, folder_was_there: bool) -> None:
        """Undo a `create` that failed half-way: remove the folder if it was made for this
        session, else only config.json and the (empty) session folders inside it."""
        if not self.path.is_dir():
            return
        if not folder_was_there:
            shutil.rmtree(self.path, ignore_errors=True)
            return
        self.config_path.unlink(missing_ok=True)
        remove_leftovers(self.path)
        for name in FOLDERS:
            try:
                (self.path / name).rmdir()
            except OSError:
                pass   # not there, or not empty: not ours to delete

    def make_folders(self) -> None:
        for name in FOLDERS:
            (self.path / name).mkdir(parents=True, exist_ok=True)

    def save_config(self, config: GymConfig) -> None:
        atomic_write_json(self.config_path, {**config.to_dict(), "format_version": CONFIG_FORMAT})

    def load_config(self) -> GymConfig:
        if not self.path.is_dir():
            raise SessionError(f"no session folder at {self.path} "
                               "(create one with 'gamegym new')")
        if not self.exists():
            raise SessionError(f"{self.path} is not a gamegym session (no config.json)")
        try:
            data = json.loads(self.config_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise SessionError(f"session config {self.config_path} is unreadable: {error}"
                               ) from error
        try:
            if isinstance(data, dict):
                check_format(data.pop("format_version", None), CONFIG_FORMAT,
                             f"session {self.path} (config.json)")
            return GymConfig.from_dict(data)
        except FormatError as error:
            raise SessionError(str(error)) from error
        except ConfigError as error:
            raise SessionError(f"session config {self.config_path}: {error}") from error

    def tidy(self) -> int:
        """Remove temporary files left by writers that died (at start, and at stop once no child
        is alive)."""
        return remove_leftovers(self.path)

    # ----- lock -----------------------------------------------------------------------------
    def acquire_lock(self) -> None:
        """Take the session lock, or raise SessionLockedError naming the running gym.

        A lock whose process is gone (or whose pid was reused by another program) is stale
        and taken over.
        """
        me = psutil.Process()
        record = {"pid": me.pid, "create_time": me.create_time(), "started": time.time(),
                  "host": os.uname().nodename if hasattr(os, "uname") else ""}
        for _ in range(3):
            try:
                fd = os.open(self.lock_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self.lock_holder()
                if holder is not None:
                    raise SessionLockedError(
                        f"session {self.path} is in use by gym process {holder['pid']} "
                        f"(started {time.ctime(holder.get('started', 0))}); stop it first "
                        f"(type 'exit' in its console or send it SIGTERM)")
                log.warning("taking over stale lock %s", self.lock_path)
                self.lock_path.unlink(missing_ok=True)
                continue
            with os.fdopen(fd, "w") as handle:
                json.dump(record, handle)
                handle.flush()
                os.fsync(handle.fileno())
            self._locked = True
            return
        raise SessionLockedError(f"could not take the lock {self.lock_path}")

    def begin_run(self, seed: int) -> int:
        """Count one more run of a gym on this session and return its number (1 for the first).

        Call it holding the lock.  The count is written atomically before any process starts,
        so every run gets a number of its own; the processes' seeds derive from the config's
        seed and this number (see gamegym.runtime.process.process_seed), and runs.json keeps
        what is needed to reproduce them.  An unreadable runs.json is replaced by a count no
        earlier run can have had (seconds since 1970), with a warning."""
        try:
            record = json.loads(self.runs_path.read_text())
            runs = int(record["runs"])
        except FileNotFoundError:
            runs = 0
        except (OSError, ValueError, KeyError, TypeError) as error:
            runs = int(time.time())
            log.warning("%s is unreadable (%s); counting runs on from %d", self.runs_path,
                        error, runs)
        run = runs + 1
        atomic_write_json(self.runs_path, {"runs": run, "seed": seed, "started": time.time(),
                                           "seeds": "SeedSequence([seed, role, run, *slot])"})
        return run

    def lock_holder(self) -> dict | None:
        """The lock record if the process holding it is alive, else None (stale or absent)."""
        try:
            record = json.loads(self.lock_path.read_text())
            pid, created = int(record["pid"]), float(record["create_time"])
        except (OSError, ValueError, KeyError, TypeError):
            # a lock being written right now is younger than a second: treat it as held
            try:
                if time.time() - self.lock_path.stat().st_mtime < 1.0:
                    return {"pid": "?", "started": time.time()}
            except OSError:
                pass
            return None
        try:
            process = psutil.Process(pid)
            if abs(process.create_time() - created) > 1.0:
                return None  # pid reused by another program
            if process.status() == psutil.STATUS_ZOMBIE:
                return None
        except psutil.Error:
            return None
        return record

    def release_lock(self) -> None:
        if self._locked:
            self.lock_path.unlink(missing_ok=True)
            self._locked = False

    # ----- models ---------------------------------------------------------------------------
    def model_path(self, iteration: int) -> Path:
        return self.models_dir / f"{iteration}.keras"

    def current_iteration(self) -> int:
        """The newest published iteration (-1 when there is no model yet)."""
        try:
            data = json.loads((self.models_dir / "current.json").read_text())
            return int(data["iteration"])
        except FileNotFoundError:
            return -1
        except (OSError, ValueError, KeyError, TypeError) as error:
            found = self.model_iterations()
            if not found:
                raise SessionError(f"models/current.json is unreadable ({error}) "
                                   "and there is no model file") from error
            log.warning("models/current.json unreadable (%s); using newest file %s", error,
                        found[-1])
            return found[-1]

    def model_is_sound(self, iteration: int) -> bool:
        """True when the model file is a complete zip archive with intact members (CRC)."""
        try:
            with zipfile.ZipFile(self.model_path(iteration)) as archive:
                return archive.testzip() is None and "config.json" in archive.namelist()
        except (OSError, zipfile.BadZipFile, EOFError, ValueError):
            return False

    def recover_models(self) -> int:
        """Quarantine damaged model files from the newest down; point current.json at the newest
        sound one.  Returns the current iteration afterwards (-1 when none is left)."""
        current = self.current_iteration()
        for iteration in sorted((i for i in self.model_iterations() if i <= max(current, 0)),
                                reverse=True):
            if self.model_is_sound(iteration):
                if iteration != current:
                    log.warning("model iteration %d is damaged or missing; continuing from %d",
                                current, iteration)
                    atomic_write_json(self.models_dir / "current.json",
                                      {"iteration": iteration, "file": f"{iteration}.keras",
                                       "time": time.time()})
                return iteration
            quarantine(self.model_path(iteration), self.quarantine_dir)
        if current >= 0:
            raise SessionError(f"no sound model file in {self.models_dir}; damaged ones were "
                               f"moved to {self.quarantine_dir}")
        return -1

    def model_iterations(self) -> list[int]:
        if not self.models_dir.is_dir():
            return []
        return sorted(int(p.stem) for p in self.models_dir.glob("*.keras") if p.stem.isdigit())

    def publish_model(self, model, iteration: int, keep: int = 0) -> Path:
        """Save a Keras model as models/<iteration>.keras atomically, then point current.json at it."""
        path = self.model_path(iteration)
        tmp = temporary_path(path)
        try:
            model.save(tmp)
            atomic_publish(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        atomic_write_json(self.models_dir / "current.json",
                          {"iteration": iteration, "file": path.name, "time": time.time()})
        if keep:
            self.prune_models(keep)
        return path

    def prune_models(self, keep: int) -> None:
        """Delete all but the newest `keep` model files (iteration 0 is always kept)."""
        iterations = self.model_iterations()
        for it in iterations[:-keep]:
            if it != 0:
                self.model_path(it).unlink(missing_ok=True)

    # ----- training history -----------------------------------------------------------------
    def write_train_report(self, iteration: int, report: dict) -> None:
        atomic_write_json(self.train_dir / f"{iteration}.json", report)

    def train_reports(self) -> list[dict]:
        reports = []
        if not self.train_dir.is_dir():
            return reports
        for path in sorted(self.train_dir.glob("*.json"), key=lambda p: int(p.stem)
                           if p.stem.isdigit() else -1):
            try:
                reports.append(json.loads(path.read_text()))
            except (OSError, ValueError):
                continue
        return reports
