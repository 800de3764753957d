"""Make Connect Four's solved-position benchmark (games/connectfour-positions.tsv), or check it.

    python scripts/make_connectfour_positions.py --seed 1 --out a.tsv      # make one
    python scripts/make_connectfour_positions.py --merge a.tsv b.tsv --out games/connectfour-positions.tsv
    python scripts/make_connectfour_positions.py --check 50      # re-solve 50 a band, timed

The bundled file joins runs of several seeds, made side by side (the early band, whose solves take
seconds, by itself: --bands early); its header line lists each run's command and counts.

Positions come from three kinds of games, in turn: uniformly random moves, UCT with random
rollouts (`mcts:200`, its first two moves random) and the Connect Four preset's starter network
playing itself (moves drawn from its raw policy).  From each game one position of each band is
taken at a random ply of the band: early (6-12 discs), middle (13-24), late (25 and more).  A
position is kept when it is new up to the left-right mirror and when a mistake is possible there
(some legal move does not keep the position's exact value).  Every move's value (win, draw or
loss) is solved exactly; its exact score too (Pons's scores: how fast a win or how slow a loss)
when that takes at most --exact-seconds, else its score is written as unknown.  A position whose
values take longer than --weak-seconds is skipped (and counted in the header: the early band
leaves out its hardest positions).

--check re-solves a sample of each band with a fresh table, compares every value and score with
the file, and prints the solve time per band (the figures of docs/guides/evaluation.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from gamegym.game.players import RandomPlayer
from gamegym.game.positions import BenchmarkPosition, load_positions, write_positions
from gamegym.search.uct import UCTPlayer
from games.connectfour import ConnectFour
from games.connectfour_solver import ConnectFourSolver, SolverTimeout

BANDS = {"early": (6, 12), "middle": (13, 24), "late": (25, 42)}
OUT = Path(__file__).resolve().parent.parent / "games" / "connectfour-positions.tsv"


def band_of(discs: int) -> str | None:
    for band, (low, high) in BANDS.items():
        if low <= discs <= high:
            return band
    return None


class PolicyPlayer:
    """The starter network's raw policy, sampled (temperature 1) over the legal moves."""

    def __init__(self, graph: ConnectFour):
        from gamegym.learners import get_learner
        from gamegym.nets.inference import LocalService, NetworkPositionValuer
        from gamegym.nets.tfsetup import configure_tensorflow, load_model
        from gamegym.presets import INITIAL_MODELS

        configure_tensorflow(use_gpu=False)
        model = load_model(INITIAL_MODELS / "connectfour.keras")
        evaluator = get_learner("alphazero").make_evaluator(model, 0)
        self.evaluate = NetworkPositionValuer(graph, LocalService(evaluator))

    def choose(self, graph, vertex, rng) -> int:
        probs = self.evaluate([vertex])[0][0]
        actions = list(graph.actions_at(vertex))
        p = np.asarray(probs, np.float64)[actions]
        p = p / p.sum() if p.sum() > 0 else np.full(len(actions), 1 / len(actions))
        return int(actions[rng.choice(len(actions), p=p)])


def play(graph: ConnectFour, player, rng, random_plies: int) -> list[int]:
    """One game's actions, the first `random_plies` uniformly random."""
    vertex, actions = graph.roots[0], []
    while graph.children_at(vertex):
        legal = graph.actions_at(vertex)
        if len(actions) < random_plies:
            action = int(legal[rng.integers(len(legal))])
        else:
            action = player.choose(graph, vertex, rng)
        actions.append(action)
        vertex = graph.child_by_action(vertex, action)
    return actions


def canonical(graph: ConnectFour, vertex: int) -> int:
    return min(vertex, graph.transform(vertex, 1))


def solve_position(solver: ConnectFourSolver, vertex: int, exact_seconds: float):
    """(values, scores or None) of every legal move."""
    values = {a: int(np.sign(s)) for a, s in solver.move_scores(vertex, weak=True).items()}
    saved, solver.seconds = solver.seconds, exact_seconds
    try:
        scores: dict | None = solver.move_scores(vertex)
    except SolverTimeout:
        scores = None
    finally:
        solver.seconds = saved
    if scores is not None:
        assert {a: int(np.sign(s)) for a, s in scores.items()} == values, "weak and exact differ"
    return values, scores


