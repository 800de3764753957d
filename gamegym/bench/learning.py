"""`gamegym bench learning --game GAME`: train from scratch with the game's preset and measure it.

The gym runs in a temporary session (or the `--keep` folder); every `--interval-seconds` of
training the newest iteration is evaluated in this process against the game's benchmark
opponents (gamegym.bench.curve): the exact solver where the game is small; for Connect Four the
two yardsticks of the AlphaZero literature, UCT with 1,000 random rollouts a move (`mcts:1000`)
and alpha-beta to depth 5 with the game's heuristic (`alphabeta:5`), and heuristic-free
alpha-beta to depth 4 (`alphabeta0:4`).  For solvable games the curve also records the share of
positions of the model's own games where it played a solver-optimal move.  Several learner
presets (`--learner bootstrapped,dqn`) run one after the other with the same seeds and budget,
and their curves share one plot, written beside the kept session, or to `--plot`, or to the
temporary folder; the command prints where.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gamegym.bench.capabilities import play_rule, player_searches, selfplay_searches
from gamegym.bench.curve import (
    EVAL_THREADS,
    Yardstick,
    bench_opponents,
    minutes_to,
    plot_curves,
    train_and_measure,
)
from gamegym.bench.presets import bundled_preset, preset_config
from gamegym.bench.spread import spread_over_seeds, spread_text
from gamegym.bench.training import reanalysed_share, trainer_share
from gamegym.config import GymConfig
from gamegym.console import ProgressBars, comma_list, json_object
from gamegym.game.players import Solver
from gamegym.game.ref import GameRef
from gamegym.nets.fastmodels import int8_share
from gamegym.presets import initial_model_path, learner_presets

__all__ = [
    "COMMAND",
    "LearningSettings",
    "add_parser",
    "add_training_flags",
    "plot_destination",
    "run_learning_bench",
    "run_learning_benches",
]


@dataclass(frozen=True)
class LearningSettings:
    """One learning run's settings (the flags of `gamegym bench learning`, for one learner
    preset, config variant and seed)."""

    game: str  # a bundled game's spec, e.g. "games.tictactoe:TicTacToe"
    game_args: dict[str, Any] = field(default_factory=dict)  # its arguments (they pick the preset)
    learner: str = "alphazero"  # the learner preset (a learner, or a variant such as "dqn")
    minutes: float = 10.0  # training time, in minutes (the command's --seconds / 60)
    interval: float = 2.0  # minutes between curve points (--interval-seconds / 60)
    games: int = 20  # games against each opponent per curve point
    final_factor: int = 4  # the final point plays this many times as many games
    searchcount: int = 100  # searches per move of the evaluated iteration
    opponents: tuple[str, ...] | None = None  # player specs instead of the game's opponents
    overrides: dict[str, Any] | None = None  # changes to the preset's config (GymConfig.updated)
    seed: int = 0  # the session's seed and the evaluation's
    plot: Path | None = None  # where to draw the curves (None: no plot)
    keep: Path | None = None  # train in this new session folder and keep it (None: a temporary one)

    @property
    def game_ref(self) -> GameRef:
        """The game, by reference (`game` and `game_args`)."""
        return GameRef(self.game, self.game_args)


def run_learning_bench(settings: LearningSettings, solver: Solver | None = None) -> dict:
    """Train `settings.game` from scratch for `settings.minutes` with the preset of
    `settings.learner` and return its curve (see the module doc); `solver`: the game's exact
    solver, when the caller has solved it.  The game is this process's graph of the
    settings' reference (built once, whatever the number of runs)."""
    from gamegym.runtime.gym import GameGym

    s = settings
    game = s.game_ref
    graph = game.build()
    found = bundled_preset(game, s.learner)
    if s.keep is not None and Path(s.keep).exists():
        raise ValueError(
            f"--keep {s.keep}: that folder exists; the benchmark trains from scratch in a new "
            "session"
        )
    yardstick = Yardstick.of(game, s.games, s.searchcount, s.opponents, solver)
    # the config and the solver are built once here and passed down; the game is asked for
    # by its reference
    config = preset_config(found[1], {"status_interval": 30.0, "seed": s.seed}, s.overrides)
    searches = _announce(s, config)
    with tempfile.TemporaryDirectory(prefix="gamegym-learn-") as folder, ProgressBars() as bars:
        gym = GameGym(
            Path(s.keep) if s.keep is not None else Path(folder) / "learn",
            config=config,
            initial_model=initial_model_path(
                s.game, graph.game_args, config.network_options(), s.learner
            ),
        )
        rng = np.random.default_rng(s.seed)
        curve, final, peak_rss = train_and_measure(
            gym, yardstick, s.minutes, s.interval, rng, s.final_factor, bars
        )
        reports = gym.session.train_reports()
        run = {
            "curve": curve,
            "final": final,
            "peak_rss_mib_by_role": peak_rss,
            # over the training clock (the gym ran `minutes`; the evaluations pause nothing)
            "selfplay_positions_per_s": round(
                gym.monitor.totals.get("selfplayer.positions", 0.0) / max(1e-9, s.minutes * 60), 1
            ),
            # training against waiting for samples (gamegym.bench.training.trainer_share)
            "trainer_share": trainer_share(reports),
        }
        if config.train.reanalyze:  # how much of what was trained on had reanalysed targets
            run["reanalysed"] = reanalysed_share(reports)
        int8 = int8_share(gym.session) if config.predict.precision == "int8" else None
    figures = _figures(s, graph, config, yardstick.opponents, searches, run)
    if int8 is not None:
        figures["int8_models"] = {"int8": int8[0], "models": int8[1]}
        print(
            f"[bench] int8: {int8[0]} of {int8[1]} models passed the int8 check and ran int8 "
            "(the others float32)",
            flush=True,
        )
    if s.plot is not None and curve:
        plot_curves([figures], s.plot)
        figures["plot"] = str(s.plot)
    return figures


