"""`gamegym bench`: self-play throughput, measured in one run.

- search ceiling: in-process MCTS with a uniform stub evaluator on one core (searches/s, and
  searches per CPU-second)
- network paths: the session's model through each way of running it, at several batch sizes
  (evaluations per CPU-second, `gamegym.bench.networks`), and the path the session uses
- end to end: a real Predictor and N real Selfplayers for N seconds, as processes or as Ray
  actors on a Ray started on this machine (`--backend ray`), or both one after the other
  (`--backend both`: the ratio of the two on the same cores); CPU and memory (RSS) of each role
- efficiency: end-to-end searches/s / (search ceiling x cores the Selfplayers had)
- CPU efficiency: end-to-end searches per CPU-second of all roles / the ceiling's searches per
  CPU-second.  On a quiet machine whose cores the roles keep busy it equals the efficiency; on
  a loaded one it says what the roles would do with the cores to themselves.

`--learner` names a learner preset, or several comma-separated (`alphazero,muzero`,
`alphazero,bootstrapped`), measured in turn in one run with their ratios to the first.  MuZero's
search ceiling is its latent search (stub: uniform priors, zero values, rewards and hidden
states) and its network figures its recurrent call.  A learner whose self-play does not search
(bootstrapped: one Q request per move) has no search ceiling nor efficiency; its "searches" are
its moves.
"""
from __future__ import annotations

import dataclasses
import json
import re
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil

from gamegym.cli.util import json_object
from gamegym.config import LEARNERS, GymConfig
from gamegym.game.graph import load_game
from gamegym.runtime.monitor import mean_batch
from gamegym.search.latent import LatentSearch, uniform_latent_evaluator
from gamegym.search.mcts import Search, SearchParams, uniform_evaluator
from gamegym.presets import initial_model_path, learner_presets, preset_for, preset_learner
from gamegym.search.play import selfplay_game

ORIGINAL = {"searches_per_s": 410, "positions_per_s": 4, "games_per_s": 0.24,
            "game": "Santorini 3x3-1, 2 Selfplayers, 25 threads, 100 searches/move, batch 16"}


# learner -> its search with a stub evaluator (uniform priors, nothing else to compute)
STUB_SEARCHES = {
    "alphazero": lambda graph, params: Search(
        graph, uniform_evaluator(graph.action_space_size), params),
    "muzero": lambda graph, params: LatentSearch(
        graph, uniform_latent_evaluator(graph.action_space_size), params),
}


def search_ceiling(graph, cfg, seconds: float, seed: int = 0, learner: str = "alphazero") -> dict:
    """Searches/s of whole self-play games with a uniform evaluator, in this process."""
    stub = STUB_SEARCHES.get(learner, STUB_SEARCHES["alphazero"])
    search = stub(graph, SearchParams.from_selfplay(cfg))
    rng = np.random.default_rng(seed)
    games = positions = 0
    start, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        record = selfplay_game(graph, search, cfg, rng)
        games += 1
        positions += len(record)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"searches_per_s": search.searches_done / elapsed,
            "searches_per_cpu_s": search.searches_done / max(cpu, 1e-9),
            "positions_per_s": positions / elapsed, "games_per_s": games / elapsed}


def network_ceiling(model, graph, batch_sizes, seconds_each: float = 1.0,
                    learner: str = "alphazero") -> dict:
    """Evaluations per CPU-second of a learner's model call at each batch size, as
    {path: {batch size: rate}} like `gamegym.bench.networks.compare_paths` (the call a search makes
    for most leaves: MuZero's recurrent inference, Bootstrapped's Q values).  The learners
    whose models are not AlphaZero's are measured on the path the session uses."""
    from gamegym.learners import get_learner
    evaluator = get_learner(learner).make_evaluator(model, 0)
    x1 = graph.numpify(graph.roots[0])
    path = evaluator.path   # "onnx", "numpy" or "tensorflow", as the Predictor's log says
    rates = {}
    for size in sorted(set(int(b) for b in batch_sizes if b >= 1)):
        kind, inputs = evaluator.search_request(np.repeat(x1[None], size, axis=0))
        evaluator.run(kind, inputs)  # trace
        count, start, cpu = 0, time.perf_counter(), time.process_time()
        while time.perf_counter() - start < seconds_each:
            evaluator.run(kind, inputs)
            count += size
        rates[size] = round(count / max(time.process_time() - cpu, 1e-9))
    return {f"{learner} {path}": rates}