def header_of(args, counts: dict, skipped: dict, games: int) -> dict:
    return {
        "game": "games.connectfour:ConnectFour",
        "game_args": {"rows": 6, "columns": 7},
        "action_space_size": 7,
        "bands": {b: list(r) for b, r in BANDS.items()},
        "made_by": f"python scripts/make_connectfour_positions.py --seed {args.seed} "
        f"--per-band {args.per_band} --exact-seconds {args.exact_seconds:g} "
        f"--weak-seconds {args.weak_seconds:g}" + (f" --bands {args.bands}" if args.bands else ""),
        "sources": counts,
        "skipped": skipped,
        "games": games,
        "scores": "Pascal Pons's: 0 draw; a win scores the winner's discs still in hand when it "
        "plays the winning one, plus one; a loss the negative",
    }


def save(path: Path, header: dict, kept: dict) -> list:
    """Write the positions so far (to a temporary name first, so a stopped run leaves a whole
    file); returns them."""
    positions = [p for band in BANDS for p in kept[band]]
    partial = path.with_name(path.name + ".partial")
    write_positions(partial, header, positions)
    partial.replace(path)
    return positions


def merge(args) -> int:
    """Join benchmark files made with different seeds: the positions in file order, each once
    up to the mirror, at most --per-band a band."""
    graph = ConnectFour()
    kept: dict[str, list[BenchmarkPosition]] = {band: [] for band in BANDS}
    seen: set[int] = set()
    headers = []
    for path in args.merge:
        benchmark = load_positions(path)
        headers.append(benchmark.header)
        for position, vertex in zip(benchmark.positions, benchmark.vertices(graph)):
            key = canonical(graph, vertex)
            if key in seen or len(kept[position.band]) >= args.per_band:
                continue
            seen.add(key)
            kept[position.band].append(position)
    header = {k: v for k, v in headers[0].items() if k not in ("sources", "skipped", "games")}
    header["made_by"] = " + ".join(h["made_by"] for h in headers) + (
        f", joined by --merge --per-band {args.per_band} (each input's sources: 'inputs')"
    )
    header["inputs"] = [
        {k: h[k] for k in ("made_by", "sources", "skipped", "games")} for h in headers
    ]
    positions = save(args.out, header, kept)
    print(
        f"wrote {len(positions)} positions to {args.out}: "
        + ", ".join(f"{b} {len(kept[b])}" for b in BANDS)
    )
    return 0


def make(args) -> int:
    graph = ConnectFour()
    rng = np.random.default_rng(args.seed)
    solver = ConnectFourSolver(graph, seconds=args.weak_seconds)
    sources = {
        "random": (RandomPlayer(), 0),
        "mcts:200": (UCTPlayer(200), 2),
        "network": (PolicyPlayer(graph), 0),
    }
    kept: dict[str, list[BenchmarkPosition]] = {band: [] for band in BANDS}
    counts = {band: dict.fromkeys(sources, 0) for band in BANDS}
    seen: set[int] = set()
    skipped = {"repeated": 0, "no mistake possible": 0, "weak solve too slow": 0}
    solve_seconds = {band: 0.0 for band in BANDS}
    started, game = time.monotonic(), 0
    wanted = args.bands.split(",") if args.bands else list(BANDS)
    for band in set(BANDS) - set(wanted):
        counts.pop(band)
    while any(len(kept[b]) < args.per_band for b in wanted):
        source = list(sources)[game % len(sources)]
        player, random_plies = sources[source]
        actions = play(graph, player, rng, random_plies)
        game += 1
        for band, (low, high) in BANDS.items():
            if band not in wanted or len(kept[band]) >= args.per_band:
                continue
            high = min(high, len(actions) - 1)  # the final position is over
            if high < low:
                continue
            ply = int(rng.integers(low, high + 1))
            vertex = graph.roots[0]
            for a in actions[:ply]:
                vertex = graph.child_by_action(vertex, a)
            key = canonical(graph, vertex)
            if key in seen:
                skipped["repeated"] += 1
                continue
            seen.add(key)
            t = time.monotonic()
            try:
                values, scores = solve_position(solver, vertex, args.exact_seconds)
            except SolverTimeout:
                skipped["weak solve too slow"] += 1
                continue
            solve_seconds[band] += time.monotonic() - t
            if len(set(values.values())) == 1:
                skipped["no mistake possible"] += 1
                continue
            kept[band].append(BenchmarkPosition(band, tuple(actions[:ply]), values, scores))
            counts[band][source] += 1
        if game % 20 == 0:
            save(args.out, header_of(args, counts, skipped, game), kept)
            print(
                f"{time.monotonic() - started:6.0f} s, {game} games: "
                + ", ".join(f"{b} {len(kept[b])}" for b in BANDS),
                file=sys.stderr,
                flush=True,
            )
    positions = save(args.out, header_of(args, counts, skipped, game), kept)
    print(
        f"wrote {len(positions)} positions to {args.out} from {game} games in "
        f"{time.monotonic() - started:.0f} s; solve seconds "
        + ", ".join(f"{b} {solve_seconds[b]:.0f}" for b in BANDS)
        + f"; skipped {skipped}",
        file=sys.stderr,
    )
    return 0


