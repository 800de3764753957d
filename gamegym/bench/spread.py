"""The spread over seeds of a learning bench's runs on the solved positions
(gamegym.bench.accuracy): for each learner and variant run with several seeds, at each curve point
and at the final one, the mean, lowest and highest share of optimal moves of each band, with
search and with the raw policy: two variants differ on a band where their ranges part.
"""

from __future__ import annotations

from typing import Any

__all__ = ["spread_over_seeds", "spread_text"]

KINDS = ("search", "policy")


def spread_over_seeds(runs: list[dict]) -> dict[str, dict]:
    """{learner and variant: {"seeds", "minutes", "curve": [{band: {kind: {mean, low, high}}}],
    "final": {...}}} for each learner and variant with runs of two or more seeds whose curve
    points measured the solved positions; the points are matched by their place in the curve
    (every run of a bench has the same budget and interval)."""
    groups: dict[str, list[dict]] = {}
    for run in runs:
        if run.get("curve") and "accuracy" in run["curve"][0]:
            name = run.get("label", "").replace(f"seed {run.get('seed')}", "").strip()
            groups.setdefault(" ".join(name.split()) or run["learner"], []).append(run)
    spread: dict[str, dict] = {}
    for name, members in groups.items():
        if len(members) < 2:
            continue
        points = min(len(run["curve"]) for run in members)
        spread[name] = {
            "seeds": [run.get("seed") for run in members],
            "minutes": [members[0]["curve"][i]["minutes"] for i in range(points)],
            "curve": [
                _bands([run["curve"][i]["accuracy"] for run in members]) for i in range(points)
            ],
            "final": _bands([run["final"].get("accuracy", {}) for run in members]),
        }
    return spread


def _bands(figures: list[dict]) -> dict[str, Any]:
    """The mean, lowest and highest share of optimal moves of each band and kind over `figures`
    (one run's accuracy each); a band or kind not in every one is left out."""
    bands = {}
    for band in figures[0]:
        row = {}
        for kind in KINDS:
            shares = [f[band][kind]["optimal"] for f in figures if kind in f.get(band, {})]
            if len(shares) == len(figures):
                row[kind] = {
                    "mean": round(sum(shares) / len(shares), 4),
                    "low": round(min(shares), 4),
                    "high": round(max(shares), 4),
                }
        if row:
            bands[band] = row
    return bands


def spread_text(spread: dict[str, dict], band: str = "middle") -> list[str]:
    """The lines of a report: a band's share with search, mean (lowest-highest) over the seeds,
    at each curve point and the final one, a column per learner and variant."""
    if not spread:
        return []
    heads = [f"{name} (seeds {', '.join(map(str, s['seeds']))})" for name, s in spread.items()]
    first = next(iter(spread.values()))
    rows = [(f"{m:g}", i) for i, m in enumerate(first["minutes"])] + [("final", None)]
    table = [["minutes", *heads]]
    for label, index in rows:
        cells = [label]
        for group in spread.values():
            bands = group["final"] if index is None else _point(group, index)
            figure = bands.get(band, {}).get("search")
            cells.append(
                "-"
                if figure is None
                else f"{figure['mean']:.1%} ({figure['low']:.1%}-{figure['high']:.1%})"
            )
        table.append(cells)
    widths = [max(len(row[i]) for row in table) for i in range(len(heads) + 1)]
    return [
        f"solved positions, {band} band, optimal moves with search: mean (lowest-highest) over "
        "the seeds",
        *("  " + "  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in table),
    ]


def _point(group: dict, index: int) -> dict:
    return group["curve"][index] if index < len(group["curve"]) else {}
