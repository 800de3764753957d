"""What the head of a Ray run reports of its own work, for the status line and the throughput
bench: the sample files it wrote and the time each took, the models it put in the object store
and the time each put took, the take calls answered, each node's searches per second over the
last `RATE_WINDOW_S`, and the object store's use (asked at most every `STORE_STATS_S`).
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable

from gamegym.runtime.ray.cluster import object_store_use

__all__ = ["RATE_WINDOW_S", "STORE_STATS_S", "HeadFigures"]

STORE_STATS_S = 30.0  # how often the object store's use is asked for
RATE_WINDOW_S = 20.0  # searches/s per node over this window


class HeadFigures:
    """The head's counts of one run (see the module)."""

    def __init__(self) -> None:
        self.files = 0  # sample files written
        self.write_s = 0.0  # seconds spent writing them
        self.broadcasts = 0  # models put in the object store
        self.broadcast_s = 0.0  # seconds spent putting them
        self.takes = 0  # take calls answered
        self._searches: dict[str, deque] = defaultdict(deque)  # node label -> (time, searches)
        self._store: tuple[float, dict | None] = (-STORE_STATS_S, None)  # (when asked, figures)

    def searched(self, label: str, now: float, searches: int) -> None:
        """A report of `searches` from a Selfplayer on the node `label` at monotonic `now`."""
        self._searches[label].append((now, searches))

    def rates(self, labels: Iterable[str], now: float, started: float) -> dict[str, float]:
        """Searches per second of each node of `labels` over the last RATE_WINDOW_S (less
        when the run `started` more recently)."""
        labels = set(labels)
        rates = {}
        for label, events in self._searches.items():
            while events and now - events[0][0] > RATE_WINDOW_S:
                events.popleft()
            if label in labels:
                span = min(RATE_WINDOW_S, now - started) or 1.0
                rates[label] = round(sum(n for _, n in events) / span, 1)
        return rates

    def store_use(self, now: float) -> dict | None:
        """Object store use across the cluster, asked at most every STORE_STATS_S (also when
        the last asking failed: it may have cost its timeout)."""
        asked, figures = self._store
        if now - asked >= STORE_STATS_S:
            figures = object_store_use()
            self._store = (now, figures)
        return figures

    def figures(self, now: float) -> dict:
        """The head's entries of the backend's status (`head_*`, `object_store`)."""
        return {
            "head_write_ms_per_file": round(1000 * self.write_s / self.files, 2)
            if self.files
            else None,
            "head_broadcast_ms": round(1000 * self.broadcast_s / max(1, self.broadcasts), 2),
            "head_files": self.files,
            "head_takes": self.takes,
            "object_store": self.store_use(now),
        }
