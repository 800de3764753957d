"""The Learner interface: everything a trainer mode decides, in one object per mode.

A learner is asked by each role of the gym for its part, so the roles stay the same for every
mode (no branch per mode in the Trainer, the Predictor or the Selfplayer):

  the gym (`new`)   build_model: the iteration-0 network (one saved model file per iteration;
                    a learner with several networks saves one container model holding them)
  the Trainer       compile, train_iteration: trains on a SampleBatch, drawing minibatches
                    from the replay's Sampler when it has one (gamegym.data.replay), and reports the
                    loss of every sample it trained on (for prioritised replays)
  the Predictor     make_evaluator: the model call behind the request kinds its self-play makes
                    (`run(kind, inputs) -> outputs`, see gamegym.nets.inference)
  a Selfplayer      selfplayer: plays games through a model service and yields them finished;
                    must not import TensorFlow
  players           player: the model as a Player for evaluate, play, the Evaluator, benchmarks

A Learner turns a `SampleBatch` (whole games, see gamegym.data.samples) into targets and trains the
session's model on them.  Sequence learners (MuZero unrolls, DQN transitions) rebuild games from
the `game` / `step` / `action` columns; curious replay uses the per-sample losses to set the
priorities of the samples it drew.

Training options are read from a `train_config` by attribute (a `gamegym.config.TrainConfig`, a
SimpleNamespace) or by key (a dict); `option()` gives the TrainConfig default for a missing one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypeVar

import numpy as np
from numpy.typing import NDArray

from gamegym.registry import LEARNERS, PRESETS

if TYPE_CHECKING:
    from gamegym.config import GymConfig, NetworkConfig
    from gamegym.data.replay import Sampler
    from gamegym.data.samples import GameRecord, SampleBatch, SampleColumn
    from gamegym.game.graph import GameGraph
    from gamegym.game.players import Player
    from gamegym.nets.portable import FastForm
    from gamegym.nets.protocols import ModelCall, ModelService
    from gamegym.search.tree import SearchParams, TreeSearch

__all__ = [
    "Learner",
    "Preset",
    "SelfplayDriver",
    "TrainReport",
    "TrainResult",
    "register",
    "register_preset",
    "option",
    "REGISTRY",
]

# training options: a gamegym.config.TrainConfig, a SimpleNamespace or a dict, read by `option()`
TrainOptions = Any
# a Keras model (Keras has no type information)
Model = Any
# what a network is built from: GymConfig.network_options() (a dict), or a NetworkConfig
NetworkOptions: TypeAlias = "Mapping[str, Any] | NetworkConfig"

# other spellings accepted for an option: name -> aliases
ALIASES = {"batchsize": ("batch_size", "mini_batch_size")}


@dataclass
class TrainReport:
    """What one training iteration reports."""

    history: dict[str, list[float]] = field(default_factory=dict)  # name -> per-epoch floats
    samples: int = 0  # training samples (validation ones excluded)
    seconds: float = 0.0
    per_sample_loss: NDArray[np.float32] | None = None  # [N] over the batch; with a sampler
    # NaN for the samples not trained on


TrainResult = TrainReport  # the earlier name


class SelfplayDriver(Protocol):
    """One Selfplayer's self-play (`Learner.selfplayer`)."""

    searches_done: int  # a running count, for throughput

    def play(self, should_stop: Callable[[], bool]) -> Iterator[tuple[GameRecord, int] | None]:
        """Finished games and the model iteration that played each; None now and then while it
        waits for a newer model."""
        ...


