"""Replays side by side: `gamegym bench replay --game GAME --replay MODE,MODE [--adapt-to GAME2]`.

Side by side: the game's preset is trained from scratch once per replay mode and seed, each
run with the same wall-clock budget and the same seed (the session's and the evaluation's).
The buffer replays use the game's `REPLAY_SETTINGS` (the same buffer and number of minibatches
for all of them, so `uniform` is the fair baseline); `window` is the preset as it is.

Adaptation (Curious Replay's main claim: faster adaptation when the world changes): per seed,
a base session learns the game for `--pretrain-seconds` with `curious` (so its samples carry
replay counts and priorities); then, for each mode, `gamegym continue` carries the base's
model, samples and replay state into a session under the changed game (`--adapt-to`,
`--adapt-args`), which trains for `--seconds` measured against the new rules' solver.

The figure of a run is its *minutes to perfect play*: the first curve point (minutes of
training, evaluation excluded) with no loss against the exact solver, both sides, that the
next point confirms (a last point needs no confirmation).  For each mode the median over the
seeds (a run that never got there counts as longer than any), and its ratio to `uniform`'s.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gamegym.bench.curve import EVAL_THREADS, Yardstick, bench_opponents, train_and_measure
from gamegym.bench.learning import (
    LearningSettings,
    add_training_flags,
    plot_destination,
    run_learning_bench,
)
from gamegym.bench.presets import preset_config
from gamegym.console import comma_list, json_object
from gamegym.data.sumtree import SumTree
from gamegym.game.ref import GameRef
from gamegym.presets import get_preset, initial_model_path, preset_for
from gamegym.registry import REPLAYS

__all__ = [
    "REPLAY_SETTINGS",
    "ReplaySettings",
    "minutes_to_perfect",
    "run_adaptation",
    "run_replay_comparison",
]

# preset -> the buffer replays' training settings: a buffer about the size of the preset's
# window, and about as many minibatches per iteration as its epochs over that window make
REPLAY_SETTINGS = {
    "tictactoe": {"replay_capacity": 100_000, "num_updates_per_train_iter": 200},
    "connectfour": {"replay_capacity": 20000, "num_updates_per_train_iter": 250},
    "santorini-3-1": {"replay_capacity": 8000, "num_updates_per_train_iter": 300},
}


def sumtree_timing(
    items: int = 1_000_000, batch: int = 256, repeats: int = 200, seed: int = 0
) -> dict:
    """Median milliseconds to draw `batch` of `items` by priority, and to update their
    priorities, in the SumTree the buffer replays use."""
    rng = np.random.default_rng(seed)
    tree = SumTree(items)
    tree.fill(rng.random(items) * 100)
    draw, update = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        index = tree.sample(batch, rng)
        drawn = time.perf_counter()
        tree.update(index, rng.random(batch))
        draw.append(drawn - started)
        update.append(time.perf_counter() - drawn)
    return {
        "items": items,
        "batch": batch,
        "draw_ms": round(statistics.median(draw) * 1e3, 3),
        "update_ms": round(statistics.median(update) * 1e3, 3),
    }


def replay_overrides(preset: str, mode: str) -> dict:
    """The config changes that make the preset train with replay `mode`."""
    if not REPLAYS.get(mode).uses_buffer:  # whole-window epochs
        return {"train": {"replay": mode, "num_updates_per_train_iter": 0}}
    # another learner's preset of a game ("tictactoe-muzero") takes the game's settings
    settings = REPLAY_SETTINGS.get(preset) or REPLAY_SETTINGS[preset.rsplit("-", 1)[0]]
    return {"train": {"replay": mode, **settings}}


def minutes_to_perfect(curve: list[dict]) -> float | None:
    """Minutes of the first point with no loss that the next point confirms (see module)."""
    for i, point in enumerate(curve):
        if point["losses"] == 0 and (i + 1 == len(curve) or curve[i + 1]["losses"] == 0):
            return point["minutes"]
    return None


def summarise(runs: list[dict], modes: list[str]) -> dict:
    """Per mode: minutes to perfect play of each run, their median, and the ratio to uniform."""
    summary: dict[str, dict[str, Any]] = {}
    for mode in modes:
        times = [r["minutes_to_perfect"] for r in runs if r["replay"] == mode]
        # a run that never got there counts as longer than any that did
        middle = statistics.median([np.inf if t is None else t for t in times])
        median = None if not np.isfinite(middle) else round(float(middle), 2)
        summary[mode] = {
            "minutes_to_perfect": times,
            "median": median,
            "reached": sum(t is not None for t in times),
            "runs": len(times),
        }
    base = summary.get("uniform", {}).get("median")
    for row in summary.values():
        if base and row["median"] is not None:
            row["ratio_to_uniform"] = round(row["median"] / base, 3)
    return summary


@dataclass(frozen=True)
class ReplaySettings:
    """One replay bench's settings (the flags of `gamegym bench replay`)."""

    game: str  # a bundled game's spec
    game_args: dict[str, Any] = field(default_factory=dict)  # its arguments
    modes: tuple[str, ...] = ("uniform", "curious")  # the replay modes (train.replay)
    seeds: tuple[int, ...] = (0,)  # one run per mode and seed
    minutes: float = 10.0  # training minutes of a run (with `adapt_to`: after the change;
    #                        the command's --seconds / 60)
    interval: float = 2.0  # minutes between curve points (--interval-seconds / 60)
    games: int = 20  # games per curve point against the solver
    searchcount: int = 100  # searches per move of the evaluated iteration
    plot: Path | None = None  # where to draw the runs (None: no plot)
    adapt_to: str | None = None  # the adaptation experiment's changed game (None: side by side)
    adapt_args: dict[str, Any] = field(default_factory=dict)  # the changed game's arguments
    # (adapt_to) minutes of learning before the change (the command's --pretrain-seconds / 60)
    pretrain: float = 4.0


