"""`debug_single_process=True`: every role in the gym's own process, for stepping through in a
debugger.  Self-play, prediction and training take turns; the files are the same as in a real run.
"""
from __future__ import annotations

import logging
import threading
import time

import numpy as np

from gamegym.graph import load_game

log = logging.getLogger("gamegym.debugrun")


class DirectEvaluator:
    """The search's evaluator without a Predictor: numpify and call the model in-process."""

    def __init__(self, graph, model_evaluator):
        self.graph = graph
        self.model = model_evaluator
        self.iteration = model_evaluator.iteration

    def __call__(self, vertices):
        x = np.stack([self.graph.numpify(v) for v in vertices]).astype(np.float32)
        return self.model(x)


def run_single_process(gym, max_seconds: float | None, max_iterations: int | None) -> int:
    from gamegym.gym import derive_seed
    from gamegym.predictor import ModelEvaluator, configure_tensorflow
    from gamegym.selfplay import selfplay_loop
    from gamegym.trainer import build_trainer
    session, config = gym.session, gym.config
    configure_tensorflow(config.predict.use_gpu, config.predict.gpu_memorylimit)
    graph = load_game(config.game, config.game_args)
    rng = np.random.default_rng(derive_seed(config.seed, 1, 0, 0))
    trainer = build_trainer(session, config, np.random.default_rng(derive_seed(config.seed, 2)))
    evaluator = DirectEvaluator(graph, ModelEvaluator(trainer.model, session.current_iteration()))
    started = time.monotonic()
    trained = 0
    never = threading.Event()
    while not gym.stop_requested.is_set():
        if max_seconds is not None and time.monotonic() - started >= max_seconds:
            gym.request_stop(f"time limit of {max_seconds:g} s reached")
            break
        if max_iterations is not None and trained >= max_iterations:
            gym.request_stop(f"{max_iterations} new iterations trained")
            break
        selfplay_loop(graph, evaluator, config.selfplay, session.samples_dir, "debug", rng,
                      never, max_games=config.selfplay.gamelog_dump_threshold)
        ok, reason = trainer.ready()
        log.info("trainer: %s", reason)
        if ok:
            iteration = trainer.train_once()
            evaluator = DirectEvaluator(graph, ModelEvaluator(trainer.model, iteration))
            trained += 1
            print(f"[gamegym] iteration {iteration} published", flush=True)
    return 0
