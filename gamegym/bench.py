"""`gamegym bench`: self-play throughput, measured in one run.

- search ceiling: in-process MCTS with a uniform stub evaluator on one core (searches/s)
- network ceiling: the Predictor's model on this machine at several batch sizes (evals/s)
- end to end: a real Predictor and N real Selfplayer processes for N seconds
- efficiency: end-to-end searches/s / (search ceiling x cores the Selfplayers had)

With `--learner alphazero,bootstrapped` each learner preset is measured in turn and the
positions/s compared.  A learner whose self-play does not search (bootstrapped: one Q request
per move) has no search ceiling nor efficiency; its "searches" are its moves.
"""
from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil

from gamegym.cliutil import json_object
from gamegym.config import LEARNERS, GymConfig
from gamegym.graph import load_game
from gamegym.mcts import Search, SearchParams, uniform_evaluator
from gamegym.presets import initial_model_path, preset_for
from gamegym.searchplay import selfplay_game

ORIGINAL = {"searches_per_s": 410, "positions_per_s": 4, "games_per_s": 0.24,
            "game": "Santorini 3x3-1, 2 Selfplayers, 25 threads, 100 searches/move, batch 16"}


def search_ceiling(graph, cfg, seconds: float, seed: int = 0) -> dict:
    """Searches/s of whole self-play games with a uniform evaluator, in this process."""
    search = Search(graph, uniform_evaluator(graph.action_space_size),
                    SearchParams.from_selfplay(cfg))
    rng = np.random.default_rng(seed)
    games = positions = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        record = selfplay_game(graph, search, cfg, rng)
        games += 1
        positions += len(record)
    elapsed = time.perf_counter() - start
    return {"searches_per_s": search.searches_done / elapsed,
            "positions_per_s": positions / elapsed, "games_per_s": games / elapsed}


def network_ceiling(evaluator, graph, batch_sizes, seconds_each: float = 1.0) -> dict:
    """Evaluations/s of the Predictor's model call (a learner's evaluator) at each batch size."""
    kind = evaluator.kinds[0]
    x1 = graph.numpify(graph.roots[0])
    figures = {"path": "numpy" if getattr(evaluator, "numpy", None) is not None else "tensorflow"}
    for size in sorted(set(int(b) for b in batch_sizes if b >= 1)):
        x = np.repeat(x1[None], size, axis=0)
        evaluator.run(kind, {"x": x})  # trace
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds_each:
            evaluator.run(kind, {"x": x})
            count += size
        figures[str(size)] = count / (time.perf_counter() - start)
    return figures


def end_to_end(session_path: Path, config: GymConfig, seconds: float) -> dict:
    """A real Predictor and Selfplayers (no Trainer) for `seconds`; rates from their reports."""
    from gamegym.gym import GameGym
    from gamegym.supervisor import Supervisor
    gym = GameGym(session_path)
    gym.session.acquire_lock()
    supervisor = Supervisor(gym, max_seconds=None, max_iterations=None, roles=("predictor",
                                                                               "selfplayer"))
    try:
        supervisor.start()
        _wait_until_playing(supervisor, timeout=120)
        # measure from here: discard warm-up reports, prime CPU counters
        monitor = gym.monitor
        monitor.events.clear()
        processes = {n: psutil.Process(c.process.pid) for n, c in supervisor.children.items()}
        cpu_start = {n: _cpu_seconds(p) for n, p in processes.items()}
        start = time.monotonic()
        monitor.started = start
        while time.monotonic() - start < seconds:
            supervisor._drain(timeout=0.2)
        elapsed = time.monotonic() - start
        sums: dict = {}
        for _, role, figures in monitor.events:
            for key, value in figures.items():
                if isinstance(value, (int, float)):
                    sums[f"{role}.{key}"] = sums.get(f"{role}.{key}", 0.0) + value
        cpu = {}
        for name, process in processes.items():
            role = name.rstrip("0123456789")
            used = _cpu_seconds(process) - cpu_start[name]
            cpu[role] = cpu.get(role, 0.0) + 100.0 * used / elapsed
    finally:
        supervisor.shutdown()
        gym.session.release_lock()
    span = sum(f.get("seconds", 0.0) for _, r, f in monitor.events if r == "selfplayer")
    span = span / max(1, config.selfplay.selfplayprocesses) or elapsed
    batches = sums.get("predictor.batches", 0.0)
    return {"searches_per_s": sums.get("selfplayer.searches", 0.0) / span,
            "positions_per_s": sums.get("selfplayer.positions", 0.0) / span,
            "games_per_s": sums.get("selfplayer.games", 0.0) / span,
            "mean_batch": sums.get("predictor.positions", 0.0) / batches if batches else 0.0,
            "predictor_busy": sums.get("predictor.busy_s", 0.0) / elapsed,
            "cpu_by_role": {k: round(v, 1) for k, v in cpu.items()}}