def run_replay_comparison(settings: ReplaySettings) -> dict:
    """One learning run per mode and seed (see the module); the figures and one plot."""
    s = settings
    game = GameRef(s.game, s.game_args)
    graph = game.build()  # this process's graph of it, the one every run measures on
    preset = _preset(s.game, graph.game_args, s.modes)
    solver = bench_opponents(game)[1]  # solved once for every run, where it is solvable
    runs = []
    for seed in s.seeds:
        for mode in s.modes:
            print(f"[bench] replay {mode}, seed {seed}: {s.minutes:g} minutes", flush=True)
            learning = LearningSettings(
                s.game,
                s.game_args,
                minutes=s.minutes,
                interval=s.interval,
                games=s.games,
                searchcount=s.searchcount,
                overrides=replay_overrides(preset, mode),
                seed=seed,
            )
            figures = run_learning_bench(learning, solver)
            runs.append(_run_record(mode, seed, figures["curve"], figures["final"]))
    result = _result(s, graph, preset, runs)
    if s.plot is not None:
        plot_runs(result, s.plot, f"{s.game.split(':')[1]} {graph.game_args or ''}")
        result["plot"] = str(s.plot)
    return result


def run_adaptation(settings: ReplaySettings) -> dict:
    """Per seed: a base learns the game, then each mode re-adapts to `settings.adapt_to` (see
    the module)."""
    from gamegym.runtime.continuation import continue_session
    from gamegym.runtime.gym import GameGym

    s = settings
    if s.adapt_to is None:
        raise ValueError("the adaptation experiment needs the changed game (--adapt-to)")
    new_game = GameRef(s.adapt_to, s.adapt_args)
    graph, new_graph = GameRef(s.game, s.game_args).build(), new_game.build()
    preset = _preset(s.game, graph.game_args, s.modes)
    yardstick = Yardstick.of(new_game, s.games, s.searchcount)
    if yardstick.solver is None:
        raise ValueError(
            f"the adaptation experiment measures against the exact solver; "
            f"{s.adapt_to} has none in the benchmark"
        )
    runs = []
    for seed in s.seeds:
        with tempfile.TemporaryDirectory(prefix="gamegym-adapt-") as folder:
            base, pretrained = _pretrain(s, graph, preset, seed, Path(folder) / "base")
            for mode in s.modes:
                print(
                    f"[bench] seed {seed}: {s.adapt_to} {new_graph.game_args} with replay "
                    f"{mode} for {s.minutes:g} minutes",
                    flush=True,
                )
                session = continue_session(
                    base.session.path,
                    Path(folder) / mode,
                    s.adapt_to,
                    s.adapt_args,
                    replay_overrides(preset, mode),
                )
                curve, final, _ = train_and_measure(
                    GameGym(session.path),
                    yardstick,
                    s.minutes,
                    s.interval,
                    np.random.default_rng(seed),
                )
                runs.append({**_run_record(mode, seed, curve, final), "base": pretrained})
    result = {
        **_result(s, graph, preset, runs),
        "adapt_to": s.adapt_to,
        "adapt_args": new_graph.game_args,
        "pretrain": s.pretrain,
    }
    if s.plot is not None:
        title = f"after the change to {s.adapt_to.split(':')[1]} {new_graph.game_args}"
        plot_runs(result, s.plot, title)
        result["plot"] = str(s.plot)
    return result


