"""The search ceiling of two source trees of gamegym side by side, in one run.

    python scripts/ceiling_ab.py --before DIR --after DIR [--case PRESET:RULE:CORE ...]
        [--seconds 5] [--rounds 5] [--json]

A tree is a checkout of the repository (`git worktree add /tmp/before <commit>`).  The search
ceiling is the throughput bench's (`gamegym bench throughput`: whole self-play games of the
learner's own search with a uniform stub evaluator, one game first, not counted), run for
`--seconds` in a fresh process that imports the tree (PYTHONPATH), pinned to one core, with its
own numba cache (each tree's kernels are compiled or loaded in the untimed game).  Each case is a
preset of both trees by name with a search rule and core (`-` keeps the preset's): the trees
take turns, after-before then before-after, `--rounds` times each; a tree's figure is its
median searches per CPU-second, and the case's the ratio after / before.  The 1-minute load
average before and after is printed beside the figures (start it through
`../shared/tools/quiet-run`).  Trees whose config nests the search settings
(`selfplay.search.rule`) and trees with them flat (`selfplay.search`, `selfplay.search_core`)
are both read.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

CASES = (
    "connectfour:puct:compiled",
    "connectfour:puct:python",
    "connectfour:gumbel:compiled",
    "connectfour:gumbel:python",
    "connectfour-muzero:puct:python",
    "santorini-3-1:puct:compiled",
)

# run in the tree's own interpreter process: the ceiling of one case, as one JSON line
MEASURE = r"""
import json, sys
case = json.loads(sys.argv[1])
from gamegym.config import GymConfig
from gamegym.game.graph import load_game
from gamegym.presets import get_preset
settings = get_preset(case["preset"])
selfplay = settings.setdefault("selfplay", {})
try:
    from gamegym.bench.ceiling import search_ceiling
    nested = True
except ImportError:  # a tree from before the ceiling had a module of its own
    from gamegym.bench.throughput import search_ceiling
    nested = False
if nested:
    search = selfplay.setdefault("search", {})
    search.update({k: case[k] for k in ("rule", "core") if case[k]})
else:
    names = {"rule": "search", "core": "search_core"}
    selfplay.update({names[k]: case[k] for k in names if case[k]})
config = GymConfig.from_dict(settings)
graph = load_game(config.game, config.game_args)
figures = search_ceiling(graph, config.selfplay, case["seconds"], learner=config.train.learner)
print(json.dumps(figures))
"""


def measure(tree: Path, case: dict) -> dict:
    """One ceiling of `case` with the gamegym of `tree`, in a process of its own on core 0."""
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, json.dumps(case)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        preexec_fn=(lambda: os.sched_setaffinity(0, {0}))
        if hasattr(os, "sched_setaffinity")
        else None,
    )
    if done.returncode != 0:
        raise SystemExit(f"{tree}: the ceiling of {case} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def parse_case(text: str) -> dict:
    try:
        preset, rule, core = text.split(":")
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: a case is PRESET:RULE:CORE") from None
    return {
        "preset": preset,
        "rule": "" if rule == "-" else rule,
        "core": "" if core == "-" else core,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="the tree measured first")
    parser.add_argument("--after", type=Path, required=True, help="the tree compared with it")
    parser.add_argument(
        "--case", type=parse_case, nargs="+", default=[parse_case(c) for c in CASES]
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="each ceiling's measuring time")
    parser.add_argument("--rounds", type=int, default=5, help="turns of each tree per case")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    for name, tree in trees.items():
        if not (tree / "gamegym" / "__init__.py").is_file():
            parser.error(f"--{name} {tree}: not a gamegym source tree (no gamegym/__init__.py)")
    load_before = os.getloadavg()[0]
    results = []
    for case in args.case:
        case = {**case, "seconds": args.seconds}
        rates: dict[str, list[float]] = {"before": [], "after": []}
        for turn in range(args.rounds):
            order = ("after", "before") if turn % 2 == 0 else ("before", "after")
            for name in order:
                rates[name].append(measure(trees[name], case)["searches_per_cpu_s"])
        before, after = (statistics.median(rates[n]) for n in ("before", "after"))
        results.append(
            {
                "case": f"{case['preset']}:{case['rule'] or '-'}:{case['core'] or '-'}",
                "before_searches_per_cpu_s": round(before),
                "after_searches_per_cpu_s": round(after),
                "after_over_before": round(after / before, 3),
                "rounds": {n: [round(r) for r in v] for n, v in rates.items()},
            }
        )
        if not args.json:
            r = results[-1]
            print(
                f"{r['case']:36s} before {before:9.0f}  after {after:9.0f} searches/CPU-s  "
                f"x{r['after_over_before']}",
                flush=True,
            )
    load = {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)}
    if args.json:
        print(
            json.dumps(
                {
                    "trees": {k: str(v) for k, v in trees.items()},
                    "cases": results,
                    "load_1min": load,
                }
            )
        )
    else:
        print(f"1-minute load average {load['before']} before, {load['after']} after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
