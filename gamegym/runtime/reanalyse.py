"""Reanalysis in the Selfplayers (`train.reanalyze`, MuZero Reanalyze): the window's sample files
searched again by the current model, their new targets written beside them.

Where it runs.  In the Selfplayers, after each sample file they write (every
`selfplay.gamelog_dump_threshold` games), through the same model service as their self-play
(the Predictor's batches, or the model on the CPU fast path in the Selfplayer): the
Trainer's loop does none of it and only reads the new targets with the samples
(gamegym.data.reanalysis).  Its cost is self-play's: a stored position searched again costs
what a move of a new game costs, so at `train.reanalyze` r the Selfplayers play new games at
(1 - r) of the rate they would, and search r / (1 - r) stored positions per position played.

Pacing.  Each position played earns r / (1 - r) positions of reanalysis; whole sample files
are searched again while the credit lasts (a file may overdraw it, the next games pay it
back).  Credit earned while no file needs it is not saved up.

Which files.  A file the Trainer trains on (train.replay "window": the newest
`train.max_samplecount` samples of the last `train.max_sampleage` iterations) once its targets
are due: when the samples played after it (after the model that searched it again, once
reanalysed) reach (1 - r) of the window.  Counted per file, not per iteration: an iteration's
first files would otherwise wait for its last.  A file then spends about (1 - r) of its time in
the window with its own targets and r with reanalysed ones, and the r / (1 - r) positions
searched per position played are what that takes.  Among the files due, the one the Trainer
will use most goes first: the age of its targets times the share of the window still ahead of
it (oldest first would refresh files about to leave the window, which the Trainer then hardly
trains on).  Each file belongs to one Selfplayer (by a hash of its name, over the session's
Selfplayers), so two never search the same file at once; a restarted Selfplayer takes its
files on again.

Crash safety.  A file's new targets are written at once when its last position is searched
(atomically, in place of the ones before); a Selfplayer stopped or killed part way leaves the
targets it had, and the restarted one searches that file again.  Nothing is appended, so
nothing is counted twice.
"""

from __future__ import annotations

import logging
import time
import zlib
from bisect import bisect_right
from collections.abc import Callable
from itertools import accumulate
from pathlib import Path

import numpy as np

from gamegym.data.reanalysis import reanalysed_iteration, reanalysis_path, write_reanalysis
from gamegym.data.replay import window_size, window_start
from gamegym.data.samplefolder import SampleCounter, sample_files, sample_iterations
from gamegym.data.samples import SampleShape, read_sample_file

__all__ = ["Reanalyser"]

log = logging.getLogger("gamegym.runtime.reanalyse")
LEFT_ALONE = 1 << 62  # the targets' iteration of a file it cannot reanalyse: never older


