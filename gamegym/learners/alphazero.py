"""The AlphaZero learner: policy + value heads; loss = cross-entropy(pi) + w * MSE(z) + L2.

Illegal actions are masked out of the policy logits (with the `legal` column of the samples) so
the network spends no capacity on them.  With `augment_symmetries`, each training sample is shown
in a random symmetric image every epoch (needs the game's `unnumpify` and symmetries).
"""
from __future__ import annotations

import logging
import time

import numpy as np

from gamegym.learners.base import Learner, TrainResult, register

log = logging.getLogger("gamegym.learners.alphazero")
LOSS_NAMES = ("loss", "policy_loss", "value_loss", "l2_loss")


@register
class AlphaZeroLearner(Learner):
    name = "alphazero"

    def __init__(self):
        self.optimizer = None
        self._model = None
        self._train_step = None
        self._eval_step = None

    # ----- model ------------------------------------------------------------------------------
    def build_model(self, graph, network_config):
        from gamegym.networks import network_for_game
        return network_for_game(graph, network_config)

    def compile(self, model, train_config) -> None:
        import keras
        import tensorflow as tf
        self.optimizer = keras.optimizers.Adam(learning_rate=train_config.learning_rate)
        self._model = model
        weight = float(train_config.value_loss_weight)

        def losses(x, pi, z, legal, training):
            logits, value = model(x, training=training)
            logits = tf.where(legal, logits, tf.fill(tf.shape(logits), -1e9))
            policy = tf.nn.softmax_cross_entropy_with_logits(labels=pi, logits=logits)
            value = tf.square(z - tf.reshape(value, [-1]))
            return policy, value

        @tf.function(reduce_retracing=True)
        def train_step(x, pi, z, legal):
            with tf.GradientTape() as tape:
                policy, value = losses(x, pi, z, legal, True)
                l2 = tf.add_n(model.losses) if model.losses else tf.constant(0.0)
                total = tf.reduce_mean(policy) + weight * tf.reduce_mean(value) + l2
            grads = tape.gradient(total, model.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return total, tf.reduce_mean(policy), tf.reduce_mean(value), l2

        @tf.function(reduce_retracing=True)
        def eval_step(x, pi, z, legal):
            return losses(x, pi, z, legal, False)

        self._train_step, self._eval_step = train_step, eval_step
        self._weight = weight

    # ----- training ---------------------------------------------------------------------------
    def train_iteration(self, model, batch, train_config, rng, graph=None) -> TrainResult:
        if self._model is not model:
            self.compile(model, train_config)
        start = time.time()
        order = rng.permutation(len(batch))
        n_val = int(len(batch) * train_config.validation_split)
        val, train = batch.take(order[:n_val]), batch.take(order[n_val:])
        augment = Augmenter(graph) if train_config.augment_symmetries and graph else None
        history = {name: [] for name in LOSS_NAMES}
        size = train_config.batchsize
        if train_config.num_updates_per_train_iter:
            steps = [rng.integers(0, len(train), size)
                     for _ in range(train_config.num_updates_per_train_iter)]
            self._epoch(train, steps, augment, rng, history)
            self._validate(val, history)
        else:
            for _ in range(train_config.epochs):
                perm = rng.permutation(len(train))
                steps = [perm[i:i + size] for i in range(0, len(train), size)]
                self._epoch(train, steps, augment, rng, history)
                self._validate(val, history)
        return TrainResult(history=history, samples=len(train), seconds=time.time() - start)

    def _epoch(self, train, steps, augment, rng, history) -> None:
        sums = np.zeros(4)
        for index in steps:
            x, pi, legal = train.x[index], train.pi[index], train.legal[index]
            if augment is not None:
                x, pi, legal = augment(x, pi, legal, rng)
            out = self._train_step(x, pi, train.z[index], legal)
            sums += [float(v) for v in out]
        for name, value in zip(LOSS_NAMES, sums / max(1, len(steps))):
            history[name].append(float(value))

    def _validate(self, val, history) -> None:
        if len(val) == 0:
            return
        policy, value = self._losses_of(val)
        history.setdefault("val_policy_loss", []).append(float(policy.mean()))
        history.setdefault("val_value_loss", []).append(float(value.mean()))
        history.setdefault("val_loss", []).append(float(policy.mean() + self._weight * value.mean()))

    def _losses_of(self, batch, size: int = 1024) -> tuple[np.ndarray, np.ndarray]:
        parts = [self._eval_step(batch.x[i:i + size], batch.pi[i:i + size], batch.z[i:i + size],
                                 batch.legal[i:i + size]) for i in range(0, len(batch), size)]
        return (np.concatenate([p.numpy() for p, _ in parts]),
                np.concatenate([v.numpy() for _, v in parts]))

    def per_sample_loss(self, model, batch, train_config) -> np.ndarray:
        if self._model is not model:
            self.compile(model, train_config)
        policy, value = self._losses_of(batch)
        return (policy + self._weight * value).astype(np.float32)


class Augmenter:
    """Shows each sample in a random symmetric image: x via unnumpify/transform/numpify,
    pi and the legal mask permuted with transform_actions."""

    def __init__(self, graph):
        self.graph = graph
        self.count = graph.symmetry_count
        self.perms = [np.asarray(graph.transform_actions(k)) for k in range(self.count)]
        try:
            graph.unnumpify(graph.numpify(graph.roots[0]))
            self.ok = self.count > 1
        except NotImplementedError:
            log.info("%s has no unnumpify: symmetry augmentation is off", type(graph).__name__)
            self.ok = False

    def __call__(self, x, pi, legal, rng):
        if not self.ok:
            return x, pi, legal
        ks = rng.integers(0, self.count, len(x))
        x, pi, legal = x.copy(), pi.copy(), legal.copy()
        graph = self.graph
        for i, k in enumerate(ks):
            if k == 0:
                continue
            x[i] = graph.numpify(graph.transform(graph.unnumpify(x[i]), int(k)))
            perm = self.perms[k]
            new_pi = np.zeros_like(pi[i])
            new_pi[perm] = pi[i]
            new_legal = np.zeros_like(legal[i])
            new_legal[perm] = legal[i]
            pi[i], legal[i] = new_pi, new_legal
        return x, pi, legal
