"""Session configuration: one dataclass per concern, validated when built, JSON round trip.

`GymConfig.from_dict` rejects unknown keys (suggesting the closest known one) and values out of
range, naming the field.  `GymConfig.check_resume` refuses changes to fields fixed at creation.
"""

from __future__ import annotations

import contextvars
import copy
import dataclasses
import difflib
import importlib
import json
import math
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from gamegym.game.playerspecs import check_player_spec
from gamegym.registry import BACKENDS, LEARNERS, REPLAYS, SEARCHES, Registry

__all__ = [
    "ConfigError",
    "NetworkConfig",
    "PredictConfig",
    "SelfplayConfig",
    "TrainConfig",
    "EvaluateConfig",
    "GymConfig",
    "check",
    "int_in",
    "float_in",
    "boolean",
    "choice",
    "merged_settings",
    "PRECISIONS",
    "COMPILES",
]


class ConfigError(ValueError):
    """A configuration value or key is not acceptable; the message names the field."""


def _check(condition: bool, name: str, message: str) -> None:
    if not condition:
        raise ConfigError(f"config field '{name}' {message}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _int_in(obj: Any, name: str, low: int, high: int | None = None) -> None:
    value = getattr(obj, name)
    _check(_is_int(value), f"{_section(obj)}{name}", f"must be an integer, got {value!r}")
    _check(
        value >= low and (high is None or value <= high),
        f"{_section(obj)}{name}",
        f"must be in [{low}, {high if high is not None else '∞'}], got {value}",
    )


def _float_in(
    obj: Any, name: str, low: float, high: float | None = None, low_open: bool = False
) -> None:
    value = getattr(obj, name)
    _check(_is_number(value), f"{_section(obj)}{name}", f"must be a number, got {value!r}")
    ok = value > low if low_open else value >= low
    _check(
        ok and (high is None or value <= high),
        f"{_section(obj)}{name}",
        f"must be in {'(' if low_open else '['}{low}, {high if high is not None else '∞'}], "
        f"got {value}",
    )


def _bool(obj: Any, name: str) -> None:
    value = getattr(obj, name)
    _check(
        isinstance(value, bool), f"{_section(obj)}{name}", f"must be true or false, got {value!r}"
    )


def _choice(obj: Any, name: str, choices: tuple) -> None:
    value = getattr(obj, name)
    _check(
        value in choices, f"{_section(obj)}{name}", f"must be one of {list(choices)}, got {value!r}"
    )


def _registered(obj: Any, name: str, registry: Registry) -> None:
    """The field names something registered in `registry` (gamegym.registry); any name while
    a config whose plugins were not imported is built (one of them may register it)."""
    value = getattr(obj, name)
    if isinstance(value, str) and value and _PENDING_PLUGINS.get():
        return
    _check(
        isinstance(value, str) and value in registry,
        f"{_section(obj)}{name}",
        f"must be one of {registry.names()}, got {value!r}",
    )


def _section(obj: Any) -> str:
    return getattr(obj, "_section", "")


# the checks above, for the config sections of learners and replays defined elsewhere
check = _check
int_in, float_in, boolean, choice = _int_in, _float_in, _bool, _choice


# while GymConfig.__post_init__ builds a config without importing its plugins: those of them
# not imported (their names may be registered by them, so registry fields are not checked)
_PENDING_PLUGINS: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "gamegym_pending_plugins", default=()
)
# set by GymConfig.from_dict(..., plugins=False): the config being built imports no plugin
_NO_PLUGINS: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "gamegym_no_plugins", default=False
)

PRECISIONS = ("float32", "int8")  # predict.precision: the CPU fast path's arithmetic
COMPILES = ("auto", "xla", "traced")  # train.compile (gamegym.nets.trainstep)
WEIGHT_AVERAGES = ("none", "ema")  # train.weight_average (gamegym.runtime.weightaverage)
GUMBEL_RESCALES = ("node", "score")  # selfplay.gumbel_rescale (gamegym.search.gumbel.RESCALES)


@dataclass
class NetworkConfig:
    """Shape of the network built for a new session (fixed for the session's life)."""

    _section = "network."
    kind: str = "auto"  # "auto" (by board shape), "dense" or "residual"
    width: int = 64  # units per dense layer / filters per conv layer
    blocks: int = 2  # dense layers / residual blocks
    l2: float = 1e-4  # L2 weight regularisation

    def validate(self) -> None:
        _choice(self, "kind", ("auto", "dense", "residual"))
        _int_in(self, "width", 1, 4096)
        _int_in(self, "blocks", 1, 64)
        _float_in(self, "l2", 0.0, 1.0)


