"""The end-to-end part of the throughput bench: a real Predictor and Selfplayers (no Trainer)
for N seconds on a backend (processes, or Ray actors on a Ray started on this machine), their
rates from their own reports, the CPU and resident memory of every role, and the network path
the session's Predictor took (from its log).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import psutil

from gamegym.config import GymConfig
from gamegym.console import ProgressBars
from gamegym.runtime.monitor import mean_batch

__all__ = ["end_to_end", "on_backend", "ray_figures", "ray_lines", "session_network_path"]


def end_to_end(
    session_path: Path, config: GymConfig, seconds: float, bars: ProgressBars | None = None
) -> dict:
    """A real Predictor and Selfplayers (no Trainer) for `seconds`, on the config's backend;
    rates from their reports; the start-up and the measuring drawn on `bars`."""
    from gamegym.runtime.gym import GameGym
    from gamegym.runtime.supervisor import Supervisor

    gym = GameGym(session_path, config=config)
    gym.take_session()
    supervisor = Supervisor(gym, max_seconds=None, max_iterations=None, roles=())
    bars = bars or ProgressBars(enabled=False)
    backend_name = config.selfplay.backend
    bar = bars.add(f"starting self-play ({backend_name})", None)
    try:
        supervisor.start()
        _wait_until_playing(supervisor, timeout=120)
        # measure from here: discard warm-up reports, prime CPU counters
        monitor = gym.monitor
        monitor.events.clear()
        processes = {"gym": psutil.Process()}  # the head: this process
        for name, pid in supervisor.backend.pids().items():
            try:
                processes[name] = psutil.Process(pid)
            except psutil.Error:
                pass
        cpu_start = {n: _cpu_seconds(p) for n, p in processes.items()}
        before = supervisor.backend.status()
        start = time.monotonic()
        monitor.started = start
        bars.update(bar, description=f"self-play end to end ({backend_name})", total=seconds)
        while time.monotonic() - start < seconds:
            supervisor._drain(timeout=0.2)
            supervisor._poll_backend()
            bars.update(bar, completed=min(seconds, time.monotonic() - start))
        elapsed = time.monotonic() - start
        sums: dict = {}
        for _, role, figures in monitor.events:
            for key, value in figures.items():
                if isinstance(value, (int, float)):
                    sums[f"{role}.{key}"] = sums.get(f"{role}.{key}", 0.0) + value
        cpu: dict[str, float] = {}
        rss: dict[str, list[float]] = {}
        for name, process in processes.items():
            role = name.rstrip("0123456789")
            used = _cpu_seconds(process) - cpu_start[name]
            cpu[role] = cpu.get(role, 0.0) + 100.0 * used / elapsed
            rss.setdefault(role, []).append(_rss_mb(process))
        backend = supervisor.backend.status()
        selfplayers = backend["selfplayers"]
    finally:
        bars.remove(bar)
        supervisor.shutdown()
        gym.session.release_lock()
    span = sum(f.get("seconds", 0.0) for _, r, f in monitor.events if r == "selfplayer")
    span = span / max(1, selfplayers) or elapsed
    searches = sums.get("selfplayer.searches", 0.0) / span
    cores_used = sum(cpu.values()) / 100.0  # every role's, the head's and Ray's included
    return {
        "searches_per_s": searches,
        "searches_per_cpu_s": searches / max(cores_used, 1e-9),
        "positions_per_s": sums.get("selfplayer.positions", 0.0) / span,
        "games_per_s": sums.get("selfplayer.games", 0.0) / span,
        "mean_batch": mean_batch(sums),
        "predictor_busy": sums.get("predictor.busy_s", 0.0) / elapsed,
        "cpu_by_role": {k: round(v, 1) for k, v in cpu.items()},
        "rss_mb_by_role": {k: round(sum(v) / len(v), 1) for k, v in rss.items()},
        "selfplayers": selfplayers,
        "head": head_figures(before, backend, elapsed, cpu.get("gym", 0.0)),
    }


def head_figures(before: dict, after: dict, elapsed: float, cpu_percent: float) -> dict:
    """On Ray, what the head spent: its CPU per take call and per sample file over the measured
    window, the time to write a file and to put a model, the object store's use."""
    if "head_takes" not in after:
        return {}
    takes = (after["head_takes"] - before["head_takes"]) / elapsed
    files = (after["head_files"] - before["head_files"]) / elapsed
    return {
        "takes_per_s": round(takes, 2),
        "files_per_s": round(files, 2),
        "cpu_ms_per_take": round(10 * cpu_percent / takes, 2) if takes else None,
        "write_ms_per_file": after["head_write_ms_per_file"],
        "broadcast_ms": after["head_broadcast_ms"],
        "object_store": after["object_store"],
    }


def _cpu_seconds(process: psutil.Process) -> float:
    try:
        times = process.cpu_times()
        return times.user + times.system
    except psutil.Error:
        return 0.0


