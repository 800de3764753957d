"""The Selfplayer: plays games through the learner's self-play driver, writes them as samples.

Never imports TensorFlow: network evaluations go to the Predictor through a pipe (a
`gamegym.runtime.pipes.PipeService`), one message per batch, or, when the Predictor hands out its
model on the CPU fast path, are answered in this process.  The driver is the learner's
(`Learner.selfplayer`); AlphaZero's (`gamegym.search.play.SearchSelfplay`) plays one game at a
time with MCTS whose concurrent searches send their leaves in one message.
"""

from __future__ import annotations

import itertools
import logging
import os
import secrets
import threading
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from gamegym import workmeter
from gamegym.data.fileio import atomic_write_bytes
from gamegym.data.samples import GameRecord, SampleShape, encode_sample_file
from gamegym.runtime.messages import Report
from gamegym.runtime.pipes import PipeService, PredictorGone
from gamegym.runtime.process import child_entry
from gamegym.runtime.reanalyse import Reanalyser

log = logging.getLogger("gamegym.runtime.selfplay")
# sample file numbers, one sequence per process: a writer made for each round of a single-process
# run must not reuse the name of the round before
_FILE_NUMBERS = itertools.count(1)
NAME_ATTEMPTS = 8  # names tried for one sample file before the write fails


class SampleWriter:
    """Keeps finished games per model iteration and writes them as sample files, one file per
    iteration at each flush.  `publish` is where a file goes: here the session folder; a Ray
    Selfplayer hands the file's bytes to the gym instead (`gamegym.runtime.ray.backend`)."""

    def __init__(self, samples_dir: Path | None, name: str):
        self.samples_dir = Path(samples_dir) if samples_dir is not None else None
        self.role = name  # e.g. selfplayer3: whose games these are
        # file names: <name>-<sequence>-<unix time>-<random token>.npz; the token, not the
        # clock or the pid (reused after a restart, stepped back by a clock change), makes a
        # name unique, and a taken name is never overwritten (publish)
        self.name = f"{name}-{os.getpid()}"
        self._pending: dict[int, list[GameRecord]] = defaultdict(list)
        self.samples_written = 0

    @property
    def pending_games(self) -> int:
        return sum(len(games) for games in self._pending.values())

    def add(self, record: GameRecord, iteration: int) -> None:
        self._pending[max(0, iteration)].append(record)

    def flush(self) -> int:
        """Publish the pending games; returns the number of samples written."""
        written = 0
        for iteration, records in sorted(self._pending.items()):
            data, samples = encode_sample_file(records)
            if samples:
                written += self.publish(iteration, data, samples, len(records))
        self._pending.clear()
        self.samples_written += written
        return written

    def publish(self, iteration: int, data: bytes, samples: int, games: int) -> int:
        """Write one encoded sample file of `iteration` atomically; returns its samples."""
        if self.samples_dir is None:
            raise RuntimeError(f"{self.role} has no samples folder to write to")
        folder = self.samples_dir / str(iteration)
        for _ in range(NAME_ATTEMPTS):
            stem = f"{self.name}-{next(_FILE_NUMBERS):06d}-{int(time.time())}"
            path = folder / f"{stem}-{secrets.token_hex(4)}.npz"
            try:
                atomic_write_bytes(path, data, replace=False)
            except FileExistsError:  # a published file has that name: it stays, try another
                log.warning("sample file %s exists already; writing under another name", path)
                continue
            return samples
        raise FileExistsError(f"no free sample file name in {folder} after {NAME_ATTEMPTS} tries")