def check(args) -> int:
    """Re-solve `args.check` positions a band with a fresh solver; compare and time."""
    graph = ConnectFour()
    benchmark = load_positions(args.out)
    vertices = benchmark.vertices(graph)
    rng = np.random.default_rng(args.seed)
    bad = 0
    for band in args.bands.split(",") if args.bands else benchmark.bands:
        indices = [i for i, p in enumerate(benchmark.positions) if p.band == band]
        sample = rng.choice(indices, size=min(args.check, len(indices)), replace=False)
        solver = ConnectFourSolver(graph, compiled=args.run == "compiled")
        weak_times, exact_times = [], []
        for i in sample:
            position, vertex = benchmark.positions[i], vertices[i]
            t = time.monotonic()
            values = {a: int(np.sign(s)) for a, s in solver.move_scores(vertex, weak=True).items()}
            weak_times.append(time.monotonic() - t)
            bad += values != position.values
            if position.scores is not None:
                t = time.monotonic()
                bad += solver.move_scores(vertex) != position.scores
                exact_times.append(time.monotonic() - t)
        w, e = np.array(weak_times), np.array(exact_times)
        print(
            f"{band:7s} {len(sample)} positions ({args.run}, {solver.nodes:,} positions "
            f"searched, {solver.nodes / max(1e-9, w.sum() + e.sum()) / 1e6:.2f} M/s): values (win/draw/loss of every move) "
            f"median {np.median(w) * 1e3:.1f} ms, mean {w.mean() * 1e3:.1f} ms, max {w.max():.2f} s; "
            + (
                f"exact scores ({len(e)} with all known) median {np.median(e) * 1e3:.1f} ms, "
                f"mean {e.mean() * 1e3:.1f} ms, max {e.max():.2f} s"
                if len(e)
                else "no exact scores"
            ),
            flush=True,
        )
    print(f"{bad} positions disagree with the file")
    return 1 if bad else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, default=OUT, help="the benchmark file (default: %(default)s)"
    )
    parser.add_argument(
        "--per-band", type=int, default=1000, help="positions a band (default: %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    parser.add_argument(
        "--exact-seconds",
        type=float,
        default=10.0,
        help="time for the exact scores of one position's moves; past it they are written as "
        "unknown (default: %(default)s)",
    )
    parser.add_argument(
        "--weak-seconds",
        type=float,
        default=300.0,
        help="time for the values of one position's moves; past it the position is skipped "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--check",
        type=int,
        metavar="N",
        help="re-solve N positions a band from --out, compare with the file and time the solves",
    )
    parser.add_argument(
        "--run",
        choices=("compiled", "python"),
        default="compiled",
        help="--check with the numba-compiled search or its plain-Python run",
    )
    parser.add_argument(
        "--bands", help="only these bands, comma-separated (none: early,middle,late)"
    )
    parser.add_argument(
        "--merge", nargs="+", type=Path, metavar="FILE", help="join these files into --out"
    )
    args = parser.parse_args(argv)
    if args.merge:
        return merge(args)
    return check(args) if args.check else make(args)


if __name__ == "__main__":
    sys.exit(main())