def _cpu_seconds(process: psutil.Process) -> float:
    try:
        times = process.cpu_times()
        return times.user + times.system
    except psutil.Error:
        return 0.0


def _wait_until_playing(supervisor, timeout: float) -> None:
    """Warm-up: until every Selfplayer has reported searches (TensorFlow loaded, traced)."""
    deadline = time.monotonic() + timeout
    seen: set = set()
    want = supervisor.config.selfplay.selfplayprocesses
    while time.monotonic() < deadline and len(seen) < want:
        try:
            report = supervisor.reports.get(timeout=0.5)
        except Exception:
            supervisor._check_children()
            if supervisor.failure:
                raise RuntimeError(supervisor.failure)
            continue
        supervisor.gym.monitor.add(report)
        if report.role.startswith("selfplayer") and report.figures.get("searches", 0) > 0:
            seen.add(report.role)
    if len(seen) < want:
        raise RuntimeError("the Selfplayers did not start playing within "
                           f"{timeout:.0f} s; see the logs in the bench session")


def run_bench(game: str, game_args: dict, seconds: float, selfplayers: int, threads: int,
              searchcount: int, batchsize: int = 64, batch_timeout_ms: float = 2.0,
              learner: str = "alphazero") -> dict:
    """All figures of one bench run (see the module docstring) with a learner preset."""
    from gamegym.gym import GameGym
    from gamegym.learners import get_learner
    graph = load_game(game, game_args)
    found = preset_for(game, graph.game_args, learner)
    if found is None and learner not in LEARNERS:
        raise ValueError(f"the learner preset {learner!r} is only defined for the bundled games")
    preset = found[1] if found else {"train": {"learner": learner}}
    config = GymConfig(game=game, game_args=graph.game_args, status_interval=0.0,
                       network=preset.get("network", {}),
                       selfplay={**preset.get("selfplay", {}), "selfplayprocesses": selfplayers,
                                 "searchthreadcount": threads, "searchcount": searchcount,
                                 "positions_per_iteration": 0},   # no Trainer: never wait for one
                       train={"learner": preset.get("train", {}).get("learner", "alphazero")},
                       predict={"batchsize": batchsize, "batch_timeout_ms": batch_timeout_ms})
    searches = config.train.learner != "bootstrapped"
    ceiling = search_ceiling(graph, config.selfplay, min(seconds, 10.0)) if searches else None
    with tempfile.TemporaryDirectory(prefix="gamegym-bench-") as folder:
        path = Path(folder) / "bench"
        gym = GameGym(path, config=config,
                      initial_model=initial_model_path(game, graph.game_args, config.network,
                                                       learner))
        e2e = end_to_end(path, config, seconds)
        from gamegym.tfsetup import load_model
        model = load_model(gym.session.model_path(0))
    sizes = [1, 8, max(1, round(e2e["mean_batch"])), batchsize]
    network = network_ceiling(get_learner(config.train.learner).make_evaluator(model, 0), graph,
                              sizes)
    cores = min(selfplayers, psutil.cpu_count(logical=True) or 1)
    efficiency = e2e["searches_per_s"] / (ceiling["searches_per_s"] * cores) if ceiling else None
    return {
        "game": game, "game_args": graph.game_args, "learner": learner,
        "searches_per_s": round(e2e["searches_per_s"], 1),
        "positions_per_s": round(e2e["positions_per_s"], 2),
        "games_per_s": round(e2e["games_per_s"], 3),
        "mean_batch": round(e2e["mean_batch"], 2),
        "predictor_busy_fraction": round(e2e["predictor_busy"], 3),
        "ceiling_searches_per_s_per_core": round(ceiling["searches_per_s"], 1) if ceiling else None,
        "network_evals_per_s": {k: round(v) for k, v in network.items() if k != "path"},
        "network_path": network["path"],
        "efficiency": round(efficiency, 3) if efficiency is not None else None,
        "cpu_by_role": e2e["cpu_by_role"],
        "vs_original": {"searches_per_s": round(e2e["searches_per_s"] / ORIGINAL["searches_per_s"],
                                                1)},
        "config": {"seconds": seconds, "selfplayers": selfplayers, "threads": threads,
                   "searchcount": searchcount if searches else 0,
                   "concurrent_games": 0 if searches else config.selfplay.concurrent_games,
                   "batchsize": batchsize,
                   "batch_timeout_ms": batch_timeout_ms,
                   "cores": psutil.cpu_count(logical=True)},
    }