@dataclass
class PredictConfig:
    """The batching Predictor."""

    _section = "predict."
    batchsize: int = 64  # largest batch of positions per network call
    batch_timeout_ms: float = 2.0  # how long to wait for more requests before running a batch
    use_gpu: bool = True  # use a GPU when TensorFlow sees one
    numpy_fastpath: bool = True  # run models of known layers on the CPU fast path (ONNX Runtime,
    #                                or NumPy for dense ones) instead of TensorFlow; conv models
    #                                stay on TensorFlow when it has a GPU
    evaluate_in_selfplayers: bool = True  # Selfplayers run a fast-path model themselves (no
    #                                       round trip to the Predictor for each batch)
    gpu_memorylimit: int = 0  # MiB of GPU memory for the predictor; 0 = grow as needed
    precision: str = "float32"  # the CPU fast path's arithmetic: "float32", or "int8" (the
    #                             Trainer quantizes each conv model it publishes, checked
    #                             against float32 and kept float32 when they disagree;
    #                             gamegym.nets.quantize); training stays float32
    int8_value_tolerance: float = 0.15  # the check of an int8 model: the largest |value - the
    #                                     float32 value| over its check positions (values in
    #                                     [-1, 1]; 2 accepts every int8 model)
    int8_policy_tolerance: float = 0.1  # and the largest total-variation distance of its policy
    #                                     from float32's (in [0, 1]; 1 accepts every one)

    def validate(self) -> None:
        _int_in(self, "batchsize", 1, 65536)
        _choice(self, "precision", PRECISIONS)
        _float_in(self, "int8_value_tolerance", 0.0, 2.0)
        _float_in(self, "int8_policy_tolerance", 0.0, 1.0)
        _float_in(self, "batch_timeout_ms", 0.0, 10_000.0)
        _bool(self, "use_gpu")
        _bool(self, "numpy_fastpath")
        _bool(self, "evaluate_in_selfplayers")
        _int_in(self, "gpu_memorylimit", 0)

    def int8_tolerances(self) -> tuple[float, float]:
        """(value, policy) tolerances of the int8 check (gamegym.nets.quantize.checked_int8)."""
        return self.int8_value_tolerance, self.int8_policy_tolerance