def _announce(s: LearningSettings, config: GymConfig) -> bool:
    """Print how the newest iteration plays in the curve's matches; whether it searches."""
    searches = player_searches(config)
    if searches:
        print(
            f"[bench] {s.learner}: the newest iteration plays with {s.searchcount} searches per "
            f"move ({EVAL_THREADS} concurrent); self-play uses {_selfplay_searches(config)}",
            flush=True,
        )
    else:
        print(
            f"[bench] {s.learner}: the newest iteration plays {play_rule(config)}, no "
            "search (nor in self-play)",
            flush=True,
        )
    return searches


def _figures(
    s: LearningSettings, graph, config: GymConfig, opponents: tuple, searches: bool, run: dict
) -> dict:
    """A run's figures: what ran (`s`, the game, the config) and what it measured (`run`)."""
    return {
        "game": s.game,
        "game_args": graph.game_args,
        "learner": s.learner,
        "minutes": s.minutes,
        "opponent": opponents[0],
        "opponents": list(opponents),
        "curve": run["curve"],
        "final": run["final"],
        "eval_searchcount": s.searchcount if searches else 0,
        "eval_threads": EVAL_THREADS if searches else 0,
        "eval_player": "search" if searches else "vote",
        "selfplay_searchcount": _selfplay_searches(config),
        "selfplay_positions_per_s": run["selfplay_positions_per_s"],
        "replay": config.train.replay,
        "trainer_share": run["trainer_share"],
        "seed": s.seed,
        "peak_rss_mib_by_role": run["peak_rss_mib_by_role"],
        **({"reanalysed": run["reanalysed"]} if "reanalysed" in run else {}),
    }


def _selfplay_searches(config) -> int:
    """Searches per move in self-play (0: the learner's self-play does not search)."""
    return config.selfplay.search.searchcount if selfplay_searches(config.train.learner) else 0