class Learner(ABC):
    """One trainer mode.  Instances are made per process; they may keep optimizer state."""

    name: str = ""
    # the dataclass of this learner's own config section (stored under its name in
    # config.json, validated by its `validate()`; a FIXED tuple names the fields a resume may
    # not change), or None when it has no options of its own
    config_class: type[Any] | None = None
    # whether self-play (and the model's player, by default) searches a tree; a learner that
    # plays straight from its network (bootstrapped) has no search ceiling nor efficiency
    searches_in_selfplay: bool = True
    # whether its model is one network that gamegym.bench.networks can time on each path
    # (TensorFlow, NumPy, ONNX Runtime); else the bench times the learner's own evaluator
    compares_network_paths: bool = False
    # how its training step runs under train.compile "auto" (gamegym.nets.trainstep): "xla"
    # where `gamegym bench training` found the XLA-compiled step faster for it, else "traced"
    train_compile: str = "traced"

    @classmethod
    def check_config(cls, config: GymConfig) -> str | None:
        """What is wrong with the whole GymConfig `config` for this learner, starting with the
        quoted field name ("'selfplay.x' cannot ..."), or None.  Default: nothing."""
        return None

    @abstractmethod
    def build_model(
        self, graph: GameGraph[Any], network_config: NetworkOptions, seed: int | None = None
    ) -> Model:
        """A fresh Keras model for a new session of this game (`seed`: reproducible initial
        weights).  A learner with several networks (MuZero's h, g, f) returns one container
        model holding them."""

    def check_fits(self, model: Model, graph: GameGraph[Any]) -> None:
        """Raise ValueError (or GameGraphError) when this learner cannot train `model` on
        `graph`: checked when a session is made, beyond the input and policy shapes the gym
        checks for every learner.  Default: nothing more to check."""

    @abstractmethod
    def compile(self, model: Model, train_config: TrainOptions) -> None:
        """Prepare the optimizer (and any target networks) for training `model`."""

    def averaged_weights(self, model: Model) -> list[bool]:
        """Which of `model.get_weights()` train.weight_average "ema" averages (the others are
        published as trained): the weights that make the model's play, not training
        bookkeeping stored in the model file.  Default: every floating-point weight (a
        network's kernels and biases, and batch normalization's moving mean and variance)."""
        return [np.issubdtype(w.dtype, np.floating) for w in model.get_weights()]

    def sample_columns(self, config: GymConfig) -> dict[str, SampleColumn]:
        """The columns of its own this learner's self-play adds to the sample files
        (`GameRecord.extra`), by name, each a `gamegym.data.samples.SampleColumn` (dtype and
        row shape) under the session's GymConfig `config`.  The Trainer reads a file only
        when it holds each of them as declared (others are quarantined) and keeps no other.
        Default: none."""
        return {}

    def train_path(self, train_config: TrainOptions) -> str:
        """How this learner's training step runs under `train_config`'s train.compile:
        "xla" or "traced" ("auto": its own `train_compile`)."""
        from gamegym.nets.trainstep import compile_path

        return compile_path(option(train_config, "compile"), self.train_compile)

    def train_step_options(self, train_config: TrainOptions) -> tuple[str, int]:
        """(path, minibatch size) of this learner's training step under `train_config`
        (gamegym.nets.trainstep.TrainStep): a change of either builds the step anew."""
        return self.train_path(train_config), int(option(train_config, "batchsize"))

    @abstractmethod
    def make_targets(
        self,
        batch: SampleBatch,
        graph: GameGraph[Any] | None = None,
        train_config: TrainOptions = None,
    ) -> tuple[Any, dict[str, Any], NDArray[np.integer[Any]]]:
        """(inputs, targets by name, sample ids): the training examples of a SampleBatch.
        Sample ids [M] index `batch` and say which sample each example belongs to (a sequence
        learner makes fewer examples than samples, e.g. none for a game's last position)."""

    @abstractmethod
    def train_iteration(
        self,
        model: Model,
        batch: SampleBatch,
        train_config: TrainOptions,
        rng: np.random.Generator,
        graph: GameGraph[Any] | None = None,
        sampler: Sampler | None = None,
    ) -> TrainReport:
        """Train one iteration on `batch` (a SampleBatch); `graph` enables augmentation.
        With a `sampler` (gamegym.data.replay.Sampler) every minibatch is drawn with
        `sampler.draw(size)` (`num_updates_per_train_iter` of them) and after each step
        `sampler.update(index, losses)` reports every sample that step trained on and its own
        loss; the rules for sequence learners are in gamegym.data.replay's docstring."""

    @abstractmethod
    def per_sample_loss(
        self, model: Model, batch: SampleBatch, train_config: TrainOptions = None
    ) -> NDArray[np.float32]:
        """float32 [N]: the loss of each sample under the current model (no update)."""

    @abstractmethod
    def make_evaluator(self, model: Model, iteration: int, fast: bool = True) -> ModelCall:
        """The Predictor's model call for `model`: an object with `iteration`,
        `run(kind, inputs) -> outputs` for every request kind this learner's self-play and
        players make, and `update(model, iteration) -> bool` (take a new iteration's weights
        of the same network; False when it cannot); `path` and `search_request` for the
        benchmarks (gamegym.nets.protocols.ModelCall).  Optionally `portable()`: a picklable
        evaluator without TensorFlow (`iteration`, `kinds`, `run`) that the Selfplayers then
        run themselves for those kinds (AlphaZero's: the model on the CPU fast path,
        `gamegym.nets.inference.FastEvaluator`), or None."""

    def fast_form(self, model: Model) -> FastForm | None:
        """The model as a fast form (`gamegym.nets.portable.FastForm`: its nets as NumPy step
        programs, and the name of the TensorFlow-free evaluator class that runs them), which
        is saved next to the model file so a Predictor on the CPU fast path never imports
        TensorFlow; None when the model has no fast form.  Default: None."""
        return None

    @abstractmethod
    def selfplayer(
        self,
        graph: GameGraph[Any],
        service: ModelService,
        config: GymConfig,
        rng: np.random.Generator,
    ) -> SelfplayDriver:
        """A self-play driver for one Selfplayer process: `service` is the model service
        (gamegym.nets.inference), `config` the whole GymConfig.  The driver has `searches_done`
        (a running count for throughput) and `play(should_stop)`, an iterator of finished
        games as (GameRecord, model iteration that played it), or None now and then while it
        waits for a newer model (the Selfplayer then writes out the games it holds).
        No TensorFlow."""

    def player_searches(self, config: GymConfig) -> bool:
        """Whether the model's player (evaluate, play, benchmarks) searches a tree under the
        session's GymConfig `config`.  Default: as its self-play does."""
        return self.searches_in_selfplay

    def play_rule(self, config: GymConfig) -> str:
        """How the model's player picks a move, in words, for a player that does not search."""
        return "the best move of its network"

    def is_model_file_of(
        self, path: Path, graph: GameGraph[Any], network_config: NetworkOptions
    ) -> bool:
        """Whether the model file at `path` is the network this learner builds for `graph`
        with `network_config` (a starter model whose preset changed must not be trained).
        Default: a fresh network built and compared weight shape for weight shape (this
        loads TensorFlow)."""
        from gamegym.nets.tfsetup import configure_tensorflow, load_model

        # as when the gym builds the first model: the GPU is the Predictor's, not this process's
        configure_tensorflow(use_gpu=False)
        stored, fresh = load_model(path), self.build_model(graph, network_config)
        return (stored.name, [w.shape for w in stored.weights]) == (
            fresh.name,
            [w.shape for w in fresh.weights],
        )

    def stub_search(self, graph: GameGraph[Any], params: SearchParams) -> TreeSearch:
        """This learner's self-play search with a uniform evaluator (nothing computed at the
        leaves): the search ceiling of `gamegym bench`.  Default: the search over the GameGraph
        on the core `params` picks (gamegym.search.cores.make_search)."""
        from gamegym.search.cores import make_search
        from gamegym.search.mcts import uniform_evaluator

        return make_search(graph, uniform_evaluator(graph.action_space_size), params)

    @abstractmethod
    def player(
        self,
        graph: GameGraph[Any],
        service: ModelService,
        searchcount: int = 100,
        threads: int = 8,
        config: GymConfig | None = None,
    ) -> Player:
        """The model as a gamegym.game.players.Player answering through `service`; `config` is the
        session's GymConfig (None: the defaults), for a learner with playing options."""


