"""The MuZero learner (seed 000): a learned model searched in latent space, trained by unrolling it.

Networks (gamegym.learners.muzero.nets): representation h, dynamics g, prediction f, saved as one
container model per iteration.  Self-play and players search with `gamegym.search.latent` through
the Predictor's "initial" and "recurrent" requests; games are written as the same sample files
as AlphaZero's (gamegym.data.samples), so nothing else in the gym changes.

Training.  Every sample (position t of a game) starts an unroll of K = `num_unroll_steps`:
s_0 = h(x_t), s_k = g(s_{k-1}, a_{t+k-1}); f(s_k) gives policy and value, g the reward.  The loss
of step k is
    l_k = CE(pi_{t+k}, policy_k) + w * (z_{t+k} - value_k)^2 + w_r * (u_{t+k} - reward_k)^2
with pi the visit policy, w `value_loss_weight`, w_r `reward_loss_weight` (the paper's is 1; a
board game pays one reward a game, which a small budget learns faster with more weight), z the
value target of AlphaZero
(`value_td_steps` = MuZero's td_steps: the n-step value, discount 1 with the sign flipped every
ply; a truncated game bootstraps from its stored root value; then `value_target_mix`) and u the
reward of the move into t+k: the game's result for the player who made the last move, 0 for every
other move (board games pay only at the end).  The sequence's loss is l_0 + (1/K) sum l_k (the
paper's 1/K on the unrolled steps), the gradient into every dynamics step is scaled by 0.5, and
the L2 of the kernel regularizers is added.
  Past the end of a game the steps are absorbing: value 0, reward 0, no policy loss, random
actions.  Past a truncation, or past the last row of a game the batch holds only in part (the
game cut by the sample window), nothing is known: those steps have no loss at all.  The batch's
last game is taken as possibly cut (`load_samples` cuts the oldest file there).
  A sample's policy loss is weighted by its `policy_weight` (0 after a fast search of
playout-cap randomization, so only full searches are policy targets); its value and reward
losses are not.
  Illegal moves are not masked in the loss: the policy is also the prior of hidden states, where
no legal moves are known, so it must learn them.

Replay.  Without a sampler the samples are the starts of an epoch's minibatches (or of
`num_updates_per_train_iter` uniform ones).  With a replay's sampler a sequence is drawn by the
priority of its last step, and after the step every unrolled step that is a sample gets its own
loss (`SequenceDraws`); `TrainReport.per_sample_loss` holds each sample's latest step loss
(with a sampler, NaN for the samples no step reached).

Reanalyze (`train.reanalyze`).  The Selfplayers search stored positions again with the current
model (`reanalyser`, gamegym.learners.muzero.reanalyse; gamegym.runtime.reanalyse) and the
new policy targets and root values reach this learner in the batch, in place of the stored
ones (gamegym.data.reanalysis): the n-step value targets above then bootstrap from them.

Training options read from the train config as AlphaZero's (see gamegym.learners.alphazero.learner), and
`num_unroll_steps`, `reward_loss_weight`.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from gamegym import workmeter
from gamegym.data.samples import n_step_value_targets
from gamegym.learners.base import Learner, TrainReport, option, register
from gamegym.learners.muzero.config import MuZeroConfig
from gamegym.learners.muzero.fastnets import muzero_form
from gamegym.learners.muzero.unrolls import (
    SequenceDraws,
    Unrolls,
    loss_weights,
    make_steps,
    unroll_targets,
)

log = logging.getLogger("gamegym.learners.muzero.learner")
LOSS_NAMES = ("loss", "policy_loss", "value_loss", "reward_loss", "l2_loss")
EVAL_BATCH = 512


def stub_search(graph, params):
    """The latent search with a uniform model (uniform priors, zero values, rewards and hidden
    states), on the core `params` picks: the benchmarks' search ceiling of MuZero's self-play
    (its `stub_search` capability, gamegym.bench.capabilities)."""
    from gamegym.search.cores import make_latent_search
    from gamegym.search.latent import uniform_latent_evaluator

    return make_latent_search(graph, uniform_latent_evaluator(graph.action_space_size), params)


@register(stub_search=stub_search)
class MuZeroLearner(Learner):
    name = "muzero"
    config_class = MuZeroConfig
    reanalyses = True  # train.reanalyze: stored positions searched again (reanalyser)

    def __init__(self):
        self.optimizer = None
        self._model = None
        self._steps = None

    # ----- model ------------------------------------------------------------------------------
    @classmethod
    def check_config(cls, config) -> str | None:
        search = config.selfplay.search
        if search.solver:
            return (
                "'selfplay.search.solver' cannot be used with train.learner 'muzero': the "
                "solver proves positions of the GameGraph, and MuZero searches a learned "
                "model"
            )
        if search.core == "compiled":  # the compiled core is named: ask it
            from gamegym.search.cores import compiled_latent_runs

            if compiled_latent_runs(search.rule):
                return None
            return (
                "'selfplay.search.core' 'compiled' cannot be used with train.learner 'muzero' "
                f"and the {search.rule!r} rule: the compiled core runs MuZero's latent search "
                "with the 'puct' rule only; use search.core 'auto' or 'python'"
            )
        return None

    def build_model(self, graph, network_config, seed: int | None = None):
        from gamegym.learners.muzero.nets import build_muzero_network
        from gamegym.search.latent import require_alternating

        require_alternating(graph)
        return build_muzero_network(graph, network_config, seed=seed)

    def check_fits(self, model, graph) -> None:
        from gamegym.learners.muzero.nets import muzero_parts
        from gamegym.search.latent import require_alternating

        require_alternating(graph)
        muzero_parts(model)

    def compile(self, model, train_config) -> None:
        import keras

        from gamegym.learners.muzero.nets import muzero_parts

        self.optimizer = keras.optimizers.Adam(
            learning_rate=float(option(train_config, "learning_rate"))
        )
        self._model = model
        self.optimizer.build(model.trainable_variables)  # slots made here, not in a traced step
        self._steps = make_steps(
            model, muzero_parts(model), self.optimizer, *self.train_step_options(train_config)
        )

    def _ready(self, model, train_config) -> None:
        if self._model is not model:
            self.compile(model, train_config)
        else:
            self._steps.train.configure(*self.train_step_options(train_config))

    # ----- the other roles: Predictor, Selfplayer, players -------------------------------------
    def make_evaluator(self, model, iteration: int, fast: bool = True):
        from gamegym.learners.muzero.nets import LatentModelCall

        return LatentModelCall(model, iteration, fast)

    def fast_form(self, model):
        return muzero_form(model)

    def selfplayer(self, graph, service, config, rng):
        """Self-play with the latent search on the core the config picks
        (`selfplay.search.core`; gamegym.search.latent_flat)."""
        from gamegym.data.samples import GameRecord
        from gamegym.search.cores import make_latent_search
        from gamegym.search.latent import NetworkLatentValuer
        from gamegym.search.mcts import SearchParams
        from gamegym.search.play import SearchSelfplay

        search = make_latent_search(
            graph, NetworkLatentValuer(graph, service), SearchParams.from_selfplay(config.selfplay)
        )
        return SearchSelfplay(graph, service, config, rng, GameRecord, search=search)

    def reanalyser(self, graph, service, config):
        """MuZero Reanalyze: stored positions searched again by the model behind `service`
        with self-play's search, without root noise (gamegym.learners.muzero.reanalyse)."""
        from gamegym.learners.muzero.reanalyse import LatentReanalyser

        return LatentReanalyser.of(service, config)

    def player(self, graph, service, search, config=None):
        from gamegym.search.cores import make_latent_search
        from gamegym.search.latent import NetworkLatentValuer, require_alternating
        from gamegym.search.play import MCTSPlayer

        require_alternating(graph)
        return MCTSPlayer(NetworkLatentValuer(graph, service), search, make=make_latent_search)

    # ----- targets ----------------------------------------------------------------------------
    def make_targets(self, batch, graph=None, train_config=None):
        """Inputs {"x" [N, ...], "actions" int32 [N, K] (-1: past the game, drawn at random
        when trained)}; targets {"rows" [N, K+1] the sample of each step or -1, "value",
        "value_mask", "reward", "reward_mask" float32 [N, K+1], "pi" [N, A] and
        "policy_weight" [N] (per sample, taken by "rows")}; sample ids arange(N): every
        sample starts one unroll."""
        unroll = int(option(train_config, "num_unroll_steps"))
        z = n_step_value_targets(batch, int(option(train_config, "value_td_steps")))
        mix = float(option(train_config, "value_target_mix"))
        if mix:
            z = ((1.0 - mix) * z + mix * np.asarray(batch.root_value, np.float32)).astype(
                np.float32
            )
        targets = unroll_targets(batch, unroll, z)
        actions = targets.pop("actions")
        targets["pi"] = np.asarray(batch.pi, np.float32)
        targets["policy_weight"] = np.asarray(batch.policy_weight, np.float32)
        return (
            {"x": np.asarray(batch.x, np.float32), "actions": actions},
            targets,
            np.arange(len(batch)),
        )

    # ----- training ---------------------------------------------------------------------------
    def train_iteration(
        self, model, batch, train_config, rng, graph=None, sampler=None
    ) -> TrainReport:
        self._ready(model, train_config)
        self.optimizer.learning_rate.assign(float(option(train_config, "learning_rate")))
        weight = loss_weights(train_config)
        size = int(option(train_config, "batchsize"))
        start = time.time()
        inputs, targets, ids = self.make_targets(batch, graph, train_config)
        n = len(ids)
        if n == 0:
            raise ValueError("no samples to train on")
        data = Unrolls(inputs, targets, graph, bool(option(train_config, "augment_symmetries")))
        order = rng.permutation(n)
        n_val = min(int(n * float(option(train_config, "validation_split"))), n - 1)
        val, train = order[:n_val], order[n_val:]
        history: dict[str, list[float]] = {name: [] for name in LOSS_NAMES}
        losses = np.full(n, np.nan, np.float32)  # per sample: its latest step loss
        updates = option(train_config, "num_updates_per_train_iter")
        if sampler is not None:
            draws = SequenceDraws(sampler, batch, data.unroll, size, int(updates) or 1, rng)
            self._epoch(data, draws, weight, rng, losses, history, sampler)
            self._validate(data, val, weight, rng, losses, history)
        elif updates:
            steps = [rng.choice(train, size) for _ in range(int(updates))]
            self._epoch(data, steps, weight, rng, losses, history)
            self._validate(data, val, weight, rng, losses, history)
        else:
            for _ in range(int(option(train_config, "epochs"))):
                perm = rng.permutation(train)
                steps = [perm[i : i + size] for i in range(0, len(perm), size)]
                self._epoch(data, steps, weight, rng, losses, history)
                self._validate(data, val, weight, rng, losses, history)
        # not trained on: their losses are computed here, except with a replay's sampler (it
        # heard every trained one; a whole large buffer would be costly): NaN
        unseen = np.flatnonzero(np.isnan(losses)) if sampler is None else ()
        if len(unseen):
            losses[unseen] = self._start_losses(data, unseen, weight)
        return TrainReport(
            history=history, samples=len(train), seconds=time.time() - start, per_sample_loss=losses
        )

    def _epoch(self, data, steps, weight, rng, losses, history, sampler=None) -> None:
        sums = np.zeros(len(LOSS_NAMES))
        for starts in steps:
            batch = data.minibatch(starts, rng, augment=True)
            step_losses, stats = self._steps.train(*batch, weight)
            rows, step_losses = data.trained(starts, step_losses.numpy())
            losses[rows] = step_losses
            workmeter.tick()  # a training step: the gym's proof of progress
            if sampler is not None:
                sampler.update(rows, step_losses)
            sums += stats.numpy()
        for name, value in zip(LOSS_NAMES, sums / max(1, len(steps))):
            history[name].append(float(value))

    def _validate(self, data, val, weight, rng, losses, history) -> None:
        if len(val) == 0:
            return
        sums, count = np.zeros(len(LOSS_NAMES)), 0
        for i in range(0, len(val), EVAL_BATCH):
            starts = val[i : i + EVAL_BATCH]
            step_losses, stats = self._steps.evaluate(*data.minibatch(starts, rng), weight)
            rows, step_losses = data.trained(starts, step_losses.numpy())
            losses[rows] = step_losses
            sums += stats.numpy() * len(starts)
            count += len(starts)
        for name, value in zip(LOSS_NAMES[:-1], sums[:-1] / count):
            history.setdefault(f"val_{name}", []).append(float(value))

    def _start_losses(self, data, index, weight) -> np.ndarray:
        """The loss of each sample as the start of an unroll (its own step only)."""
        parts = []
        for i in range(0, len(index), EVAL_BATCH):
            x, _, pi, value, value_mask, _, _, policy_mask = data.minibatch(
                index[i : i + EVAL_BATCH], None, steps=0
            )
            parts.append(self._steps.start(x, pi, value, value_mask, policy_mask, weight).numpy())
        return np.concatenate(parts).astype(np.float32) if parts else np.zeros(0, np.float32)

    def per_sample_loss(self, model, batch, train_config=None) -> np.ndarray:
        self._ready(model, train_config)
        inputs, targets, ids = self.make_targets(batch, train_config=train_config)
        weight = loss_weights(train_config)
        data = Unrolls(inputs, targets, None, False)
        return self._start_losses(data, np.arange(len(ids)), weight)
