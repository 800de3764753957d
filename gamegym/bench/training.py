"""`gamegym bench training --game GAME --learner L`: samples trained per CPU-second by the
training step, path by path, in one run; `--session S`: the same on a session's own model and
sample window, and the share of its learning run's wall time the Trainer spent training.

Paths (`train.compile`, gamegym.nets.trainstep), each as PATH or PATH@BATCH:
  traced      the step as a `tf.function`, at the preset's batch size
  xla         the same step compiled by XLA (`jit_compile=True`)
  PATH@BATCH  that path with another minibatch size and the learning rate scaled with it (the
              linear rule: rate x BATCH / the preset's); a larger minibatch changes what a pass
              over the window teaches, so it is measured here and left to a learning run to judge

What runs is the learner's own `train_iteration`, as the Trainer calls it (targets, Python
batching, symmetry augmentation, the step, its losses), with the preset's network and its
training options but for the schedule: one epoch over `steps` minibatches of the preset's size
(fewer of a larger size, the same samples), no validation.  The samples are the window of a
session (`--session`), or games the learner's own self-play plays with the preset's starter
network (or a fresh one), at a few searches a move: the learner's sample format, the game's
shapes.

Each path trains its own copy of the same starting weights.  A first round per path is not
counted (it traces or compiles the step: its seconds are reported); then `rounds` rounds go
path after path, each on its own slice of the window, the same slice and the same random draws
for every path.  A path's figure is its best round, in samples per CPU-second of this process
(TensorFlow's threads included; other programs on the machine move it less than wall time), and
in samples per wall-second.  Paths at the preset's batch size see the same minibatches, so their
losses are compared with the traced path's (the largest relative difference of a round's mean
loss).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gamegym.bench.presets import preset_config
from gamegym.bench.windows import self_play_window, session_window
from gamegym.config import GymConfig
from gamegym.console import json_object
from gamegym.data.samples import SampleBatch
from gamegym.game.ref import GameRef
from gamegym.learners import get_learner
from gamegym.presets import initial_model_path, learner_presets, preset_for

__all__ = [
    "COMMAND",
    "TrainingPath",
    "TrainingSettings",
    "parse_paths",
    "run_training_bench",
    "trainer_share",
]

DEFAULT_PATHS = "traced,xla,traced@2x,xla@2x"


@dataclass(frozen=True)
class TrainingSettings:
    """One training bench's settings (the flags of `gamegym bench training`)."""

    game: str | None = None  # a bundled game's spec (or `session`)
    game_args: dict[str, Any] = field(default_factory=dict)  # its arguments
    learner: str = "alphazero"  # the learner preset of the game
    session: Path | None = None  # a session folder: its model, config and sample window
    paths: str = DEFAULT_PATHS  # the paths, comma-separated (`--path`, `parse_paths`)
    steps: int = 40  # minibatches of a round (the preset's size)
    rounds: int = 3  # counted rounds of each path
    samples: int = 0  # self-play samples to play for the window (0: 1.25 x steps x batch size)
    searchcount: int = 4  # searches a move of the window's self-play
    seed: int = 0  # the seed of the self-play and the rounds


@dataclass(frozen=True)
class TrainingPath:
    """One way of running the training step: "traced" or "xla" at a minibatch size."""

    compile: str  # "traced" or "xla"
    batchsize: int

    def label(self, preset_batch: int) -> str:
        same = self.batchsize == preset_batch
        return self.compile if same else f"{self.compile}@{self.batchsize}"


def parse_paths(text: str, preset_batch: int) -> list[TrainingPath]:
    """The paths of `--path`: PATH or PATH@BATCH (BATCH a number, or Nx: N times the
    preset's), comma-separated; ValueError naming a bad one."""
    paths: list[TrainingPath] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, _, size = item.partition("@")
        if name not in ("traced", "xla"):
            raise ValueError(f"--path: {item!r}: the path is 'traced' or 'xla', not {name!r}")
        batch = preset_batch
        if size:
            try:
                batch = preset_batch * int(size[:-1]) if size.endswith("x") else int(size)
            except ValueError:
                batch = 0
            if batch < 1:
                raise ValueError(
                    f"--path: {item!r}: BATCH is a minibatch size or a multiple of the "
                    "preset's such as 2x"
                )
        path = TrainingPath(name, batch)
        if path not in paths:
            paths.append(path)
    if not paths:
        raise ValueError("--path names no path")
    return paths


