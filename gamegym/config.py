"""Session configuration: one dataclass per concern, validated when built, JSON round trip.

`GymConfig.from_dict` rejects unknown keys (suggesting the closest known one) and values out of
range, naming the field.  `GymConfig.check_resume` refuses changes to fields fixed at creation.
"""
from __future__ import annotations

import dataclasses
import difflib
import json
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from gamegym.game.playerspecs import check_player_spec

__all__ = ["ConfigError", "NetworkConfig", "PredictConfig", "SelfplayConfig", "TrainConfig",
           "EvaluateConfig",
           "GymConfig", "LEARNERS", "REPLAYS"]

LEARNERS = ("alphazero", "muzero", "bootstrapped")
BACKENDS = ("processes", "ray")
REPLAYS = ("window", "uniform", "prioritized", "curious")


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
    _check(value >= low and (high is None or value <= high), f"{_section(obj)}{name}",
           f"must be in [{low}, {high if high is not None else '∞'}], got {value}")


def _float_in(obj: Any, name: str, low: float, high: float | None = None,
              low_open: bool = False) -> None:
    value = getattr(obj, name)
    _check(_is_number(value), f"{_section(obj)}{name}", f"must be a number, got {value!r}")
    ok = value > low if low_open else value >= low
    _check(ok and (high is None or value <= high), f"{_section(obj)}{name}",
           f"must be in {'(' if low_open else '['}{low}, {high if high is not None else '∞'}], "
           f"got {value}")


def _bool(obj: Any, name: str) -> None:
    value = getattr(obj, name)
    _check(isinstance(value, bool), f"{_section(obj)}{name}", f"must be true or false, got {value!r}")


def _choice(obj: Any, name: str, choices: tuple) -> None:
    value = getattr(obj, name)
    _check(value in choices, f"{_section(obj)}{name}", f"must be one of {list(choices)}, got {value!r}")


def _section(obj: Any) -> str:
    return getattr(obj, "_section", "")


@dataclass
class NetworkConfig:
    """Shape of the network built for a new session (fixed for the session's life)."""

    _section = "network."
    kind: str = "auto"         # "auto" (by board shape), "dense" or "residual"
    width: int = 64            # units per dense layer / filters per conv layer
    blocks: int = 2            # dense layers / residual blocks
    l2: float = 1e-4           # L2 weight regularisation
    hidden_size: int = 0       # MuZero: units of a dense network's hidden state (0 = width);
                               # a residual network's hidden state is `width` planes of the board
    heads: int = 10            # (bootstrapped) K Q-heads on the shared torso; 1 = plain DQN
    prior_scale: float = 0.0   # (bootstrapped) weight of a fixed random prior network added
                               # to every head, never trained (0 = none)

    def validate(self) -> None:
        _choice(self, "kind", ("auto", "dense", "residual"))
        _int_in(self, "width", 1, 4096)
        _int_in(self, "blocks", 1, 64)
        _int_in(self, "hidden_size", 0, 4096)
        _float_in(self, "l2", 0.0, 1.0)
        _int_in(self, "heads", 1, 256)
        _float_in(self, "prior_scale", 0.0, 100.0)


@dataclass
class PredictConfig:
    """The batching Predictor."""

    _section = "predict."
    batchsize: int = 64            # largest batch of positions per network call
    batch_timeout_ms: float = 2.0  # how long to wait for more requests before running a batch
    use_gpu: bool = True           # use a GPU when TensorFlow sees one
    numpy_fastpath: bool = True    # run models of known layers on the CPU fast path (ONNX Runtime,
    #                                or NumPy for dense ones) instead of TensorFlow; conv models
    #                                stay on TensorFlow when it has a GPU
    evaluate_in_selfplayers: bool = True  # Selfplayers run a fast-path model themselves (no
    #                                       round trip to the Predictor for each batch)
    gpu_memorylimit: int = 0       # MiB of GPU memory for the predictor; 0 = grow as needed

    def validate(self) -> None:
        _int_in(self, "batchsize", 1, 65536)
        _float_in(self, "batch_timeout_ms", 0.0, 10_000.0)
        _bool(self, "use_gpu")
        _bool(self, "numpy_fastpath")
        _bool(self, "evaluate_in_selfplayers")
        _int_in(self, "gpu_memorylimit", 0)


