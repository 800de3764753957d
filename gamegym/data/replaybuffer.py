"""The replay buffer of the `uniform`, `prioritized` and `curious` replays: the positions of the
newest sample files, each with a replay count and a priority, and its state file.

Storage is a ring of `capacity` slots (numpy columns, grown as they fill): a file's samples
take the next slots and overwrite the oldest ones, so the buffer always holds the newest
`capacity` positions.  Sample files never change once published, so each is read once: the
buffer remembers which files it holds (a *segment* each: the rows of the file still in the
ring) and which it has evicted.  The slot of a sample is its index in `batch()`, which the
replay's sampler draws and updates.

Each sample keeps
  count     int32    how many training steps it was in (v in Curious Replay)
  priority  float64  its priority p, a leaf of a SumTree over the slots

The state file (`state()` / `restore()`) holds the segments in ring order, oldest first, with
the count and priority of each of their rows, and the evicted files; it names files, never
slots, so a buffer restored from it matches the files on disk: a listed file that is missing,
damaged or of another length loses its rows (with a warning), and a file on disk the state
does not know is new experience.

A file is *known* when it is in the buffer, was evicted, or is older than every file in the
buffer (its model iteration is below the `floor`, the oldest iteration in the buffer): only
the known files of iterations >= floor are listed, so the state stays small.
"""

from __future__ import annotations

import io
import json
import logging
import zipfile
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gamegym.data.fileio import quarantine
from gamegym.data.formats import REPLAY_FORMAT, check_format
from gamegym.data.samplefolder import sample_files, sample_iterations
from gamegym.data.samples import FIELDS, GAME_FIELDS, SampleBatch, read_sample_file
from gamegym.data.sumtree import SumTree

__all__ = ["ReplayBuffer", "ReplayStateError", "file_key"]

log = logging.getLogger(__name__)
STATE_VERSION = REPLAY_FORMAT
ROW_COLUMNS = FIELDS + ("iteration", "truncated")  # the SampleBatch columns, extra aside


class ReplayStateError(ValueError):
    """A replay state file is damaged or inconsistent; the message says how."""


def file_key(iteration: int, path: Path) -> str:
    """How the buffer names a sample file: '<iteration>/<file name>'."""
    return f"{iteration}/{Path(path).name}"


@dataclass
class Segment:
    """The rows [row_from, row_to) of one sample file, in ring slots from `slot` on."""

    key: str
    iteration: int
    file_rows: int  # the rows the whole file holds (checked when restored)
    row_from: int
    row_to: int
    slot: int  # ring slot of row `row_from`

    @property
    def rows(self) -> int:
        return self.row_to - self.row_from


