"""Watching a running gym: throughput figures, psutil resources, the status line, plots."""

from __future__ import annotations

import logging
import time
from collections import defaultdict, deque
from pathlib import Path

import numpy as np
import psutil

from gamegym.data.figures import new_figure, save_figure
from gamegym.data.fileio import append_jsonl

log = logging.getLogger("gamegym.runtime.monitor")


def role_of(name: str) -> str:
    """'selfplayer3' -> 'selfplayer'."""
    return name.rstrip("0123456789")


def mean_batch(sums: dict) -> float:
    """Positions per network call, from summed reports ("role.figure" -> total): the
    Predictor's batches and those the Selfplayers evaluated themselves."""
    batches = sums.get("predictor.batches", 0.0) + sums.get("selfplayer.local_batches", 0.0)
    positions = sums.get("predictor.positions", 0.0) + sums.get("selfplayer.local_positions", 0.0)
    return positions / batches if batches else 0.0


class Monitor:
    """Aggregates the processes' Reports into rates over a sliding window of seconds."""

    def __init__(self, window: float = 20.0):
        self.window = window
        self.events: deque = deque()  # (time, role, figures)
        self.totals: dict = defaultdict(float)
        self.iteration = -1
        self.last_losses: dict = {}
        self.replay: dict = {}  # the replay buffer's figures of the last iteration
        self.rating: tuple = (None, None)  # (iteration, Elo) of the latest evaluation
        self.processes: dict[str, psutil.Process] = {}
        self.started = time.monotonic()
        self.backend = (
            None  # where self-play runs (gamegym.runtime.backends); its status() is shown
        )
        self.playing: set[str] = set()  # Selfplayers (by name) that have reported searches
        self.earlier_seconds = 0.0  # how long the session ran before this run (its resumes)

    def add(self, report) -> None:
        now = time.monotonic()
        figures = dict(report.figures)
        if report.role == "evaluator":
            self.rating = (figures.get("rated_iteration"), figures.get("rating"))
            return
        if report.role == "trainer":
            self.iteration = int(figures.get("iteration", self.iteration))
            self.last_losses = figures.get("losses", {})
            self.replay = figures.get("replay") or {}
            return
        if figures.get("searches"):
            self.playing.add(report.role)
        if report.role == "predictor" and "iteration" in figures:
            self.iteration = max(self.iteration, int(figures["iteration"]))
        self.events.append((now, role_of(report.role), figures))
        for key, value in figures.items():
            if isinstance(value, (int, float)) and key not in ("seconds", "iteration"):
                self.totals[f"{role_of(report.role)}.{key}"] += value
        while self.events and now - self.events[0][0] > self.window:
            self.events.popleft()

    def rates(self) -> dict:
        """Per-second rates over the window: searches, positions, games, samples, mean batch."""
        sums: dict = defaultdict(float)
        for _, role, figures in self.events:
            for key, value in figures.items():
                if isinstance(value, (int, float)):
                    sums[f"{role}.{key}"] += value
        span = min(self.window, max(1e-9, time.monotonic() - self.started))
        return {
            "searches_per_s": sums.get("selfplayer.searches", 0.0) / span,
            "positions_per_s": sums.get("selfplayer.positions", 0.0) / span,
            "games_per_s": sums.get("selfplayer.games", 0.0) / span,
            "samples_per_s": sums.get("selfplayer.samples", 0.0) / span,
            "mean_batch": mean_batch(sums),
        }

    def watch(self, name: str, pid: int) -> None:
        try:
            process = psutil.Process(pid)
            process.cpu_percent(None)  # prime the counter
            self.processes[name] = process
        except psutil.Error:
            pass

    def resources(self) -> dict:
        """CPU % and resident MiB per role (summed over its processes), the gym included."""
        usage: dict = defaultdict(lambda: {"cpu_percent": 0.0, "rss_mib": 0.0})
        for name, process in list(self.processes.items()):
            try:
                with process.oneshot():
                    cpu = process.cpu_percent(None)
                    rss = process.memory_info().rss / 2**20
            except psutil.Error:
                self.processes.pop(name, None)
                continue
            role = role_of(name)
            usage[role]["cpu_percent"] += cpu
            usage[role]["rss_mib"] += rss
        return {
            role: {k: round(v, 1) for k, v in figures.items()} for role, figures in usage.items()
        }

    def memory(self) -> dict:
        """Resident MiB per role now (summed over its processes), the gym included; unlike
        `resources` it leaves the CPU counters of the status line alone."""
        usage: dict = defaultdict(float)
        for name, process in list(self.processes.items()):
            try:
                usage[role_of(name)] += process.memory_info().rss / 2**20
            except psutil.Error:
                continue
        return {role: round(rss, 1) for role, rss in usage.items()}

    def status(self) -> dict:
        run_seconds = self.earlier_seconds + time.monotonic() - self.started
        return {
            "time": time.time(),
            "run_seconds": round(run_seconds, 1),
            "iteration": self.iteration,
            "games": int(self.totals.get("selfplayer.games", 0)),
            "samples": int(self.totals.get("selfplayer.samples", 0)),
            "last_losses": self.last_losses,
            "rating": self.rating[1],
            **({"replay": self.replay} if self.replay else {}),
            "rated_iteration": self.rating[0],
            **{k: round(v, 2) for k, v in self.rates().items()},
            "resources": self.resources(),
            **({"backend": self.backend.status()} if self.backend is not None else {}),
        }

    def status_line(self, status: dict | None = None) -> str:
        s = status or self.status()
        loss = s["last_losses"].get("loss")
        rating = (
            ""
            if s.get("rating") is None
            else f"Elo {s['rating']:.0f} (it {s['rated_iteration']}) | "
        )
        res = " ".join(
            f"{role} {r['cpu_percent']:.0f}%/{r['rss_mib']:.0f}M"
            for role, r in sorted(s["resources"].items())
        )
        return (
            f"it {s['iteration']} | games {s['games']} | samples/s {s['samples_per_s']:.1f} | "
            f"searches/s {s['searches_per_s']:.0f} | batch {s['mean_batch']:.1f} | "
            f"loss {'-' if loss is None else f'{loss:.3f}'} | {rating}"
            f"{backend_summary(s.get('backend'))}{_replay_part(s.get('replay'))}{res}"
        )

    def record(self, monitoring_dir: Path, status: dict) -> None:
        append_jsonl(monitoring_dir / "status.jsonl", status)