@dataclass
class SelfplayConfig:
    """Selfplayer processes and their search."""

    _section = "selfplay."
    selfplayprocesses: int = 2      # number of Selfplayer processes
    searchthreadcount: int = 8      # concurrent searches (virtual loss) sharing one tree
    search_os_threads: bool = False  # run them on OS threads; False: one thread drives them all
    search_solver: bool = False     # prove wins/losses in the tree (MCTS-solver); exact endgames
    searchcount: int = 100          # searches (MCTS simulations) per move
    exploration_const: float = 1.5  # PUCT exploration constant c_puct
    virtualloss: float = 1.0        # visits of value -1 added on a path while its leaf is evaluated
    temperature: float = 1.0        # move choice ~ visits^(1/temperature) in the opening
                                    # (bootstrapped: ~ softmax(Q / temperature) of its head)
    temperature_drop_move: int = 8  # from this move on, play the most visited move (temperature 0)
                                    # (bootstrapped: the acting head's best move)
    dirichlet_alpha: float = 0.5    # Dirichlet noise concentration at the root
    dirichlet_fraction: float = 0.25  # weight of the noise in the root priors (0 = off)
    max_moves: int = 200            # a game reaching this many moves is truncated
    gamelog_dump_threshold: int = 10  # finished games kept in memory before a sample file is written
    evaluation_cache: int = 100_000   # network evaluations remembered per Selfplayer (0 = off;
    #                                   at most 64 MB of them, fewer on a large action space)
    backend: str = "processes"      # where Selfplayers run: "processes" here, or "ray" (a cluster)
    ray_address: str = "local"      # "local": start Ray on this machine; "auto" or "HOST:PORT":
                                    # join a running cluster (selfplayprocesses is then per node)
    ray_selfplayer_cpus: float = 0.5  # CPUs a Selfplayer actor reserves on its node
    ray_predictor_cpus: float = 0.5   # CPUs the Predictor actor of each node reserves
    ray_object_store_mib: int = 128   # object store of the Ray started with "local" (it holds
                                      # only models in broadcast and games on their way)
    epsilon: float | None = None    # (bootstrapped) chance of a random legal move in self-play;
                                    # None: 0 with several heads, 0.1 with one (DQN)
    head_per_side: bool = False     # (bootstrapped) each side of a game draws its own head
    concurrent_games: int = 64      # (bootstrapped) games a Selfplayer plays at once, one Q
                                    # request for a move in each of them
    positions_per_iteration: int | None = None  # (bootstrapped) a Selfplayer waits for the
                                    # next model once its finished games hold this many
                                    # positions; None: its share of what the Trainer waits for
                                    # (train.min_new_samples); 0: never waits

    def validate(self) -> None:
        _int_in(self, "selfplayprocesses", 1, 256)
        _int_in(self, "searchthreadcount", 1, 1024)
        _int_in(self, "searchcount", 1, 1_000_000)
        _bool(self, "search_os_threads")
        _bool(self, "search_solver")
        _float_in(self, "exploration_const", 0.0, 100.0, low_open=True)
        _float_in(self, "virtualloss", 0.0, 100.0)
        _float_in(self, "temperature", 0.0, 100.0)
        _int_in(self, "temperature_drop_move", 0)
        _float_in(self, "dirichlet_alpha", 0.0, 100.0, low_open=True)
        _float_in(self, "dirichlet_fraction", 0.0, 1.0)
        _int_in(self, "max_moves", 1)
        _int_in(self, "gamelog_dump_threshold", 1, 100_000)
        _int_in(self, "evaluation_cache", 0)
        _choice(self, "backend", BACKENDS)
        _check(isinstance(self.ray_address, str) and (
            self.ray_address in ("local", "auto") or ":" in self.ray_address),
            "selfplay.ray_address", "must be 'local', 'auto' or a cluster address HOST:PORT, "
            f"got {self.ray_address!r}")
        _float_in(self, "ray_selfplayer_cpus", 0.0, 1024.0, low_open=True)
        _float_in(self, "ray_predictor_cpus", 0.0, 1024.0, low_open=True)
        _int_in(self, "ray_object_store_mib", 75, 1_000_000)
        if self.epsilon is not None:
            _float_in(self, "epsilon", 0.0, 1.0)
        _bool(self, "head_per_side")
        _int_in(self, "concurrent_games", 1, 65536)
        if self.positions_per_iteration is not None:
            _int_in(self, "positions_per_iteration", 0)