def run_learning_benches(
    settings: LearningSettings,
    learners: list[str] | tuple[str, ...] | None = None,
    variants: dict[str, dict] | None = None,
    seeds: tuple[int, ...] | None = None,
) -> dict:
    """The learning bench of each learner preset (None: the settings' one), each config variant
    (name -> changes to the preset, as GymConfig.updated takes them; None: the settings'
    overrides) and each seed (None: the settings' one), in turn, with the same budget; one plot
    (`settings.plot`) with all their curves, and the minutes each run took to reach each
    threshold.  With `settings.keep`, each run's session is kept in a folder of it."""
    learners = tuple(learners or (settings.learner,))
    seeds = tuple(seeds or (settings.seed,))
    runs = [
        (learner, name, changes, seed)
        for learner in learners
        for name, changes in (variants or {"": settings.overrides or {}}).items()
        for seed in seeds
    ]
    # the game is built once for every run (GameRef.build), and solved once where the runs
    # measure against the solver (about 2.5 minutes for Santorini 3×3-1)
    if len(runs) == 1:
        learner, _, changes, seed = runs[0]
        one = dataclasses.replace(settings, learner=learner, overrides=changes or None, seed=seed)
        return run_learning_bench(one)
    for learner in learners:  # a learner without a preset fails now, not after the solve
        bundled_preset(settings.game_ref, learner)
    opponents, solver = bench_opponents(settings.game_ref, settings.opponents)
    results = []
    for learner, name, changes, seed in runs:
        label = " ".join(
            part
            for part in (
                learner if len(learners) > 1 else "",
                name,
                f"seed {seed}" if len(seeds) > 1 else "",
            )
            if part
        )
        one = dataclasses.replace(
            settings,
            learner=learner,
            overrides=changes or None,
            seed=seed,
            opponents=opponents,
            plot=None,
            keep=None if settings.keep is None else Path(settings.keep) / label.replace(" ", "-"),
        )
        result = run_learning_bench(one, solver)
        result.update(label=label, variant=name, overrides=changes)
        results.append(result)
    figures: dict[str, Any] = {
        "runs": results,
        "minutes_to": {r["label"]: minutes_to(r["curve"]) for r in results},
    }
    spread = spread_over_seeds(results)
    if spread:
        figures["across_seeds"] = spread
    if settings.plot is not None:
        plot_curves(results, settings.plot)
        figures["plot"] = str(settings.plot)
    return figures


def cmd_learning(args) -> int:
    learners = [name.strip() for name in args.learner.split(",") if name.strip()]
    runs = len(learners) * len(args.variant or [None]) * len(args.seed)
    settings = LearningSettings(
        game=args.game,
        game_args=args.game_args,
        minutes=args.seconds / 60,
        interval=args.interval_seconds / 60,
        games=args.eval_games,
        searchcount=args.eval_searchcount,
        opponents=tuple(args.opponent) if args.opponent else None,
        plot=plot_destination(args.plot, args.keep, runs, "learning"),
        keep=args.keep,
    )
    figures = run_learning_benches(
        settings,
        learners,
        variants=dict(args.variant) if args.variant else None,
        seeds=tuple(args.seed),
    )
    if args.json:
        print(json.dumps(figures, sort_keys=True))
    else:
        print_report(figures)
        if figures.get("plot"):
            print(f"curves: {figures['plot']}")
    return 0


def print_report(figures: dict) -> None:
    """Each run's final point, self-play rate, memory and Trainer share; the middle band of the
    solved positions over the seeds of each variant; the minutes to each threshold."""
    for run in figures.get("runs", [figures]):
        rss = ", ".join(f"{k} {v:.0f}" for k, v in sorted(run["peak_rss_mib_by_role"].items()))
        print(
            f"final ({run.get('label') or run['learner']}): {run['final']}; self-play "
            f"{run['selfplay_positions_per_s']} positions/s\npeak memory by role: {rss} MiB "
            "resident (the benchmark's own process, 'gym', also evaluates with TensorFlow)"
        )
        share = run.get("trainer_share")
        if share:
            print(
                f"Trainer: training {share['training_seconds']:,.0f} s of "
                f"{share['wall_seconds']:,.0f} s between its first and last iteration "
                f"({share['training_share']:.0%}), the rest waiting for samples"
            )
        reanalysed = run.get("reanalysed")
        if reanalysed:
            print(
                f"Reanalyze: {reanalysed['reanalysed']:,} of the {reanalysed['samples']:,} samples "
                f"trained on ({reanalysed['share']:.0%}) had reanalysed targets"
            )
    for line in spread_text(figures.get("across_seeds", {})):
        print(line)
    for label, reached in figures.get("minutes_to", {}).items():
        print(
            f"minutes to ({label}): "
            + ", ".join(
                f"{name} {'never' if m is None else f'{m:.1f}'}" for name, m in reached.items()
            )
        )