def _rss_mb(process: psutil.Process) -> float:
    """Resident memory of a process in MiB (0 when it is gone)."""
    try:
        return process.memory_info().rss / 2**20
    except psutil.Error:
        return 0.0


def _wait_until_playing(supervisor, timeout: float) -> None:
    """Warm-up: until every Selfplayer has reported searches (TensorFlow loaded, traced)."""
    deadline = time.monotonic() + timeout
    monitor = supervisor.gym.monitor
    while time.monotonic() < deadline:
        supervisor._drain(timeout=0.5)
        supervisor._poll_backend()
        if supervisor.failure:
            raise RuntimeError(supervisor.failure)
        want = supervisor.backend.status()["selfplayers"]
        if want and len(monitor.playing) >= want:
            return
    raise RuntimeError(
        "the Selfplayers did not start playing within "
        f"{timeout:.0f} s; see the logs in the bench session"
    )


def on_backend(config: GymConfig, backend: str) -> GymConfig:
    """The bench's config on a backend; on Ray the machine's cores are shared out so that every
    Selfplayer fits beside the Predictor, as the processes share them."""
    if backend == "processes":
        return config
    cores = psutil.cpu_count(logical=True) or 1
    share = (cores - config.selfplay.ray_predictor_cpus) / config.selfplay.selfplayprocesses
    share = max(0.01, int(share * 1000) / 1000)
    return config.updated(
        {"selfplay": {"backend": "ray", "ray_address": "local", "ray_selfplayer_cpus": share}}
    )


def ray_figures(pairs: list[dict], ray_run: dict) -> dict:
    """The Ray run beside the processes one: its figures and the ratios of the pairs."""
    ratios = [
        pair["ray"]["searches_per_s"] / max(1e-9, pair["processes"]["searches_per_s"])
        for pair in pairs
    ]
    per_cpu = [
        pair["ray"]["searches_per_cpu_s"] / max(1e-9, pair["processes"]["searches_per_cpu_s"])
        for pair in pairs
    ]
    return {
        "ray": {
            "searches_per_s": round(ray_run["searches_per_s"], 1),
            "positions_per_s": round(ray_run["positions_per_s"], 2),
            "mean_batch": round(ray_run["mean_batch"], 2),
            "predictor_busy_fraction": round(ray_run["predictor_busy"], 3),
            "games_per_s": round(ray_run["games_per_s"], 3),
            "searches_per_cpu_s": round(ray_run["searches_per_cpu_s"], 1),
            "cpu_by_role": ray_run["cpu_by_role"],
            "rss_mb_by_role": ray_run["rss_mb_by_role"],
            "selfplayers": ray_run["selfplayers"],
            "head": ray_run["head"],
        },
        "ray_vs_processes": round(float(np.median(ratios)), 3),
        "ray_vs_processes_pairs": [round(r, 3) for r in ratios],
        "ray_vs_processes_per_cpu": round(float(np.median(per_cpu)), 3),
    }


def session_network_path(config: GymConfig, session) -> str:
    """The network path the session's Predictor took, from its log ("onnx", "onnx int8",
    "numpy", "tensorflow"), and where the Selfplayers evaluated."""
    from gamegym.runtime.process import log_path

    try:
        text = log_path(session.logs_dir, "predictor").read_text(encoding="utf-8")
    except OSError:
        return "unknown"
    found = re.findall(r"loaded model iteration \d+ from .* \((\w+(?: \w+)?)\)", text)
    path = found[-1] if found else "unknown"
    local = config.predict.evaluate_in_selfplayers and path.split()[0] in ("onnx", "numpy")
    return f"{path}, in the {'Selfplayers' if local else 'Predictor'}"


def ray_lines(figures: dict) -> list[str]:
    """The lines of the throughput report about Ray: the Ray run beside the processes one
    (`ray_figures`) and what the head spent; none for a run without Ray."""
    lines = []
    if "ray" in figures:
        ray_run = figures["ray"]
        cpu = ", ".join(f"{k} {v:.0f}%" for k, v in sorted(ray_run["cpu_by_role"].items()))
        pairs = ", ".join(f"{r:.2f}" for r in figures["ray_vs_processes_pairs"])
        lines.append(
            f"  on Ray              {ray_run['searches_per_s']:>10.0f} searches/s, mean batch "
            f"{ray_run['mean_batch']:.1f}: x{figures['ray_vs_processes']:.2f} the processes' "
            f"(median of the pairs run in turn: {pairs}); per CPU-second used: "
            f"x{figures['ray_vs_processes_per_cpu']:.2f}"
        )
        lines.append(f"  CPU by role on Ray  {cpu}")
    head = figures.get("ray", figures).get("head")
    if head:
        lines.append(
            f"  the head on Ray     {head['takes_per_s']} takes/s and {head['files_per_s']} "
            f"sample files/s at {head['cpu_ms_per_take']} ms of CPU per take; "
            f"{head['write_ms_per_file'] or 0:.2f} ms to write a file, "
            f"{head['broadcast_ms']:.1f} ms to put a model; object store {head['object_store']}"
        )
    return lines
