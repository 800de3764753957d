"""The Selfplayer: plays games through the learner's self-play driver, writes them as samples.

Never imports TensorFlow: network evaluations go to the Predictor through a pipe (a
`gamegym.inference.PipeService`), one message per batch.  The driver is the learner's
(`Learner.selfplayer`); AlphaZero's (`gamegym.searchplay.SearchSelfplay`) plays one game at a
time with MCTS whose concurrent searches send their leaves in one message.
"""
from __future__ import annotations

import logging
import os
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from gamegym.graph import load_game
from gamegym.inference import PipeService
from gamegym.messages import Report
from gamegym.process import child_entry
from gamegym.fileio import atomic_write_bytes
from gamegym.samples import GameRecord, encode_sample_file

log = logging.getLogger("gamegym.selfplay")


class SampleWriter:
    """Keeps finished games per model iteration and writes them as sample files, one file per
    iteration at each flush.  `publish` is where a file goes: here the session folder; a Ray
    Selfplayer hands the file's bytes to the gym instead (`gamegym.raybackend`)."""

    def __init__(self, samples_dir: Path | None, name: str):
        self.samples_dir = Path(samples_dir) if samples_dir is not None else None
        self.role = name                       # e.g. selfplayer3: whose games these are
        self.name = f"{name}-{os.getpid()}"    # file names: <name>-<sequence>-<unix time>.npz
        self._pending: dict[int, list[GameRecord]] = defaultdict(list)
        self._sequence = 0
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
        self._sequence += 1
        path = (self.samples_dir / str(iteration) /
                f"{self.name}-{self._sequence:06d}-{int(time.time())}.npz")
        atomic_write_bytes(path, data)
        return samples


class Counters:
    """Throughput counters reported to the gym every few seconds."""

    def __init__(self, role: str, reports, interval: float = 2.0):
        self.role, self.reports, self.interval = role, reports, interval
        self.values: dict = defaultdict(float)
        self._last = time.monotonic()

    def add(self, **figures) -> None:
        for key, value in figures.items():
            self.values[key] += value
        now = time.monotonic()
        if self.reports is not None and now - self._last >= self.interval:
            self.flush(now)

    def flush(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        if self.reports is not None:
            figures = dict(self.values, seconds=now - self._last)
            self.reports.put(Report(self.role, os.getpid(), figures))
        self.values.clear()
        self._last = now


def selfplay_loop(driver, cfg, writer: SampleWriter, stop_event, reports=None,
                  max_games: int | None = None) -> int:
    """Take finished games from a self-play driver until stopped; flush every
    `gamelog_dump_threshold` games and at the end."""
    counters = Counters(writer.role, reports)
    games = 0
    before = driver.searches_done
    try:
        for record, iteration in driver.play(stop_event.is_set):
            writer.add(record, iteration)
            games += 1
            counters.add(games=1, positions=len(record), searches=driver.searches_done - before,
                         truncated=int(record.truncated))
            before = driver.searches_done
            if writer.pending_games >= cfg.gamelog_dump_threshold:
                counters.add(samples=writer.flush())
            if max_games is not None and games >= max_games:
                break
    finally:
        counters.add(samples=writer.flush())
        counters.flush()
    return games


@child_entry("selfplayer")
def selfplayer_main(session_path, config, index, conn, reports, seed, *, stop_event):
    from gamegym.session import Session
    from gamegym.learners import get_learner
    session = Session(session_path)
    graph = load_game(config.game, config.game_args)
    service = PipeService(conn)
    driver = get_learner(config.train.learner).selfplayer(graph, service, config,
                                                          np.random.default_rng(seed))
    writer = SampleWriter(session.samples_dir, f"selfplayer{index}")
    games = selfplay_loop(driver, config.selfplay, writer, stop_event, reports)
    log.info("played %d games; %d requests to the Predictor", games, service.requests)
