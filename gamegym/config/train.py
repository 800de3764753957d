"""The train section: which samples the Trainer reads, which learner trains on them, how long."""

from __future__ import annotations

from dataclasses import dataclass, field

from gamegym.config.checks import (
    ConfigError,
    boolean,
    check,
    choice,
    float_in,
    int_in,
    is_int,
    is_number,
    registered,
    section_of,
)
from gamegym.registry import LEARNERS, REPLAYS

__all__ = ["TrainConfig", "COMPILES", "WEIGHT_AVERAGES", "WINDOW_SHAPES"]

COMPILES = ("auto", "xla", "traced")  # train.compile (gamegym.nets.trainstep)
WEIGHT_AVERAGES = ("none", "ema")  # train.weight_average (gamegym.runtime.weightaverage)
WINDOW_SHAPES = ("fixed", "growing")  # train.window_shape (gamegym.data.replay)


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
    window_shape: str = "fixed"  # the window replay's size: "fixed" = the samples of the last
    #                                 max_sampleage iterations, at most max_samplecount;
    #                                 "growing" = KataGo's window (Wu 2019), which grows with
    #                                 the samples N the session holds: all N up to window_base,
    #                                 then window_base * (1 + 0.4 * ((N / window_base) ** 0.75
    #                                 - 1) / 0.75) newest samples of any iteration, at most
    #                                 max_samplecount (max_sampleage then picks only the files
    #                                 train.reanalyze searches again)
    window_base: int = 20_000  # "growing": the samples N up to which the window holds them all
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
    reanalyze: float = 0.0  # MuZero Reanalyze: the share of the positions the Selfplayers
    #                                 search that are stored positions of the window searched
    #                                 again by the current model (the search's policy target
    #                                 and root values replace the stored ones, in files beside
    #                                 the samples) instead of moves of new games; in [0, 1).
    #                                 0.5 reanalyses one stored position per position played,
    #                                 so new games come at half the rate, and up to half the
    #                                 samples trained on have reanalysed targets; the
    #                                 Trainer's work stays the same (train.learner "muzero",
    #                                 train.replay "window", selfplay.backend "processes")
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
        registered(self, "learner", LEARNERS)
        registered(self, "replay", REPLAYS)
        int_in(self, "epochs", 1, 10_000)
        int_in(self, "batchsize", 1, 65536)
        choice(self, "compile", COMPILES)
        float_in(self, "learning_rate", 0.0, 10.0, low_open=True)
        self._validate_schedule()
        int_in(self, "min_samplecount", 1)
        int_in(self, "max_samplecount", 1)
        check(
            self.max_samplecount >= self.min_samplecount,
            "train.max_samplecount",
            f"({self.max_samplecount}) must be >= train.min_samplecount ({self.min_samplecount})",
        )
        int_in(self, "max_sampleage", 0)
        int_in(self, "min_new_samples", 0)
        choice(self, "window_shape", WINDOW_SHAPES)
        int_in(self, "window_base", 1)
        float_in(self, "validation_split", 0.0, 0.9)
        boolean(self, "augment_symmetries")
        int_in(self, "num_updates_per_train_iter", 0)
        float_in(self, "value_loss_weight", 0.0, 1000.0)
        float_in(self, "value_target_mix", 0.0, 1.0)
        int_in(self, "value_td_steps", 0, 10_000)
        check(
            is_number(self.reanalyze) and 0.0 <= self.reanalyze < 1.0,
            f"{section_of(self)}reanalyze",
            "must be a number in [0, 1) (the share of the Selfplayers' searched positions "
            "that are stored positions searched again; 1 would play no new game), got "
            f"{self.reanalyze!r}",
        )
        int_in(self, "keep_models", 0)
        choice(self, "weight_average", WEIGHT_AVERAGES)
        decay = self.weight_average_decay
        check(
            is_number(decay) and 0.0 < decay < 1.0,
            "train.weight_average_decay",
            f"must be a number in (0, 1) (the share of the previous average kept each "
            f"iteration), got {decay!r}",
        )
        int_in(self, "replay_capacity", 1, 100_000_000)
        float_in(self, "curious_c", 0.0, 1e12)
        float_in(self, "curious_beta", 0.0, 1.0)
        float_in(self, "curious_alpha", 0.0, 1.0)
        float_in(self, "curious_epsilon", 0.0, 1e6, low_open=True)
        float_in(self, "priority_max", 0.0, 1e15, low_open=True)
        replay = REPLAYS.get(self.replay) if self.replay in REPLAYS else None  # else a plugin's
        problem = replay.config_problem(self) if replay is not None else None
        if problem:
            raise ConfigError(f"config field {problem}")

    def _validate_schedule(self) -> None:
        name = f"{self._section}learning_rate_schedule"
        schedule = self.learning_rate_schedule
        check(
            isinstance(schedule, list),
            name,
            f"must be a list of [iteration, rate] pairs, got {schedule!r}",
        )
        last = 0
        for pair in schedule:
            check(
                isinstance(pair, (list, tuple)) and len(pair) == 2,
                name,
                f"must be a list of [iteration, rate] pairs, got the entry {pair!r}",
            )
            start, rate = pair
            check(
                is_int(start) and start > last,
                name,
                f"needs iterations that are integers, above 0 and rising, got {start!r} after {last}",
            )
            check(
                is_number(rate) and 0.0 < rate <= 10.0,
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
