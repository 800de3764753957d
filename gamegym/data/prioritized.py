"""The replays that keep a buffer: `uniform`, `prioritized` and `curious` (Kauvar et al. 2023,
"Curious Replay"), behind the Replay interface of gamegym.data.replay.

They keep one buffer of the newest `replay_capacity` positions (gamegym.data.replaybuffer),
read incrementally, each with a replay count v and a priority p, saved in replay/<iteration>.npz
with every iteration (the newest KEEP_STATES kept).  New samples enter at `priority_max`; after
a step each reported sample gets v <- v + 1 and p <- c * beta^v + (|L| + epsilon)^alpha
(`Priorities`).  `curious` draws in proportion to p through a SumTree, `prioritized` is the
same with c = 0 (loss only, like prioritised experience replay), and `uniform` draws uniformly
(it keeps v and p all the same, for monitoring and for a later switch).  A damaged state file
is quarantined and the buffer rebuilt from the sample files, never fatal.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from gamegym.data.fileio import atomic_write_bytes, quarantine
from gamegym.data.replay import Replay, readiness
from gamegym.data.replaybuffer import ReplayBuffer, ReplayStateError
from gamegym.data.samplefolder import sample_files, sample_iterations
from gamegym.data.samples import SampleBatch, SampleShape
from gamegym.registry import REPLAYS

if TYPE_CHECKING:
    from gamegym.config import GymConfig, TrainConfig
    from gamegym.data.session import Session

__all__ = [
    "BufferReplay",
    "BufferSampler",
    "CuriousReplay",
    "PrioritizedReplay",
    "Priorities",
    "UniformReplay",
]

log = logging.getLogger("gamegym.data.replay")  # the replays log as one
KEEP_STATES = 2  # state files kept: the newest iteration's and the one before


@dataclass(frozen=True)
class Priorities:
    """Curious Replay's priority p = c * beta^v + (|L| + epsilon)^alpha (seed 002, 4.3)."""

    c: float  # weight of the count term (0: loss only, prioritised replay)
    beta: float  # decay of the count term per replay
    alpha: float  # sharpness of the loss term
    epsilon: float  # keeps the loss term above 0
    new: float  # the priority of a sample never trained on (p_max)

    @classmethod
    def of(cls, train_config: TrainConfig) -> Priorities:
        """The priorities of the replay `train_config.replay` names, with its settings."""
        cfg = train_config
        count_term = getattr(REPLAYS.get(cfg.replay), "count_term", True)
        return cls(
            c=float(cfg.curious_c) if count_term else 0.0,
            beta=float(cfg.curious_beta),
            alpha=float(cfg.curious_alpha),
            epsilon=float(cfg.curious_epsilon),
            new=float(cfg.priority_max),
        )

    def __call__(self, count: ArrayLike, loss: ArrayLike) -> NDArray[np.float64]:
        """float64 [k]: the priority after `count` replays, the last with loss `loss`; a
        non-finite loss gives the new-sample priority (look at it again soon)."""
        losses = np.asarray(loss, np.float64)
        p = (
            self.c * self.beta ** np.asarray(count, np.float64)
            + (np.abs(np.where(np.isfinite(losses), losses, 0.0)) + self.epsilon) ** self.alpha
        )
        return np.where(np.isfinite(losses), p, self.new)


class BufferSampler:
    """Draws from a ReplayBuffer (by priority, or uniformly) and updates the drawn samples'
    counts and priorities; counts what it drew for the monitoring."""

    def __init__(
        self, buffer: ReplayBuffer, priorities: Priorities, uniform: bool, rng: np.random.Generator
    ) -> None:
        self.buffer, self.priorities, self.uniform, self.rng = buffer, priorities, uniform, rng
        self.drawn = self.drawn_new = self.batches = self.updated = 0

    def draw(self, size: int) -> NDArray[np.integer[Any]]:
        n = len(self.buffer)
        index: NDArray[np.integer[Any]]
        if self.uniform:
            index = self.rng.integers(0, n, int(size))
        else:
            index = self.buffer.tree.sample(int(size), self.rng)
        self.drawn += len(index)
        self.drawn_new += int(np.count_nonzero(self.buffer.count[index] == 0))
        self.batches += 1
        return index

    def update(self, index: ArrayLike, losses: ArrayLike) -> None:
        at = np.asarray(index, np.int64).reshape(-1)
        loss = np.asarray(losses, np.float64).reshape(-1)
        if at.shape != loss.shape:
            raise ValueError(f"sampler.update: {len(at)} indices but {len(loss)} losses")
        if len(at) and (at.min() < 0 or at.max() >= len(self.buffer)):
            raise IndexError(
                f"sampler.update: an index is outside the batch of {len(self.buffer)} samples"
            )
        count = self.buffer.count
        np.add.at(count, at, 1)
        self.buffer.tree.update(at, self.priorities(count[at], loss))
        self.updated += len(at)

    def figures(self) -> dict[str, Any]:
        """The share of drawn samples that were new (never trained on when drawn), and how
        many were drawn and reported trained."""
        if not self.drawn:
            return {}
        return {
            "new_share": round(self.drawn_new / self.drawn, 4),
            "draws": self.drawn,
            "batches": self.batches,
            "updated": self.updated,
        }


