"""The Selfplayer: plays one game at a time with threaded MCTS, writes finished games as samples.

Never imports TensorFlow: leaf evaluations go to the Predictor through a pipe, one message per
batch of leaves, and answers are remembered per model iteration (`evaluation_cache`).
"""
from __future__ import annotations

import logging
import os
import time
from collections import defaultdict
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from gamegym.graph import GameGraph, load_game
from gamegym.mcts import Node, Search, SearchParams, choose_action, visit_policy
from gamegym.messages import EvalRequest, EvalResponse, Report
from gamegym.process import child_entry
from gamegym.samples import GameRecord, write_sample_file

log = logging.getLogger("gamegym.selfplay")


class PredictorTimeout(RuntimeError):
    """The Predictor did not answer in time (it died or hangs)."""


class PredictorClient:
    """The search's evaluator in a Selfplayer: numpify, cache, one request per batch."""

    def __init__(self, graph: GameGraph, conn: Connection, cache_size: int = 0,
                 timeout: float = 120.0):
        self.graph = graph
        self.conn = conn
        self.cache_size = cache_size
        self.timeout = timeout
        self.iteration = -1            # model iteration of the latest answer
        self._cache: dict = {}         # vertex -> (probs [A], value), for self.iteration
        self._next_id = 0
        self.requests = 0
        self.cache_hits = 0

    def __call__(self, vertices: Sequence) -> tuple[np.ndarray, np.ndarray]:
        return self.submit(vertices)()

    def submit(self, vertices: Sequence) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
        """Send the cache misses now; the returned function waits for and returns the answer
        (probs [B, A], values [B]).  Answers must be collected in the order submitted."""
        n = len(vertices)
        probs = np.empty((n, self.graph.action_space_size), np.float32)
        values = np.empty(n, np.float32)
        cache = self._cache
        misses = []
        for i, vertex in enumerate(vertices):
            hit = cache.get(vertex)
            if hit is None:
                misses.append(i)
            else:
                probs[i], values[i] = hit
        self.cache_hits += n - len(misses)
        if not misses:
            return lambda: (probs, values)
        request_id = self._send(np.stack([self.graph.numpify(vertices[i]) for i in misses]))

        def collect() -> tuple[np.ndarray, np.ndarray]:
            response = self._receive(request_id)
            if response.iteration != self.iteration:
                cache.clear()
                self.iteration = response.iteration
            for j, i in enumerate(misses):
                probs[i], values[i] = response.probs[j], response.values[j]
                if self.cache_size:
                    if len(cache) >= self.cache_size:
                        del cache[next(iter(cache))]
                    cache[vertices[i]] = (response.probs[j], float(response.values[j]))
            return probs, values

        return collect

    def _send(self, x: np.ndarray) -> int:
        self._next_id += 1
        self.requests += 1
        self.conn.send(EvalRequest(self._next_id, x))
        return self._next_id

    def _receive(self, request_id: int) -> EvalResponse:
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self.conn.poll(left):
                raise PredictorTimeout(f"no answer from the Predictor within {self.timeout:g} s")
            response = self.conn.recv()
            if isinstance(response, EvalResponse) and response.request_id == request_id:
                return response
            # an answer to an earlier request (before a restart): skip it


def play_game(graph: GameGraph, search: Search, cfg, rng: np.random.Generator,
              should_stop: Callable[[], bool] = lambda: False) -> GameRecord | None:
    """One self-play game; None when stopped before it finished."""
    roots = graph.roots
    node = Node(roots[int(rng.integers(len(roots)))] if len(roots) > 1 else roots[0])
    record = GameRecord()
    size = graph.action_space_size
    move = 0
    while True:
        if not graph.children_at(node.vertex):
            score = float(graph.score_at(node.vertex))
            record.result = score if move % 2 == 0 else -score
            return record
        if move >= cfg.max_moves:
            record.truncated = True
            return record
        if should_stop():
            return None
        search.run(node, rng)
        record.x.append(graph.numpify(node.vertex))
        record.pi.append(visit_policy(node, size))
        record.legal.append(graph.legal_mask(node.vertex))
        record.root_value.append(node.mean_value())
        temperature = cfg.temperature if move < cfg.temperature_drop_move else 0.0
        index = choose_action(node, temperature, rng)
        record.action.append(node.actions[index])
        child = node.children[index]
        node = child if child is not None else Node(node.child_vertices[index])
        move += 1


class SampleWriter:
    """Keeps finished games per model iteration and writes them as sample files."""

    def __init__(self, samples_dir: Path, name: str):
        self.samples_dir = Path(samples_dir)
        self.name = f"{name}-{os.getpid()}"
        self._pending: dict[int, list[GameRecord]] = defaultdict(list)
        self._sequence = 0
        self.samples_written = 0

    @property
    def pending_games(self) -> int:
        return sum(len(games) for games in self._pending.values())

    def add(self, record: GameRecord, iteration: int) -> None:
        self._pending[max(0, iteration)].append(record)

    def flush(self) -> int:
        written = 0
        for iteration, records in sorted(self._pending.items()):
            self._sequence += 1
            path = (self.samples_dir / str(iteration) /
                    f"{self.name}-{self._sequence:06d}-{int(time.time())}.npz")
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


def selfplay_loop(graph, evaluate, cfg, samples_dir: Path, name: str, rng, stop_event,
                  reports=None, max_games: int | None = None) -> int:
    """Play games until stopped; flush every `gamelog_dump_threshold` games and at the end."""
    search = Search(graph, evaluate, SearchParams.from_selfplay(cfg))
    writer = SampleWriter(samples_dir, name)
    counters = Counters(name, reports)
    games = 0
    try:
        while not stop_event.is_set() and (max_games is None or games < max_games):
            before = search.searches_done
            record = play_game(graph, search, cfg, rng, stop_event.is_set)
            if record is None:
                break
            writer.add(record, getattr(evaluate, "iteration", 0))
            games += 1
            counters.add(games=1, positions=len(record), searches=search.searches_done - before,
                         truncated=int(record.truncated))
            if writer.pending_games >= cfg.gamelog_dump_threshold:
                counters.add(samples=writer.flush())
    finally:
        counters.add(samples=writer.flush())
        counters.flush()
    return games


@child_entry("selfplayer")
def selfplayer_main(session_path, config, index, conn, reports, seed, *, stop_event):
    from gamegym.session import Session
    session = Session(session_path)
    graph = load_game(config.game, config.game_args)
    client = PredictorClient(graph, conn, config.selfplay.evaluation_cache)
    rng = np.random.default_rng(seed)
    games = selfplay_loop(graph, client, config.selfplay, session.samples_dir, f"selfplayer{index}",
                          rng, stop_event, reports)
    log.info("played %d games; %d requests, %d cache hits", games, client.requests,
             client.cache_hits)
