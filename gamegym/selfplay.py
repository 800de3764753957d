"""The Selfplayer: plays games through the learner's self-play driver, writes them as samples.

Never imports TensorFlow: network evaluations go to the Predictor through a pipe (a
`gamegym.inference.PipeService`), one message per batch.  The driver is the learner's
(`Learner.selfplayer`); AlphaZero's (`gamegym.searchplay.SearchSelfplay`) plays one game at a
time with MCTS whose concurrent searches send their leaves in one message.
"""
from __future__ import annotations

import itertools
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
from gamegym.samples import GameRecord, write_sample_file

log = logging.getLogger("gamegym.selfplay")
# sample file numbers, one sequence per process: a writer made for each round of a single-process
# run must not reuse the name of the round before (written within the same second, it would
# replace that file)
_FILE_NUMBERS = itertools.count(1)


class SampleWriter:
    """Keeps finished games per model iteration and writes them as sample files."""

    def __init__(self, samples_dir: Path, name: str):
        self.samples_dir = Path(samples_dir)
        self.name = f"{name}-{os.getpid()}"
        self._pending: dict[int, list[GameRecord]] = defaultdict(list)
        self.samples_written = 0

    @property
    def pending_games(self) -> int:
        return sum(len(games) for games in self._pending.values())

    def add(self, record: GameRecord, iteration: int) -> None:
        self._pending[max(0, iteration)].append(record)

    def flush(self) -> int:
        written = 0
        for iteration, records in sorted(self._pending.items()):
            path = (self.samples_dir / str(iteration) /
                    f"{self.name}-{next(_FILE_NUMBERS):06d}-{int(time.time())}.npz")
            written += write_sample_file(path, records)
        self._pending.clear()
        self.samples_written += written
        return written


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


def selfplay_loop(driver, cfg, samples_dir: Path, name: str, stop_event, reports=None,
                  max_games: int | None = None, stop_when_idle: bool = False) -> int:
    """Take finished games from a self-play driver until stopped; flush every
    `gamelog_dump_threshold` games and at the end.  A driver that waits for a newer model
    yields None meanwhile: the games held are flushed then (the Trainer needs them to make that
    model), and with `stop_when_idle` (one process doing every role) the loop returns."""
    writer = SampleWriter(samples_dir, name)
    counters = Counters(name, reports)
    games = 0
    before = driver.searches_done
    try:
        for finished in driver.play(stop_event.is_set):
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
    games = selfplay_loop(driver, config.selfplay, session.samples_dir, f"selfplayer{index}",
                          stop_event, reports)
    log.info("played %d games; %d requests to the Predictor", games, service.requests)
