"""The bootstrapped-DQN learner (Osband et al. 2016, "Deep Exploration via Bootstrapped DQN"):
K Q-heads on a shared torso, self-play without search, masked negamax DQN training.

Self-play (gamegym.learners.bootstrapped.play.QSelfplay): each game acts greedily on one head drawn for it; every
position carries a Bernoulli(p) mask over the heads, drawn in self-play and stored in the sample
file, so a resume trains each head on the same bootstrap sample as before.

Training: a sample is a transition (s, a, s') of a whole stored game; s' is the next position
of the game, seen by the opponent.  In negamax form, for every head k:

    y_k = r - gamma * (1 - done) * Q_target,k(s', a*_k)
    a*_k = argmax over the legal a' of Q_online,k(s', a')   (double_q; else of Q_target,k)

r is the game result for the mover when the move ended the game (`done`), 0 otherwise.  A game
cut at `max_moves` is not done: its positions bootstrap, and its last position, whose successor
was never stored, makes no transition.  The loss is the sum over heads of each head's mean over
the minibatch of mask * (Q_k(s, a) - y_k)^2, plus the network's L2; the torso's gradient from it
is divided by K (every head adds to it).  The target network is copied from the online one every
`target_update_period` gradient steps, counted across iterations in the model file.

Training options (train config, see `gamegym.learners.base.option`): learning_rate, batchsize,
epochs or num_updates_per_train_iter, validation_split, augment_symmetries (each transition in a
random symmetric image), discount, double_q, target_update_period.  A sample's loss (for
prioritised replays) is its squared TD error averaged over the heads that train on it (over all
heads when its mask is all 0); a sample that makes no transition reports 0.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from gamegym import workmeter
from gamegym.data.samples import SampleColumn
from gamegym.learners.base import Learner, TrainReport, option, register
from gamegym.learners.bootstrapped.config import BootstrappedConfig, check_selfplay_pause
from gamegym.learners.bootstrapped.evaluators import q_form

__all__ = ["BootstrappedLearner", "transitions"]

log = logging.getLogger("gamegym.learners.bootstrapped.learner")
LOSS_NAMES = ("loss", "td_loss", "l2_loss")
EVAL_BATCH = 1024
IMAGE_CACHE_BYTES = 64 * 2**20  # memory for symmetric images of positions remembered
COLUMNS = ("action", "reward", "done", "next_x", "next_legal", "mask")  # a transition's targets


def transitions(batch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids, next ids, done) of the samples of a SampleBatch that make a transition: ids [M]
    index the batch, next ids [M] the next position of the same game (-1 when the move ended
    the game), done bool [M].  Needs the "terminal" column of the learner's self-play."""
    terminal = batch.extra.get("terminal")
    if terminal is None:
        raise ValueError(
            "the samples have no 'terminal' column: they were not played by the "
            "bootstrapped learner's self-play"
        )
    terminal = np.asarray(terminal, bool)
    n = len(batch)
    following = np.full(n, -1, np.int64)
    order = np.lexsort((batch.step, batch.game))
    game, step = batch.game[order], batch.step[order]
    same = (game[1:] == game[:-1]) & (step[1:] == step[:-1] + 1)
    following[order[:-1][same]] = order[1:][same]
    ids = np.flatnonzero(terminal | (following >= 0))
    done = terminal[ids]
    return ids, np.where(done, -1, following[ids]), done


def player_searches(config) -> bool:
    """Whether the model's player searches a tree under the session's GymConfig `config`:
    with `q_search` (its self-play never does)."""
    return bool(config.learner_config.q_search)


def play_rule(config) -> str:
    """How the model's player picks a move when it does not search, in words."""
    heads = config.learner_config.heads
    return (
        f"the majority vote of its {heads} heads" if heads > 1 else "the best move of its one head"
    )


