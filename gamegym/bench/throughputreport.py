"""The report of `gamegym bench throughput` (gamegym.bench.throughput): a run's figures as the
lines of a report, beside the original code's throughput."""

from __future__ import annotations

from gamegym.bench.endtoend import ray_lines
from gamegym.bench.networks import paths_table

__all__ = ["ORIGINAL", "print_report"]

# the first gamegym's end-to-end throughput, the yardstick of `vs_original`
ORIGINAL = {
    "searches_per_s": 410,
    "positions_per_s": 4,
    "games_per_s": 0.24,
    "game": "Santorini 3x3-1, 2 Selfplayers, 25 threads, 100 searches/move, batch 16",
}


def print_report(figures: dict) -> None:
    """A run's figures as the lines of a report."""
    c = figures["config"]
    play = (
        f"{c['threads']} threads, {c['searchcount']} searches/move"
        if c["searchcount"]
        else f"{c['concurrent_games']} games at once, no search"
    )
    print(
        f"game {figures['game']} {figures['game_args']}, {figures['label']}: "
        f"{c['selfplayers']} Selfplayers x {play}, {c['seconds']:g} s, {c['cores']} cores"
    )
    if figures["ceiling_searches_per_s_per_core"] is not None:
        print(
            f"  search ceiling      {figures['ceiling_searches_per_s_per_core']:>10.0f} "
            f"searches/s on one core (uniform evaluator; "
            f"{figures['ceiling_searches_per_cpu_s']:.0f} per CPU-second)"
        )
    print(
        f"  end to end          {figures['searches_per_s']:>10.0f} searches/s, "
        f"{figures['positions_per_s']:.1f} positions/s, {figures['games_per_s']:.2f} games/s, "
        f"mean batch {figures['mean_batch']:.1f}"
    )
    if figures["efficiency"] is not None:
        print(
            f"  efficiency          {figures['efficiency']:.2f}   (CPU efficiency "
            f"{figures['cpu_efficiency']:.2f}; x{figures['vs_original']['searches_per_s']} "
            f"the original's {ORIGINAL['searches_per_s']} searches/s)"
        )
    roles = sorted(figures["cpu_by_role"])
    print(
        "  by role             "
        + ", ".join(
            f"{r} {figures['cpu_by_role'][r]:.0f}% CPU {figures['rss_mb_by_role'].get(r, 0):.0f} MB"
            for r in roles
        )
        + " (CPU summed over a role's processes, RSS per process)"
    )
    for line in paths_table(figures["network_evals_per_cpu_s"], figures["network_path"]):
        print(line)
    for line in ray_lines(figures):
        print(line)