@dataclass
class SelfplayConfig:
    """Selfplayer processes and their search."""

    _section = "selfplay."
    selfplayprocesses: int = 2  # number of Selfplayer processes
    searchthreadcount: int = 8  # concurrent searches (virtual loss) sharing one tree
    search_os_threads: bool = False  # run them on OS threads; False: one thread drives them all
    search_solver: bool = False  # prove wins/losses in the tree (MCTS-solver); exact endgames
    search_core: str = "auto"  # "auto": the compiled core where numba is installed and it
    #                                 covers the search (PUCT or Gumbel, no solver or OS
    #                                 threads; MuZero: PUCT), else "python"; "compiled": the
    #                                 search's loops compiled by numba (`pip install
    #                                 'gamegym[fast]'`), the same games faster, or an error
    #                                 naming why not
    searchcount: int = 100  # searches (MCTS simulations) per move
    search: str = "puct"  # root rule: "puct" (AlphaZero) or "gumbel" (Gumbel AlphaZero /
    #                                 MuZero: Gumbel-Top-k, sequential halving, completed-Q targets)
    gumbel_considered: int = 16  # (gumbel) root actions sampled by Gumbel-Top-k (mctx: 16)
    gumbel_value_scale: float = 0.1  # (gumbel) c_scale of sigma(q) = (c_visit + max N) c_scale q
    gumbel_maxvisit_init: float = 50.0  # (gumbel) c_visit of sigma(q)
    gumbel_rescale: str = "score"  # (gumbel) q to [0, 1] in sigma by the score range [-1, 1]
    #                                 ("score") or by the node's children's min and max ("node",
    #                                 mctx's), which blows a small spread up to the full scale
    playout_cap_probability: float = 1.0  # chance of a full search (`searchcount`) per move;
    #                                 the others get `fast_searchcount`, no Dirichlet noise, and
    #                                 are no policy targets (their value target stays the game
    #                                 result, which does not depend on the search); 1 = off;
    #                                 KataGo uses 0.25
    fast_searchcount: int = 20  # searches of a fast move (playout-cap randomization)
    exploration_const: float = 1.5  # PUCT exploration constant c_puct
    virtualloss: float = 1.0  # visits of value -1 added on a path while its leaf is evaluated
    temperature: float = 1.0  # move choice ~ visits^(1/temperature) in the opening
    #                                 (bootstrapped: ~ softmax(Q / temperature) of its head;
    #                                 gumbel: not used, the root's Gumbel noise samples the move)
    temperature_drop_move: int = 8  # from this move on, play the most visited move (temperature 0)
    #                                 (bootstrapped: the acting head's best move)
    dirichlet_alpha: float = 0.5  # Dirichlet noise concentration at the root
    dirichlet_fraction: float | None = None  # weight of the noise in the root priors (0 = off;
    #                                 None = the rule's default: puct 0.25, gumbel 0)
    max_moves: int = 200  # a game reaching this many moves is truncated
    gamelog_dump_threshold: int = (
        10  # finished games kept in memory before a sample file is written
    )
    evaluation_cache: int = 100_000  # network evaluations remembered per Selfplayer (0 = off;
    #                                   at most 64 MB of them, fewer on a large action space)
    positions_per_iteration: int = 0  # a Selfplayer waits for the next model once the games
    #                                   it finished with the newest one hold this many
    #                                   positions (0 = never waits; bootstrapped: its own field)
    nice: int = 0  # Selfplayers run this much below the other processes' CPU priority (0-19;
    #                 Unix): where the Trainer and the Selfplayers share the cores, the Trainer
    #                 then gets the CPU it asks for and self-play takes the rest (0 = equal)
    backend: str = "processes"  # where Selfplayers run: "processes" here, or "ray" (a cluster)
    ray_address: str = "local"  # "local": start Ray on this machine; "auto" or "HOST:PORT":
    #                                 join a running cluster (selfplayprocesses is then per node)
    ray_selfplayer_cpus: float = 0.5  # CPUs a Selfplayer actor reserves on its node
    ray_predictor_cpus: float = 0.5  # CPUs the Predictor actor of each node reserves
    ray_object_store_mib: int = 128  # object store of the Ray started with "local" (it holds
    #                                   only models in broadcast and games on their way)

    def validate(self) -> None:
        _int_in(self, "selfplayprocesses", 1, 256)
        _int_in(self, "searchthreadcount", 1, 1024)
        _int_in(self, "searchcount", 1, 1_000_000)
        _bool(self, "search_os_threads")
        _bool(self, "search_solver")
        self._validate_core()
        _float_in(self, "exploration_const", 0.0, 100.0, low_open=True)
        _float_in(self, "virtualloss", 0.0, 100.0)
        _float_in(self, "temperature", 0.0, 100.0)
        _int_in(self, "temperature_drop_move", 0)
        _float_in(self, "dirichlet_alpha", 0.0, 100.0, low_open=True)
        if self.dirichlet_fraction is not None:
            _float_in(self, "dirichlet_fraction", 0.0, 1.0)
        self._validate_search()
        _int_in(self, "max_moves", 1)
        _int_in(self, "gamelog_dump_threshold", 1, 100_000)
        _int_in(self, "evaluation_cache", 0)
        _int_in(self, "positions_per_iteration", 0)
        _int_in(self, "nice", 0, 19)
        _registered(self, "backend", BACKENDS)
        _check(
            isinstance(self.ray_address, str)
            and (self.ray_address in ("local", "auto") or ":" in self.ray_address),
            "selfplay.ray_address",
            f"must be 'local', 'auto' or a cluster address HOST:PORT, got {self.ray_address!r}",
        )
        _float_in(self, "ray_selfplayer_cpus", 0.0, 1024.0, low_open=True)
        _float_in(self, "ray_predictor_cpus", 0.0, 1024.0, low_open=True)
        _int_in(self, "ray_object_store_mib", 75, 1_000_000)

    def _validate_core(self) -> None:
        """`search_core`; "compiled" only where that core covers the search and numba is
        installed (gamegym.search.arena)."""
        _choice(self, "search_core", ("auto", "python", "compiled"))  # search.arena.CORES
        if self.search_core == "compiled":
            from gamegym.search.arena import compiled_core_problem

            problem = compiled_core_problem(self.search, self.search_solver, self.search_os_threads)
            _check(problem is None, "selfplay.search_core", f"'compiled': {problem}")

    def _validate_search(self) -> None:
        """The root rule (asked of gamegym.registry.SEARCHES) and its fields."""
        _registered(self, "search", SEARCHES)
        _int_in(self, "gumbel_considered", 1, 65536)
        _float_in(self, "gumbel_value_scale", 0.0, 1000.0)
        _float_in(self, "gumbel_maxvisit_init", 0.0, 1e9)
        _choice(self, "gumbel_rescale", GUMBEL_RESCALES)
        _float_in(self, "playout_cap_probability", 0.0, 1.0, low_open=True)
        _int_in(self, "fast_searchcount", 1, 1_000_000)
        if self.playout_cap_probability < 1.0:
            _check(
                self.fast_searchcount <= self.searchcount,
                "selfplay.fast_searchcount",
                f"({self.fast_searchcount}) must be <= selfplay.searchcount "
                f"({self.searchcount}) when playout caps are on "
                f"(selfplay.playout_cap_probability {self.playout_cap_probability} < 1)",
            )