class ReplayBuffer:
    """The newest `capacity` positions of a session's sample files (see the module)."""

    def __init__(
        self, samples_dir: Path, capacity: int, quarantine_dir: Path | None = None, shape=None
    ):
        self.samples_dir = Path(samples_dir)
        self.shape = shape  # the game's SampleShape: files are checked
        self.capacity = int(capacity)
        self.quarantine_dir = quarantine_dir
        self.columns: dict[str, np.ndarray] = {}  # name -> [allocated, ...], extra included
        self.extra_names: tuple = ()
        self.count = np.zeros(0, np.int32)
        self.tree = SumTree(self.capacity)
        self.size = 0  # filled slots: 0..size-1
        self.head = 0  # the next slot to write
        self.segments: deque[Segment] = deque()  # oldest first
        self.held: set[str] = set()  # keys of the segments
        self.evicted: set[str] = set()  # keys of evicted files, iteration >= floor
        self.skipped: set[str] = set()  # unreadable or foreign files (this run)
        self.next_game = 0  # game ids stay unique in the buffer

    # ----- what it holds ----------------------------------------------------------------------
    def __len__(self) -> int:
        return self.size

    @property
    def floor(self) -> int:
        """The oldest model iteration in the buffer (0 when empty)."""
        return min((s.iteration for s in self.segments), default=0)

    def batch(self) -> SampleBatch | None:
        """The samples, index = slot (views of the ring: valid until the next add)."""
        if self.size == 0:
            return None
        n = self.size
        return SampleBatch(
            **{k: self.columns[k][:n] for k in ROW_COLUMNS},
            extra={k: self.columns[k][:n] for k in self.extra_names},
        )

    def priorities(self) -> np.ndarray:
        return self.tree.priorities(np.arange(self.size))

    def samples_of(self, iteration: int) -> int:
        return sum(s.rows for s in self.segments if s.iteration == iteration)

    def new_files(self) -> list[tuple[int, Path]]:
        """Published sample files the buffer does not know, oldest first (see the module)."""
        floor = self.floor
        found = []
        for it in sample_iterations(self.samples_dir):
            if self.segments and it < floor:
                continue
            for path in sample_files(self.samples_dir, it):
                key = file_key(it, path)
                if key not in self.held and key not in self.evicted and key not in self.skipped:
                    found.append((it, path))
        return found

    # ----- adding files -----------------------------------------------------------------------
    def read(self, iteration: int, path: Path) -> dict | None:
        """A sample file's arrays, or None (a damaged one is quarantined, with a warning)."""
        key = file_key(iteration, path)
        try:
            arrays = read_sample_file(path, self.shape)
        except ValueError as error:
            self.skipped.add(key)
            if path.exists():
                log.warning("%s", error)
                if self.quarantine_dir is not None:
                    quarantine(path, self.quarantine_dir)
            else:
                log.warning("sample file %s is gone; its samples are left out", key)
            return None
        if self.columns and not self._fits(arrays):
            log.warning(
                "sample file %s has positions of another shape than the buffer's "
                "(another game?); left out",
                key,
            )
            self.skipped.add(key)
            return None
        return arrays

    def add(
        self,
        iteration: int,
        path: Path,
        arrays: dict,
        rows: tuple | None = None,
        count=None,
        priority=None,
        new_priority: float = 1.0,
    ) -> int:
        """Put a file's rows [rows) (default all) into the ring, evicting the oldest; new
        samples get count 0 and `new_priority`.  Returns the rows added."""
        n_file = len(arrays["z"])
        start, stop = rows if rows is not None else (0, n_file)
        if stop - start > self.capacity:  # only the newest rows fit
            cut = stop - start - self.capacity
            start += cut
            count = None if count is None else np.asarray(count)[cut:]
            priority = None if priority is None else np.asarray(priority)[cut:]
        n = stop - start
        if n <= 0:
            return 0
        if not self.columns:
            self._allocate(arrays)
        self._evict(max(0, self.size + n - self.capacity))
        self._grow(min(self.capacity, self.size + n))
        slots = (self.head + np.arange(n)) % self.capacity
        rows_of = np.arange(start, stop)
        for name in FIELDS:
            self.columns[name][slots] = arrays[name][rows_of]
        self.columns["game"][slots] = arrays["game"][rows_of] + self.next_game
        self.next_game += len(arrays["result"])
        self.columns["iteration"][slots] = iteration
        self.columns["truncated"][slots] = arrays["truncated"][arrays["game"][rows_of]]
        self._add_extra(arrays, slots, rows_of, file_key(iteration, path))
        self.count[slots] = 0 if count is None else count
        self.tree.update(slots, new_priority if priority is None else priority)
        key = file_key(iteration, path)
        self.segments.append(Segment(key, iteration, n_file, start, stop, int(slots[0])))
        self.held.add(key)
        self.evicted.discard(key)
        self.head = int((self.head + n) % self.capacity)
        self.size = min(self.capacity, self.size + n)
        return n

    def _evict(self, rows: int) -> None:
        """Free the oldest `rows` slots (the next ones to be overwritten)."""
        while rows > 0 and self.segments:
            oldest = self.segments[0]
            taken = min(rows, oldest.rows)
            oldest.row_from += taken
            oldest.slot = (oldest.slot + taken) % self.capacity
            rows -= taken
            if oldest.rows == 0:
                self.segments.popleft()
                self.held.discard(oldest.key)
                self.evicted.add(oldest.key)
        floor = self.floor
        self.evicted = {k for k in self.evicted if int(k.split("/", 1)[0]) >= floor}

    def _allocate(self, arrays: dict) -> None:
        n = len(arrays["z"])
        self.extra_names = tuple(
            sorted(
                k
                for k, v in arrays.items()
                if k not in FIELDS and k not in GAME_FIELDS and len(v) == n
            )
        )
        like = {name: arrays[name] for name in FIELDS + self.extra_names}
        like["game"] = arrays["game"].astype(np.int64)
        like["iteration"] = np.zeros(n, np.int32)
        like["truncated"] = np.zeros(n, bool)
        self.columns = {name: np.zeros((0, *a.shape[1:]), a.dtype) for name, a in like.items()}

    def _grow(self, needed: int) -> None:
        have = len(self.count)
        if needed <= have:
            return
        size = min(self.capacity, max(needed, 2 * have, 1024))
        for name, column in self.columns.items():
            grown = np.zeros((size, *column.shape[1:]), column.dtype)
            grown[:have] = column
            self.columns[name] = grown
        count = np.zeros(size, np.int32)
        count[:have] = self.count
        self.count = count

    def _fits(self, arrays: dict) -> bool:
        return all(arrays[k].shape[1:] == self.columns[k].shape[1:] for k in FIELDS)

    def _add_extra(self, arrays: dict, slots, rows_of, key: str) -> None:
        """A learner's own columns; one that a file lacks, or holds in rows of another shape,
        is dropped from the buffer (read with the learner's SampleShape, every file has its
        columns as declared)."""
        missing = [
            k
            for k in self.extra_names
            if k not in arrays or arrays[k].shape[1:] != self.columns[k].shape[1:]
        ]
        if missing:
            log.warning(
                "sample file %s lacks the columns %s, or holds them in rows of another shape; "
                "the buffer leaves them out",
                key,
                missing,
            )
            for name in missing:
                del self.columns[name]
            self.extra_names = tuple(k for k in self.extra_names if k not in missing)
        for name in self.extra_names:
            self.columns[name][slots] = arrays[name][rows_of]

    # ----- state file -------------------------------------------------------------------------
    def ring_order(self) -> np.ndarray:
        """The slots of the segments' rows, oldest first (the state file's row order)."""
        if not self.segments:
            return np.zeros(0, np.int64)
        return np.concatenate([(s.slot + np.arange(s.rows)) % self.capacity for s in self.segments])

    def state(self, meta: dict) -> bytes:
        """The state file's bytes: segments, counts, priorities, evicted files, `meta`."""
        order = self.ring_order()
        segments = list(self.segments)
        buffer = io.BytesIO()
        np.savez(  # stored, not compressed: 8x faster, 1.6x larger; the zip's CRC stays
            buffer,
            version=np.int64(STATE_VERSION),
            keys=np.array([s.key for s in segments], dtype=str),
            rows=np.array(
                [[s.iteration, s.file_rows, s.row_from, s.row_to] for s in segments], np.int64
            ).reshape(-1, 4),
            count=self.count[order],
            priority=self.tree.priorities(order),
            evicted=np.array(sorted(self.evicted), dtype=str),
            meta=np.array(json.dumps(meta)),
        )
        return buffer.getvalue()

    def restore(self, data: bytes, new_priority: float) -> dict:
        """Fill an empty buffer from a state file's bytes; returns its meta.  Raises
        ReplayStateError when the file is damaged; files it lists that are gone or changed
        lose their rows with a warning."""
        state = read_state(data)
        offset = 0
        for key, (iteration, file_rows, row_from, row_to) in zip(state["keys"], state["rows"]):
            n = row_to - row_from
            count, priority = (
                state["count"][offset : offset + n],
                state["priority"][offset : offset + n],
            )
            offset += n
            path = self.samples_dir / key
            arrays = self.read(int(iteration), path) if path.exists() else None
            if arrays is None:
                log.warning(
                    "replay state: sample file %s is missing or unreadable; its %d "
                    "samples leave the buffer",
                    key,
                    n,
                )
                self.evicted.add(key)
                continue
            if len(arrays["z"]) != file_rows:
                log.warning(
                    "replay state: sample file %s has %d samples, the state says %d; "
                    "they enter as new experience",
                    key,
                    len(arrays["z"]),
                    file_rows,
                )
                self.add(int(iteration), path, arrays, new_priority=new_priority)
                continue
            self.add(int(iteration), path, arrays, (int(row_from), int(row_to)), count, priority)
        floor = self.floor
        self.evicted |= {k for k in state["evicted"] if int(k.split("/", 1)[0]) >= floor}
        self.evicted -= self.held
        return state["meta"]


