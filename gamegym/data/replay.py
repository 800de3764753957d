"""Replay: which samples the Trainer trains on in an iteration, and how minibatches are drawn.

`train.replay` picks a Replay; the Trainer knows only this interface, and every learner trains
the same way whatever the replay is:

    ok, why = replay.ready(iteration)            # enough samples to train?
    batch, facts = replay.load(iteration)        # the SampleBatch to train on, and for the
    #                                              train report the files read ("sources")
    sampler = replay.sampler(batch, rng)         # None: the learner's own epochs over the batch
    ... learner.train_iteration(model, batch, train_config, rng, graph, sampler) ...
    replay.commit(new_iteration)                 # persist replay state for the iteration,
    #                                              before its model is published
    replay.figures()                             # numbers for the train report and status line

A `Sampler` is the only channel between a replay and a learner: it draws the sample indices
(into the batch) of each minibatch, and hears back after each training step which samples
were trained on and each one's own loss in that step:

    index = sampler.draw(size)                   # int64 [size], indices into the batch
    sampler.update(trained, losses)              # int [k], float [k]: after the step

The rules every learner keeps (they are all a prioritised replay needs, so the Trainer never
learns which learner it runs):
- `draw` may return an index more than once (draws are independent); train each occurrence.
- What a drawn index stands for is the learner's: a position (AlphaZero), a transition
  (Bootstrapped DQN: report its TD error as the loss), or the LAST step of a sequence
  (MuZero: the sequence of `num_unroll_steps` + 1 positions of the same game ending at the
  drawn position, shorter at the start of a game), so a sequence is drawn by the priority of
  its last step, as Curious Replay does for DreamerV3.
- `update` reports every sample the step trained on, which may be more than were drawn
  (every step of each unrolled sequence, each with its own loss) or fewer (a drawn sample
  with no training example); an index may repeat (it was trained that many times).  Each
  reported occurrence counts as one replay of that sample.
- Report after every step, before the next `draw`: the priorities of the next draw use it.

`window` (the default) is the original scheme: every sample of the last `max_sampleage`
iterations, newest first, at most `max_samplecount`, in epochs (or `num_updates_per_train_iter`
uniform minibatches); it needs no sampler and keeps no state.  With `window_shape` "growing"
its size follows the samples the session holds instead (`growing_window`).

`uniform`, `prioritized` and `curious` (Kauvar et al. 2023, "Curious Replay") keep a buffer of
the newest `replay_capacity` positions, each with a replay count and a priority that decide how
often it is drawn, saved in replay/<iteration>.npz with every iteration: gamegym.data.prioritized.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from gamegym.data.samplefolder import SampleCounter, load_samples
from gamegym.data.samples import SampleBatch, SampleShape
from gamegym.registry import REPLAYS, RegistryError

if TYPE_CHECKING:
    from gamegym.config import GymConfig, TrainConfig
    from gamegym.data.session import Session

__all__ = [
    "Replay",
    "Sampler",
    "WindowReplay",
    "growing_window",
    "make_replay",
    "window_size",
    "window_start",
]


class Sampler(Protocol):
    """Draws minibatches from a batch and hears each trained sample's loss (see the module)."""

    def draw(self, size: int) -> NDArray[np.integer[Any]]: ...

    def update(self, index: ArrayLike, losses: ArrayLike) -> None: ...


class Replay(ABC):
    """The samples the Trainer trains on; one instance lives in the Trainer process.  A replay
    mode registers its subclass in gamegym.registry.REPLAYS under its `name`."""

    name: str = ""
    uses_buffer = False  # keeps a replay buffer with a state file per iteration
    shaped_window = False  # takes a window of recent samples that train.window_shape sizes

    @classmethod
    def config_problem(cls, train_config: TrainConfig) -> str | None:
        """What is wrong with `train_config` for this replay (`check_config`), after what every
        replay checks: train.window_shape sizes only a window that takes a shape."""
        if train_config.window_shape != "fixed" and not cls.shaped_window:
            return (
                f"'train.window_shape' ({train_config.window_shape!r}) sizes the window of "
                f"train.replay 'window'; train.replay {cls.name!r} has no window it sizes"
                + (" (its buffer holds train.replay_capacity positions)" if cls.uses_buffer else "")
            )
        return cls.check_config(train_config)

    @classmethod
    def check_config(cls, train_config: TrainConfig) -> str | None:
        """What is wrong with `train_config` (a TrainConfig) for this replay, starting with
        the quoted field name, or None."""
        return None

    def __init__(
        self, session: Session, config: GymConfig, shape: SampleShape | None = None
    ) -> None:
        self.session = session
        self.config = config
        self.shape = shape  # the game's SampleShape: a file that does not fit is quarantined

    @abstractmethod
    def ready(self, iteration: int) -> tuple[bool, str]:
        """Whether there is enough to train iteration+1 on, and why not."""

    @abstractmethod
    def load(self, iteration: int) -> tuple[SampleBatch | None, dict[str, Any]]:
        """The samples to train on, and facts for train/<it>.json: "sources", per file read
        how many samples were taken from it ("<iteration>/<file name>" -> count), and anything
        else that says what was trained on (the window's iterations)."""

    def sampler(self, batch: SampleBatch, rng: np.random.Generator) -> Sampler | None:
        """How minibatches are drawn from `batch`; None lets the learner run its epochs."""
        return None

    def commit(self, iteration: int) -> None:
        """Persist the replay's state as that of `iteration` (the Trainer calls it before it
        publishes that iteration's model, so a published model always has its state)."""

    def rollback(self) -> None:
        """Forget what the last `load` and training changed since the last `commit` (the
        Trainer refused the iteration).  Default: nothing kept."""

    def figures(self) -> dict[str, Any]:
        """Numbers for the status line and the train report (empty when there are none)."""
        return {}