@register(selfplay_searches=False, player_searches=player_searches, play_rule=play_rule)
class BootstrappedLearner(Learner):
    name = "bootstrapped"
    config_class = BootstrappedConfig

    def __init__(self):
        self.optimizer = None
        self._model = None
        self._options: tuple = ()
        self._train_step = self._eval_step = None
        self.images: dict = {}  # (position bytes, symmetry) -> image, for augmentation

    # ----- model ------------------------------------------------------------------------------
    @classmethod
    def check_config(cls, config) -> str | None:
        return check_selfplay_pause(config)

    def sample_columns(self, config):
        """Each position's Bernoulli mask over the heads, the head that chose its move, and
        whether its move ended the game (see gamegym.learners.bootstrapped.play)."""
        return {
            "mask": SampleColumn("bool", (int(config.learner_config.heads),)),
            "head": SampleColumn("int16"),
            "terminal": SampleColumn("bool"),
        }

    def build_model(self, graph, network_config, seed: int | None = None):
        from gamegym.learners.bootstrapped.qnetwork import build_q_model

        return build_q_model(graph, network_config, seed=seed)

    def averaged_weights(self, model) -> list[bool]:
        """The online network's weights: the target network and its age are training
        bookkeeping, published as trained (a resume continues from the trained file)."""
        from gamegym.learners.bootstrapped.qnetwork import parts

        online, _ = parts(model)
        own = {id(v) for v in online.weights}
        return [id(v) in own for v in model.weights]

    def compile(self, model, train_config) -> None:
        import keras
        import tensorflow as tf

        from gamegym.learners.bootstrapped.qnetwork import parts
        from gamegym.nets.trainstep import TrainStep

        online, target = parts(model)
        self.optimizer = keras.optimizers.Adam(
            learning_rate=float(option(train_config, "learning_rate"))
        )
        self._model, self.online, self.target = model, online, target
        gamma = float(option(train_config, "discount"))
        double = bool(option(train_config, "double_q"))
        self._options = (gamma, double)
        heads = int(online.outputs[0].shape[1])
        variables = online.trainable_variables
        self.optimizer.build(variables)  # its slots made here, not in the traced step
        torso = {id(v) for v in online.get_layer("torso").trainable_variables}
        scales = [1.0 / heads if id(v) in torso else 1.0 for v in variables]

        def td_targets(reward, done, next_x, next_legal):
            """y [B, K] (see the module docstring)."""
            q_next = target(next_x, training=False)
            chooser = online(next_x, training=False) if double else q_next
            best = tf.argmax(tf.where(next_legal[:, None, :], chooser, -2.0), axis=-1)
            value = tf.where(done[:, None], 0.0, tf.gather(q_next, best, batch_dims=2))
            return reward[:, None] - gamma * value

        def errors(x, action, y, training):
            q = online(x, training=training)
            chosen = tf.one_hot(action, tf.shape(q)[-1], dtype=q.dtype)[:, None, :]
            return tf.reduce_sum(q * chosen, axis=-1) - y  # [B, K]

        def sample_losses(error, mask):
            """float32 [B]: squared TD error averaged over the heads the sample trains."""
            squared = tf.square(error)
            count = tf.reduce_sum(mask, axis=1)
            masked = tf.reduce_sum(mask * squared, axis=1) / tf.maximum(count, 1.0)
            return tf.where(count > 0, masked, tf.reduce_mean(squared, axis=1))

        def train_step(x, action, reward, done, next_x, next_legal, mask):
            y = tf.stop_gradient(td_targets(reward, done, next_x, next_legal))
            with tf.GradientTape(persistent=True) as tape:
                error = errors(x, action, y, True)
                td = tf.reduce_sum(tf.reduce_mean(mask * tf.square(error), axis=0))
                l2 = tf.add_n(online.losses) if online.losses else tf.constant(0.0)
            grads = tape.gradient(td, variables)
            l2_grads = tape.gradient(l2, variables)
            del tape
            grads = [_combine(g, s, g2) for g, s, g2 in zip(grads, scales, l2_grads)]
            self.optimizer.apply_gradients(zip(grads, variables))
            return sample_losses(error, mask), tf.stack([td + l2, td, l2])

        @tf.function(reduce_retracing=True, autograph=False)
        def eval_step(x, action, reward, done, next_x, next_legal, mask):
            error = errors(x, action, td_targets(reward, done, next_x, next_legal), False)
            return sample_losses(error, mask)

        self._train_step = TrainStep(
            train_step,
            *self.train_step_options(train_config),
            reduce_retracing=True,
            autograph=False,
        )
        self._eval_step = eval_step
        self._td_targets = tf.function(td_targets, reduce_retracing=True, autograph=False)

    def _ready(self, model, train_config) -> None:
        options = (float(option(train_config, "discount")), bool(option(train_config, "double_q")))
        if self._model is not model or self._options != options:
            self.compile(model, train_config)
        else:
            self._train_step.configure(*self.train_step_options(train_config))

    # ----- the other roles: Predictor, Selfplayer, players -------------------------------------
    def make_evaluator(self, model, iteration: int, fast: bool = True):
        from gamegym.learners.bootstrapped.evaluators import QValuesCall

        return QValuesCall(model, iteration, fast)

    def fast_form(self, model):
        return q_form(model)

    def selfplayer(self, graph, service, config, rng):
        from gamegym.learners.bootstrapped.play import QSelfplay

        return QSelfplay(graph, service, config, rng)

    def player(self, graph, service, search, config=None):
        """The heads' majority vote; with bootstrapped.q_search an MCTS with the mean Q."""
        from gamegym.learners.bootstrapped.play import MeanQPositionValuer, VotePlayer

        if config is not None and config.learner_config.q_search:
            from gamegym.search.play import MCTSPlayer

            return MCTSPlayer(MeanQPositionValuer(graph, service), search)
        return VotePlayer(service)

    # ----- targets ----------------------------------------------------------------------------
    def make_targets(self, batch, graph=None, train_config=None):
        """x [M, ...] (the positions s); targets action [M], reward [M], done [M], next_x
        [M, ...] (s'; a copy of s where done), next_legal [M, A] (none where done), mask
        [M, K] float32; sample ids [M] (see `transitions`).  The TD targets themselves need
        the target network and are made at each training step."""
        ids, following, done = transitions(batch)
        x = np.asarray(batch.x, np.float32)
        z = np.asarray(batch.z, np.float32)
        nxt = np.where(done, ids, following)
        mask = batch.extra.get("mask")
        if mask is None:
            raise ValueError(
                "the samples have no 'mask' column: they were not played by the "
                "bootstrapped learner's self-play"
            )
        next_legal = np.asarray(batch.legal, bool)[nxt]
        next_legal[done] = False
        targets = {
            "action": np.asarray(batch.action, np.int32)[ids],
            "reward": np.where(done, z[ids], 0.0).astype(np.float32),
            "done": done,
            "next_x": x[nxt],
            "next_legal": next_legal,
            "mask": np.asarray(mask, np.float32)[ids],
        }
        return x[ids], targets, ids

    def td_targets(self, model, batch, train_config=None) -> tuple[np.ndarray, np.ndarray]:
        """(sample ids [M], y float32 [M, K]): the TD target of every transition of `batch` for
        every head under the model's current target network (see the module docstring)."""
        self._ready(model, train_config)
        _, targets, ids = self.make_targets(batch, train_config=train_config)
        y = self._td_targets(
            targets["reward"], targets["done"], targets["next_x"], targets["next_legal"]
        )
        return ids, y.numpy()

    # ----- training ---------------------------------------------------------------------------
    def train_iteration(
        self, model, batch, train_config, rng, graph=None, sampler=None
    ) -> TrainReport:
        self._ready(model, train_config)
        self.optimizer.learning_rate.assign(float(option(train_config, "learning_rate")))
        from gamegym.learners.bootstrapped.qnetwork import set_target_age, target_age

        start = time.time()
        x, targets, ids = self.make_targets(batch, graph, train_config)
        m = len(ids)
        if m == 0:
            raise ValueError("no transitions to train on")
        self._check_heads(targets["mask"])
        size = int(option(train_config, "batchsize"))
        order = rng.permutation(m)
        n_val = min(int(m * float(option(train_config, "validation_split"))), m - 1)
        val, train = order[:n_val], order[n_val:]
        augment = None
        if option(train_config, "augment_symmetries") and graph is not None:
            from gamegym.learners.alphazero.learner import Augmenter

            augment = Augmenter(graph)
            augment = augment if augment.ok else None
        run = _Run(
            self,
            x,
            targets,
            augment,
            rng,
            target_age(model),
            int(option(train_config, "target_update_period")),
        )
        for steps in self._schedule(train_config, batch, ids, train, size, rng, sampler):
            run.epoch(steps)
            if len(val):
                losses = self._example_losses(x, targets, val)
                run.losses[val] = losses
                run.history.setdefault("val_td_loss", []).append(float(losses.mean()))
        set_target_age(model, run.age)
        unseen = np.flatnonzero(np.isnan(run.losses))
        if len(unseen):
            run.losses[unseen] = self._example_losses(x, targets, unseen)
        per_sample = np.zeros(len(batch), np.float32)
        per_sample[ids] = run.losses
        log.info(
            "%d gradient steps, %d target copies; target age %d", run.steps, run.copies, run.age
        )
        return TrainReport(
            history=run.history,
            samples=len(train),
            seconds=time.time() - start,
            per_sample_loss=per_sample,
        )

    @staticmethod
    def _schedule(train_config, batch, ids, train, size, rng, sampler):
        """The minibatches (example indices) of each epoch: drawn by the replay's sampler, or
        `num_updates_per_train_iter` drawn uniformly (one epoch), or `epochs` permutations."""
        updates = int(option(train_config, "num_updates_per_train_iter") or 0)
        if sampler is not None:
            example = np.full(len(batch), -1, np.int64)
            example[ids] = np.arange(len(ids))
            yield _Draws(sampler, size, updates or 1, example)
        elif updates:
            yield [rng.choice(train, size) for _ in range(updates)]
        else:
            for _ in range(int(option(train_config, "epochs"))):
                perm = rng.permutation(train)
                yield [perm[i : i + size] for i in range(0, len(perm), size)]

    def _check_heads(self, mask: np.ndarray) -> None:
        heads = int(self.online.outputs[0].shape[1])
        if mask.shape[1] != heads:
            raise ValueError(
                f"the samples' masks cover {mask.shape[1]} heads, the network has {heads}"
            )

    def _example_losses(self, x, targets, index) -> np.ndarray:
        """float32 [len(index)]: per-example losses under the current model, in chunks."""
        parts = [
            self._eval_step(x[chunk], *(targets[c][chunk] for c in COLUMNS)).numpy()
            for chunk in (index[i : i + EVAL_BATCH] for i in range(0, len(index), EVAL_BATCH))
        ]
        return np.concatenate(parts) if parts else np.zeros(0, np.float32)

    def per_sample_loss(self, model, batch, train_config=None) -> np.ndarray:
        self._ready(model, train_config)
        x, targets, ids = self.make_targets(batch, train_config=train_config)
        per_sample = np.zeros(len(batch), np.float32)
        per_sample[ids] = self._example_losses(x, targets, np.arange(len(ids)))
        return per_sample


