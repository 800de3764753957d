"""The sample windows the training bench trains on: games that a learner's own self-play plays
with a model (`self_play_window`), or the window a session's Trainer would train its next
iteration on (`session_window`), each read as the Trainer reads sample files.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from gamegym.config import GymConfig
from gamegym.data.samplefolder import load_samples
from gamegym.data.samples import SampleBatch, SampleShape, write_sample_file
from gamegym.learners import get_learner

__all__ = ["self_play_window", "session_window"]


def self_play_window(graph, config: GymConfig, model, samples: int, searchcount: int, seed: int):
    """A SampleBatch of at least `samples` samples from games the learner's own self-play
    plays with `model` at `searchcount` searches a move (written as sample files and read
    back, as the Trainer reads them)."""
    from gamegym.nets.inference import LocalService

    learner = get_learner(config.train.learner)
    changes: dict[str, Any] = {
        "selfplay": {
            "search": {"searchcount": searchcount},
            "playout_cap_probability": 1.0,
            "positions_per_iteration": 0,
        }
    }
    if config.learner_config is not None and hasattr(
        config.learner_config, "positions_per_iteration"
    ):
        changes[config.train.learner] = {"positions_per_iteration": 0}  # never wait for a model
    config = config.updated(changes)
    service = LocalService(learner.make_evaluator(model, 0, True))
    driver = learner.selfplayer(graph, service, config, np.random.default_rng(seed))
    records: list = []

    def enough() -> bool:
        return sum(map(len, records)) >= samples

    for finished in driver.play(enough):
        if finished is not None:
            records.append(finished[0])
        if enough():
            break
    held = sum(map(len, records))
    with tempfile.TemporaryDirectory(prefix="gamegym-training-") as folder:
        write_sample_file(Path(folder) / "0" / "selfplay.npz", records)
        shape = SampleShape.of(graph, learner.sample_columns(config))
        batch = load_samples(Path(folder), 0, held, shape=shape)
    assert batch is not None
    return batch


def session_window(session, config: GymConfig, graph) -> SampleBatch:
    """The sample window the session's Trainer would train its next iteration on (read only:
    a file that does not load is skipped, not moved)."""
    iteration = max(0, session.current_iteration())
    batch = load_samples(
        session.samples_dir,
        max(0, iteration - config.train.max_sampleage),
        config.train.max_samplecount,
        shape=SampleShape.of(graph, get_learner(config.train.learner).sample_columns(config)),
    )
    if batch is None:
        raise ValueError(f"session {session.path} has no readable samples in its window")
    return batch