@dataclass
class TrainConfig:
    """The Trainer: which samples, which learner, how long."""

    _section = "train."
    learner: str = "alphazero"  # learner mode (see gamegym.learners)
    replay: str = "window"  # replay mode: "window" = all recent samples, uniformly;
    #                                 "uniform", "prioritized", "curious": a replay buffer
    epochs: int = 4  # passes over the sample window per iteration
    batchsize: int = 64  # training minibatch size
    compile: str = "auto"  # how the training step runs: "traced" (tf.function, op by op),
    #                                 "xla" (the same step compiled by XLA, jit_compile; on the
    #                                 CPU and a GPU alike; falls back to traced with one log
    #                                 line where XLA cannot compile it) or "auto" (the learner's
    #                                 own choice, the faster one in `gamegym bench training`:
    #                                 traced for the bundled learners).  The two train alike
    #                                 to float rounding (a test holds their losses within a
    #                                 relative 1e-3 over 300 steps)
    learning_rate: float = 1e-3  # Adam learning rate
    learning_rate_schedule: list = field(default_factory=list)  # [[iteration, rate], ...]:
    #                                 the models from that iteration on train at that rate
    #                                 (learning_rate before the first); [] = learning_rate
    min_samplecount: int = 500  # samples needed (after the validation split) to train at all
    max_samplecount: int = 20_000  # at most this many of the newest samples per iteration
    max_sampleage: int = 4  # samples of iterations at most this far behind are used
    min_new_samples: int = 500  # new samples needed since the last iteration to train again
    validation_split: float = 0.1  # fraction of the window held out to report val_loss
    augment_symmetries: bool = True  # show each sample in a random symmetric image at every
    #                                  training step (one image drawn per sample and step, not
    #                                  copies); needs the game's symmetries and unnumpify, and
    #                                  has no effect without them (gamegym check notes it)
    num_updates_per_train_iter: int = 0  # >0: that many sampled minibatches instead of epochs
    value_loss_weight: float = 1.0  # weight of the value MSE against the policy cross-entropy
    value_td_steps: int = 0  # >0: the value target is the search value this many plies
    #                                 later, not the game result (0 = the result, AlphaZero);
    #                                 MuZero's td_steps
    value_target_mix: float = 0.0  # value target = (1 - m) * that + m * own search value
    keep_models: int = 0  # keep only the newest N model files (0 = keep all)
    weight_average: str = "none"  # the weights of the model the Trainer publishes (self-play,
    #                                 evaluation and play use it): "none" = the weights it
    #                                 trained; "ema" = an exponential moving average of the
    #                                 trained weights over the iterations, as KataGo publishes
    #                                 an average of recent weights (Wu 2019), while training
    #                                 goes on from the trained weights (`models/<it>.raw.keras`)
    weight_average_decay: float = 0.75  # "ema": the published model of iteration n is decay
    #                                 × that of n − 1 + (1 − decay) × the weights trained for n
    #                                 (the first iteration trained with "ema" publishes its
    #                                 trained weights); per iteration, the period of one
    #                                 published model, as KataGo's decay per snapshot (0.75):
    #                                 the average reaches back about 1 / (1 − decay) models
    #                                 whatever the number of steps an iteration trains
    # the replay buffer (replay "uniform", "prioritized", "curious"; Curious Replay's defaults)
    replay_capacity: int = 100_000  # positions in the buffer; the oldest leave first
    curious_c: float = 1e4  # c: weight of the count term c*beta^v (prioritized: 0)
    curious_beta: float = 0.7  # beta: the count term's decay per replay of a sample
    curious_alpha: float = 0.7  # alpha: sharpness of the loss term (|L| + epsilon)^alpha
    curious_epsilon: float = 0.01  # epsilon: keeps the loss term above 0
    priority_max: float = 1e5  # priority of a sample never trained on

    def validate(self) -> None:
        _registered(self, "learner", LEARNERS)
        _registered(self, "replay", REPLAYS)
        _int_in(self, "epochs", 1, 10_000)
        _int_in(self, "batchsize", 1, 65536)
        _choice(self, "compile", COMPILES)
        _float_in(self, "learning_rate", 0.0, 10.0, low_open=True)
        self._validate_schedule()
        _int_in(self, "min_samplecount", 1)
        _int_in(self, "max_samplecount", 1)
        _check(
            self.max_samplecount >= self.min_samplecount,
            "train.max_samplecount",
            f"({self.max_samplecount}) must be >= train.min_samplecount ({self.min_samplecount})",
        )
        _int_in(self, "max_sampleage", 0)
        _int_in(self, "min_new_samples", 0)
        _float_in(self, "validation_split", 0.0, 0.9)
        _bool(self, "augment_symmetries")
        _int_in(self, "num_updates_per_train_iter", 0)
        _float_in(self, "value_loss_weight", 0.0, 1000.0)
        _float_in(self, "value_target_mix", 0.0, 1.0)
        _int_in(self, "value_td_steps", 0, 10_000)
        _int_in(self, "keep_models", 0)
        _choice(self, "weight_average", WEIGHT_AVERAGES)
        decay = self.weight_average_decay
        _check(
            _is_number(decay) and 0.0 < decay < 1.0,
            "train.weight_average_decay",
            f"must be a number in (0, 1) (the share of the previous average kept each "
            f"iteration), got {decay!r}",
        )
        _int_in(self, "replay_capacity", 1, 100_000_000)
        _float_in(self, "curious_c", 0.0, 1e12)
        _float_in(self, "curious_beta", 0.0, 1.0)
        _float_in(self, "curious_alpha", 0.0, 1.0)
        _float_in(self, "curious_epsilon", 0.0, 1e6, low_open=True)
        _float_in(self, "priority_max", 0.0, 1e15, low_open=True)
        replay = REPLAYS.get(self.replay) if self.replay in REPLAYS else None  # else a plugin's
        problem = replay.check_config(self) if replay is not None else None
        if problem:
            raise ConfigError(f"config field {problem}")

    def _validate_schedule(self) -> None:
        name = f"{self._section}learning_rate_schedule"
        schedule = self.learning_rate_schedule
        _check(
            isinstance(schedule, list),
            name,
            f"must be a list of [iteration, rate] pairs, got {schedule!r}",
        )
        last = 0
        for pair in schedule:
            _check(
                isinstance(pair, (list, tuple)) and len(pair) == 2,
                name,
                f"must be a list of [iteration, rate] pairs, got the entry {pair!r}",
            )
            start, rate = pair
            _check(
                _is_int(start) and start > last,
                name,
                f"needs iterations that are integers, above 0 and rising, got {start!r} after {last}",
            )
            _check(
                _is_number(rate) and 0.0 < rate <= 10.0,
                name,
                f"needs rates in (0.0, 10.0], got {rate!r} at iteration {start}",
            )
            last = start

    def learning_rate_at(self, iteration: int) -> float:
        """The learning rate that trains model `iteration` (the schedule's last step at or
        before it, `learning_rate` before the first)."""
        rate = self.learning_rate
        for start, value in self.learning_rate_schedule:
            if iteration < start:
                break
            rate = float(value)
        return rate