@dataclass(frozen=True)
class Preset:
    """Session settings of one game for one learner that learn well on 2 cores.

    A learner sub-package keeps its presets in its own `presets` module and registers them
    (`register_preset`); gamegym.presets gathers them for `gamegym presets`, `gamegym new
    --preset NAME` and the benchmarks."""

    name: str  # what `gamegym new --preset` takes, e.g. "tictactoe-muzero"
    settings: dict[str, Any]  # the config (JSON form: game, game_args, sections) or, with a
    # `base`, what it changes in the base's, as GymConfig.updated applies changes
    about: str  # what it is for, in one line (`gamegym presets`)
    base: str | None = None  # the preset whose settings `settings` changes
    variant: str | None = None  # the learner preset it belongs to (`preset_for(game, args,
    # variant)`): a learner's name, or a variant of one such as "dqn"; None: its learner
    starter: bool = False  # a starter model ships with it: gamegym/initialmodels/<name>.keras


def register_preset(preset: Preset) -> Preset:
    """Make a preset available by its name (gamegym.registry.PRESETS)."""
    registered: Preset = PRESETS.register(preset)
    return registered


def option(train_config: TrainOptions, name: str) -> Any:
    """A training option by attribute or key (aliases accepted); the default of TrainConfig, or
    of the learner section that has the field, when the config does not have it.  The Trainer
    passes GymConfig.train_options(): the train section and the learner's own."""
    for key in (name, *ALIASES.get(name, ())):
        if isinstance(train_config, Mapping):
            if key in train_config:
                return train_config[key]
        elif train_config is not None and hasattr(train_config, key):
            return getattr(train_config, key)
    from gamegym.config import TrainConfig

    if hasattr(TrainConfig, name):
        return getattr(TrainConfig, name)
    for _, learner in LEARNERS.items():
        section = getattr(learner, "config_class", None)
        if section is not None and hasattr(section, name):
            return getattr(section, name)
    raise AttributeError(f"no training option {name!r}")


REGISTRY = LEARNERS  # name -> Learner class (gamegym.registry)


L = TypeVar("L", bound=type[Learner])


def register(cls: L) -> L:
    """Class decorator: make a Learner available by its `name` (gamegym.registry.LEARNERS)."""
    registered: L = LEARNERS.register(cls)
    return registered