def read_state(data: bytes) -> dict:
    """The arrays of a state file, checked for consistency (ReplayStateError otherwise)."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            state = {
                k: npz[k]
                for k in ("version", "keys", "rows", "count", "priority", "evicted", "meta")
            }
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as error:
        raise ReplayStateError(f"unreadable: {error}") from error
    check_format(state["version"].tolist(), STATE_VERSION, "replay state")
    rows = state["rows"].astype(np.int64).reshape(-1, 4)
    total = int((rows[:, 3] - rows[:, 2]).sum()) if len(rows) else 0
    if (
        len(state["keys"]) != len(rows)
        or len(set(state["keys"].tolist())) != len(rows)
        or len(state["count"]) != total
        or len(state["priority"]) != total
        or (rows[:, 2] < 0).any()
        or (rows[:, 3] < rows[:, 2]).any()
        or (rows[:, 3] > rows[:, 1]).any()
    ):
        raise ReplayStateError("its segments and rows do not agree")
    priority = state["priority"].astype(np.float64)
    if not np.isfinite(priority).all() or (priority < 0).any() or (state["count"] < 0).any():
        raise ReplayStateError("it holds negative or non-finite counts or priorities")
    if not all(_is_key(k) for k in list(state["keys"]) + list(state["evicted"])):
        raise ReplayStateError("it names files that are not '<iteration>/<file>'")
    try:
        meta = json.loads(str(state["meta"]))
    except ValueError as error:
        raise ReplayStateError(f"its meta data is not JSON: {error}") from error
    return {
        "keys": [str(k) for k in state["keys"]],
        "rows": rows.tolist(),
        "count": state["count"].astype(np.int32),
        "priority": priority,
        "evicted": {str(k) for k in state["evicted"]},
        "meta": meta if isinstance(meta, dict) else {},
    }


def _is_key(key) -> bool:
    iteration, _, name = str(key).partition("/")
    return iteration.isdigit() and bool(name) and "/" not in name and name not in (".", "..")