def trainer_share(reports: list[dict]) -> dict:
    """How the Trainer spent a learning run's wall time, from its train/<it>.json reports:
    training (loading the window, training, committing the replay, publishing the model)
    against waiting for samples, between the first report and the last (a stop and a resume
    between two of them counts as waiting).  {} with fewer than two reports."""
    stamped = [r for r in reports if isinstance(r.get("time"), (int, float))]
    if len(stamped) < 2:
        return {}
    busy = wall = 0.0
    for before, report in zip(stamped, stamped[1:]):
        timing = report.get("timing") or {}
        spent = sum(v for k, v in timing.items() if k != "sampler" and isinstance(v, (int, float)))
        spent = spent or float(report.get("seconds") or 0.0)
        busy += spent
        wall += max(spent, float(report["time"]) - float(before["time"]))
    return {
        "iterations": len(stamped) - 1,
        "first_iteration": stamped[1].get("iteration"),
        "last_iteration": stamped[-1].get("iteration"),
        "wall_seconds": round(wall, 1),
        "training_seconds": round(busy, 1),
        "waiting_seconds": round(wall - busy, 1),
        "training_share": round(busy / wall, 4) if wall else 0.0,
    }


def reanalysed_share(reports: list[dict]) -> dict:
    """The samples the Trainer trained on over a run, from its train/<it>.json reports (a
    sample counted at each iteration whose window held it), and how many of them had
    reanalysed targets (train.reanalyze)."""
    samples = sum(int(r.get("samples") or 0) for r in reports)
    reanalysed = sum(int(r.get("reanalysed") or 0) for r in reports)
    return {
        "samples": samples,
        "reanalysed": reanalysed,
        "share": round(reanalysed / samples, 4) if samples else 0.0,
    }


class _Run:
    """One path's learner and model copy, and its rounds' figures."""

    def __init__(self, path: TrainingPath, model_file: Path, config: GymConfig, preset_batch):
        from gamegym.nets.tfsetup import load_model

        self.path = path
        self.learner = get_learner(config.train.learner)
        self.model = load_model(model_file)
        options = config.train_options()
        options.compile = path.compile
        options.batchsize = path.batchsize
        options.learning_rate = config.train.learning_rate * path.batchsize / preset_batch
        options.epochs, options.num_updates_per_train_iter = 1, 0
        options.validation_split = 0.0
        self.options = options
        self.learner.compile(self.model, options)
        self.rounds: list[dict] = []

    def train(self, batch, rng, graph) -> dict:
        cpu, wall = time.process_time(), time.perf_counter()
        report = self.learner.train_iteration(self.model, batch, self.options, rng, graph)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        return {
            "samples": report.samples,
            "cpu_seconds": cpu,
            "wall_seconds": wall,
            "loss": float(report.history["loss"][-1]),
        }


@dataclass
class _Trained:
    """What the bench trains: the game, the config, the model (a Keras model, not changed)
    and the sample window, and what they are (a preset's name or the session folder, and
    where the window came from)."""

    graph: Any
    config: GymConfig
    name: str
    session: Any = None  # the gamegym.data.session.Session, with --session
    model: Any = None
    window: SampleBatch | None = None
    source: str = ""


def _slices(n: int, size: int, rounds: int) -> list[np.ndarray]:
    """Row ranges of `size` (the whole window when it is smaller), a different one each round
    as far as the window allows."""
    size = min(size, n)
    starts = np.linspace(0, n - size, rounds + 1).astype(int) if rounds else [0]
    return [np.arange(s, s + size) for s in starts]


def run_training_bench(settings: TrainingSettings, say=None) -> dict:
    """The figures of every path of `settings.paths` (see the module doc) on a bundled game's
    preset or a session's model and window; `say` prints the progress lines (None: on stderr,
    beside --json's one object on stdout)."""
    from gamegym.nets.tfsetup import configure_tensorflow

    say = say or (lambda *text, **kw: print(*text, file=sys.stderr, **kw))
    s = settings
    loads = [os.getloadavg()[0]]
    trained = _configured(s)
    config = trained.config
    configure_tensorflow(config.predict.use_gpu, 0, threads=0)  # as the Trainer does
    learner = get_learner(config.train.learner)
    paths = parse_paths(s.paths, config.train.batchsize)  # before any self-play
    _load(trained, s, say)
    assert trained.window is not None
    figures = {
        "learner": config.train.learner,
        "preset": trained.name,
        "game": config.game,
        "game_args": trained.graph.game_args,
        "network": config.network_options(),
        "batchsize": config.train.batchsize,
        "window": {"samples": len(trained.window), "source": trained.source},
        "steps": s.steps,
        "rounds": s.rounds,
        "default_compile": learner.train_path(config.train_options()),
        "paths": _measure_paths(trained, paths, s, say),
    }
    if trained.session is not None:
        figures["trainer_share"] = trainer_share(trained.session.train_reports())
    loads.append(os.getloadavg()[0])
    figures["load_average"] = loads  # 1-minute load before and after
    return figures


