"""Replay: which samples the Trainer trains on in an iteration, and how minibatches are drawn.

`train.replay` picks a Replay; the Trainer knows only this interface, and every learner trains
the same way whatever the replay is:

    ok, why = replay.ready(iteration)            # enough samples to train?
    batch, facts = replay.load(iteration)        # the SampleBatch to train on, and for the
                                                 # train report the files read ("sources")
    sampler = replay.sampler(batch, rng)         # None: the learner's own epochs over the batch
    ... learner.train_iteration(model, batch, train_config, rng, graph, sampler) ...
    replay.commit(new_iteration)                 # persist replay state with the iteration

A `Sampler` draws the sample indices (into the batch) of each minibatch and hears back each
drawn sample's own loss from that step; it is how prioritised replays steer training:

    index = sampler.draw(size)                   # int64 [size], indices into the batch
    sampler.update(index, losses)                # float32 [size], the loss of each at this step

`window` (the default) is the original scheme: every sample of the last `max_sampleage`
iterations, newest first, at most `max_samplecount`, in epochs (or `num_updates_per_train_iter`
uniform minibatches); it needs no sampler and keeps no state.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Protocol

import numpy as np

from gamegym.samples import SampleBatch, SampleCounter, load_samples

__all__ = ["Replay", "Sampler", "WindowReplay", "make_replay"]


class Sampler(Protocol):
    """Draws minibatches from a batch and hears each drawn sample's loss (see the module)."""

    def draw(self, size: int) -> np.ndarray: ...

    def update(self, index: np.ndarray, losses: np.ndarray) -> None: ...


class Replay(ABC):
    """The samples the Trainer trains on; one instance lives in the Trainer process."""

    def __init__(self, session, config):
        self.session = session
        self.config = config

    @abstractmethod
    def ready(self, iteration: int) -> tuple[bool, str]:
        """Whether there is enough to train iteration+1 on, and why not."""

    @abstractmethod
    def load(self, iteration: int) -> tuple[SampleBatch | None, dict]:
        """The samples to train on, and facts for train/<it>.json: "sources", per file read
        how many samples were taken from it ("<iteration>/<file name>" -> count), and anything
        else that says what was trained on (the window's iterations)."""

    def sampler(self, batch: SampleBatch, rng: np.random.Generator) -> Sampler | None:
        """How minibatches are drawn from `batch`; None lets the learner run its epochs."""
        return None

    def commit(self, iteration: int) -> None:
        """Persist the replay's state together with the newly published `iteration`."""

    def figures(self) -> dict:
        """Numbers for the status line and the train report (empty when there are none)."""
        return {}


class WindowReplay(Replay):
    """All samples of recent iterations, newest first (the original scheme)."""

    def __init__(self, session, config):
        super().__init__(session, config)
        self.counter = SampleCounter(session.samples_dir)

    def window_start(self, iteration: int) -> int:
        return max(0, iteration - self.config.train.max_sampleage)

    def ready(self, iteration: int) -> tuple[bool, str]:
        cfg = self.config.train
        counts = self.counter.samples_per_iteration()
        window = sum(n for it, n in counts.items() if it >= self.window_start(iteration))
        usable = int(min(window, cfg.max_samplecount) * (1 - cfg.validation_split))
        new = counts.get(iteration, 0)
        if usable < cfg.min_samplecount:
            return False, f"{usable}/{cfg.min_samplecount} samples in the window"
        if new < cfg.min_new_samples:
            return False, f"{new}/{cfg.min_new_samples} samples from iteration {iteration}"
        return True, f"{window} samples in the window"

    def load(self, iteration: int) -> tuple[SampleBatch | None, dict]:
        sources: dict[str, int] = {}
        batch = load_samples(self.session.samples_dir, self.window_start(iteration),
                             self.config.train.max_samplecount, self.session.quarantine_dir,
                             sources)
        return batch, {"sources": sources, "window": [self.window_start(iteration), iteration]}


REPLAYS = {"window": WindowReplay}


def make_replay(session, config) -> Replay:
    """The replay `config.train.replay` names."""
    try:
        cls = REPLAYS[config.train.replay]
    except KeyError:
        raise ValueError(f"unknown replay {config.train.replay!r}; known: "
                         f"{', '.join(sorted(REPLAYS))}") from None
    return cls(session, config)