class Counters:
    """Throughput counters reported to the gym every `interval` seconds by a thread of their
    own, so that a game longer than the interval still reports its searches as they happen."""

    def __init__(self, role: str, reports, progress=None, interval: float = 2.0):
        self.role, self.reports, self.interval = role, reports, interval
        self.progress = progress  # () -> figures done since its last call, or None
        self.values: dict = defaultdict(float)
        self._lock = threading.Lock()
        self._last = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, **figures) -> None:
        with self._lock:
            for key, value in figures.items():
                self.values[key] += value

    def start(self) -> None:
        if self.reports is not None:
            self._thread = threading.Thread(target=self._run, name="counters", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.flush()

    def stop(self) -> None:
        """Stop the thread and send what is left."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.flush()

    def flush(self) -> None:
        if self.progress is not None:
            self.add(**self.progress())
        with self._lock:
            now = time.monotonic()
            if self.reports is not None:
                self.reports.put(
                    Report(self.role, os.getpid(), dict(self.values, seconds=now - self._last))
                )
            self.values.clear()
            self._last = now


def lower_priority(nice: int) -> int:
    """Lower this process's CPU priority by `nice` (`selfplay.nice`) and return the niceness
    it runs at; where the platform has no `os.nice` (Windows), nothing (0)."""
    if not hasattr(os, "nice"):
        return 0
    return os.nice(nice) if nice > 0 else os.nice(0)


def selfplay_loop(
    driver,
    cfg,
    writer: SampleWriter,
    stop_event,
    reports=None,
    max_games: int | None = None,
    service=None,
    stop_when_idle: bool = False,
    reanalyser=None,
) -> int:
    """Take finished games from a self-play driver until stopped; flush every
    `gamelog_dump_threshold` games and at the end.  With the driver's model `service`, the
    network calls it answered in this process are counted too.  A driver that waits for a newer
    model yields None meanwhile: the games held are flushed then (the Trainer needs them to
    make that model), and with `stop_when_idle` (one process doing every role) the loop
    returns.  With a `reanalyser` (train.reanalyze, gamegym.runtime.reanalyse) each game
    played earns reanalysis of stored positions, done after each flush."""
    counters = Counters(writer.role, reports, _progress(driver, service))
    counters.start()
    games = 0
    try:
        for finished in driver.play(stop_event.is_set):
            workmeter.tick()  # a game played, or a turn of a wait for a new model
            if finished is None:
                if writer.pending_games:
                    counters.add(samples=writer.flush())
                if stop_when_idle:
                    break
                counters.add()
                continue
            record, iteration = finished
            writer.add(record, iteration)
            games += 1
            counters.add(games=1, positions=len(record), truncated=int(record.truncated))
            if reanalyser is not None:
                reanalyser.earn(len(record))
            if writer.pending_games >= cfg.gamelog_dump_threshold:
                counters.add(samples=writer.flush())
                if reanalyser is not None:  # the games are on disk: the Trainer has them
                    counters.add(reanalysed=reanalyser.spend(iteration, stop_event.is_set))
            if max_games is not None and games >= max_games:
                break
    finally:
        counters.add(samples=writer.flush())
        counters.stop()
    return games


def _progress(driver, service):
    """() -> the searches (and network calls answered in this process) since the last call;
    read from the counters' thread while the driver plays (plain int reads)."""
    last = [0, 0, 0]
    last[:] = _totals(driver, service)

    def since() -> dict:
        now = _totals(driver, service)
        delta = [a - b for a, b in zip(now, last)]
        last[:] = now
        return {"searches": delta[0], "local_batches": delta[1], "local_positions": delta[2]}

    return since


def _totals(driver, service) -> list[int]:
    return [
        driver.searches_done,
        getattr(service, "local_batches", 0),
        getattr(service, "local_positions", 0),
    ]


@child_entry("selfplayer")
def selfplayer_main(session_path, config, index, conn, seed, *, stop_event, reports=None):
    from gamegym.data.session import Session
    from gamegym.learners import get_learner

    session = Session(session_path)
    if config.selfplay.nice:
        log.info("running at nice %d (selfplay.nice)", lower_priority(config.selfplay.nice))
    graph = config.game_ref.build()
    service = PipeService(conn)
    learner = get_learner(config.train.learner)
    driver = learner.selfplayer(graph, service, config, np.random.default_rng(seed))
    workmeter.count_from(lambda: driver.searches_done)  # each search is progress
    search = getattr(driver, "search", None)
    if search is not None:
        log.info("searching on the %s core", getattr(search, "core", "python"))
    writer = SampleWriter(session.samples_dir, f"selfplayer{index}")
    reanalyser = make_reanalyser(
        session, config, graph, learner, service, index, np.random.default_rng([seed, 1])
    )
    try:
        games = selfplay_loop(
            driver,
            config.selfplay,
            writer,
            stop_event,
            reports,
            service=service,
            reanalyser=reanalyser,
        )
    except PredictorGone:
        # the Predictor died or the gym killed it as hung: the games finished are written
        # (selfplay_loop flushed them), and the gym starts this slot again with a new Predictor
        log.warning(
            "the Predictor is gone; the games finished are written (%d samples in all); exiting",
            writer.samples_written,
        )
        return
    log.info(
        "played %d games; %d requests to the Predictor, %d batches evaluated here%s",
        games,
        service.requests,
        service.local_batches,
        f"; reanalysed {reanalyser.positions} positions in {reanalyser.files} files"
        if reanalyser is not None
        else "",
    )


def make_reanalyser(session, config, graph, learner, service, index: int, rng):
    """Selfplayer `index`'s Reanalyser under `train.reanalyze` (None at 0): the learner's
    search through the Selfplayer's model `service`."""
    if not config.train.reanalyze:
        return None
    return Reanalyser(
        session.samples_dir,
        config,
        learner.reanalyser(graph, service, config),
        rng,
        index,
        config.selfplayers(),
        SampleShape.of(graph, learner.sample_columns(config)),
    )