def _configured(s: TrainingSettings) -> _Trained:
    """The game and the config of the session (`s.session`) or of the game's preset."""
    if s.session is not None:
        if s.game is not None:
            raise ValueError("give --game or --session, not both")
        from gamegym.data.session import Session

        session = Session(s.session)
        config = session.load_config()
        graph = config.game_ref.build()
        return _Trained(graph, config, str(s.session), session)
    if s.game is None:
        raise ValueError("give --game MODULE:CLASS (and --learner) or --session SESSION")
    graph = GameRef(s.game, s.game_args).build()
    found = preset_for(s.game, graph.game_args, s.learner)
    if found is None:
        raise ValueError(
            f"no bundled {s.learner} preset for {s.game} {graph.game_args}; "
            "the training benchmark takes a bundled game or a session (--session)"
        )
    return _Trained(graph, preset_config(found[1], {"seed": s.seed}), found[0])


def _load(trained: _Trained, s: TrainingSettings, say) -> None:
    """The model and the window to train: the session's newest model and its window, or the
    preset's starter network (or a fresh one) and games of its learner's own self-play."""
    from gamegym.nets.tfsetup import load_model

    graph, config, session = trained.graph, trained.config, trained.session
    if session is not None:
        trained.model = load_model(session.model_path(max(0, session.current_iteration())))
        trained.window = session_window(session, config, graph)
        trained.source = f"session {s.session}, iteration {session.current_iteration()}'s window"
        return
    learner = get_learner(config.train.learner)
    starter = initial_model_path(config.game, graph.game_args, config.network_options(), s.learner)
    if starter is not None:
        trained.model = load_model(starter)
    else:
        trained.model = learner.build_model(graph, config.network_options(), seed=s.seed)
    wanted = s.samples or int(s.steps * config.train.batchsize * 1.25)
    say(
        f"[bench] training: playing {wanted:,} samples of {learner.name} self-play "
        f"({s.searchcount} searches a move) with the "
        f"{'starter' if starter else 'fresh'} network of {trained.name}",
        flush=True,
    )
    trained.window = self_play_window(graph, config, trained.model, wanted, s.searchcount, s.seed)
    trained.source = f"self-play, {s.searchcount} searches a move"


def _measure_paths(trained: _Trained, paths: list[TrainingPath], s: TrainingSettings, say) -> dict:
    """Each path's figures on the trained model's copy and the window (see the module doc)."""
    config, window = trained.config, trained.window
    assert window is not None
    preset_batch = config.train.batchsize
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="gamegym-training-") as folder:
        start = Path(folder) / "start.keras"
        trained.model.save(start)
        runs = [_Run(path, start, config, preset_batch) for path in paths]
    slices = _slices(len(window), s.steps * preset_batch, s.rounds)
    for round_number, rows in enumerate(slices):
        part = window.take(rows)
        for run in runs:
            figure = run.train(part, np.random.default_rng([s.seed, round_number]), trained.graph)
            label = run.path.label(preset_batch)
            rate = figure["samples"] / max(figure["cpu_seconds"], 1e-9)
            say(
                f"[bench] training {label}: "
                + (
                    "first round (traces or compiles)"
                    if round_number == 0
                    else f"round {round_number}/{s.rounds}"
                )
                + f", {figure['samples']} samples, {rate:,.0f} per CPU-second, "
                f"{figure['wall_seconds']:.1f} s",
                flush=True,
            )
            run.rounds.append(figure)
    traced = next((r for r in runs if r.path == TrainingPath("traced", preset_batch)), None)
    for run in runs:
        first, counted = run.rounds[0], run.rounds[1:] or run.rounds
        figure = {
            "compile": run.path.compile,
            "ran": run.learner.train_path(run.options),
            "batchsize": run.path.batchsize,
            "learning_rate": run.options.learning_rate,
            "samples_per_cpu_s": round(max(r["samples"] / r["cpu_seconds"] for r in counted), 1),
            "samples_per_s": round(max(r["samples"] / r["wall_seconds"] for r in counted), 1),
            "first_round_seconds": round(first["wall_seconds"], 2),
            "losses": [round(r["loss"], 6) for r in run.rounds],
        }
        if traced is not None and run is not traced and run.path.batchsize == preset_batch:
            figure["loss_difference"] = float(
                max(
                    abs(a["loss"] - b["loss"]) / max(abs(b["loss"]), 1e-12)
                    for a, b in zip(run.rounds, traced.rounds)
                )
            )
        figures[run.path.label(preset_batch)] = figure
    base = figures.get("traced")
    if base:
        for figure in figures.values():
            figure["cpu_speedup"] = round(
                figure["samples_per_cpu_s"] / base["samples_per_cpu_s"], 3
            )
    return figures