def _pretrain(s: ReplaySettings, graph, preset: str, seed: int, folder: Path):
    """The base session of a seed, in `folder`: the game learnt for `s.pretrain` minutes with
    `curious` (so its samples carry replay counts and priorities); (its gym, its iteration
    and minutes)."""
    from gamegym.runtime.gym import GameGym

    config = preset_config(
        get_preset(preset),
        {"status_interval": 30.0, "seed": seed},
        replay_overrides(preset, "curious"),
    )
    base = GameGym(
        folder,
        config=config,
        initial_model=initial_model_path(s.game, graph.game_args, config.network_options()),
    )
    print(
        f"[bench] seed {seed}: learning {s.game} {graph.game_args} for {s.pretrain:g} "
        "minutes (curious)",
        flush=True,
    )
    started = time.monotonic()
    code = base.resume(max_seconds=s.pretrain * 60, console=False)
    if code:
        raise RuntimeError(f"the base session stopped with exit code {code}")
    pretrained = {
        "iteration": base.session.current_iteration(),
        "minutes": round((time.monotonic() - started) / 60, 2),
    }
    return base, pretrained


def _result(s: ReplaySettings, graph, preset: str, runs: list[dict]) -> dict:
    """The figures every replay bench reports: what ran, each run, the summary per mode and
    the sum tree's timing."""
    return {
        "game": s.game,
        "game_args": graph.game_args,
        "minutes": s.minutes,
        "interval": s.interval,
        "eval_games": s.games,
        "eval_searchcount": s.searchcount,
        "eval_threads": EVAL_THREADS,
        "settings": REPLAY_SETTINGS.get(preset),
        "runs": runs,
        "summary": summarise(runs, list(s.modes)),
        "sumtree": sumtree_timing(),
    }


def _preset(game: str, game_args: dict, modes: tuple[str, ...]) -> str:
    found = preset_for(game, game_args)
    if found is None:
        raise ValueError(
            f"no bundled preset for {game} {game_args}; the replay benchmark runs "
            "on the bundled games"
        )
    if found[0] not in REPLAY_SETTINGS and any(REPLAYS.get(m).uses_buffer for m in modes):
        raise ValueError(f"no replay settings for the preset {found[0]}")
    return found[0]


def _run_record(mode: str, seed: int, curve: list, final: dict) -> dict:
    return {
        "replay": mode,
        "seed": seed,
        "curve": curve,
        "final": final,
        "minutes_to_perfect": minutes_to_perfect(curve),
    }