class Reanalyser:
    """One Selfplayer's reanalysis (see the module): `earn` after each game played, `spend`
    after each sample file written.  `search` is the learner's (`Learner.reanalyser`): (x,
    legal, rng, should_stop) -> a Reanalysis, or None when stopped."""

    def __init__(
        self,
        samples_dir: Path,
        config,
        search: Callable,
        rng: np.random.Generator,
        index: int = 0,
        count: int = 1,
        shape: SampleShape | None = None,
    ):
        share = float(config.train.reanalyze)
        if not 0.0 < share < 1.0:
            raise ValueError(f"a Reanalyser needs train.reanalyze in (0, 1), got {share}")
        self.samples_dir = Path(samples_dir)
        self.share = share
        self.ratio = share / (1.0 - share)  # positions reanalysed per position played
        self.train = config.train  # the Trainer's window (gamegym.data.replay)
        self.counter = SampleCounter(self.samples_dir)
        self.search = search
        self.rng = rng
        self.index, self.count = index % max(1, count), max(1, count)
        self.shape = shape  # the game's SampleShape: a file that does not fit is left alone
        self.credit = 0.0  # positions it may reanalyse now
        self.positions = 0  # positions reanalysed so far
        self.files = 0  # files reanalysed so far
        self._targets: dict[str, int] = {}  # "<it>/<name>" -> the model iteration of its targets

    def earn(self, positions: int) -> None:
        """Count positions played: each earns `ratio` positions of reanalysis."""
        self.credit += positions * self.ratio

    def owns(self, name: str) -> bool:
        """Whether the sample file called `name` is this Selfplayer's to reanalyse."""
        return zlib.crc32(name.encode("utf-8")) % self.count == self.index

    def next_file(self, current: int) -> Path | None:
        """The file of the Trainer's window due for a refresh by model `current` that the
        Trainer will use most, or None when no file is due (see the module)."""
        counts = self.counter.samples_per_iteration()
        start = window_start(self.train, current)
        held = sum(n for it, n in counts.items() if it >= start)
        size = min(window_size(self.train, counts), held)
        due = (1.0 - self.share) * size  # the age, in samples played since, of targets due
        held_its = sorted(counts)
        # after[i]: the samples of iterations held_its[i:] (counted once, not per file)
        after = [*accumulate(counts[it] for it in reversed(held_its))][::-1] + [0]
        best: tuple | None = None
        newer = 0  # samples newer than the file looked at, as load_samples walks the window
        for it in reversed(sample_iterations(self.samples_dir)):
            if it < start or newer >= size:
                break
            for path in reversed(sample_files(self.samples_dir, it)):
                if newer >= size:
                    break
                known = self.counter.of_file(path)
                if known is None:
                    continue  # damaged: the Trainer quarantines it
                played_after = newer
                newer += known[0]
                if it >= current or not self.owns(path.name):
                    continue
                ahead = 1.0 - played_after / size  # its share of the window still ahead
                targets = self.targets_of(it, path)
                # its own targets: the samples played after it; reanalysed ones: the samples
                # of the iterations after the model that searched it again
                age = played_after if targets == it else after[bisect_right(held_its, targets)]
                if targets < current and age >= due:
                    key = (-age * ahead, -it, path.name)
                    if best is None or key < best[0]:
                        best = (key, path)
        return None if best is None else best[1]

    def targets_of(self, iteration: int, path: Path) -> int:
        """The model iteration the targets of the file `path` of `iteration` come from: the
        one that played it, or the one that reanalysed it last."""
        key = f"{iteration}/{path.name}"
        known = self._targets.get(key)
        if known is None:
            reanalysed = reanalysed_iteration(path)
            known = iteration if reanalysed is None else max(iteration, reanalysed)
            self._targets[key] = known
        return known

    def spend(self, current: int, should_stop: Callable[[], bool]) -> int:
        """Reanalyse files for model `current` while the credit lasts; returns the positions
        reanalysed."""
        done = 0
        while self.credit > 0 and not should_stop():
            path = self.next_file(current)
            if path is None:
                self.credit = 0.0  # nothing to refresh: not saved up for later
                break
            rows = self.reanalyse(path, should_stop)
            if rows is None:
                break
            self.credit -= max(1, rows)
            done += rows
        return done

    def reanalyse(self, path: Path, should_stop: Callable[[], bool]) -> int | None:
        """Search the positions of the file `path` again and publish their targets; returns
        its positions (0 for a file it cannot read: the Trainer quarantines those), None when
        stopped first."""
        iteration = int(path.parent.name)
        key = f"{iteration}/{path.name}"
        try:
            arrays = read_sample_file(path, self.shape)
        except ValueError as error:
            log.warning("not reanalysed: %s", error)
            self._targets[key] = LEFT_ALONE
            return 0
        started = time.perf_counter()
        before = self.targets_of(iteration, path)
        log.info("reanalysing %s (%d positions)", key, len(arrays["z"]))
        try:
            result = self.search(arrays["x"], arrays["legal"], self.rng, should_stop)
        except ValueError as error:  # a position it cannot search (no legal move)
            log.warning("not reanalysed: %s: %s", key, error)
            self._targets[key] = LEFT_ALONE
            return 0
        if result is None:
            return None
        if not path.exists():  # removed meanwhile: its targets would belong to nothing
            self._targets[key] = LEFT_ALONE
            return len(arrays["z"])
        write_reanalysis(path, result)
        self._targets[key] = max(iteration, result.iteration)
        self.positions += len(arrays["z"])
        self.files += 1
        log.info(
            "reanalysed %s: %d positions searched by model %d (targets of model %d before) in "
            "%.1f s; %s",
            key,
            len(arrays["z"]),
            result.iteration,
            before,
            time.perf_counter() - started,
            reanalysis_path(path).relative_to(self.samples_dir),
        )
        return len(arrays["z"])