class BufferReplay(Replay):
    """The replays with a buffer (`uniform`, `prioritized`, `curious`): one buffer of the newest
    positions, with replay counts and priorities saved with every iteration (see the module).
    A subclass says how it draws."""

    uses_buffer = True
    by_priority = True  # draw in proportion to the priorities (False: uniformly)
    count_term = True  # the priority has Curious Replay's count term c * beta^v

    @classmethod
    def check_config(cls, train_config: TrainConfig) -> str | None:
        cfg = train_config
        if cfg.num_updates_per_train_iter <= 0:
            return (
                "'train.num_updates_per_train_iter' must be > 0 with train.replay = "
                f"{cls.name!r}: the replay buffer trains on that many minibatches drawn "
                "from it per iteration (e.g. 100)"
                + (
                    "; whole-window epochs would train every sample equally often, so the "
                    "priorities could steer nothing"
                    if cls.by_priority
                    else ""
                )
                + "; whole-window epochs are replay 'window'"
            )
        if cfg.replay_capacity < cfg.min_samplecount:
            return (
                f"'train.replay_capacity' ({cfg.replay_capacity}) must be >= "
                f"train.min_samplecount ({cfg.min_samplecount}), or the buffer never "
                "holds enough to train"
            )
        return None

    def __init__(
        self, session: Session, config: GymConfig, shape: SampleShape | None = None
    ) -> None:
        super().__init__(session, config, shape)
        self.mode = self.name
        self.priorities = Priorities.of(config.train)
        self.buffer: ReplayBuffer | None = None
        self.added: dict[str, int] = {}  # files added since the last load
        self.last_sampler: BufferSampler | None = None

    @property
    def state_dir(self) -> Path:
        folder: Path = self.session.replay_dir
        return folder

    def state_path(self, iteration: int) -> Path:
        return self.state_dir / f"{iteration}.npz"

    # ----- the Replay interface ---------------------------------------------------------------
    def ready(self, iteration: int) -> tuple[bool, str]:
        buffer = self.fill(iteration)
        return readiness(
            self.config.train,
            len(buffer),
            len(buffer),
            buffer.samples_of(iteration),
            iteration,
            "the replay buffer",
        )

    def load(self, iteration: int) -> tuple[SampleBatch | None, dict[str, Any]]:
        buffer = self.fill(iteration)
        facts = {
            "sources": self.added,
            "buffer": {
                "samples": len(buffer),
                "files": len(buffer.segments),
                "capacity": buffer.capacity,
                "oldest_iteration": buffer.floor,
            },
        }
        self.added = {}
        return buffer.batch(), facts

    def sampler(self, batch: SampleBatch, rng: np.random.Generator) -> BufferSampler:
        self.last_sampler = BufferSampler(self.filled(), self.priorities, not self.by_priority, rng)
        return self.last_sampler

    def commit(self, iteration: int) -> None:
        buffer = self.filled()
        meta = {"iteration": iteration, "mode": self.mode, "capacity": buffer.capacity}
        atomic_write_bytes(self.state_path(iteration), buffer.state(meta))
        for old in state_iterations(self.state_dir)[:-KEEP_STATES]:
            self.state_path(old).unlink(missing_ok=True)

    def rollback(self) -> None:
        """The counts and priorities go back to the last committed state: the buffer is
        opened from its state file again at the next `ready` or `load`."""
        self.buffer = None
        self.added = {}
        self.last_sampler = None

    def figures(self) -> dict[str, Any]:
        buffer = self.buffer
        if buffer is None or not len(buffer):
            return {}
        count = buffer.count[: len(buffer)]
        p10, p50, p90 = np.percentile(buffer.priorities(), [10, 50, 90])
        figures = {
            "buffer_samples": len(buffer),
            "mean_replays": round(float(count.mean()), 3),
            "never_replayed": round(float(np.mean(count == 0)), 4),
            "priority_p10": float(f"{p10:.4g}"),
            "priority_p50": float(f"{p50:.4g}"),
            "priority_p90": float(f"{p90:.4g}"),
        }
        if self.last_sampler is not None:
            figures.update(self.last_sampler.figures())
        return figures

    # ----- the buffer -------------------------------------------------------------------------
    def filled(self) -> ReplayBuffer:
        """The buffer `ready` or `load` filled; RuntimeError before either was called."""
        if self.buffer is None:
            raise RuntimeError(
                f"replay {self.name!r}: the buffer is used before ready() or load() filled it"
            )
        return self.buffer

    def fill(self, iteration: int) -> ReplayBuffer:
        """The buffer with every new sample file in it (opened from its state the first time)."""
        if self.buffer is None:
            self.buffer = self.open(iteration)
        buffer = self.buffer
        for it, path in buffer.new_files():
            arrays = buffer.read(it, path)
            if arrays is not None:
                self.added[f"{it}/{path.name}"] = buffer.add(
                    it, path, arrays, new_priority=self.priorities.new
                )
        return buffer

    def open(self, iteration: int) -> ReplayBuffer:
        """The buffer as the newest state file of an iteration <= `iteration` left it; rebuilt
        from the newest sample files (all new experience) when there is none or it is
        damaged.  State files of later iterations (whose models were never published) go."""
        cfg = self.config.train
        buffer = ReplayBuffer(
            self.session.samples_dir, cfg.replay_capacity, self.session.quarantine_dir, self.shape
        )
        found = state_iterations(self.state_dir)
        for later in (it for it in found if it > iteration):
            log.info("removing replay state %d: its model was never published", later)
            self.state_path(later).unlink(missing_ok=True)
        damaged = False
        for it in reversed([it for it in found if it <= iteration]):
            path = self.state_path(it)
            try:
                buffer.restore(path.read_bytes(), self.priorities.new)
            except (OSError, ReplayStateError) as error:  # raised before the buffer changes
                log.warning("replay state %s is damaged (%s); moved to quarantine", path, error)
                if path.exists():
                    quarantine(path, self.session.quarantine_dir)
                damaged = True
                continue
            if it < iteration:
                log.warning(
                    "replay state of iteration %d used for iteration %d: the counts "
                    "and priorities of the iterations between are lost",
                    it,
                    iteration,
                )
            log.info(
                "replay buffer restored from %s: %d samples, mean replay count %.2f",
                path,
                len(buffer),
                buffer.count[: len(buffer)].mean() if len(buffer) else 0,
            )
            return buffer
        if damaged or (iteration > 0 and self._had_buffer(iteration)):
            log.warning(
                "no usable replay state for iteration %d: the buffer is rebuilt from "
                "the sample files, every sample new (count 0, priority_max)",
                iteration,
            )
        self.rebuild(buffer)
        return buffer

    def rebuild(self, buffer: ReplayBuffer) -> None:
        """Fill an empty buffer with the newest sample files up to its capacity, all new."""
        chosen: list[tuple[int, Path, dict[str, NDArray[Any]]]] = []
        total = 0
        for it in reversed(sample_iterations(buffer.samples_dir)):
            for path in reversed(sample_files(buffer.samples_dir, it)):
                if total >= buffer.capacity:
                    buffer.evicted.add(f"{it}/{path.name}")
                    continue
                arrays = buffer.read(it, path)
                if arrays is not None:
                    chosen.append((it, path, arrays))
                    total += len(arrays["z"])
        for it, path, arrays in reversed(chosen):
            self.added[f"{it}/{path.name}"] = buffer.add(
                it, path, arrays, new_priority=self.priorities.new
            )
        floor = buffer.floor
        buffer.evicted = {k for k in buffer.evicted if int(k.split("/", 1)[0]) >= floor}

    def _had_buffer(self, iteration: int) -> bool:
        """Whether the iteration was trained with a buffer replay (so a state should exist)."""
        report = self.session.train_report(iteration)
        if report is None or report.get("replay") not in REPLAYS:
            return False
        uses: bool = REPLAYS.get(report["replay"]).uses_buffer
        return uses


def state_iterations(folder: Path) -> list[int]:
    """Iterations with a replay state file, ascending."""
    if not folder.is_dir():
        return []
    return sorted(int(p.stem) for p in folder.glob("*.npz") if p.stem.isdigit())


@REPLAYS.register
class UniformReplay(BufferReplay):
    """`uniform`: every position in the buffer equally likely (priorities kept, not used)."""

    name = "uniform"
    by_priority = False


@REPLAYS.register
class PrioritizedReplay(BufferReplay):
    """`prioritized`: drawn by priority, the priority from the loss alone (c = 0)."""

    name = "prioritized"
    count_term = False


@REPLAYS.register
class CuriousReplay(BufferReplay):
    """`curious`: Curious Replay, drawn by p = c * beta^v + (|L| + epsilon)^alpha."""

    name = "curious"