def readiness(
    cfg: TrainConfig, trained: int, held: int, new: int, iteration: int, where: str
) -> tuple[bool, str]:
    """Ready when the `trained` samples less the validation split reach `min_samplecount` and
    `new` samples of `iteration` reach `min_new_samples`; else why not."""
    usable = int(trained * (1 - cfg.validation_split))
    if usable < cfg.min_samplecount:
        return False, f"{usable}/{cfg.min_samplecount} samples in {where}"
    if new < cfg.min_new_samples:
        return False, f"{new}/{cfg.min_new_samples} samples from iteration {iteration}"
    return True, f"{held} samples in {where}"


GROWTH_ALPHA = 0.75  # KataGo's shaped window (Wu 2019, "Accelerating Self-Play Learning in
GROWTH_BETA = 0.4  # Go"): past its base it grows as the samples N to the power alpha, scaled


def growing_window(samples: int, base: int) -> int:
    """How many of the newest samples the "growing" window trains on when the session holds
    `samples`: all of them up to `base`, then base * (1 + beta * ((samples / base) ** alpha
    - 1) / alpha), which grows ever more slowly (train.window_shape)."""
    if samples <= base:
        return samples
    growth = ((samples / base) ** GROWTH_ALPHA - 1) / GROWTH_ALPHA
    return int(base * (1 + GROWTH_BETA * growth))


def window_start(train_config: TrainConfig, iteration: int) -> int:
    """The oldest iteration whose samples may be in train.replay "window"'s window when model
    `iteration` is trained on (train.max_sampleage; the "growing" shape has no age bound)."""
    if train_config.window_shape == "growing":
        return 0
    return max(0, iteration - train_config.max_sampleage)


def window_size(train_config: TrainConfig, counts: dict[int, int]) -> int:
    """How many of the newest samples train.replay "window" trains on at most, given the
    samples per iteration the session holds (train.max_samplecount, train.window_shape)."""
    if train_config.window_shape == "growing":
        base = train_config.window_base
        return min(train_config.max_samplecount, growing_window(sum(counts.values()), base))
    return train_config.max_samplecount


@REPLAYS.register
class WindowReplay(Replay):
    """All samples of recent iterations, newest first (the original scheme)."""

    name = "window"
    shaped_window = True

    def __init__(
        self, session: Session, config: GymConfig, shape: SampleShape | None = None
    ) -> None:
        super().__init__(session, config, shape)
        self.counter = SampleCounter(session.samples_dir)

    def window_start(self, iteration: int) -> int:
        """The oldest iteration whose samples may be in the window."""
        return window_start(self.config.train, iteration)

    def window_size(self, counts: dict[int, int]) -> int:
        """At most this many of the newest samples, given the samples per iteration held."""
        return window_size(self.config.train, counts)

    def ready(self, iteration: int) -> tuple[bool, str]:
        cfg = self.config.train
        counts = self.counter.samples_per_iteration()
        window = sum(n for it, n in counts.items() if it >= self.window_start(iteration))
        return readiness(
            cfg,
            min(window, self.window_size(counts)),
            window,
            counts.get(iteration, 0),
            iteration,
            "the window",
        )

    def load(self, iteration: int) -> tuple[SampleBatch | None, dict[str, Any]]:
        sources: dict[str, int] = {}
        reanalysed: dict[str, int] = {}
        size = self.window_size(self.counter.samples_per_iteration())
        batch = load_samples(
            self.session.samples_dir,
            self.window_start(iteration),
            size,
            self.session.quarantine_dir,
            sources,
            self.shape,
            reanalysed,
        )
        facts: dict[str, Any] = {
            "sources": sources,
            "window": [self.window_start(iteration), iteration],
            "window_size": size,
        }
        if reanalysed:  # samples trained on with reanalysed targets (train.reanalyze)
            facts["reanalysed"] = sum(reanalysed.values())
        return batch, facts


def make_replay(session: Session, config: GymConfig, shape: SampleShape | None = None) -> Replay:
    """The replay `config.train.replay` names (gamegym.registry.REPLAYS); given the game's
    SampleShape, sample files that do not fit it are quarantined."""
    try:
        cls = REPLAYS.get(config.train.replay)
    except RegistryError as error:
        raise ValueError(str(error)) from None
    replay: Replay = cls(session, config, shape)
    return replay
