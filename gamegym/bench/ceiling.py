"""The search ceiling of the throughput bench: whole self-play games of a learner's own search
with a uniform stub evaluator (nothing computed at its leaves), in this process, on one core:
searches/s, and searches per CPU-second.  The end-to-end rate over it is the efficiency.
"""

from __future__ import annotations

import time

import numpy as np

from gamegym.bench.capabilities import stub_search
from gamegym.data.samples import GameRecord
from gamegym.search.mcts import SearchParams
from gamegym.search.play import selfplay_game

__all__ = ["search_ceiling"]


def search_ceiling(graph, cfg, seconds: float, seed: int = 0, learner: str = "alphazero") -> dict:
    """Searches/s of whole self-play games with a uniform evaluator (the learner's search with
    nothing to compute at its leaves), in this process.  One game is played first and not
    counted: the compiled core compiles or loads its kernels on its first search (about 2
    CPU-seconds the first time, which would lower the ceiling and raise the efficiency)."""
    search = stub_search(learner, graph, SearchParams.from_selfplay(cfg))
    rng = np.random.default_rng(seed)
    selfplay_game(graph, search, cfg, rng, GameRecord())
    search.searches_done = 0
    games = positions = 0
    start, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        record = selfplay_game(graph, search, cfg, rng, GameRecord())
        games += 1
        positions += len(record) if record is not None else 0  # None: stopped, never here
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {
        "core": getattr(search, "core", "python"),
        "searches_per_s": search.searches_done / elapsed,
        "searches_per_cpu_s": search.searches_done / max(cpu, 1e-9),
        "positions_per_s": positions / elapsed,
        "games_per_s": games / elapsed,
    }