def _combine(grad, scale: float, l2_grad):
    """The gradient of a variable: its TD part scaled (1/K on the torso) plus its L2 part."""
    if grad is None:
        return l2_grad
    grad = grad * scale if scale != 1.0 else grad
    return grad if l2_grad is None else grad + l2_grad


class _Run:
    """One train_iteration's gradient steps: minibatches, augmentation, the target copies."""

    def __init__(self, learner, x, targets, augment, rng, age: int, period: int):
        self.learner, self.x, self.targets = learner, x, targets
        self.augment, self.rng = augment, rng
        self.age, self.period = age, period
        self.steps = self.copies = 0
        self.losses = np.full(len(x), np.nan, np.float32)  # per example, at its last step
        self.history: dict[str, list[float]] = {name: [] for name in LOSS_NAMES}

    def epoch(self, steps) -> None:
        sums = np.zeros(len(LOSS_NAMES))
        for index in steps:
            drawn = None
            if isinstance(steps, _Draws):
                drawn, index = index
            if len(index):
                losses, stats = self.step(index)
                self.losses[index] = losses
                sums += stats
            if drawn is not None:  # every drawn sample hears its loss (0: no transition)
                reported = np.zeros(len(drawn), np.float32)
                examples = steps.example[drawn]
                reported[examples >= 0] = self.losses[examples[examples >= 0]]
                steps.sampler.update(drawn, reported)
        for name, value in zip(LOSS_NAMES, sums / max(1, len(steps))):
            self.history[name].append(float(value))

    def step(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t = self.targets
        x, action, next_x, next_legal = (
            self.x[index],
            t["action"][index],
            t["next_x"][index],
            t["next_legal"][index],
        )
        if self.augment is not None:
            x, action, next_x, next_legal = self._images(x, action, next_x, next_legal)
        losses, stats = self.learner._train_step(
            x, action, t["reward"][index], t["done"][index], next_x, next_legal, t["mask"][index]
        )
        self.steps += 1
        workmeter.tick()  # a training step: the gym's proof of progress
        self.age += 1
        if self.age >= self.period:
            learner = self.learner
            for mine, theirs in zip(learner.target.weights, learner.online.weights):
                mine.assign(theirs)
            self.age = 0
            self.copies += 1
        return losses.numpy(), stats.numpy()

    def _images(self, x, action, next_x, next_legal):
        """Each transition in a random symmetric image: s and s' under the same symmetry."""
        augment = self.augment
        ks = self.rng.integers(0, augment.count, len(x))
        x, action, next_x, next_legal = x.copy(), action.copy(), next_x.copy(), next_legal.copy()
        for i in np.flatnonzero(ks):
            k = int(ks[i])
            x[i] = self._image(x[i], k)
            action[i] = augment.perms[k][action[i]]
            if next_legal[i].any():  # not done: s' is a real position
                next_x[i] = self._image(next_x[i], k)
                next_legal[i] = augment.permute(next_legal[i], k)
        return x, action, next_x, next_legal

    def _image(self, x: np.ndarray, k: int) -> np.ndarray:
        """augment.image, remembered: positions recur in many samples and every iteration."""
        cache = self.learner.images
        key = (x.tobytes(), k)
        image = cache.get(key)
        if image is None:
            if len(cache) * (2 * x.nbytes + 200) >= IMAGE_CACHE_BYTES:  # key, image, dict
                cache.clear()
            image = cache[key] = self.augment.image(x, k)
        return image


class _Draws:
    """`count` minibatches drawn from a replay's sampler: (drawn sample ids, their examples)."""

    def __init__(self, sampler, size: int, count: int, example: np.ndarray):
        self.sampler, self.size, self.count, self.example = sampler, size, count, example

    def __len__(self) -> int:
        return self.count

    def __iter__(self):
        for _ in range(self.count):
            drawn = np.asarray(self.sampler.draw(self.size))
            examples = self.example[drawn]
            yield drawn, examples[examples >= 0]