@dataclass
class TrainConfig:
    """The Trainer: which samples, which learner, how long."""

    _section = "train."
    learner: str = "alphazero"      # learner mode (see gamegym.learners)
    replay: str = "window"          # replay mode: "window" = all recent samples, uniformly;
                                    # "uniform", "prioritized", "curious": a replay buffer
    epochs: int = 4                 # passes over the sample window per iteration
    batchsize: int = 64             # training minibatch size
    learning_rate: float = 1e-3     # Adam learning rate
    min_samplecount: int = 500      # samples needed (after the validation split) to train at all
    max_samplecount: int = 20_000   # at most this many of the newest samples per iteration
    max_sampleage: int = 4          # samples of iterations at most this far behind are used
    min_new_samples: int = 500      # new samples needed since the last iteration to train again
    validation_split: float = 0.1   # fraction of the window held out to report val_loss
    augment_symmetries: bool = True  # add the symmetric images of each sample
    num_updates_per_train_iter: int = 0  # >0: that many sampled minibatches instead of epochs
    value_loss_weight: float = 1.0  # weight of the value MSE against the policy cross-entropy
    value_td_steps: int = 0         # >0: the value target is the search value this many plies
                                    # later, not the game result (0 = the result, AlphaZero);
                                    # MuZero's td_steps
    value_target_mix: float = 0.0   # value target = (1 - m) * that + m * own search value
    num_unroll_steps: int = 5       # MuZero: dynamics steps unrolled from each sample (K)
    reward_loss_weight: float = 1.0  # MuZero: weight of the reward MSE (the paper's: 1)
    keep_models: int = 0            # keep only the newest N model files (0 = keep all)
    # the replay buffer (replay "uniform", "prioritized", "curious"; Curious Replay's defaults)
    replay_capacity: int = 100_000  # positions in the buffer; the oldest leave first
    curious_c: float = 1e4          # c: weight of the count term c*beta^v (prioritized: 0)
    curious_beta: float = 0.7       # beta: the count term's decay per replay of a sample
    curious_alpha: float = 0.7      # alpha: sharpness of the loss term (|L| + epsilon)^alpha
    curious_epsilon: float = 0.01   # epsilon: keeps the loss term above 0
    priority_max: float = 1e5       # priority of a sample never trained on
    mask_probability: float = 0.5   # (bootstrapped) p: each head trains on a position with
                                    # chance p (a Bernoulli mask drawn in self-play, stored)
    target_update_period: int = 500  # (bootstrapped) gradient steps between copies of the
                                    # online Q-network to the target network
    double_q: bool = True           # (bootstrapped) the online network picks the opponent's next
                                    # move, the target network values it (double DQN)
    discount: float = 1.0           # (bootstrapped) gamma in y = r - gamma * max Q_target(s', a')

    def validate(self) -> None:
        _choice(self, "learner", LEARNERS)
        _choice(self, "replay", REPLAYS)
        _int_in(self, "epochs", 1, 10_000)
        _int_in(self, "batchsize", 1, 65536)
        _float_in(self, "learning_rate", 0.0, 10.0, low_open=True)
        _int_in(self, "min_samplecount", 1)
        _int_in(self, "max_samplecount", 1)
        _check(self.max_samplecount >= self.min_samplecount, "train.max_samplecount",
               f"({self.max_samplecount}) must be >= train.min_samplecount ({self.min_samplecount})")
        _int_in(self, "max_sampleage", 0)
        _int_in(self, "min_new_samples", 0)
        _float_in(self, "validation_split", 0.0, 0.9)
        _bool(self, "augment_symmetries")
        _int_in(self, "num_updates_per_train_iter", 0)
        _float_in(self, "value_loss_weight", 0.0, 1000.0)
        _float_in(self, "value_target_mix", 0.0, 1.0)
        _int_in(self, "value_td_steps", 0, 10_000)
        _int_in(self, "num_unroll_steps", 1, 100)
        _float_in(self, "reward_loss_weight", 0.0, 1000.0)
        _int_in(self, "keep_models", 0)
        _int_in(self, "replay_capacity", 1, 100_000_000)
        _float_in(self, "curious_c", 0.0, 1e12)
        _float_in(self, "curious_beta", 0.0, 1.0)
        _float_in(self, "curious_alpha", 0.0, 1.0)
        _float_in(self, "curious_epsilon", 0.0, 1e6, low_open=True)
        _float_in(self, "priority_max", 0.0, 1e15, low_open=True)
        if self.replay != "window":
            _check(self.num_updates_per_train_iter > 0, "train.num_updates_per_train_iter",
                   f"must be > 0 with train.replay = {self.replay!r}: the replay buffer trains "
                   "on that many minibatches drawn from it per iteration (e.g. 100)"
                   + ("; whole-window epochs would train every sample equally often, so the "
                      "priorities could steer nothing" if self.replay != "uniform" else "")
                   + "; whole-window epochs are replay 'window'")
            _check(self.replay_capacity >= self.min_samplecount, "train.replay_capacity",
                   f"({self.replay_capacity}) must be >= train.min_samplecount "
                   f"({self.min_samplecount}), or the buffer never holds enough to train")
        _float_in(self, "mask_probability", 0.0, 1.0, low_open=True)
        _int_in(self, "target_update_period", 1)
        _bool(self, "double_q")
        _float_in(self, "discount", 0.0, 1.0, low_open=True)