COMMAND = "learning"
EXAMPLE = """examples:
  gamegym bench learning --game games.tictactoe:TicTacToe --seconds 600
  gamegym bench learning --game games.tictactoe:TicTacToe --learner bootstrapped,dqn --json
  gamegym bench learning --game games.connectfour:ConnectFour --opponent alphabeta0:4 \\
      --seconds 4500 --interval-seconds 900
  gamegym bench learning --game games.tictactoe:TicTacToe --seconds 300 --seed 0,1 \\
      --variant 'puct={}' --variant 'gumbel={"selfplay": {"search": {"rule": "gumbel"}}}'
"""


def add_training_flags(p: argparse.ArgumentParser) -> None:
    """The flags of a bench that trains a bundled game and measures it (learning, replay)."""
    p.add_argument(
        "--game",
        required=True,
        metavar="MODULE:CLASS",
        help="a bundled game, e.g. games.tictactoe:TicTacToe",
    )
    p.add_argument(
        "--game-args",
        type=json_object,
        default={},
        help="the game's arguments (JSON; they pick the preset)",
    )
    p.add_argument("--seconds", type=float, default=600.0, help="training time of a run")
    p.add_argument(
        "--interval-seconds",
        type=float,
        default=120.0,
        help="training time between two evaluations (points of the curve)",
    )
    p.add_argument(
        "--eval-games",
        type=int,
        default=20,
        help="games per curve point; the final point plays 4x as many",
    )
    p.add_argument(
        "--eval-searchcount",
        type=int,
        default=100,
        help="searches per move of the evaluated iteration",
    )
    p.add_argument(
        "--plot",
        type=Path,
        metavar="PATH",
        help="where to write the curves (PNG; default: the plots folder of the session --keep "
        "keeps, else a new file in the temporary folder; the command prints where)",
    )
    p.add_argument(
        "--seed",
        type=comma_list(int),
        default=[0],
        metavar="N,N",
        help="one run per seed, the same seeds for every learner, variant or mode",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")


def add_parser(sub) -> None:
    """`gamegym bench learning --game GAME`: train a bundled game from scratch and print its
    curve."""
    p = sub.add_parser(
        COMMAND,
        help="train a bundled game from scratch and print its curve",
        description=__doc__,
        epilog=EXAMPLE,
    )
    add_training_flags(p)
    p.add_argument(
        "--learner",
        default="alphazero",
        metavar="NAME,NAME",
        help="learner preset(s), comma-separated: "
        + ", ".join(learner_presets())
        + " (one run each, one plot)",
    )
    p.add_argument(
        "--opponent",
        type=comma_list(),
        metavar="SPEC,SPEC",
        help="player specs to measure against, instead of the game's benchmark opponents",
    )
    p.add_argument(
        "--keep",
        type=Path,
        metavar="SESSION",
        help="train in this new session folder and keep it (with several runs: "
        "one folder each inside it)",
    )
    p.add_argument(
        "--variant",
        type=variant,
        action="append",
        metavar="NAME=JSON",
        help="a run with these changes to the preset's config, e.g. "
        '\'gumbel={"selfplay": {"search": {"rule": "gumbel"}}}\' (repeat it: one run '
        "each, side by side in one plot; NAME={} is the preset as it is)",
    )
    p.set_defaults(run=cmd_learning)


def variant(text: str) -> tuple[str, dict]:
    """NAME=JSON of --variant: a name and config changes (a JSON object)."""
    name, sep, changes = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not NAME=JSON, e.g. "
            'gumbel=\'{"selfplay": {"search": {"rule": "gumbel"}}}\''
        )
    return name.strip(), json_object(changes)


def plot_destination(plot: Path | None, keep: Path | None, runs: int, name: str) -> Path:
    """Where a bench that trains writes its curves: `plot` when given; else beside the kept
    session (its plots folder; with several runs, the folder that holds them); else a new file
    in the temporary folder (the runs' own sessions are gone by then), never the current
    folder.  The command prints the path it wrote."""
    if plot is not None:
        return plot
    if keep is not None:
        return Path(keep) / "plots" / f"{name}.png" if runs == 1 else Path(keep) / f"{name}.png"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path(tempfile.gettempdir()) / f"gamegym-bench-{name}-{stamp}-{os.getpid()}.png"