def end_to_end(session_path: Path, config: GymConfig, seconds: float) -> dict:
    """A real Predictor and Selfplayers (no Trainer) for `seconds`, on the config's backend;
    rates from their reports."""
    from gamegym.runtime.gym import GameGym
    from gamegym.runtime.supervisor import Supervisor
    gym = GameGym(session_path, config=config)
    gym.take_session()
    supervisor = Supervisor(gym, max_seconds=None, max_iterations=None, roles=())
    try:
        supervisor.start()
        _wait_until_playing(supervisor, timeout=120)
        # measure from here: discard warm-up reports, prime CPU counters
        monitor = gym.monitor
        monitor.events.clear()
        processes = {"gym": psutil.Process()}   # the head: this process
        for name, pid in supervisor.backend.pids().items():
            try:
                processes[name] = psutil.Process(pid)
            except psutil.Error:
                pass
        cpu_start = {n: _cpu_seconds(p) for n, p in processes.items()}
        before = supervisor.backend.status()
        start = time.monotonic()
        monitor.started = start
        while time.monotonic() - start < seconds:
            supervisor._drain(timeout=0.2)
            supervisor._poll_backend()
        elapsed = time.monotonic() - start
        rss = monitor.memory()   # the gym's (this process) and each role's, at the end
        sums: dict = {}
        for _, role, figures in monitor.events:
            for key, value in figures.items():
                if isinstance(value, (int, float)):
                    sums[f"{role}.{key}"] = sums.get(f"{role}.{key}", 0.0) + value
        cpu, rss = {}, {}
        for name, process in processes.items():
            role = name.rstrip("0123456789")
            used = _cpu_seconds(process) - cpu_start[name]
            cpu[role] = cpu.get(role, 0.0) + 100.0 * used / elapsed
            rss.setdefault(role, []).append(_rss_mb(process))
        backend = supervisor.backend.status()
        selfplayers = backend["selfplayers"]
    finally:
        supervisor.shutdown()
        gym.session.release_lock()
    span = sum(f.get("seconds", 0.0) for _, r, f in monitor.events if r == "selfplayer")
    span = span / max(1, selfplayers) or elapsed
    searches = sums.get("selfplayer.searches", 0.0) / span
    cores_used = sum(cpu.values()) / 100.0   # every role's, the head's and Ray's included
    return {"searches_per_s": searches, "searches_per_cpu_s": searches / max(cores_used, 1e-9),
            "positions_per_s": sums.get("selfplayer.positions", 0.0) / span,
            "games_per_s": sums.get("selfplayer.games", 0.0) / span,
            "mean_batch": mean_batch(sums),
            "predictor_busy": sums.get("predictor.busy_s", 0.0) / elapsed,
            "cpu_by_role": {k: round(v, 1) for k, v in cpu.items()},
            "rss_mb_by_role": {k: round(sum(v) / len(v), 1) for k, v in rss.items()},
            "selfplayers": selfplayers,
            "head": head_figures(before, backend, elapsed, cpu.get("gym", 0.0))}