def cmd_training(args) -> int:
    settings = TrainingSettings(
        game=args.game,
        game_args=args.game_args,
        learner=args.learner,
        session=args.session,
        paths=args.path,
        steps=args.steps,
        rounds=args.rounds,
        samples=args.samples,
        searchcount=args.searchcount,
        seed=args.seed,
    )
    figures = run_training_bench(settings)
    if args.json:
        print(json.dumps(figures, sort_keys=True))
    else:
        show(figures)
    return 0


def show(figures: dict) -> None:
    print(
        f"training step of {figures['learner']} ({figures['preset']}), batch "
        f"{figures['batchsize']}, {figures['window']['samples']:,} samples "
        f"({figures['window']['source']}); default path: {figures['default_compile']}"
    )
    for label, f in figures["paths"].items():
        extra = ""
        if "loss_difference" in f:
            extra = f", losses within {f['loss_difference']:.1e} of traced"
        print(
            f"  {label:<14} {f['samples_per_cpu_s']:>10,.0f} samples/CPU-s "
            f"{f['samples_per_s']:>10,.0f} samples/s  x{f.get('cpu_speedup', 1.0):.2f}  "
            f"first round {f['first_round_seconds']:.1f} s{extra}"
        )
    share = figures.get("trainer_share")
    if share:
        print(
            f"Trainer over iterations {share['first_iteration']}-{share['last_iteration']}: "
            f"training {share['training_seconds']:,.0f} s of {share['wall_seconds']:,.0f} s "
            f"({share['training_share']:.0%}), waiting for samples {share['waiting_seconds']:,.0f} s"
        )
    loads = figures["load_average"]
    print(f"load average (1 min) before and after: {loads[0]:.2f}, {loads[-1]:.2f}")


COMMAND = "training"
EXAMPLE = """examples:
  gamegym bench training --game games.connectfour:ConnectFour --learner muzero
  gamegym bench training --game games.connectfour:ConnectFour --path traced,xla
  gamegym bench training --session sessions/c4 --json
"""


def add_parser(sub) -> None:
    """`gamegym bench training --game GAME`: the training step's paths side by side."""
    p = sub.add_parser(
        COMMAND,
        help="samples trained per CPU-second by a learner's training step, path by path",
        description=__doc__,
        epilog=EXAMPLE,
    )
    p.add_argument(
        "--game",
        metavar="MODULE:CLASS",
        help="a bundled game, e.g. games.connectfour:ConnectFour (or --session)",
    )
    p.add_argument("--game-args", type=json_object, default={}, help="the game's arguments (JSON)")
    p.add_argument(
        "--learner",
        default="alphazero",
        help="the learner preset: " + ", ".join(learner_presets()),
    )
    p.add_argument(
        "--session",
        type=Path,
        metavar="SESSION",
        help="a session folder: its model, config and sample window, and its Trainer's share "
        "of the run's wall time (from train/<it>.json)",
    )
    p.add_argument(
        "--path",
        default=DEFAULT_PATHS,
        metavar="PATH,PATH",
        help="the paths, comma-separated: traced, xla, and PATH@BATCH (a minibatch size, or "
        "2x: twice the preset's)",
    )
    p.add_argument(
        "--steps", type=at_least(1), default=40, help="minibatches of a round (preset size)"
    )
    p.add_argument("--rounds", type=at_least(1), default=3, help="counted rounds of each path")
    p.add_argument(
        "--samples",
        type=at_least(0),
        default=0,
        help="self-play samples to play for the window (0: 1.25 x steps x batch size)",
    )
    p.add_argument(
        "--searchcount",
        type=at_least(1),
        default=4,
        help="searches a move of the window's self-play",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the self-play and the rounds")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=cmd_training)


def at_least(low: int):
    """An argparse type: an integer >= `low`."""

    def number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value

    return number
