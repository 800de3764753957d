"""The session folder: layout, lock, model registry (iteration -> file) and training history.

config.json        the full GymConfig, game spec included (resume needs nothing else), and
                   the folder's format version (gamegym.data.formats)
session.lock       locked by the running gym (an OS lock, gamegym.data.sessionlock); pid, host
                   and start time inside
runs.json          how many times a gym has run on the session (the run number seeds the
                   processes of each run: no run replays the games of another)
models/<it>.keras  model iterations; models/current.json names the newest
models/<it>.fast.npz  the iteration on the CPU fast path (gamegym.nets.portable), written with
                   it when the learner has a fast form, so a Predictor loads it without
                   TensorFlow; it records the sha256 of the .keras file it was made from
                   (`stamped_fast_form`) and is valid only for that file
models/<it>.raw.keras  with train.weight_average "ema": the weights the Trainer trained (its
                   training continues from them), written just before models/<it>.keras, which
                   holds their average; without it the published model is the trained one
samples/<it>/      sample files of games played with model <it>
train/<it>.json    training report of the iteration that produced model <it>
replay/<it>.npz    the replay buffer's counts and priorities after iteration <it> (replays
                   "uniform", "prioritized", "curious"; see gamegym.data.replay)
evaluation/ monitoring/ plots/ logs/ quarantine/
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import shutil
import time
import zipfile
from pathlib import Path

import numpy as np

from gamegym.config import ConfigError, GymConfig
from gamegym.data.faults import mutated
from gamegym.data.fileio import (
    atomic_publish,
    atomic_write_bytes,
    atomic_write_json,
    make_folder,
    quarantine,
    remove_leftovers,
    temporary_path,
)
from gamegym.data.formats import CONFIG_FORMAT, FormatError, check_format
from gamegym.data.sessionlock import OLD_RUN_WAIT_S, HeldLock, LockHeld, SessionLock

__all__ = [
    "Session",
    "SessionError",
    "SessionLockedError",
    "fast_model_file",
    "file_sha256",
    "stamped_fast_form",
    "fast_form_digest",
]

log = logging.getLogger(__name__)
FOLDERS = (
    "models",
    "samples",
    "train",
    "replay",
    "evaluation",
    "monitoring",
    "tensorboard",
    "plots",
    "logs",
    "quarantine",
)


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
        self.lock = SessionLock(self.path, self.lock_path)

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
            make_folder(self.path)
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
                pass  # not there, or not empty: not ours to delete

    def make_folders(self) -> None:
        for name in FOLDERS:
            make_folder(self.path / name)

    def save_config(self, config: GymConfig) -> None:
        atomic_write_json(self.config_path, {**config.to_dict(), "format_version": CONFIG_FORMAT})

    def load_config(self) -> GymConfig:
        """The session's config.json, read without importing any module it names: its
        `plugins` are not imported (`GymConfig.runs_plugins` False; `with_plugins` imports
        them) and its game is only a name (gamegym.data.trust decides who may import them)."""
        if not self.path.is_dir():
            raise SessionError(f"no session folder at {self.path} (create one with 'gamegym new')")
        if not self.exists():
            raise SessionError(f"{self.path} is not a gamegym session (no config.json)")
        try:
            data = json.loads(self.config_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise SessionError(
                f"session config {self.config_path} is unreadable: {error}"
            ) from error
        try:
            version = 1
            if isinstance(data, dict):
                version = check_format(
                    data.pop("format_version", None),
                    CONFIG_FORMAT,
                    f"session {self.path} (config.json)",
                )
            # an earlier format is read in today's layout (gamegym.config.layouts); the
            # plugins it names are not imported (GymConfig.with_plugins, once the user agreed)
            return GymConfig.from_dict(data, stored=version, plugins=False)
        except FormatError as error:
            raise SessionError(str(error)) from error
        except ConfigError as error:
            raise SessionError(f"session config {self.config_path}: {error}") from error

    def tidy(self) -> int:
        """Remove temporary files left by writers that died (at start, and at stop once no child
        is alive)."""
        return remove_leftovers(self.path)

    # ----- lock -----------------------------------------------------------------------------
    def acquire_lock(self, wait: float = OLD_RUN_WAIT_S, waiting=None) -> None:
        """Take the session lock (gamegym.data.sessionlock), or raise SessionLockedError
        naming who holds it.  A lock held by processes of a run whose gym is gone is waited
        for up to `wait` seconds, telling `waiting(message)` once; then refused, naming them."""
        try:
            self.lock.acquire(wait, waiting)
        except LockHeld as error:
            raise SessionLockedError(str(error)) from None

    def held_lock(self) -> HeldLock:
        """The lock as a child process of the lock's holder keeps it (pass it to the child
        when it is spawned): the child holds the same open lock file, so the lock stays held
        while the child lives, whatever becomes of this process."""
        held = self.lock.held()
        if held is None:
            raise SessionError(f"the lock of {self.path} is not held by this process")
        return held

    def record_child(self, name: str, pid: int) -> None:
        """Name a child process (by its role) in the lock record: a gym that finds the lock
        held after this gym died names the processes that still hold it."""
        self.lock.record_child(name, pid)

    def recorded_holder(self) -> dict | None:
        """The lock record when the process it names still runs on this machine, else None:
        for a reader that must not touch the lock itself (`gamegym serve`); `lock_holder`
        is the answer of the lock."""
        return self.lock.recorded_holder()

    def lock_holder(self) -> dict | None:
        """The lock record ({} when unreadable) if a process holds the lock, else None."""
        return self.lock.holder()

    def release_lock(self) -> None:
        self.lock.release()

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
            log.warning(
                "%s is unreadable (%s); counting runs on from %d", self.runs_path, error, runs
            )
        run = runs + 1
        atomic_write_json(
            self.runs_path,
            {
                "runs": run,
                "seed": seed,
                "started": time.time(),
                "seeds": "SeedSequence([seed, role, run, *slot])",
            },
        )
        return run

    # ----- models ---------------------------------------------------------------------------
    def model_path(self, iteration: int) -> Path:
        return self.models_dir / f"{iteration}.keras"

    def fast_model_path(self, iteration: int) -> Path:
        return fast_model_file(self.model_path(iteration))

    def raw_model_path(self, iteration: int) -> Path:
        """models/<it>.raw.keras: the trained weights of an iteration whose published model
        holds their average (train.weight_average); absent when the two are the same."""
        return self.models_dir / f"{iteration}.raw.keras"

    def training_model_path(self, iteration: int) -> Path:
        """The file the Trainer continues from: the iteration's trained weights
        (models/<it>.raw.keras) where the published model holds their average, else the
        published model."""
        raw = self.raw_model_path(iteration)
        return raw if raw.exists() else self.model_path(iteration)

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
                raise SessionError(
                    f"models/current.json is unreadable ({error}) and there is no model file"
                ) from error
            log.warning(
                "models/current.json unreadable (%s); using newest file %s", error, found[-1]
            )
            return found[-1]

    def model_is_sound(self, iteration: int) -> bool:
        """True when the model file is a complete zip archive with intact members (CRC)."""
        return _archive_is_sound(self.model_path(iteration))

    def recover_models(self) -> int:
        """Quarantine damaged model files from the newest down (with their trained weights,
        models/<it>.raw.keras); point current.json at the newest sound one.  A damaged
        models/<it>.raw.keras of that one is quarantined too (see `_recover_raw_model`).
        Returns the current iteration afterwards (-1 when none is left)."""
        current = self.current_iteration()
        for iteration in sorted(
            (i for i in self.model_iterations() if i <= max(current, 0)), reverse=True
        ):
            if self.model_is_sound(iteration):
                self._recover_raw_model(iteration)
                if iteration != current:
                    log.warning(
                        "model iteration %d is damaged or missing; continuing from %d",
                        current,
                        iteration,
                    )
                    self._point_current(iteration)
                return iteration
            quarantine(self.model_path(iteration), self.quarantine_dir)
            if self.raw_model_path(iteration).exists():
                quarantine(self.raw_model_path(iteration), self.quarantine_dir)
        if current >= 0:
            raise SessionError(
                f"no sound model file in {self.models_dir}; damaged ones were "
                f"moved to {self.quarantine_dir}"
            )
        return -1

    def _recover_raw_model(self, iteration: int) -> None:
        """Quarantine the iteration's trained weights (models/<it>.raw.keras) when damaged:
        training then continues from its published model, where a new average starts."""
        raw = self.raw_model_path(iteration)
        if raw.exists() and not _archive_is_sound(raw):
            moved = quarantine(raw, self.quarantine_dir)
            log.warning(
                "the trained weights of iteration %d (%s) are damaged and were moved to %s; "
                "training continues from its published model (an average of weights, "
                "train.weight_average), where a new average starts",
                iteration,
                raw.name,
                moved,
            )

    def model_iterations(self) -> list[int]:
        if not self.models_dir.is_dir():
            return []
        return sorted(int(p.stem) for p in self.models_dir.glob("*.keras") if p.stem.isdigit())

    def publish_model(
        self,
        model,
        iteration: int,
        keep: int = 0,
        fast_form: bytes | None = None,
        raw_weights: list | None = None,
    ) -> Path:
        """Save a Keras model as models/<iteration>.keras atomically, then point current.json at
        it.  `fast_form` (the bytes of its fast-path file) is written next to it first, with
        the model file's sha256 recorded in it; without one, a fast-path file left from an
        earlier model of that iteration is removed.
        `raw_weights` (train.weight_average: `model` holds an average of weights) are the
        weights training continues from: `model` with them is saved first, atomically, as
        models/<iteration>.raw.keras; without them such a file left from an earlier model of
        that iteration is removed, so a resume never continues from weights of another."""
        path = self.model_path(iteration)
        if mutated("publish_order"):  # (the soak's mutation check: named before it is there)
            self._point_current(iteration)
        if raw_weights is None:
            self.raw_model_path(iteration).unlink(missing_ok=True)
        else:
            self._save_weights(model, raw_weights, self.raw_model_path(iteration))
        tmp = temporary_path(path)
        try:
            model.save(tmp)
            if fast_form is not None:
                stamped = stamped_fast_form(fast_form, file_sha256(tmp))
                atomic_write_bytes(fast_model_file(path), stamped)
            else:
                fast_model_file(path).unlink(missing_ok=True)
            atomic_publish(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        self._point_current(iteration)
        if keep:
            self.prune_models(keep)
        return path

    def _point_current(self, iteration: int) -> None:
        """Name model `iteration` the current one (models/current.json)."""
        atomic_write_json(
            self.models_dir / "current.json",
            {"iteration": iteration, "file": self.model_path(iteration).name, "time": time.time()},
        )

    def _save_weights(self, model, weights: list, path: Path) -> None:
        """Save `model` holding `weights` atomically at `path`; `model` keeps its own."""
        own = model.get_weights()
        tmp = temporary_path(path)
        try:
            model.set_weights(weights)
            model.save(tmp)
            atomic_publish(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        finally:
            model.set_weights(own)

    def prune_models(self, keep: int) -> None:
        """Delete all but the newest `keep` model files, with their fast-path and trained
        weights files (iteration 0 is always kept)."""
        iterations = self.model_iterations()
        for it in iterations[:-keep]:
            if it != 0:
                self.model_path(it).unlink(missing_ok=True)
                self.fast_model_path(it).unlink(missing_ok=True)
                self.raw_model_path(it).unlink(missing_ok=True)

    # ----- training history -----------------------------------------------------------------
    def write_train_report(self, iteration: int, report: dict) -> None:
        atomic_write_json(self.train_dir / f"{iteration}.json", report)

    def train_report(self, iteration: int) -> dict | None:
        """The training report of `iteration` (None: none, or unreadable)."""
        return _read_report(self.train_dir / f"{iteration}.json")

    def train_reports(self) -> list[dict]:
        """Every readable training report, by iteration."""
        if not self.train_dir.is_dir():
            return []
        paths = sorted(
            self.train_dir.glob("*.json"), key=lambda p: int(p.stem) if p.stem.isdigit() else -1
        )
        return [report for report in map(_read_report, paths) if report is not None]


def _read_report(path: Path) -> dict | None:
    """A training report file's object (None: missing, unreadable, or not a JSON object)."""
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return report if isinstance(report, dict) else None