def head_figures(before: dict, after: dict, elapsed: float, cpu_percent: float) -> dict:
    """On Ray, what the head spent: its CPU per take call and per sample file over the measured
    window, the time to write a file and to put a model, the object store's use."""
    if "head_takes" not in after:
        return {}
    takes = (after["head_takes"] - before["head_takes"]) / elapsed
    files = (after["head_files"] - before["head_files"]) / elapsed
    return {"takes_per_s": round(takes, 2), "files_per_s": round(files, 2),
            "cpu_ms_per_take": round(10 * cpu_percent / takes, 2) if takes else None,
            "write_ms_per_file": after["head_write_ms_per_file"],
            "broadcast_ms": after["head_broadcast_ms"], "object_store": after["object_store"]}


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
    raise RuntimeError("the Selfplayers did not start playing within "
                       f"{timeout:.0f} s; see the logs in the bench session")


def on_backend(config: GymConfig, backend: str) -> GymConfig:
    """The bench's config on a backend; on Ray the machine's cores are shared out so that every
    Selfplayer fits beside the Predictor, as the processes share them."""
    if backend == "processes":
        return config
    cores = psutil.cpu_count(logical=True) or 1
    share = (cores - config.selfplay.ray_predictor_cpus) / config.selfplay.selfplayprocesses
    share = max(0.01, int(share * 1000) / 1000)
    return config.updated({"selfplay": {"backend": "ray", "ray_address": "local",
                                        "ray_selfplayer_cpus": share}})


