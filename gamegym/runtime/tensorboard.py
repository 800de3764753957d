"""TensorBoard event files of a session, in sessions/NAME/tensorboard/ (one run).

    tensorboard --logdir sessions/NAME

Three processes write, each its own event file in the same folder, so TensorBoard shows them as
one run, and a resume adds files to that run (steps go on from where they were):
  the Trainer      train/*        per iteration: losses, learning rate, samples, seconds
  the Evaluator    rating/*, match/*   per rated iteration: its Elo, its score against each opponent
  the gym          throughput/*, predictor/*, memory/*, cpu/*   every status line, at the
                   step "seconds the session has run" (all its runs together)

The writer is tensorboardX (no TensorFlow: the gym's own process writes too).  Each record is
written, flushed and fsynced at once; a process killed mid-write leaves at most its last record
torn, which TensorBoard skips, and the next run writes a new file.  A failed write is logged and
turns the writer off: the charts are never a reason to stop training.
"""

from __future__ import annotations

import itertools
import logging
import os
import sys
import time
from pathlib import Path

log = logging.getLogger("gamegym.runtime.tensorboard")

__all__ = ["BoardWriter", "status_scalars", "train_scalars", "evaluation_scalars"]

_files = itertools.count()  # two writers of one process and role in one second: two files


class BoardWriter:
    """Scalars of one process into an event file of its own in `folder`."""

    def __init__(self, folder: Path, role: str):
        self.folder = Path(folder)
        self.role = role
        self._events = None
        self._failed = False

    def scalars(self, step: int, values: dict, wall_time: float | None = None) -> None:
        """Write {tag: number} at `step` (non-numbers and NaN are left out)."""
        if self._failed:
            return
        try:
            event_pb2, summary_pb2, _ = _tensorboardx()
            summary = summary_pb2.Summary(
                value=[
                    summary_pb2.Summary.Value(tag=tag, simple_value=float(value))
                    for tag, value in sorted(values.items())
                    if isinstance(value, (int, float)) and value == value
                ]
            )
            if not summary.value:
                return
            events = self._open()
            events.write_event(
                event_pb2.Event(wall_time=wall_time or time.time(), step=int(step), summary=summary)
            )
            events.flush()  # flushed and fsynced: a crash loses no record written before
        except OSError as error:
            self._failed = True
            log.warning("TensorBoard writer of %s turned off: %s", self.role, error)

    def _open(self):
        if self._events is None:
            EventsWriter = _tensorboardx()[2]
            self.folder.mkdir(parents=True, exist_ok=True)
            # events.out.tfevents.<time>.<host>.<role>.<pid>.<n>: a new file per writer
            self._events = EventsWriter(
                str(self.folder / "events"),
                filename_suffix=f".{self.role}.{os.getpid()}.{next(_files)}",
            )
        return self._events

    def close(self) -> None:
        if self._events is not None:
            try:
                self._events.close()
            except OSError:
                pass
            self._events = None


def _tensorboardx():
    """tensorboardX's protos and file writer.  Its package imports boto3 and Google Cloud
    Storage when they are installed, for s3:// and gs:// log folders we never use (16 MiB in
    the gym's process where boto3 is installed); they are kept out of this import."""
    skipped = [name for name in ("boto3", "google.cloud.storage") if name not in sys.modules]
    for name in skipped:
        sys.modules[name] = None  # makes `import boto3` there fail, as when not installed
    try:
        from tensorboardX.event_file_writer import EventsWriter
        from tensorboardX.proto import event_pb2, summary_pb2
    finally:
        for name in skipped:
            del sys.modules[name]
    return event_pb2, summary_pb2, EventsWriter


def train_scalars(report: dict, learning_rate: float | None = None) -> dict:
    """The Trainer's figures of one iteration (a train/<it>.json report)."""
    values = {f"train/{name}": value for name, value in report.get("losses", {}).items()}
    values["train/samples"] = report.get("samples")
    values["train/seconds"] = report.get("seconds")
    if learning_rate is not None:
        values["train/learning_rate"] = learning_rate
    return values


def evaluation_scalars(iteration: int, ratings: dict, results: list[dict]) -> dict:
    """The Evaluator's figures of one rated iteration: its Elo (random = 0) and its score
    (wins + draws/2 per game) against each opponent it played."""
    values = {"rating/elo": ratings.get(f"iteration:{iteration}")}
    for row in results:
        opponent = "previous" if row["opponent"].startswith("iteration:") else row["opponent"]
        values[f"match/score_vs_{opponent.replace(':', '')}"] = row.get("score")
    return values


def status_scalars(status: dict) -> dict:
    """The gym's figures of one status line: rates, the Predictor's batch, memory and CPU by
    role."""
    values = {
        f"throughput/{name}": status.get(name)
        for name in ("searches_per_s", "positions_per_s", "games_per_s", "samples_per_s")
    }
    values["predictor/mean_batch"] = status.get("mean_batch")
    for role, figures in status.get("resources", {}).items():
        values[f"memory/{role}_rss_mib"] = figures.get("rss_mib")
        values[f"cpu/{role}_percent"] = figures.get("cpu_percent")
    return values