def _archive_is_sound(path: Path) -> bool:
    """True when `path` is a complete Keras zip archive with intact members (CRC)."""
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.testzip() is None and "config.json" in archive.namelist()
    except (OSError, zipfile.BadZipFile, EOFError, ValueError):
        return False


def fast_model_file(model_path: Path) -> Path:
    """The fast-path file of a model file: models/<it>.keras -> models/<it>.fast.npz."""
    model_path = Path(model_path)
    return model_path.with_name(f"{model_path.stem}.fast.npz")


FAST_DIGEST = "keras_sha256"  # the fast-path file's entry: the sha256 of its model file


def file_sha256(path: Path) -> str:
    """The hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def stamped_fast_form(data: bytes, model_sha256: str) -> bytes:
    """A fast-path file's bytes (an .npz) with the sha256 of the model file it was made from
    as its entry FAST_DIGEST (one recorded before is replaced); the other entries are copied
    as they are."""
    out = io.BytesIO()
    entry = io.BytesIO()
    np.save(entry, np.frombuffer(model_sha256.encode("ascii"), np.uint8))
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for name in source.namelist():
            if name != f"{FAST_DIGEST}.npy":
                target.writestr(source.getinfo(name), source.read(name))
        target.writestr(f"{FAST_DIGEST}.npy", entry.getvalue())
    return out.getvalue()


def fast_form_digest(data: bytes) -> str | None:
    """The model file's sha256 a fast-path file's bytes record (None: none, or unreadable)."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            if FAST_DIGEST not in archive.files:
                return None
            return archive[FAST_DIGEST].tobytes().decode("ascii")
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, UnicodeDecodeError):
        return None