def run_bench(game: str, game_args: dict, seconds: float, selfplayers: int, threads: int,
              searchcount: int, batchsize: int = 64, batch_timeout_ms: float = 2.0,
              fastpath: bool = True, in_selfplayers: bool = True,
              network_seconds: float = 8.0, network: dict | None = None,
              backend: str = "processes", repeat: int = 1,
              learner: str = "alphazero") -> dict:
    """All figures of one bench run (see the module docstring) with a learner preset.
    `fastpath` and `in_selfplayers` are the session's predict.numpy_fastpath and
    predict.evaluate_in_selfplayers; `network_seconds` 0 skips the network paths; `network`
    (network config fields) replaces the preset's network.  With `backend` "both" the two
    backends run `repeat` times each, in turn, and the ratio is the median of the pairs' (on a
    busy machine a single pair says little)."""
    from gamegym.runtime.gym import GameGym
    from gamegym.learners import get_learner
    graph = load_game(game, game_args)
    found = preset_for(game, graph.game_args, learner)
    if found is None and learner not in LEARNERS:
        raise ValueError(f"the learner preset {learner!r} is only defined for the bundled games")
    preset = found[1] if found else {"train": {"learner": learner}}
    if network is None:
        network = preset.get("network", {})
    config = GymConfig(game=game, game_args=graph.game_args, status_interval=0.0,
                       network=network,
                       selfplay={**preset.get("selfplay", {}), "selfplayprocesses": selfplayers,
                                 "searchthreadcount": threads, "searchcount": searchcount,
                                 "positions_per_iteration": 0},   # no Trainer: never wait for one
                       predict={"batchsize": batchsize, "batch_timeout_ms": batch_timeout_ms,
                                "numpy_fastpath": fastpath,
                                "evaluate_in_selfplayers": in_selfplayers},
                       train={"learner": preset_learner(preset)})
    trains = config.train.learner
    searches = get_learner(trains).searches_in_selfplay
    ceiling = (search_ceiling(graph, config.selfplay, min(seconds, 10.0), learner=trains)
               if searches else None)
    with tempfile.TemporaryDirectory(prefix="gamegym-bench-") as folder:
        path = Path(folder) / "bench"
        gym = GameGym(path, config=config,
                      initial_model=initial_model_path(game, graph.game_args, config.network,
                                                       learner))
        names = ("processes", "ray") if backend == "both" else (backend,)
        pairs = [{name: end_to_end(path, on_backend(config, name), seconds) for name in names}
                 for _ in range(max(1, repeat) if backend == "both" else 1)]
        runs = pairs[len(pairs) // 2]
        e2e = runs["processes" if backend == "both" else backend]
        used_path = _session_path(config, gym.session)
        network = {}
        sizes = [1, 8, 16, 32, 64, max(1, round(e2e["mean_batch"]))]
        if network_seconds > 0 and trains != "alphazero":
            from gamegym.nets.tfsetup import load_model
            network = network_ceiling(load_model(gym.session.model_path(0)), graph, sizes,
                                      network_seconds / len(sizes), trains)
        elif network_seconds > 0:
            from gamegym.bench.networks import compare_paths
            network = compare_paths(gym.session.model_path(0), sample_positions(graph, 64),
                                    sizes, network_seconds, config.predict.use_gpu)
    cores = min(selfplayers, psutil.cpu_count(logical=True) or 1)
    efficiency = e2e["searches_per_s"] / (ceiling["searches_per_s"] * cores) if ceiling else None
    cores_used = sum(e2e["cpu_by_role"].values()) / 100.0
    per_cpu_s = e2e["searches_per_s"] / cores_used if cores_used else 0.0
    figures = {
        "game": game, "game_args": graph.game_args, "learner": learner, "backend": backend,
        "searches_per_s": round(e2e["searches_per_s"], 1),
        "positions_per_s": round(e2e["positions_per_s"], 2),
        "games_per_s": round(e2e["games_per_s"], 3),
        "mean_batch": round(e2e["mean_batch"], 2),
        "predictor_busy_fraction": round(e2e["predictor_busy"], 3),
        "ceiling_searches_per_s_per_core": _rounded(ceiling, "searches_per_s"),
        "ceiling_searches_per_cpu_s": _rounded(ceiling, "searches_per_cpu_s"),
        "network_path": used_path,
        "network_evals_per_cpu_s": network,
        "efficiency": round(efficiency, 3) if ceiling else None,
        "cpu_efficiency": round(per_cpu_s / ceiling["searches_per_cpu_s"], 3) if ceiling else None,
        "cpu_by_role": e2e["cpu_by_role"],
        "rss_mb_by_role": e2e["rss_mb_by_role"],
        "searches_per_cpu_s": round(e2e["searches_per_cpu_s"], 1),
        **({"head": e2e["head"]} if e2e["head"] else {}),
        "vs_original": {"searches_per_s": round(e2e["searches_per_s"] / ORIGINAL["searches_per_s"],
                                                1)},
        "config": {"seconds": seconds, "selfplayers": selfplayers, "threads": threads,
                   "searchcount": searchcount if searches else 0,
                   "concurrent_games": 0 if searches else config.selfplay.concurrent_games,
                   "batchsize": batchsize,
                   "batch_timeout_ms": batch_timeout_ms, "numpy_fastpath": fastpath,
                   "evaluate_in_selfplayers": in_selfplayers,
                   "network": dataclasses.asdict(config.network),
                   "cores": psutil.cpu_count(logical=True)},
    }
    if backend == "both":
        figures.update(ray_figures(pairs, runs["ray"]))
        figures["config"]["repeat"] = len(pairs)
    return figures


def ray_figures(pairs: list[dict], ray_run: dict) -> dict:
    """The Ray run beside the processes one: its figures and the ratios of the pairs."""
    ratios = [pair["ray"]["searches_per_s"] / max(1e-9, pair["processes"]["searches_per_s"])
              for pair in pairs]
    per_cpu = [pair["ray"]["searches_per_cpu_s"] / max(1e-9, pair["processes"][
        "searches_per_cpu_s"]) for pair in pairs]
    return {"ray": {"searches_per_s": round(ray_run["searches_per_s"], 1),
                    "positions_per_s": round(ray_run["positions_per_s"], 2),
                    "mean_batch": round(ray_run["mean_batch"], 2),
                    "predictor_busy_fraction": round(ray_run["predictor_busy"], 3),
                    "games_per_s": round(ray_run["games_per_s"], 3),
                    "searches_per_cpu_s": round(ray_run["searches_per_cpu_s"], 1),
                    "cpu_by_role": ray_run["cpu_by_role"],
                    "rss_mb_by_role": ray_run["rss_mb_by_role"],
                    "selfplayers": ray_run["selfplayers"], "head": ray_run["head"]},
            "ray_vs_processes": round(float(np.median(ratios)), 3),
            "ray_vs_processes_pairs": [round(r, 3) for r in ratios],
            "ray_vs_processes_per_cpu": round(float(np.median(per_cpu)), 3)}


def sample_positions(graph, count: int, seed: int = 0) -> np.ndarray:
    """numpify of `count` positions from random playouts (the network paths' test batch)."""
    rng = np.random.default_rng(seed)
    out, vertex = [], graph.roots[0]
    while len(out) < count:
        children = graph.children_at(vertex)
        if not children:
            vertex = graph.roots[int(rng.integers(len(graph.roots)))]
            continue
        out.append(graph.numpify(vertex))
        vertex = children[int(rng.integers(len(children)))]
    return np.stack(out)


def _session_path(config: GymConfig, session) -> str:
    """The network path the session's Predictor took, from its log ("onnx", "numpy",
    "tensorflow"), and where the Selfplayers evaluated."""
    from gamegym.runtime.process import log_path
    try:
        text = log_path(session.logs_dir, "predictor").read_text(encoding="utf-8")
    except OSError:
        return "unknown"
    found = re.findall(r"loaded model iteration \d+ from .* \((\w+)\)", text)
    path = found[-1] if found else "unknown"
    local = config.predict.evaluate_in_selfplayers and path in ("onnx", "numpy")
    return f"{path}, in the {'Selfplayers' if local else 'Predictor'}"


def print_report(figures: dict) -> None:
    c = figures["config"]
    play = (f"{c['threads']} threads, {c['searchcount']} searches/move" if c["searchcount"] else
            f"{c['concurrent_games']} games at once, no search")
    print(f"game {figures['game']} {figures['game_args']}, {figures['learner']}: "
          f"{c['selfplayers']} Selfplayers x {play}, {c['seconds']:g} s, {c['cores']} cores")
    if figures["ceiling_searches_per_s_per_core"] is not None:
        print(f"  search ceiling      {figures['ceiling_searches_per_s_per_core']:>10.0f} "
              f"searches/s on one core (uniform evaluator; "
              f"{figures['ceiling_searches_per_cpu_s']:.0f} per CPU-second)")
    print(f"  end to end          {figures['searches_per_s']:>10.0f} searches/s, "
          f"{figures['positions_per_s']:.1f} positions/s, {figures['games_per_s']:.2f} games/s, "
          f"mean batch {figures['mean_batch']:.1f}")
    if figures["efficiency"] is not None:
        print(f"  efficiency          {figures['efficiency']:.2f}   (CPU efficiency "
              f"{figures['cpu_efficiency']:.2f}; x{figures['vs_original']['searches_per_s']} "
              f"the original's {ORIGINAL['searches_per_s']} searches/s)")
    roles = sorted(figures["cpu_by_role"])
    print("  by role             " + ", ".join(
        f"{r} {figures['cpu_by_role'][r]:.0f}% CPU {figures['rss_mb_by_role'].get(r, 0):.0f} MB"
        for r in roles) + " (CPU summed over a role's processes, RSS per process)")
    paths = figures["network_evals_per_cpu_s"]
    if paths:
        sizes = list(next(iter(paths.values())))
        print(f"  network paths       evaluations per CPU-second; this session: "
              f"{figures['network_path']}")
        print("    batch     " + "".join(f"{n:>9}" for n in sizes))
        base = paths.get("tensorflow", {})
        for path, per in paths.items():
            ratio = ""
            if base and path != "tensorflow":
                ratio = "   x" + "/".join(f"{per[n] / base[n]:.1f}" for n in sizes)
            print(f"    {path:<10}" + "".join(f"{per[n]:>9}" for n in sizes) + ratio)
    if "ray" in figures:
        ray_run = figures["ray"]
        cpu = ", ".join(f"{k} {v:.0f}%" for k, v in sorted(ray_run["cpu_by_role"].items()))
        pairs = ", ".join(f"{r:.2f}" for r in figures["ray_vs_processes_pairs"])
        print(f"  on Ray              {ray_run['searches_per_s']:>10.0f} searches/s, mean batch "
              f"{ray_run['mean_batch']:.1f}: x{figures['ray_vs_processes']:.2f} the processes' "
              f"(median of the pairs run in turn: {pairs}); per CPU-second used: "
              f"x{figures['ray_vs_processes_per_cpu']:.2f}")
        print(f"  CPU by role on Ray  {cpu}")
    head = figures.get("ray", figures).get("head")
    if head:
        print(f"  the head on Ray     {head['takes_per_s']} takes/s and {head['files_per_s']} "
              f"sample files/s at {head['cpu_ms_per_take']} ms of CPU per take; "
              f"{head['write_ms_per_file'] or 0:.2f} ms to write a file, "
              f"{head['broadcast_ms']:.1f} ms to put a model; object store {head['object_store']}")


def cmd_bench(args) -> int:
    if args.learning and (args.replay or args.adapt_to):
        from gamegym.bench.replay import cmd_replay
        return cmd_replay(args)
    if args.learning:
        from gamegym.bench.learning import cmd_learning
        return cmd_learning(args)
    if args.calibrate:
        from gamegym.bench.calibration import (CALIBRATION_GAME, CALIBRATION_PAIRS, print_calibration,
                                         run_calibration)
        pairs = [tuple(pair) for pair in args.pair] if args.pair else CALIBRATION_PAIRS
        figures = run_calibration(args.game or CALIBRATION_GAME, args.game_args, pairs,
                                  args.games, args.seed, progress=None if args.json else print)
        if args.json:
            print(json.dumps(figures, sort_keys=True))
        else:
            print()
            print_calibration(figures)
        return 0
    if args.peer:
        from gamegym.bench.peer import print_peer_report, run_peer_bench
        figures = run_peer_bench(args.seconds, args.searchcount, args.threads)
        if args.json:
            print(json.dumps(figures, sort_keys=True))
        else:
            print_peer_report(figures)
        return 0
    if args.backend != "processes":
        from gamegym.runtime.ray.cluster import import_ray
        import_ray(local=True)
    runs = [run_bench(args.game or "games.santorini:Santorini", args.game_args, args.seconds,
                      args.selfplayers, args.threads, args.searchcount, args.batchsize,
                      args.batch_timeout_ms, fastpath=not args.tensorflow,
                      in_selfplayers=not args.predictor_only,
                      network_seconds=args.network_seconds, network=args.network,
                      backend=args.backend, repeat=args.repeat, learner=learner)
            for learner in _learners(args.learner)]
    figures = runs[0] if len(runs) == 1 else {"runs": runs, "vs_first": _ratios(runs)}
    if args.json:
        print(json.dumps(figures, sort_keys=True))
        return 0
    for run in runs:
        print_report(run)
    if len(runs) > 1:
        print(f"relative to {runs[0]['learner']}: " + "; ".join(
            f"{name} x{r['positions_per_s']} positions/s, x{r['searches_per_s']} searches/s"
            for name, r in figures["vs_first"].items()))
    return 0


def _learners(spec: str) -> list[str]:
    """The learner presets of a comma-separated --learner; an unknown one is named now."""
    names = [name.strip() for name in spec.split(",") if name.strip()]
    unknown = [name for name in names if name not in learner_presets()]
    if not names or unknown:
        raise ValueError(f"--learner {spec!r}: known learner presets are "
                         f"{', '.join(learner_presets())}")
    return names


def _ratios(runs: list[dict]) -> dict:
    """Each later run's positions/s and searches/s as multiples of the first run's."""
    base = runs[0]
    return {run["learner"]: {key: round(run[key] / base[key], 3) if base[key] else None
                             for key in ("positions_per_s", "searches_per_s")}
            for run in runs[1:]}


def _rounded(figures: dict | None, key: str) -> float | None:
    return None if figures is None else round(figures[key], 1)


def add_commands(sub) -> None:
    p = sub.add_parser("bench", help="measure self-play throughput (searches/s, efficiency)")
    p.add_argument("--game", help="MODULE:CLASS (default: Santorini; Connect Four with "
                                   "--calibrate)")
    p.add_argument("--game-args", type=json_object, default={})
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--selfplayers", type=int, default=4)
    p.add_argument("--threads", type=int, default=24)
    p.add_argument("--searchcount", type=int, default=100)
    p.add_argument("--batchsize", type=int, default=64)
    p.add_argument("--batch-timeout-ms", type=float, default=2.0)
    p.add_argument("--tensorflow", action="store_true",
                   help="evaluate with TensorFlow, not the CPU fast path (predict.numpy_fastpath "
                        "false)")
    p.add_argument("--predictor-only", action="store_true",
                   help="every evaluation through the Predictor (predict.evaluate_in_selfplayers "
                        "false)")
    p.add_argument("--network", type=json_object, default=None,
                   help='network config fields instead of the preset\'s, e.g. '
                        '\'{"kind": "residual", "width": 32, "blocks": 3}\'')
    p.add_argument("--network-seconds", type=float, default=8.0,
                   help="time for the network paths side by side (0: skip them)")
    p.add_argument("--backend", choices=("processes", "ray", "both"), default="processes",
                   help="where the Selfplayers run: processes, Ray actors on a Ray started here, "
                        "or both one after the other (their ratio)")
    p.add_argument("--repeat", type=int, default=1,
                   help="(--backend both) run each backend this many times, in turn")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--learning", metavar="MODULE:CLASS",
                   help="instead: train this bundled game from scratch and print its curve")
    p.add_argument("--opponents", metavar="SPEC,SPEC",
                   help="(--learning) player specs to measure against, instead of the game's "
                        "benchmark opponents")
    p.add_argument("--calibrate", action="store_true",
                   help="instead: the yardsticks against each other (--pair A B, repeated; "
                        "default: Connect Four's mcts:N / alphabeta:D / alphabeta0:D pairs)")
    p.add_argument("--pair", nargs=2, action="append", metavar=("FIRST", "SECOND"),
                   help="(--calibrate) two player specs to play a match")
    p.add_argument("--games", type=int, default=40, help="(--calibrate) games per pair")
    p.add_argument("--seed", type=int, default=0, help="(--calibrate) the matches' seed")
    p.add_argument("--peer", choices=["openspiel"],
                   help="instead: our search ceiling beside this peer's MCTS on every bundled "
                        "game (--seconds per side and game, --searchcount, --threads)")
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
                   help="learner preset(s), comma-separated: " + ", ".join(learner_presets())
                        + " (--learning: one run each, one plot; else: the throughput of each, "
                        "with ratios to the first)")
    p.add_argument("--plot", type=Path, default=Path("learning.png"),
                   help="(--learning) where to write the curve")
    p.add_argument("--replay", nargs="+", choices=("window", "uniform", "prioritized", "curious"),
                   help="(--learning) one run per replay mode (and seed), side by side in one "
                        "plot, with the same seeds and minutes")
    p.add_argument("--seeds", nargs="+", type=int, default=[0],
                   help="(--learning --replay / --adapt-to) the seeds of the runs")
    p.add_argument("--adapt-to", metavar="MODULE:CLASS",
                   help="(--learning) the adaptation experiment: learn the game for --pretrain "
                        "minutes, then change to this game (same input and actions) and "
                        "measure each --replay mode re-adapting for --minutes")
    p.add_argument("--adapt-args", type=json_object, default={},
                   help="(--adapt-to) the changed game's arguments (JSON)")
    p.add_argument("--pretrain", type=float, default=4.0,
                   help="(--adapt-to) minutes of learning before the change")
    p.set_defaults(run=cmd_bench)