@dataclass
class EvaluateConfig:
    """The optional Evaluator: the newest iteration against earlier ones and baselines."""

    _section = "evaluate."
    every: int = 0                   # evaluate every N-th iteration (0 = no Evaluator process)
    games: int = 20                  # games per opponent (half of them as first player)
    opponents: list = field(default_factory=lambda: ["random", "alphabeta:2", "previous"])
    searchcount: int = 50            # searches per move of the model players
    q_search: bool = False           # (bootstrapped) the model plays by MCTS with the heads' mean
                                     # Q as leaf value, not by the heads' majority vote

    def validate(self) -> None:
        _int_in(self, "every", 0)
        _int_in(self, "games", 1, 10_000)
        _int_in(self, "searchcount", 1, 100_000)
        _bool(self, "q_search")
        _check(isinstance(self.opponents, list), "evaluate.opponents",
               f"must be a list of players, got {self.opponents!r}")
        for opponent in self.opponents:
            problem = check_player_spec(opponent)
            _check(problem is None, "evaluate.opponents", f"has a bad entry: {problem}")


SECTIONS = {"network": NetworkConfig, "predict": PredictConfig, "selfplay": SelfplayConfig,
            "train": TrainConfig, "evaluate": EvaluateConfig}


@dataclass
class GymConfig:
    """Everything a session needs; stored as the session's config.json."""

    game: str = ""                 # the game as "package.module:Class"
    game_args: dict = field(default_factory=dict)  # keyword arguments for the game class
    seed: int = 0                  # master seed; each process derives its own from it
    debug_single_process: bool = False  # run every role in the main process (for debuggers)
    status_interval: float = 5.0   # seconds between status lines (0 = none)
    heartbeat_timeout: float = 20.0  # seconds without a heartbeat before a child counts as hung
                                     # and is killed (0 = never)
    log_level: str = "INFO"        # level of the per-process logs
    network: NetworkConfig = field(default_factory=NetworkConfig)
    predict: PredictConfig = field(default_factory=PredictConfig)
    selfplay: SelfplayConfig = field(default_factory=SelfplayConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    evaluate: EvaluateConfig = field(default_factory=EvaluateConfig)

    # fields a resumed session may not change: they would make models or samples meaningless
    FIXED = ("game", "game_args", "network", "train.learner")

    def __post_init__(self) -> None:
        for name, section_cls in SECTIONS.items():  # sections may be given as plain dicts
            section = getattr(self, name)
            if isinstance(section, dict):
                _reject_unknown(section, _field_names(section_cls), f"{name}.")
                setattr(self, name, section_cls(**section))
        self.validate()

    def validate(self) -> None:
        _check(isinstance(self.game, str) and ":" in self.game, "game",
               f"must look like 'package.module:ClassName', got {self.game!r}")
        _check(isinstance(self.game_args, dict), "game_args",
               f"must be a JSON object, got {self.game_args!r}")
        _int_in(self, "seed", 0, 2**32 - 1)
        _bool(self, "debug_single_process")
        _float_in(self, "status_interval", 0.0, 3600.0)
        _float_in(self, "heartbeat_timeout", 0.0, 3600.0)
        _choice(self, "log_level", ("DEBUG", "INFO", "WARNING", "ERROR"))
        for name, cls in SECTIONS.items():
            section = getattr(self, name)
            _check(isinstance(section, cls), name, f"must be a {cls.__name__}")
            section.validate()
        _check(not (self.train.learner == "muzero" and self.selfplay.search_solver),
               "selfplay.search_solver", "cannot be used with train.learner 'muzero': the "
               "solver proves positions of the GameGraph, and MuZero searches a learned model")
        self._check_selfplay_pause()

    def _check_selfplay_pause(self) -> None:
        """Selfplayers that wait for each new model after `positions_per_iteration` positions
        must together play enough for the Trainer to train it (else both would wait forever)."""
        given = self.selfplay.positions_per_iteration
        if not given or self.train.learner != "bootstrapped":
            return
        needed = self._samples_per_iteration()
        count = ("1 (debug_single_process)" if self.debug_single_process else
                 f"selfplay.selfplayprocesses ({self.selfplay.selfplayprocesses})")
        _check(given * self._selfplayers() >= needed, "selfplay.positions_per_iteration",
               f"({given}) times {count} must be at least train.min_new_samples "
               f"({self.train.min_new_samples}) and train.min_samplecount / (1 - "
               f"train.validation_split) ({needed}): the Selfplayers wait for a model the "
               "Trainer trains only on that many samples")

    def _selfplayers(self) -> int:
        """Self-play drivers at work: one in a single-process run."""
        return 1 if self.debug_single_process else self.selfplay.selfplayprocesses

    def _samples_per_iteration(self) -> int:
        """New samples the Trainer waits for before it trains an iteration (the first one
        included), with the window replay."""
        train = self.train
        return max(train.min_new_samples,
                   math.ceil(train.min_samplecount / (1.0 - train.validation_split)))

    def selfplay_positions_per_iteration(self) -> int:
        """The positions a Selfplayer plays with one model iteration before it waits for the
        next (0: it never waits): selfplay.positions_per_iteration, or by default its share of
        the samples the Trainer waits for."""
        given = self.selfplay.positions_per_iteration
        if given is not None:
            return given
        return math.ceil(self._samples_per_iteration() / self._selfplayers())

    # ----- JSON round trip -----------------------------------------------------------------
    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_dict(cls, data: dict) -> "GymConfig":
        if not isinstance(data, dict):
            raise ConfigError(f"a config must be a JSON object, got {type(data).__name__}")
        # a copy of a session's config.json: its format version is the session's business
        data = {k: v for k, v in data.items() if k != "format_version"}
        _reject_unknown(data, _field_names(cls), "")
        for name in SECTIONS:
            if not isinstance(data.get(name, {}), dict):
                raise ConfigError(f"config field '{name}' must be a JSON object")
        return cls(**data)

    @classmethod
    def from_json_file(cls, path: Path, fill: dict | None = None) -> "GymConfig":
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

    def updated(self, overrides: dict) -> "GymConfig":
        """A copy with nested overrides applied, e.g. {"selfplay": {"searchcount": 50}}."""
        data = self.to_dict()
        for key, value in overrides.items():
            if key in SECTIONS and isinstance(value, dict) and isinstance(data.get(key), dict):
                data[key].update(value)
            else:
                data[key] = value
        return GymConfig.from_dict(data)

    def value_at(self, path: str) -> Any:
        """A field by its dotted name, e.g. "train.learner" (None when there is none)."""
        return _get_path(self.to_dict(), path)

    def check_resume(self, stored: "GymConfig") -> None:
        """Refuse a config for resuming that changes a field fixed at session creation."""
        new, old = self.to_dict(), stored.to_dict()
        for path in self.FIXED:
            a, b = _get_path(new, path), _get_path(old, path)
            if a != b:
                raise ConfigError(f"config field '{path}' cannot change on resume "
                                  f"(session has {b!r}, new config has {a!r}); "
                                  "start a new session instead")


def _field_names(cls: type) -> list[str]:
    return [f.name for f in fields(cls)]


def _reject_unknown(data: dict, known: list[str], prefix: str) -> None:
    for key in data:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean '{prefix}{close[0]}'?" if close else \
                f"; known fields: {', '.join(known)}"
            raise ConfigError(f"unknown config field '{prefix}{key}'{hint}")


def _get_path(data: dict, path: str) -> Any:
    for part in path.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data
