"""What runs on the nodes of a Ray cluster: one Predictor actor per node and Selfplayer actors.

The gym (`gamegym.runtime.ray.backend`) makes them Ray actors; nothing here imports Ray, so a node needs
gamegym, the game's module and Ray, and never the session folder:

- `PredictorActor` runs the same batching `Predictor` as a Predictor process, on the models the
  gym broadcast to the node (`NodeModels`): on the CPU fast path from their fast-path files,
  without TensorFlow, as a Predictor process does.  Its Selfplayers connect to it over a local socket
  (`multiprocessing.connection`, authenticated with the run's key): a Selfplayer talks to the
  Predictor on its own node with the same one-message-per-batch pipe protocol as a Selfplayer
  process (`gamegym.runtime.pipes.PipeService`), so batching stays local to the node.
- `SelfplayerActor` plays the learner's self-play driver (`Learner.selfplayer`) in a thread and
  keeps each flush of finished games as the bytes of one sample file (compressed on the node)
  until the gym takes it: at most `OUTBOX_FILES`, so a gym that falls behind slows the actor
  down instead of filling memory.

Both keep their reports and log lines in a `Relay` until the gym takes them (`take`); the gym
writes the log lines into the session's logs/ and the sample files into samples/.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
import threading
import traceback
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Client, Listener, Pipe
from pathlib import Path

import numpy as np

from gamegym.data.fileio import atomic_write_bytes
from gamegym.data.session import fast_model_file
from gamegym.nets.tfsetup import tensorflow_imported
from gamegym.runtime.messages import Reload
from gamegym.runtime.selfplay import SampleWriter

__all__ = ["Relay", "ModelFiles", "NodeModels", "PredictorActor", "SelfplayerActor", "OUTBOX_FILES"]

log = logging.getLogger("gamegym.runtime.ray.actors")

OUTBOX_FILES = 4  # encoded sample files a Selfplayer actor holds for the gym at most
LOG_LINES = 500  # log lines an actor keeps between two takes (the oldest go first)
MODELS_PREFIX = "gamegym-models-"


class Relay:
    """Reports, log lines and sample files an actor keeps until the gym takes them."""

    def __init__(self, max_files: int = OUTBOX_FILES):
        self.max_files = max_files
        self._cond = threading.Condition()
        self._reports: list = []
        self._logs: deque = deque(maxlen=LOG_LINES)
        self._files: list = []
        self.closed = False  # nothing more will come (the Selfplayer stopped)

    def put(self, report) -> None:
        """A Report (the `reports.put` of Counters and the Predictor)."""
        with self._cond:
            self._reports.append(report)
            self._cond.notify_all()

    def log(self, line: str) -> None:
        with self._cond:
            self._logs.append(line)

    def put_file(self, item: tuple) -> None:
        """(iteration, bytes, samples, games) of one sample file; waits while the gym has
        `max_files` of this actor's files still to take."""
        with self._cond:
            while len(self._files) >= self.max_files:
                self._cond.wait(1.0)
            self._files.append(item)
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    def take(self, wait_s: float = 0.0) -> dict:
        """Everything kept so far, waiting up to `wait_s` for a file, a report or the close."""
        with self._cond:
            self._cond.wait_for(lambda: self._files or self._reports or self.closed, wait_s)
            out = {
                "files": self._files,
                "reports": self._reports,
                "logs": list(self._logs),
                "closed": self.closed,
            }
            self._files, self._reports = [], []
            self._logs.clear()
            self._cond.notify_all()
        return out


class _RelayHandler(logging.Handler):
    def __init__(self, relay: Relay):
        super().__init__()
        self.relay = relay

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.relay.log(self.format(record))
        except Exception:  # a log line must never break the actor
            self.handleError(record)


def start_logging(name: str, relay: Relay, level: str) -> logging.Logger:
    """An actor's log lines go to the gym (through the relay) and to Ray's worker log on
    the node (stderr)."""
    formatter = logging.Formatter(
        f"%(asctime)s %(levelname)s {name}[%(process)d] %(name)s: %(message)s"
    )
    root = logging.getLogger()
    root.setLevel(level)
    for handler in (_RelayHandler(relay), logging.StreamHandler(sys.stderr)):
        handler.setFormatter(formatter)
        root.addHandler(handler)
    return logging.getLogger(f"gamegym.{name}")


