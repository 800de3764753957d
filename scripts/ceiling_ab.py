"""The search ceiling of two source trees of gamegym side by side, in one run.

    python scripts/ceiling_ab.py --before DIR --after DIR [--case PRESET:RULE:CORE ...]
        [--seconds 5] [--rounds 5] [--instructions] [--json]

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

On a shared machine the rates of 5-second rounds move by 15-30% from round to round, more than
the 3% a restructuring may cost.  `--instructions` measures the Python core without that noise:
the machine instructions per search, counted by valgrind's cachegrind (`apt install valgrind`)
in whole seeded self-play games of each tree, the count of one game taken from that of three so
that the interpreter's start and imports cancel out.  The count repeats to 0.1% from run to
run, and both trees play the same games (the restructuring changed no search).  It weighs every
instruction alike, so it shows the work a change adds, not what a cache miss costs; the
compiled core's are left to the timed rounds (valgrind runs numba's machine code too, but the
kernels' first compile would dominate).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
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
if "games" in case:  # a fixed number of seeded games (the instruction count): the searches
    import inspect
    import numpy as np
    from gamegym.bench.capabilities import stub_search
    from gamegym.search.mcts import SearchParams
    from gamegym.search.play import selfplay_game
    cfg = config.selfplay
    search = stub_search(config.train.learner, graph, SearchParams.from_selfplay(cfg))
    rng = np.random.default_rng(0)
    record = ()  # a tree whose games are written into a record given takes a new one a game
    if "record" in inspect.signature(selfplay_game).parameters:
        from gamegym.data.samples import GameRecord
        record = (GameRecord,)
    for _ in range(case["games"]):
        selfplay_game(graph, search, cfg, rng, *(make() for make in record))
    figures = {"searches": search.searches_done}
else:
    figures = search_ceiling(graph, config.selfplay, case["seconds"], learner=config.train.learner)
print(json.dumps(figures))
"""
VALGRIND = ("valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null")


def measure(tree: Path, case: dict, under: tuple[str, ...] = ()) -> dict:
    """One ceiling of `case` with the gamegym of `tree`, in a process of its own on core 0
    (`under`: the command it runs under, e.g. valgrind's); with `under`, also its stderr."""
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
    done = subprocess.run(
        [*under, sys.executable, "-c", MEASURE, json.dumps(case)],
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
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return {**figures, "stderr": done.stderr} if under else figures


def instructions(tree: Path, case: dict) -> dict:
    """Machine instructions per search of `case` with the gamegym of `tree`: cachegrind's
    count of three seeded games less that of the first one alone, over their searches."""
    counts, searches = [], []
    for games in (1, 3):
        done = measure(tree, {**case, "games": games}, VALGRIND)
        found = re.search(r"I\s+refs:\s+([\d,]+)", done["stderr"])
        if found is None:
            raise SystemExit(
                f"{tree}: no instruction count from valgrind:\n{done['stderr'][-3000:]}"
            )
        counts.append(int(found.group(1).replace(",", "")))
        searches.append(done["searches"])
    if searches[1] <= searches[0]:
        raise SystemExit(f"{tree}: {case} searched no more in three games than in one")
    return {
        "instructions_per_search": (counts[1] - counts[0]) / (searches[1] - searches[0]),
        "searches": searches[1] - searches[0],
    }


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


def case_name(case: dict) -> str:
    return f"{case['preset']}:{case['rule'] or '-'}:{case['core'] or '-'}"


def count_case(trees: dict[str, Path], case: dict) -> dict:
    """Instructions per search of each tree on `case`, and the ceiling after / before they
    give (before's count over after's)."""
    counted = {name: instructions(tree, case) for name, tree in trees.items()}
    before, after = (counted[n]["instructions_per_search"] for n in ("before", "after"))
    return {
        "case": case_name(case),
        "before_instructions_per_search": round(before),
        "after_instructions_per_search": round(after),
        # the ceiling's ratio as the counts give it: >1 is the after tree faster
        "after_over_before": round(before / after, 3),
        "searches": {n: counted[n]["searches"] for n in counted},
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
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count machine instructions per search with valgrind (Python-core cases only)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.instructions:
        if shutil.which("valgrind") is None:
            parser.error("--instructions needs valgrind (apt install valgrind)")
        compiled = [c for c in args.case if c["core"] != "python"]
        if compiled:
            parser.error(
                "--instructions counts the Python core only; give cases such as "
                "connectfour:puct:python (not " + ", ".join(case_name(c) for c in compiled) + ")"
            )
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    for name, tree in trees.items():
        if not (tree / "gamegym" / "__init__.py").is_file():
            parser.error(f"--{name} {tree}: not a gamegym source tree (no gamegym/__init__.py)")
    load_before = os.getloadavg()[0]
    results = []
    for case in args.case:
        if args.instructions:
            results.append(count_case(trees, case))
            if not args.json:
                r = results[-1]
                print(
                    f"{r['case']:36s} before {r['before_instructions_per_search']:9.0f}  after "
                    f"{r['after_instructions_per_search']:9.0f} instructions/search  "
                    f"x{r['after_over_before']}",
                    flush=True,
                )
            continue
        case = {**case, "seconds": args.seconds}
        rates: dict[str, list[float]] = {"before": [], "after": []}
        for turn in range(args.rounds):
            order = ("after", "before") if turn % 2 == 0 else ("before", "after")
            for name in order:
                rates[name].append(measure(trees[name], case)["searches_per_cpu_s"])
        before, after = (statistics.median(rates[n]) for n in ("before", "after"))
        results.append(
            {
                "case": case_name(case),
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