def print_report(figures: dict) -> None:
    c = figures["config"]
    play = (f"{c['threads']} threads, {c['searchcount']} searches/move" if c["searchcount"] else
            f"{c['concurrent_games']} games at once, no search")
    print(f"game {figures['game']} {figures['game_args']}, {figures['learner']}: "
          f"{c['selfplayers']} Selfplayers x {play}, {c['seconds']:g} s, {c['cores']} cores")
    if figures["ceiling_searches_per_s_per_core"] is not None:
        print(f"  search ceiling      {figures['ceiling_searches_per_s_per_core']:>10.0f} "
              "searches/s on one core (uniform evaluator)")
    nets = ", ".join(f"batch {k}: {v}" for k, v in figures["network_evals_per_s"].items())
    print(f"  network ceiling     {nets} evals/s ({figures['network_path']})")
    print(f"  end to end          {figures['searches_per_s']:>10.0f} searches/s, "
          f"{figures['positions_per_s']:.1f} positions/s, {figures['games_per_s']:.2f} games/s, "
          f"mean batch {figures['mean_batch']:.1f}")
    if figures["efficiency"] is not None:
        print(f"  efficiency          {figures['efficiency']:.2f}   "
              f"(x{figures['vs_original']['searches_per_s']} the original's "
              f"{ORIGINAL['searches_per_s']} searches/s)")
    cpu = ", ".join(f"{k} {v:.0f}%" for k, v in sorted(figures["cpu_by_role"].items()))
    print(f"  CPU by role         {cpu}")


def cmd_bench(args) -> int:
    if args.learning:
        from gamegym.learnbench import cmd_learning
        return cmd_learning(args)
    runs = [run_bench(args.game, args.game_args, args.seconds, args.selfplayers, args.threads,
                      args.searchcount, args.batchsize, args.batch_timeout_ms, learner.strip())
            for learner in args.learner.split(",") if learner.strip()]
    figures = runs[0] if len(runs) == 1 else {"runs": runs, "positions_per_s": {
        r["learner"]: r["positions_per_s"] for r in runs}}
    if args.json:
        print(json.dumps(figures, sort_keys=True))
        return 0
    for run in runs:
        print_report(run)
    if len(runs) > 1:
        base = runs[0]
        print(f"positions/s relative to {base['learner']}: " + ", ".join(
            f"{r['learner']} x{r['positions_per_s'] / max(1e-9, base['positions_per_s']):.1f}"
            for r in runs[1:]))
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("bench", help="measure self-play throughput (searches/s, efficiency)")
    p.add_argument("--game", default="games.santorini:Santorini")
    p.add_argument("--game-args", type=json_object, default={})
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--selfplayers", type=int, default=4)
    p.add_argument("--threads", type=int, default=24)
    p.add_argument("--searchcount", type=int, default=100)
    p.add_argument("--batchsize", type=int, default=64)
    p.add_argument("--batch-timeout-ms", type=float, default=2.0)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--learning", metavar="MODULE:CLASS",
                   help="instead: train this bundled game from scratch and print its curve")
    p.add_argument("--minutes", type=float, default=10.0, help="(--learning) training time")
    p.add_argument("--interval", type=float, default=2.0,
                   help="(--learning) minutes between evaluations")
    p.add_argument("--eval-games", type=int, default=20,
                   help="(--learning) games per curve point; the final point plays 4x as many")
    p.add_argument("--eval-searchcount", type=int, default=100)
    p.add_argument("--keep", type=Path, metavar="SESSION",
                   help="(--learning) train in this new session folder and keep it (with "
                        "several learners: one folder each inside it)")
    p.add_argument("--learner", default="alphazero",
                   help="learner preset(s), comma-separated: alphazero, bootstrapped, dqn "
                        "(--learning: one run each, one plot; else: throughput of each)")
    p.add_argument("--opponents", metavar="SPEC,SPEC",
                   help="(--learning) player specs to measure against, instead of the game's "
                        "benchmark opponents")
    p.add_argument("--plot", type=Path, default=Path("learning.png"),
                   help="(--learning) where to write the curve")
    p.set_defaults(run=cmd_bench)