def node_id() -> str:
    import ray

    return ray.get_runtime_context().get_node_id()


class NodeModels:
    """The model iterations broadcast to this node, as files in a folder of its own (the
    Predictor loads models by path): each model file and, where the gym had one, its fast-path
    file (`gamegym.nets.fastmodels`) written after it, so a Predictor on the CPU fast path
    reads that and never imports TensorFlow.  The newest `keep` iterations are kept.  Has what
    the Predictor asks of its `models`: `model_path(iteration)` and `current_iteration()`."""

    def __init__(self, keep: int = 2):
        remove_stale_folders()
        self.folder = Path(tempfile.mkdtemp(prefix=f"{MODELS_PREFIX}{os.getpid()}-"))
        self.keep = keep
        self.newest = -1

    def add(self, iteration: int, files: ModelFiles) -> None:
        path = self.model_path(iteration)
        atomic_write_bytes(path, files.model)
        if files.fast is not None:  # it records the model's sha256, so it is used
            atomic_write_bytes(fast_model_file(path), files.fast)
        else:  # one left from an earlier copy of this iteration would be stale
            fast_model_file(path).unlink(missing_ok=True)
        self.newest = max(self.newest, iteration)
        for old in self.folder.glob("*.keras"):
            if old.stem.isdigit() and int(old.stem) <= self.newest - self.keep:
                old.unlink(missing_ok=True)
                fast_model_file(old).unlink(missing_ok=True)

    def model_path(self, iteration: int) -> Path:
        return self.folder / f"{iteration}.keras"

    def current_iteration(self) -> int:
        return self.newest

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


@dataclass(frozen=True)
class ModelFiles:
    """What the gym broadcasts of one model iteration (one object in Ray's object store)."""

    model: bytes  # models/<it>.keras
    fast: bytes | None  # models/<it>.fast.npz; None when the gym has none (no fast form)