@dataclass
class EvaluateConfig:
    """The optional Evaluator: the newest iteration against earlier ones and baselines."""

    _section = "evaluate."
    every: int = 0  # evaluate every N-th iteration (0 = no Evaluator process)
    games: int = 20  # games per opponent (half of them as first player)
    # the players to meet: player specs (as `gamegym evaluate --opponent`), or "previous" for
    # the iteration rated before
    opponents: list = field(default_factory=lambda: ["random", "alphabeta:2", "previous"])
    searchcount: int = 50  # searches per move of the model players

    def validate(self) -> None:
        _int_in(self, "every", 0)
        _int_in(self, "games", 1, 10_000)
        _int_in(self, "searchcount", 1, 100_000)
        _check(
            isinstance(self.opponents, list),
            "evaluate.opponents",
            f"must be a list of players, got {self.opponents!r}",
        )
        for opponent in self.opponents:
            problem = check_player_spec(opponent)
            _check(problem is None, "evaluate.opponents", f"has a bad entry: {problem}")


SECTIONS = {
    "network": NetworkConfig,
    "predict": PredictConfig,
    "selfplay": SelfplayConfig,
    "train": TrainConfig,
    "evaluate": EvaluateConfig,
}

# Fields that a learner's own section holds now, by the shared section a config.json written
# before learner sections held them in (every learner's, with their defaults).  Reading such a
# file moves the session's learner's fields into its section and drops the others.
FORMER_LEARNER_FIELDS = {
    "network": ("hidden_size", "heads", "prior_scale"),
    "selfplay": ("epsilon", "head_per_side", "concurrent_games", "positions_per_iteration"),
    "train": (
        "num_unroll_steps",
        "reward_loss_weight",
        "mask_probability",
        "target_update_period",
        "double_q",
        "discount",
    ),
    "evaluate": ("q_search",),
}


def learner_config_class(learner: str) -> type | None:
    """The dataclass of a learner's own config section, None when it has none."""
    return getattr(LEARNERS.get(learner), "config_class", None)


