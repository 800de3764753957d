"""A session's progress as the page charts it, read from the session folder only.

  monitoring/status.jsonl   the gym's status records while it runs (iteration, games, samples/s,
                            searches/s, last losses): read incrementally, new lines only
  train/<it>.json           the losses of each iteration
  evaluation/results.jsonl  match results of the Evaluator and `gamegym evaluate`: the score of
                            an iteration against each yardstick (random, solver, alphabeta:D...)
  evaluation/ratings.json   the Elo ratings fitted to them
  samples/, models/         sample and game counts (each sample file opened once), iterations

Nothing here writes or locks: a gym may be running on the same folder.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from gamegym.data.fileio import read_jsonl
from gamegym.data.samplefolder import SampleCounter
from gamegym.data.session import Session

__all__ = ["SessionProgress", "JsonlTail"]

MAX_POINTS = 300  # points per live series sent to the page (older ones thinned out)
MAX_RECORDS = 20_000  # status records kept in memory


class JsonlTail:
    """The records of a JSON-lines file that only grows, read a new part at a time.  A file
    that shrank (replaced) is read again from its start; a torn last line waits for its end."""

    def __init__(self, path: Path, keep: int = MAX_RECORDS):
        self.path, self.keep = Path(path), keep
        self.records: list[dict] = []
        self._offset = 0
        self._lock = threading.Lock()

    def read(self) -> list[dict]:
        with self._lock:
            try:
                size = self.path.stat().st_size
            except OSError:
                return self.records
            if size < self._offset:
                self.records, self._offset = [], 0
            if size > self._offset:
                with open(self.path, "rb") as handle:
                    handle.seek(self._offset)
                    data = handle.read(size - self._offset)
                end = data.rfind(b"\n") + 1  # whole lines only
                self._offset += end
                for line in data[:end].splitlines():
                    try:
                        record = json.loads(line)
                    except (json.JSONDecodeError, UnicodeDecodeError):
                        continue
                    if isinstance(record, dict):
                        self.records.append(record)
                del self.records[: -self.keep]
            return self.records


def _thinned(rows: list, limit: int = MAX_POINTS) -> list:
    """At most `limit` rows, evenly spread, the last one kept."""
    if len(rows) <= limit:
        return rows
    step = len(rows) / limit
    return [rows[int(i * step)] for i in range(limit - 1)] + [rows[-1]]


class SessionProgress:
    """Everything the progress panel shows; cheap to call every few seconds."""

    def __init__(self, session: Session):
        self.session = session
        self.status = JsonlTail(session.monitoring_dir / "status.jsonl")
        self.counter = SampleCounter(session.samples_dir)
        self._train: dict[str, tuple[float, dict]] = {}  # file name -> (mtime, report)
        self._lock = threading.Lock()

    def snapshot(self) -> dict:
        session = self.session
        with self._lock:
            counts = self.counter.per_iteration()
            losses = self._losses()
        records = self.status.read()
        live = [
            {
                "time": r.get("time"),
                "iteration": r.get("iteration"),
                "games": r.get("games"),
                "samples_per_s": r.get("samples_per_s"),
                "searches_per_s": r.get("searches_per_s"),
                "loss": (r.get("last_losses") or {}).get("loss"),
            }
            for r in records
        ]
        last = records[-1] if records else {}
        holder = session.recorded_holder()  # never the lock itself: a gym may be starting
        return {
            "time": time.time(),
            "running": holder is not None,
            "iteration": session.current_iteration(),
            "models": session.model_iterations(),
            "samples": sum(n for n, _ in counts.values()),
            "games": sum(g for _, g in counts.values()),
            "samples_per_s": last.get("samples_per_s") if holder else None,
            "searches_per_s": last.get("searches_per_s") if holder else None,
            "last_status": last.get("time"),
            "last_losses": losses[-1]["losses"] if losses else {},
            "losses": losses,
            "live": _thinned(live),
            "evaluation": self._evaluation(),
            "ratings": self._ratings(),
        }

    def _losses(self) -> list[dict]:
        """[{"iteration", "losses"}] from train/*.json, each file read again only when it
        changed."""
        folder = self.session.train_dir
        seen = {}
        try:
            entries = list(os.scandir(folder))
        except OSError:
            entries = []
        for entry in entries:
            name = entry.name
            if not (name.endswith(".json") and name[:-5].isdigit()):
                continue
            try:
                mtime = entry.stat().st_mtime
            except OSError:
                continue
            known = self._train.get(name)
            if known is None or known[0] != mtime:
                try:
                    report = json.loads(Path(entry.path).read_text())
                except (OSError, ValueError):
                    continue
                known = (
                    mtime,
                    {
                        "iteration": int(name[:-5]),
                        "losses": {
                            k: v
                            for k, v in (report.get("losses") or {}).items()
                            if isinstance(v, (int, float))
                        },
                    },
                )
            seen[name] = known
        self._train = seen
        return sorted((report for _, report in seen.values()), key=lambda r: r["iteration"])

    def _evaluation(self) -> dict:
        """opponent -> [{"iteration", "score", "wins", "draws", "losses"}] by iteration."""
        series: dict[str, list] = {}
        for row in read_jsonl(self.session.evaluation_dir / "results.jsonl"):
            try:
                point = {
                    "iteration": int(row["iteration"]),
                    "score": float(row["score"]),
                    **{k: int(row.get(k, 0)) for k in ("wins", "draws", "losses")},
                }
                opponent = str(row["opponent"])
                if opponent.startswith("iteration:"):  # "previous": a new one every time
                    opponent = "an earlier iteration"
            except (KeyError, TypeError, ValueError):
                continue
            series.setdefault(opponent, []).append(point)
        return {
            name: sorted(points, key=lambda p: p["iteration"])
            for name, points in sorted(series.items())
        }

    def _ratings(self) -> dict:
        try:
            ratings = json.loads((self.session.evaluation_dir / "ratings.json").read_text())
        except (OSError, ValueError):
            return {}
        return (
            {str(k): v for k, v in ratings.items() if isinstance(v, (int, float))}
            if isinstance(ratings, dict)
            else {}
        )