def remove_stale_folders() -> None:
    """Model folders of Predictor actors that were killed (their pid is gone)."""
    import psutil

    for folder in Path(tempfile.gettempdir()).glob(f"{MODELS_PREFIX}*-*"):
        pid = folder.name[len(MODELS_PREFIX) :].split("-")[0]
        if pid.isdigit() and not psutil.pid_exists(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


class PredictorActor:
    """The batching Predictor of one node, for the Selfplayer actors on that node."""

    def __init__(self, name: str, config, authkey: bytes):
        from gamegym.nets.fastmodels import cpu_fast_path
        from gamegym.runtime.predictor import Predictor

        self.relay = Relay()
        self.log = start_logging(name, self.relay, config.log_level)
        self.log.info("%s starting (pid %d) on node %s", name, os.getpid(), node_id())
        if not cpu_fast_path(config.predict):  # else TensorFlow only for a model without one
            from gamegym.nets.tfsetup import configure_tensorflow

            configure_tensorflow(config.predict.use_gpu, config.predict.gpu_memorylimit, threads=1)
        self.models = NodeModels()
        family = "AF_UNIX" if sys.platform != "win32" else "AF_PIPE"
        address = str(self.models.folder / "predictor.sock") if family == "AF_UNIX" else None
        self.listener = Listener(address, family=family, authkey=authkey)
        control_in, self.control = Pipe(duplex=False)
        self._control_lock = threading.Lock()
        self.predictor = Predictor(self.models, config, [], control_in, self.relay)
        self.predictor.accept_clients()
        self.stop_event = threading.Event()
        self.serving: threading.Thread | None = None
        self.error = ""
        threading.Thread(target=self._accept, name="accept", daemon=True).start()

    def address(self):
        """Where this node's Selfplayers connect."""
        return self.listener.address

    def _accept(self) -> None:
        while not self.stop_event.is_set():
            try:
                conn = self.listener.accept()
            except OSError:  # closed at stop
                return
            except Exception as error:  # a client with the wrong key: refused, go on
                self.log.warning("refused a connection: %s", error)
                continue
            self.predictor.add_client(conn)

    def publish(self, iteration: int, files: ModelFiles) -> int:
        """A model iteration from the gym; the first starts serving."""
        self.models.add(iteration, files)
        with self._control_lock:
            if self.serving is None:
                self.serving = threading.Thread(target=self._serve, name="serve", daemon=True)
                self.serving.start()
            else:
                self.control.send(Reload(iteration))
        return iteration

    def _serve(self) -> None:
        try:
            self.predictor.serve(self.stop_event)
        except Exception:
            self.error = traceback.format_exc()
            self.log.exception("predictor failed")

    def take(self) -> dict:
        """Reports and log lines since the last take; `tensorflow`: whether this process has
        imported it (not on the CPU fast path, unless a model has no fast form)."""
        return {
            **self.relay.take(0.0),
            "error": self.error,
            "pid": os.getpid(),
            "tensorflow": tensorflow_imported(),
        }

    def stop(self) -> list[str]:
        """Stop serving and remove the node's model copies (the gym kills the actor next);
        returns the last log lines."""
        self.stop_event.set()
        if self.serving is not None:
            self.serving.join(timeout=3.0)
        self.listener.close()
        self.models.remove()
        self.log.info("predictor exiting")
        return self.relay.take(0.0)["logs"]


class OutboxWriter(SampleWriter):
    """A SampleWriter whose files go to the gym: each flush becomes the bytes of one sample
    file per iteration, kept in the relay until the gym takes it."""

    def __init__(self, relay: Relay, name: str):
        super().__init__(None, name)
        self.relay = relay

    def publish(self, iteration: int, data: bytes, samples: int, games: int) -> int:
        self.relay.put_file((iteration, data, samples, games))
        return 0  # written (and counted) by the gym when it takes the file


class SelfplayerActor:
    """Plays the learner's self-play driver in a thread; the gym takes its games and reports."""

    def __init__(self, name: str, config, seed: int, address, authkey: bytes):
        from gamegym.learners import get_learner
        from gamegym.runtime.pipes import PipeService

        self.name = name
        self.relay = Relay()
        self.log = start_logging(name, self.relay, config.log_level)
        self.log.info("%s starting (pid %d) on node %s", name, os.getpid(), node_id())
        if config.selfplay.nice:
            from gamegym.runtime.selfplay import lower_priority

            self.log.info(
                "running at nice %d (selfplay.nice)", lower_priority(config.selfplay.nice)
            )
        graph = config.game_ref.build()  # an actor is a process of its own
        self.service = PipeService(Client(address, authkey=authkey))
        self.driver = get_learner(config.train.learner).selfplayer(
            graph, self.service, config, np.random.default_rng(seed)
        )
        self.config = config
        self.stop_event = threading.Event()
        self.error = ""
        self.predictor_gone = False  # it ended because its Predictor's connection closed
        threading.Thread(target=self._play, name="play", daemon=True).start()

    def _play(self) -> None:
        from gamegym.runtime.pipes import PredictorGone
        from gamegym.runtime.selfplay import selfplay_loop

        try:
            games = selfplay_loop(
                self.driver,
                self.config.selfplay,
                OutboxWriter(self.relay, self.name),
                self.stop_event,
                self.relay,
                service=self.service,
            )
            self.log.info(
                "played %d games; %d requests to the Predictor", games, self.service.requests
            )
        except PredictorGone:  # (selfplay_loop handed its finished games to the relay first)
            self.predictor_gone = True
            self.log.warning("the Predictor is gone; the games finished are handed over; ending")
        except Exception:
            self.error = traceback.format_exc()
            self.log.exception("%s failed", self.name)
        finally:
            self.log.info("%s exiting", self.name)
            self.relay.close()

    def take(self, wait_s: float) -> dict:
        """Sample files, reports and log lines since the last take (waits up to `wait_s` for
        one); `closed` once the Selfplayer stopped: this take has its last files;
        `predictor_gone` when it stopped because its Predictor's connection closed."""
        return {
            **self.relay.take(wait_s),
            "error": self.error,
            "predictor_gone": self.predictor_gone,
            "pid": os.getpid(),
            "tensorflow": tensorflow_imported(),
        }

    def stop(self) -> None:
        """Finish the move, flush the games (the gym keeps taking them), then stop."""
        self.stop_event.set()