@dataclass
class GymConfig:
    """Everything a session needs; stored as the session's config.json."""

    game: str = ""  # the game as "package.module:Class"
    game_args: dict = field(default_factory=dict)  # keyword arguments for the game class
    seed: int = 0  # master seed; each process derives its own from it
    debug_single_process: bool = False  # run every role in the main process (for debuggers)
    status_interval: float = 5.0  # seconds between status lines (0 = none)
    heartbeat_timeout: float = 20.0  # seconds without a heartbeat before a child counts as hung
    #                                  and is killed (0 = never)
    progress_timeout: float = 120.0  # seconds a child may beat without counting any work (a
    #                                  training step, a request served, a search, a turn of a
    #                                  waiting loop) before it counts as hung and is killed, as
    #                                  one blocked in a call is (0 = never)
    log_level: str = "INFO"  # level of the per-process logs
    plugins: list = field(default_factory=list)  # modules every process imports before it
    #                                reads the config: where learners, replays, backends or
    #                                search rules of your own register (gamegym.registry)
    network: NetworkConfig = field(default_factory=NetworkConfig)
    predict: PredictConfig = field(default_factory=PredictConfig)
    selfplay: SelfplayConfig = field(default_factory=SelfplayConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    evaluate: EvaluateConfig = field(default_factory=EvaluateConfig)
    # the learner's own section (its config_class, see gamegym.learners.base.Learner), stored in
    # config.json under the learner's name, e.g. "muzero": {...}; None: the learner has none
    learner_config: Any = None

    # fields a resumed session may not change: they would make models or samples meaningless
    # (and a learner section's own FIXED fields)
    FIXED = ("game", "game_args", "network", "train.learner")

    def __post_init__(self) -> None:
        # whether this config's processes import its plugins: True for settings of the
        # user's own; False for a session's config.json (Session.load_config) until
        # `with_plugins`, so a command that only reads a session runs none of its code
        self.runs_plugins = not _NO_PLUGINS.get()
        if self.runs_plugins:
            import_plugins(self.plugins)
            pending: tuple[str, ...] = ()
        else:
            _check_module_list(self.plugins)
            pending = tuple(m for m in self.plugins if m not in sys.modules)
        token = _PENDING_PLUGINS.set(pending)
        try:
            for name, section_cls in SECTIONS.items():  # sections may be given as plain dicts
                section = getattr(self, name)
                if isinstance(section, dict):
                    _reject_unknown(section, _field_names(section_cls), f"{name}.")
                    setattr(self, name, section_cls(**section))
            if isinstance(self.train, TrainConfig):
                _registered(self.train, "learner", LEARNERS)
                self.learner_config = _learner_section(self.train.learner, self.learner_config)
            self.validate()
        finally:
            _PENDING_PLUGINS.reset(token)

    def unregistered(self) -> list[str]:
        """The registry fields whose names nothing registered, as "field 'name'": names a
        config built without importing its plugins may hold (one of them would register it)."""
        return [
            f"{path} {value!r}"
            for path, registry, value in (
                ("train.learner", LEARNERS, self.train.learner),
                ("train.replay", REPLAYS, self.train.replay),
                ("selfplay.backend", BACKENDS, self.selfplay.backend),
                ("selfplay.search", SEARCHES, self.selfplay.search),
            )
            if value not in registry
        ]

    def with_plugins(self) -> GymConfig:
        """This config with its plugins imported and every field checked against what they
        register (the same config when they were imported already).  Call it once the user
        has agreed to run the modules it names (gamegym.data.trust)."""
        if self.runs_plugins:
            return self
        if not self.plugins:  # nothing to import, nothing a plugin registers: checked whole
            self.runs_plugins = True
            return self
        import_plugins(self.plugins)
        return GymConfig.from_dict(self.to_dict())

    def validate(self) -> None:
        _check(
            isinstance(self.game, str) and ":" in self.game,
            "game",
            f"must look like 'package.module:ClassName', got {self.game!r}",
        )
        _check(
            isinstance(self.game_args, dict),
            "game_args",
            f"must be a JSON object, got {self.game_args!r}",
        )
        _int_in(self, "seed", 0, 2**32 - 1)
        _bool(self, "debug_single_process")
        _float_in(self, "status_interval", 0.0, 3600.0)
        _float_in(self, "heartbeat_timeout", 0.0, 3600.0)
        _float_in(self, "progress_timeout", 0.0, 86400.0)
        _choice(self, "log_level", ("DEBUG", "INFO", "WARNING", "ERROR"))
        for name, cls in SECTIONS.items():
            section = getattr(self, name)
            _check(isinstance(section, cls), name, f"must be a {cls.__name__}")
            section.validate()
        if self.learner_config is not None and not isinstance(self.learner_config, dict):
            self.learner_config.validate()  # a dict: the section of an unregistered learner
        learner = LEARNERS.get(self.train.learner) if self.train.learner in LEARNERS else None
        problem = self.check_selfplay_pause(
            "selfplay.positions_per_iteration", self.selfplay.positions_per_iteration
        ) or (learner.check_config(self) if learner is not None else None)
        if problem:
            raise ConfigError(f"config field {problem}")

    def __setstate__(self, state: dict) -> None:
        """Unpickled in a child process (or a Ray actor): its plug-ins register there too,
        when this process's config imported them (`runs_plugins`)."""
        self.__dict__.update({"runs_plugins": True, **state})
        if self.runs_plugins:
            import_plugins(self.plugins)

    def selfplayers(self) -> int:
        """Self-play drivers at work: one in a single-process run."""
        return 1 if self.debug_single_process else self.selfplay.selfplayprocesses

    def check_selfplay_pause(self, field: str, positions: int | None) -> str | None:
        """What is wrong with Selfplayers that wait for each new model after `positions`
        positions (the value of config field `field`): together they must play enough for the
        Trainer to train that model, else both would wait forever.  None when it is right."""
        needed = self.samples_per_iteration()
        if not positions or positions * self.selfplayers() >= needed:
            return None
        count = (
            "1 (debug_single_process)"
            if self.debug_single_process
            else f"selfplay.selfplayprocesses ({self.selfplay.selfplayprocesses})"
        )
        return (
            f"'{field}' ({positions}) times {count} must be at least "
            f"train.min_new_samples ({self.train.min_new_samples}) and "
            f"train.min_samplecount / (1 - train.validation_split) ({needed}): the "
            "Selfplayers wait for a model the Trainer trains only on that many samples"
        )

    def samples_per_iteration(self) -> int:
        """New samples the Trainer waits for before it trains an iteration (the first one
        included), with the window replay."""
        train = self.train
        return max(
            train.min_new_samples, math.ceil(train.min_samplecount / (1.0 - train.validation_split))
        )

    def train_options(self) -> SimpleNamespace:
        """The training options a learner reads (by attribute, or gamegym.learners.base.option):
        the train section's fields and the learner's own section's."""
        return SimpleNamespace(**dataclasses.asdict(self.train), **self.learner_options())

    def network_options(self) -> dict:
        """What a learner builds its network from: the network section and the fields of the
        learner's own section that shape the network (its NETWORK tuple)."""
        own = self.learner_options()
        shaping = getattr(self.learner_config, "NETWORK", ())
        return {**dataclasses.asdict(self.network), **{k: own[k] for k in shaping}}

    def learner_options(self) -> dict:
        """The learner's own section as a dict (empty when it has none)."""
        return _section_dict(self.learner_config) if self.learner_config is not None else {}

    # ----- JSON round trip -----------------------------------------------------------------
    def to_dict(self) -> dict:
        data = {
            f.name: dataclasses.asdict(getattr(self, f.name))
            if f.name in SECTIONS
            else copy.deepcopy(getattr(self, f.name))
            for f in fields(self)
            if f.name != "learner_config"
        }
        if self.learner_config is not None:
            data[self.train.learner] = _section_dict(self.learner_config)
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_dict(cls, data: dict, stored: bool = False, plugins: bool = True) -> GymConfig:
        """A config from its JSON form.  `stored`: a session's own config.json, which may be in
        the layout before learner sections (it is then read as today's).  `plugins` False:
        its plugins are not imported (`runs_plugins`; a name only one of them could register
        is taken as it is, see `unregistered`, until `with_plugins`)."""
        if not isinstance(data, dict):
            raise ConfigError(f"a config must be a JSON object, got {type(data).__name__}")
        # a copy of a session's config.json: its format version is the session's business
        data = {k: v for k, v in data.items() if k != "format_version"}
        for name in SECTIONS:
            if not isinstance(data.get(name, {}), dict):
                raise ConfigError(f"config field '{name}' must be a JSON object")
        learner = data.get("train", {}).get("learner", TrainConfig.learner)
        if stored:
            data = _moved_to_learner_section(data, learner)
        known = [n for n in _field_names(cls) if n != "learner_config"]
        sections = [n for n in data if n not in known]
        for name in sections:
            if name != learner:
                if isinstance(name, str) and name in LEARNERS:
                    raise ConfigError(
                        f"config section '{name}' is for train.learner "
                        f"'{name}', but train.learner is {learner!r}"
                    )
                _reject_unknown({name: None}, known + [learner], "")
        own = data.get(learner, {}) if learner in sections else None
        if own is not None and not isinstance(own, dict):
            raise ConfigError(f"config field '{learner}' must be a JSON object")
        token = _NO_PLUGINS.set(not plugins)
        try:
            return cls(**{k: v for k, v in data.items() if k in known}, learner_config=own)
        finally:
            _NO_PLUGINS.reset(token)

    @classmethod
    def from_json_file(cls, path: Path, fill: dict | None = None) -> GymConfig:
        """Read a config file; keys missing from it are taken from `fill` (e.g. the game)."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as error:
            raise ConfigError(f"cannot read config file {path}: {error}") from error
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ConfigError(f"config file {path} is not valid JSON: {error}") from error
        if isinstance(data, dict) and fill:
            data = {**fill, **data}
        return cls.from_dict(data)

    def updated(self, overrides: dict) -> GymConfig:
        """A copy with nested overrides applied, e.g. {"selfplay": {"searchcount": 50}};
        its plugins imported as this one's are (`runs_plugins`)."""
        return GymConfig.from_dict(
            merged_settings(self.to_dict(), overrides), plugins=self.runs_plugins
        )

    def value_at(self, path: str) -> Any:
        """A field by its dotted name, e.g. "train.learner" (None when there is none)."""
        return _get_path(self.to_dict(), path)

    def check_resume(self, stored: GymConfig) -> None:
        """Refuse a config for resuming that changes a field fixed at session creation."""
        new, old = self.to_dict(), stored.to_dict()
        own = getattr(self.learner_config, "FIXED", ())
        for path in self.FIXED + tuple(f"{self.train.learner}.{name}" for name in own):
            a, b = _get_path(new, path), _get_path(old, path)
            if a != b:
                raise ConfigError(
                    f"config field '{path}' cannot change on resume "
                    f"(session has {b!r}, new config has {a!r}); "
                    "start a new session instead"
                )


def merged_settings(data: dict, overrides: dict) -> dict:
    """Config settings (the JSON form) with `overrides` applied as `GymConfig.updated` applies
    them, without building a config: a section (a dict) is updated key by key, `game_args` and
    other fields are replaced, and a change of train.learner drops the old learner's section."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in data.items()}
    before = out.get("train", {}).get("learner", TrainConfig.learner)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key != "game_args":
            out[key].update(value)
        else:
            out[key] = value
    if out.get("train", {}).get("learner", TrainConfig.learner) != before:
        out.pop(before, None)  # another learner: its own section, not the old one's
    return out


def _check_module_list(modules: Any) -> None:
    _check(
        isinstance(modules, list) and all(isinstance(m, str) and m for m in modules),
        "plugins",
        f"must be a list of module names, got {modules!r}",
    )
    for module in modules:
        _check(
            all(part.isidentifier() for part in module.split(".")),
            "plugins",
            f"names {module!r}, which is not an importable module name (dotted Python names)",
        )


def import_plugins(modules: Any) -> None:
    """Import the `plugins` modules (once each; Python caches them)."""
    _check_module_list(modules)
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as error:
            raise ConfigError(
                f"config field 'plugins': cannot import module {module!r}: "
                f"{type(error).__name__}: {error}"
            ) from error


def _section_dict(section: Any) -> dict:
    """A learner's section as a dict (a dict already: the section of an unregistered one)."""
    return copy.deepcopy(section) if isinstance(section, dict) else dataclasses.asdict(section)


def _learner_section(learner: str, given: Any) -> Any:
    """The learner's section built from `given` (a dict, an instance or None: defaults); the
    dict as it is when the learner is not registered while plugins are pending."""
    if learner not in LEARNERS and _PENDING_PLUGINS.get():
        return None if given is None else copy.deepcopy(given)
    section_cls = learner_config_class(learner)
    if section_cls is None:
        _check(
            not given,
            learner,
            f"is not a config section: learner {learner!r} has no options of its own",
        )
        return None
    if isinstance(given, section_cls):
        return given
    given = {} if given is None else given
    _check(isinstance(given, dict), learner, f"must be a JSON object, got {given!r}")
    _reject_unknown(given, _field_names(section_cls), f"{learner}.")
    return section_cls(**given)


def _moved_to_learner_section(data: dict, learner: str) -> dict:
    """A config dict in the layout before learner sections (FORMER_LEARNER_FIELDS in the
    shared sections) in today's: the learner's fields in its section, the others dropped."""
    if not any(
        isinstance(data.get(s), dict) and set(names) & set(data[s])
        for s, names in FORMER_LEARNER_FIELDS.items()
    ):
        return data
    data = {k: dict(v) if isinstance(v, dict) else v for k, v in data.items()}
    section_cls = learner_config_class(learner) if learner in LEARNERS else None
    own_names = set(_field_names(section_cls)) if section_cls else set()
    own = dict(data.get(learner, {})) if isinstance(data.get(learner), dict) else {}
    for section, names in FORMER_LEARNER_FIELDS.items():
        for name in names:
            if isinstance(data.get(section), dict) and name in data[section]:
                value = data[section].pop(name)
                if name in own_names:
                    own.setdefault(name, value)
    if own:
        data[learner] = own
    return data


def _field_names(cls: type) -> list[str]:
    return [f.name for f in fields(cls)] if dataclasses.is_dataclass(cls) else []


def _reject_unknown(data: dict, known: list[str], prefix: str) -> None:
    for key in data:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = (
                f"; did you mean '{prefix}{close[0]}'?"
                if close
                else f"; known fields: {', '.join(known)}"
            )
            if key in FORMER_LEARNER_FIELDS.get(prefix.rstrip("."), ()):
                owners = [
                    name
                    for name, cls in LEARNERS.items()
                    if key in _field_names(getattr(cls, "config_class", None) or object)
                ]
                hint = "; it is a field of the learner's own section: " + " or ".join(
                    f"'{owner}.{key}'" for owner in owners
                )
            raise ConfigError(f"unknown config field '{prefix}{key}'{hint}")


def _get_path(data: Any, path: str) -> Any:
    for part in path.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data