def plot_runs(result: dict, path: Path, title: str) -> None:
    """One plot: losses against the solver (top) and the optimal-move rate (bottom) over
    minutes, a colour per replay mode, a line style per seed."""
    from gamegym.data.figures import new_figure, save_figure

    figure, (top, bottom) = new_figure((7, 6), rows=2)
    colours = {mode: f"C{i}" for i, mode in enumerate(REPLAYS.names())}
    styles = ["-", "--", ":", "-."]
    seeds = sorted({r["seed"] for r in result["runs"]})
    for run in result["runs"]:
        minutes = [p["minutes"] for p in run["curve"]]
        style = dict(
            color=colours.get(run["replay"], "k"),
            marker=".",
            linestyle=styles[seeds.index(run["seed"]) % len(styles)],
        )
        label = f"{run['replay']} seed {run['seed']}"
        top.plot(minutes, [p["losses"] for p in run["curve"]], label=label, **style)
        if "optimal_move_rate" in run["curve"][0]:
            bottom.plot(minutes, [p["optimal_move_rate"] for p in run["curve"]], **style)
    top.set_ylabel(f"losses in {result['eval_games']} games vs solver")
    top.set_ylim(-0.5, max([1] + [p["losses"] for r in result["runs"] for p in r["curve"]]) + 0.5)
    bottom.set_ylabel("optimal-move rate")
    bottom.set_xlabel("minutes of training (2-core CPU)")
    bottom.set_ylim(0, 1.05)
    for axis in (top, bottom):
        axis.grid(alpha=0.3)
    top.legend(fontsize="x-small", ncol=2)
    medians = ", ".join(
        f"{m} {s['median']:.1f}" if s["median"] is not None else f"{m} -"
        for m, s in result["summary"].items()
    )
    top.set_title(f"{title}\nmedian minutes to no losses: {medians}", fontsize="medium")
    figure.tight_layout()
    save_figure(figure, path)


def cmd_replay(args) -> int:
    settings = ReplaySettings(
        game=args.game,
        game_args=args.game_args,
        modes=tuple(args.replay),
        seeds=tuple(args.seed),
        minutes=args.seconds / 60,
        interval=args.interval_seconds / 60,
        games=args.eval_games,
        searchcount=args.eval_searchcount,
        plot=plot_destination(args.plot, None, len(args.replay) * len(args.seed), "replay"),
        adapt_to=args.adapt_to,
        adapt_args=args.adapt_args,
        pretrain=args.pretrain_seconds / 60,
    )
    result = run_adaptation(settings) if args.adapt_to else run_replay_comparison(settings)
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print_report(result)
        if result.get("plot"):
            print(f"curves: {result['plot']}")
    return 0


def print_report(result: dict) -> None:
    """The sum tree's timing and each mode's minutes to no losses."""
    tree = result["sumtree"]
    print(
        f"sum tree: {tree['batch']} of {tree['items']:,} items drawn in "
        f"{tree['draw_ms']:.3f} ms, their priorities updated in {tree['update_ms']:.3f} ms"
    )
    for mode, row in result["summary"].items():
        ratio = row.get("ratio_to_uniform")
        print(
            f"{mode:12s} minutes to no losses {row['minutes_to_perfect']}, median "
            f"{row['median']}, reached in {row['reached']} of {row['runs']}"
            + ("" if ratio is None else f", {ratio:.2f}x uniform")
        )


COMMAND = "replay"
EXAMPLE = """examples:
  gamegym bench replay --game games.tictactoe:TicTacToe --replay uniform,curious --seed 0,1,2
  gamegym bench replay --game games.tictactoe:TicTacToe \\
      --adapt-to games.tictactoe:TicTacToeVariant --adapt-args '{"misere": true}' \\
      --pretrain-seconds 240 --seconds 360 --replay uniform,curious
"""


def add_parser(sub) -> None:
    """`gamegym bench replay --game GAME`: replay modes side by side, or re-adapting to new
    rules."""
    p = sub.add_parser(
        COMMAND,
        help="replay modes side by side (--adapt-to: after a change of rules)",
        description=__doc__,
        epilog=EXAMPLE,
    )
    add_training_flags(p)
    p.add_argument(
        "--replay",
        type=comma_list(choices=REPLAYS.names()),
        default=["uniform", "curious"],
        metavar="MODE,MODE",
        help="the replay modes (train.replay): " + ", ".join(REPLAYS.names()) + "; one run per "
        "mode and seed",
    )
    p.add_argument(
        "--adapt-to",
        metavar="MODULE:CLASS",
        help="the adaptation experiment: learn the game for --pretrain-seconds, then "
        "change to this game (same input and actions) and measure each mode "
        "re-adapting for --seconds",
    )
    p.add_argument(
        "--adapt-args",
        type=json_object,
        default={},
        help="(--adapt-to) the changed game's arguments (JSON)",
    )
    p.add_argument(
        "--pretrain-seconds",
        type=float,
        default=240.0,
        help="(--adapt-to) learning time before the change",
    )
    p.set_defaults(run=cmd_replay)