def replay_summary(figures: dict | None) -> str:
    """The replay buffer in a few words: mean replay count, share of new samples in the last
    iteration's minibatches, priority spread (10th-90th percentile); empty without figures."""
    if not figures:
        return ""
    new = figures.get("new_share")
    return (
        f"x{figures['mean_replays']:.1f} new {'-' if new is None else f'{new:.0%}'} "
        f"p {figures['priority_p10']:.3g}..{figures['priority_p90']:.3g}"
    )


def _replay_part(figures: dict | None) -> str:
    summary = replay_summary(figures)
    return f"replay {summary} | " if summary else ""


def plot_replay(session) -> Path | None:
    """plots/replay.png: the replay buffer per iteration (from train/*.json): the mean replay
    count, the share of each iteration's minibatches that was new, the priority spread."""
    reports = [r for r in session.train_reports() if r.get("replay_figures")]
    if not reports:
        return None
    figure, axes = new_figure((6, 7), rows=3)
    its = [r["iteration"] for r in reports]
    figures = [r["replay_figures"] for r in reports]
    axes[0].plot(its, [f.get("mean_replays", np.nan) for f in figures], marker=".")
    axes[0].set_ylabel("mean replay count")
    axes[1].plot(its, [f.get("new_share", np.nan) for f in figures], marker=".")
    axes[1].set_ylabel("new share of draws")
    axes[1].set_ylim(0, 1.05)
    for key, style in (("priority_p90", ":"), ("priority_p50", "-"), ("priority_p10", ":")):
        axes[2].plot(its, [max(f.get(key, np.nan), 1e-12) for f in figures], style, label=key[9:])
    axes[2].set_yscale("log")
    axes[2].set_ylabel("priority")
    axes[2].set_xlabel("iteration")
    axes[2].legend(fontsize="small")
    for axis in axes:
        axis.grid(alpha=0.3)
    axes[0].set_title(f"replay buffer ({reports[-1].get('replay', '')})")
    figure.tight_layout()
    return save_figure(figure, session.plots_dir / "replay.png")


def backend_summary(backend: dict | None) -> str:
    """The status line's account of where self-play runs: 'selfplayers 2/2 | ' on this machine;
    on Ray also the nodes and each node's searches/s."""
    if not backend:
        return ""
    alive = f"selfplayers {backend['selfplayers_alive']}/{backend['selfplayers']}"
    if "searches_per_s_by_node" not in backend:  # one machine
        return f"{alive} | "
    nodes = " ".join(
        f"{node} {rate:.0f}"
        for node, rate in sorted(backend.get("searches_per_s_by_node", {}).items())
    )
    return (
        f"{backend['name']} {backend['nodes']} node{'s' if backend['nodes'] != 1 else ''}, {alive}"
        f"{', searches/s by node ' + nodes if nodes else ''} | "
    )


def plot_training(session) -> Path | None:
    """plots/loss.png: the losses of every iteration (last epoch), from train/*.json."""
    reports = session.train_reports()
    if not reports:
        return None
    keys = sorted({k for r in reports for k in r.get("losses", {})})
    figure, axis = new_figure()
    for key in keys:
        points = [(r["iteration"], r["losses"][key]) for r in reports if key in r.get("losses", {})]
        axis.plot([p[0] for p in points], [p[1] for p in points], marker=".", label=key)
    axis.set_xlabel("iteration")
    axis.set_ylabel("loss")
    axis.set_title("training loss per iteration")
    axis.legend(fontsize="small")
    axis.grid(alpha=0.3)
    return save_figure(figure, session.plots_dir / "loss.png")
