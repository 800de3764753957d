"""`debug_single_process=True`: every role in the gym's own process, for stepping through in a
debugger.  Self-play, prediction and training take turns; the files are the same as in a real run.
The learner's self-play driver asks the model in this process (a `LocalService`) instead of the
Predictor.
"""

from __future__ import annotations

import logging
import threading
import time

import numpy as np

from gamegym.nets.inference import LocalService
from gamegym.runtime.process import SEED_SELFPLAYER, SEED_TRAINER, process_seed

log = logging.getLogger("gamegym.runtime.debugrun")


def run_single_process(gym, max_seconds: float | None, max_iterations: int | None) -> int:
    from gamegym.nets.tfsetup import configure_tensorflow
    from gamegym.runtime.selfplay import SampleWriter, make_reanalyser, selfplay_loop
    from gamegym.runtime.trainer import build_trainer

    session, config = gym.session, gym.config
    configure_tensorflow(config.predict.use_gpu, config.predict.gpu_memorylimit, announce=True)
    graph = config.game_ref.build()  # the one the trainer, the driver and the gym share
    seed = process_seed(config.seed, SEED_SELFPLAYER, gym.run_number, 0, 0)
    rng = np.random.default_rng(seed)
    reanalyse_rng = np.random.default_rng([seed, 1])
    trainer = build_trainer(
        session,
        config,
        np.random.default_rng(process_seed(config.seed, SEED_TRAINER, gym.run_number)),
    )
    learner = trainer.learner

    def driver_for(iteration: int):
        evaluator = learner.make_evaluator(trainer.model, iteration, config.predict.numpy_fastpath)
        service = LocalService(evaluator)
        reanalyser = make_reanalyser(session, config, graph, learner, service, 0, reanalyse_rng)
        return learner.selfplayer(graph, service, config, rng), reanalyser

    driver, reanalyser = driver_for(session.current_iteration())
    writer = SampleWriter(session.samples_dir, "debug")
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
        played = selfplay_loop(
            driver,
            config.selfplay,
            writer,
            never,
            max_games=config.selfplay.gamelog_dump_threshold,
            stop_when_idle=True,
            reanalyser=reanalyser,
        )
        ok, reason = trainer.ready()
        log.info("trainer: %s", reason)
        if not ok and not played:  # self-play waits for a model the Trainer cannot make yet
            gym.stop_requested.wait(1.0)
        if ok:
            before, iteration = session.current_iteration(), trainer.train_once()
            if iteration > before:  # else refused or nothing readable: the Trainer's log says
                driver, reanalyser = driver_for(iteration)
                trained += 1
                print(f"[gamegym] iteration {iteration} published", flush=True)
    return 0
