"""The samples folder of a session (samples/<iteration>/<name>.npz): which iterations and
published files it holds (`sample_iterations`, `sample_files`), how many samples and games each
iteration has (`SampleCounter`), and the window of newest samples the Trainer reads
(`load_samples`), every file read and checked by gamegym.data.samples.read_sample_file and a
refused one quarantined.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from gamegym.data.fileio import quarantine
from gamegym.data.reanalysis import apply_reanalysis, read_reanalysis, reanalysis_path
from gamegym.data.samples import FIELDS, GAME_FIELDS, SampleBatch, SampleShape, read_sample_file

__all__ = ["SampleCounter", "load_samples", "sample_files", "sample_iterations"]

log = logging.getLogger(__name__)


def sample_iterations(samples_dir: Path) -> list[int]:
    """Iterations that have a sample folder, ascending."""
    if not samples_dir.is_dir():
        return []
    return sorted(int(p.name) for p in samples_dir.iterdir() if p.is_dir() and p.name.isdigit())


def sample_files(samples_dir: Path, iteration: int) -> list[Path]:
    """Published sample files of one iteration (hidden temporary files excluded)."""
    folder = samples_dir / str(iteration)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.npz") if not p.name.startswith("."))


class SampleCounter:
    """Counts samples and games per iteration from the files; published files never change,
    so each file is opened once."""

    def __init__(self, samples_dir: Path):
        self.samples_dir = Path(samples_dir)
        self._known: dict[Path, tuple[int, int]] = {}

    def per_iteration(self) -> dict[int, tuple[int, int]]:
        """iteration -> (samples, games)."""
        counts: dict[int, tuple[int, int]] = {}
        for it in sample_iterations(self.samples_dir):
            samples = games = 0
            for path in sample_files(self.samples_dir, it):
                known = self.of_file(path)
                if known is None:
                    continue
                samples += known[0]
                games += known[1]
            counts[it] = (samples, games)
        return counts

    def of_file(self, path: Path) -> tuple[int, int] | None:
        """(samples, games) of one published sample file, None for a damaged one."""
        known = self._known.get(path)
        if known is None:
            known = self._count(path)
            if known is not None:
                self._known[path] = known
        return known

    def samples_per_iteration(self) -> dict[int, int]:
        return {it: n for it, (n, _) in self.per_iteration().items()}

    @staticmethod
    def _count(path: Path) -> tuple[int, int] | None:
        try:
            with np.load(path, allow_pickle=False) as data:
                return int(data["z"].shape[0]), int(data["result"].shape[0])
        except Exception:  # damaged: load_samples quarantines it
            return None


def load_samples(
    samples_dir: Path,
    min_iteration: int,
    max_count: int,
    quarantine_dir: Path | None = None,
    sources: dict[str, int] | None = None,
    shape: SampleShape | None = None,
    reanalysed: dict[str, int] | None = None,
) -> SampleBatch | None:
    """The newest samples of iterations >= min_iteration, at most max_count (newest files first).

    A file that `read_sample_file` refuses (damaged, of another format, bad data, or not fitting
    the game's and learner's `shape` when given) is moved to `quarantine_dir` (when given) with
    a warning, and skipped.
    Where a file has reanalysed targets (gamegym.data.reanalysis), they replace its own; a
    reanalysis file that cannot be read is quarantined the same way and the file's own targets
    are kept.
    `sources`, when given, receives "<iteration>/<file name>" -> samples taken from each file
    read (fewer than the file holds only for the oldest file, cut at max_count); `reanalysed`
    the same for the files taken with reanalysed targets.
    """
    chunks: list[dict] = []
    total = 0
    games = 0  # game ids are made unique across files
    for it in reversed(sample_iterations(samples_dir)):
        if it < min_iteration or total >= max_count:
            break
        for path in reversed(sample_files(samples_dir, it)):
            if total >= max_count:
                break
            try:
                arrays = read_sample_file(path, shape)
            except ValueError as error:
                if not path.exists():
                    continue  # removed meanwhile (pruned by hand): nothing to quarantine
                log.warning("%s", error)
                if quarantine_dir is not None:
                    quarantine(path, quarantine_dir)
                continue
            n = len(arrays["z"])
            if _take_reanalysis(path, arrays, quarantine_dir) and reanalysed is not None:
                reanalysed[f"{it}/{path.name}"] = min(n, max_count - total)
            game_truncated = arrays["truncated"][arrays["game"]]
            chunk: dict[str, Any] = {k: arrays[k] for k in FIELDS}
            chunk["extra"] = {
                k: v
                for k, v in arrays.items()
                if k not in FIELDS and k not in GAME_FIELDS and len(v) == n
            }
            chunk["game"] = arrays["game"] + games
            games += len(arrays["result"])
            chunk["iteration"] = np.full(n, it, np.int32)
            chunk["truncated"] = game_truncated
            chunks.append(chunk)
            if sources is not None:
                sources[f"{it}/{path.name}"] = min(n, max_count - total)
            total += n
    if not chunks:
        return None
    extra_names = {
        name
        for name in set.intersection(*(set(c["extra"]) for c in chunks))
        if len({_row_form(c["extra"][name]) for c in chunks}) == 1
    }
    dropped = set.union(*(set(c["extra"]) for c in chunks)) - extra_names
    if dropped:  # only without a learner's SampleShape: with one, every file has its columns
        log.warning(
            "sample columns %s are not in every file read, or not of one row shape and "
            "dtype kind; left out",
            sorted(dropped),
        )
    batch = SampleBatch(
        **{k: np.concatenate([c[k] for c in chunks]) for k in chunks[0] if k != "extra"},
        extra={k: np.concatenate([c["extra"][k] for c in chunks]) for k in sorted(extra_names)},
    )
    if len(batch) > max_count:
        batch = batch.take(np.arange(max_count))
    return batch


def _take_reanalysis(path: Path, arrays: dict, quarantine_dir: Path | None) -> bool:
    """Put the reanalysed targets of the sample file at `path` into its `arrays` where it has
    them (True); a reanalysis file that cannot be read is quarantined (False)."""
    try:
        reanalysis = read_reanalysis(path, len(arrays["z"]), arrays["pi"].shape[1])
    except ValueError as error:
        stored = reanalysis_path(path)
        if not stored.exists():
            return False  # replaced or removed meanwhile: the file's own targets this time
        log.warning("%s; the file's own targets are trained on", error)
        if quarantine_dir is not None:
            quarantine(stored, quarantine_dir)
        return False
    if reanalysis is None:
        return False
    apply_reanalysis(arrays, reanalysis)
    return True


def _row_form(column: np.ndarray) -> tuple:
    """What columns must share to be concatenated: the row shape and the dtype kind."""
    return column.shape[1:], column.dtype.kind
