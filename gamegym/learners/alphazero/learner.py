"""The AlphaZero learner: policy + value heads; loss = cross-entropy(pi) + w * MSE(z) + L2.

Per sample:  policy_loss = c * softmax cross-entropy of pi against the logits, with the logits
of illegal actions (the sample's `legal` mask) set to -1e9 first, so the network spends no
capacity on moves that cannot be played, and c the sample's `policy_weight` (0 after a fast
search of playout-cap randomization: its visits are no target);  value_loss = (z - value)^2,
for every sample;  loss = policy_loss + w * value_loss.  The reported policy_loss is the mean
over the samples that carry a policy target.
The minimised total adds the L2 weight decay held in the network's kernel regularizers.

Training options read from the train config (see `gamegym.learners.base.option`; defaults are
those of `gamegym.config.TrainConfig`):
  learning_rate               Adam learning rate
  value_loss_weight           w above
  value_td_steps              n > 0: the game result in z is replaced by the search value n
                              plies later, sign-adjusted (`samples.n_step_value_targets`)
  value_target_mix            m: z = (1 - m) * z + m * the position's own search value
  epochs                      passes over the training samples (when no sampled schedule)
  batchsize                   minibatch size (also read as `batch_size` or `mini_batch_size`)
  compile                     how the training step runs: traced or XLA-compiled
                              (gamegym.nets.trainstep; "auto": the learner's `train_compile`)
  validation_split            share of the batch held out (after an rng shuffle) for val_* losses
  num_updates_per_train_iter  > 0 (not None): that many minibatches drawn with replacement
                              instead of the epochs (design §7)
  augment_symmetries          show each sample in a random symmetric image at every step

Augmentation draws one random symmetry per sample per minibatch rather than adding all images as
copies: the cost per epoch stays that of the plain batch, and over epochs the model still sees
the images (AlphaGo Zero's scheme).  It needs the game's `unnumpify` and is skipped without it.
"""

from __future__ import annotations

import json
import logging
import time
import zipfile

import numpy as np

from gamegym import workmeter
from gamegym.data.samples import n_step_value_targets
from gamegym.learners.base import Learner, TrainReport, option, register
from gamegym.nets.inference import evaluate_form

log = logging.getLogger("gamegym.learners.alphazero.learner")
LOSS_NAMES = ("loss", "policy_loss", "value_loss", "l2_loss")
EVAL_BATCH = 1024


@register(network_paths=True)
class AlphaZeroLearner(Learner):
    name = "alphazero"

    def __init__(self):
        self.optimizer = None
        self._model = None
        self._train_step = None
        self._eval_step = None

    # ----- model ------------------------------------------------------------------------------
    def build_model(self, graph, network_config, seed: int | None = None):
        from gamegym.nets.builders import network_for_game

        return network_for_game(graph, network_config, seed=seed)

    def compile(self, model, train_config) -> None:
        from gamegym.nets.tfsetup import import_keras, import_tensorflow
        from gamegym.nets.trainstep import TrainStep

        keras, tf = import_keras(), import_tensorflow()
        self.optimizer = keras.optimizers.Adam(
            learning_rate=float(option(train_config, "learning_rate"))
        )
        self._model = model
        # the optimizer's slots made here, and one signature for every batch size: each step
        # function is traced once, not again for the slots or for a short last batch
        self.optimizer.build(model.trainable_variables)
        examples = example_signature(tf, model)

        def losses(x, pi, z, legal, policy_weight, training):
            logits, value = model(x, training=training)
            logits = tf.where(legal, logits, tf.fill(tf.shape(logits), -1e9))
            policy = tf.nn.softmax_cross_entropy_with_logits(labels=pi, logits=logits)
            return policy * policy_weight, tf.square(z - tf.reshape(value, [-1]))

        def train_step(x, pi, z, legal, policy_weight, weight):
            with tf.GradientTape() as tape:
                policy, value = losses(x, pi, z, legal, policy_weight, True)
                l2 = tf.add_n(model.losses) if model.losses else tf.constant(0.0)
                per_sample = policy + weight * value
                total = tf.reduce_mean(per_sample) + l2
            grads = tape.gradient(total, model.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, model.trainable_variables))
            policy_mean = tf.math.divide_no_nan(tf.reduce_sum(policy), tf.reduce_sum(policy_weight))
            return per_sample, tf.stack([total, policy_mean, tf.reduce_mean(value), l2])

        @tf.function(input_signature=examples, autograph=False)
        def eval_step(x, pi, z, legal, policy_weight):
            return losses(x, pi, z, legal, policy_weight, False)

        self._train_step = TrainStep(
            train_step,
            *self.train_step_options(train_config),
            input_signature=[*examples, tf.TensorSpec((), tf.float32)],
            autograph=False,
        )
        self._eval_step = eval_step

    def _ready(self, model, train_config) -> None:
        if self._model is not model:
            self.compile(model, train_config)
        else:
            self._train_step.configure(*self.train_step_options(train_config))

    # ----- the other roles: Predictor, Selfplayer, players -------------------------------------
    def make_evaluator(self, model, iteration: int, fast: bool = True):
        from gamegym.nets.inference import PolicyValueCall

        return PolicyValueCall(model, iteration, fast)

    def fast_form(self, model):
        return evaluate_form(model)

    def selfplayer(self, graph, service, config, rng):
        from gamegym.data.samples import GameRecord
        from gamegym.search.play import SearchSelfplay

        return SearchSelfplay(graph, service, config, rng, GameRecord)

    def is_model_file_of(self, path, graph, network_config) -> bool:
        """The network's name (kind, width, blocks), input shape, policy size and L2, read
        from the file's config.json without loading the model, so the process that asks (the
        gym's, a benchmark's) needs no TensorFlow.  The weight shapes follow from these;
        tests/test_learner.py checks every weight shape of the committed files against a
        freshly built network."""
        from gamegym.nets.builders import network_kind, network_options

        options = network_options(network_config)
        shape = tuple(graph.numpify(graph.roots[0]).shape)
        name = f"{network_kind(shape, options['kind'])}_{options['width']}x{options['blocks']}"
        try:
            with zipfile.ZipFile(path) as archive:
                config = json.loads(archive.read("config.json"))["config"]
            layers = {layer["config"]["name"]: layer["config"] for layer in config["layers"]}
            stored_shape = tuple(layers[config["input_layers"][0]]["batch_shape"][1:])
            policy = layers[config["output_layers"][0][0]]["units"]
            l2 = {
                (c.get("kernel_regularizer") or {}).get("config", {}).get("l2", 0.0)
                for c in layers.values()
                if "kernel_initializer" in c
            }
        except (OSError, KeyError, IndexError, TypeError, ValueError, zipfile.BadZipFile):
            return False
        return (config.get("name"), stored_shape, policy, l2) == (
            name,
            shape,
            graph.action_space_size,
            {float(options["l2"])},
        )

    def player(self, graph, service, search, config=None):
        from gamegym.nets.inference import NetworkPositionValuer
        from gamegym.search.play import MCTSPlayer

        return MCTSPlayer(NetworkPositionValuer(graph, service), search)

    # ----- targets ----------------------------------------------------------------------------
    def make_targets(self, batch, graph=None, train_config=None):
        """x [N, *input_shape]; targets pi [N, A], z [N], legal [N, A], policy_weight [N];
        sample ids arange(N).
        z is the sample's value target: the game result (as in AlphaZero) or with
        `value_td_steps` the search value that many plies later, then moved towards the
        position's own search value by `value_target_mix`."""
        mix = float(option(train_config, "value_target_mix"))
        z = n_step_value_targets(batch, int(option(train_config, "value_td_steps")))
        if mix:
            z = ((1.0 - mix) * z + mix * np.asarray(batch.root_value, np.float32)).astype(
                np.float32
            )
        targets = {
            "pi": np.asarray(batch.pi, np.float32),
            "z": z,
            "legal": np.asarray(batch.legal, bool),
            "policy_weight": np.asarray(batch.policy_weight, np.float32),
        }
        return np.asarray(batch.x, np.float32), targets, np.arange(len(batch))

    # ----- training ---------------------------------------------------------------------------
    def train_iteration(
        self, model, batch, train_config, rng, graph=None, sampler=None
    ) -> TrainReport:
        self._ready(model, train_config)
        self.optimizer.learning_rate.assign(float(option(train_config, "learning_rate")))
        weight = np.array(option(train_config, "value_loss_weight"), np.float32)  # a tensor arg
        size = int(option(train_config, "batchsize"))
        start = time.time()
        x, targets, ids = self.make_targets(batch, graph, train_config)
        n = len(ids)
        if n == 0:
            raise ValueError("no samples to train on")
        order = rng.permutation(n)
        n_val = min(int(n * float(option(train_config, "validation_split"))), n - 1)
        val, train = order[:n_val], order[n_val:]
        augment = None
        if option(train_config, "augment_symmetries") and graph is not None:
            augment = Augmenter(graph)
        history: dict[str, list[float]] = {name: [] for name in LOSS_NAMES}
        losses = np.full(n, np.nan, np.float32)  # per example: at its last training step
        updates = option(train_config, "num_updates_per_train_iter")
        if sampler is not None:  # the replay draws each minibatch and hears its losses
            self._epoch(
                x,
                targets,
                _Draws(sampler, size, int(updates) or 1),
                weight,
                augment,
                rng,
                losses,
                history,
            )
            self._validate(x, targets, val, weight, losses, history)
        elif updates:
            steps = [rng.choice(train, size) for _ in range(int(updates))]
            self._epoch(x, targets, steps, weight, augment, rng, losses, history)
            self._validate(x, targets, val, weight, losses, history)
        else:
            for _ in range(int(option(train_config, "epochs"))):
                perm = rng.permutation(train)
                steps = [perm[i : i + size] for i in range(0, len(perm), size)]
                self._epoch(x, targets, steps, weight, augment, rng, losses, history)
                self._validate(x, targets, val, weight, losses, history)
        # not drawn by the sampled schedule: their losses are computed here, except with a
        # replay's sampler (it heard the trained ones; a whole large buffer would be costly)
        unseen = np.flatnonzero(np.isnan(losses)) if sampler is None else ()
        if len(unseen):
            losses[unseen] = self._example_losses(x, targets, unseen, weight)
        per_sample = np.full(len(batch), np.nan, np.float32)
        per_sample[ids] = losses
        return TrainReport(
            history=history,
            samples=len(train),
            seconds=time.time() - start,
            per_sample_loss=per_sample,
        )

    def _epoch(self, x, targets, steps, weight, augment, rng, losses, history) -> None:
        sums = np.zeros(len(LOSS_NAMES))
        for index in steps:
            xb, pi, legal = x[index], targets["pi"][index], targets["legal"][index]
            if augment is not None:
                xb, pi, legal = augment(xb, pi, legal, rng)
            per_sample, stats = self._train_step(
                xb, pi, targets["z"][index], legal, targets["policy_weight"][index], weight
            )
            losses[index] = per_sample.numpy()
            workmeter.tick()  # a training step: the gym's proof of progress
            if isinstance(steps, _Draws):
                steps.sampler.update(index, losses[index])
            sums += stats.numpy()
        for name, value in zip(LOSS_NAMES, sums / max(1, len(steps))):
            history[name].append(float(value))

    def _validate(self, x, targets, val, weight, losses, history) -> None:
        if len(val) == 0:
            return
        policy, value = self._losses(x, targets, val)
        losses[val] = policy + weight * value
        history.setdefault("val_loss", []).append(float(np.mean(policy + weight * value)))
        carried = float(targets["policy_weight"][val].sum())
        history.setdefault("val_policy_loss", []).append(
            float(policy.sum()) / carried if carried > 0 else 0.0
        )
        history.setdefault("val_value_loss", []).append(float(value.mean()))

    def _example_losses(self, x, targets, index, weight) -> np.ndarray:
        policy, value = self._losses(x, targets, index)
        return (policy + weight * value).astype(np.float32)

    def _losses(self, x, targets, index) -> tuple[np.ndarray, np.ndarray]:
        """(policy_loss [N], value_loss [N]) of the samples `index` under the current model,
        in chunks (the policy loss weighted by each sample's policy_weight)."""
        names = ("pi", "z", "legal", "policy_weight")
        parts = [
            self._eval_step(x[chunk], *(targets[name][chunk] for name in names))
            for chunk in (index[i : i + EVAL_BATCH] for i in range(0, len(index), EVAL_BATCH))
        ]
        if not parts:
            return np.zeros(0, np.float32), np.zeros(0, np.float32)
        return (
            np.concatenate([p.numpy() for p, _ in parts]),
            np.concatenate([v.numpy() for _, v in parts]),
        )

    def per_sample_loss(self, model, batch, train_config=None) -> np.ndarray:
        self._ready(model, train_config)
        x, targets, ids = self.make_targets(batch, train_config=train_config)
        weight = np.float32(option(train_config, "value_loss_weight"))
        per_sample = np.full(len(batch), np.nan, np.float32)
        per_sample[ids] = self._example_losses(x, targets, np.arange(len(ids)), weight)
        return per_sample


def example_signature(tf, model) -> list:
    """The TensorSpecs of a batch of examples for `model` (any batch size): x, pi, z, legal,
    policy_weight."""
    actions = model.outputs[0].shape[-1]
    return [
        tf.TensorSpec((None, *model.inputs[0].shape[1:]), tf.float32),
        tf.TensorSpec((None, actions), tf.float32),
        tf.TensorSpec((None,), tf.float32),
        tf.TensorSpec((None, actions), tf.bool),
        tf.TensorSpec((None,), tf.float32),
    ]


class _Draws:
    """`count` minibatches of `size` drawn from a replay's sampler (example id = sample id)."""

    def __init__(self, sampler, size: int, count: int):
        self.sampler, self.size, self.count = sampler, size, count

    def __len__(self) -> int:
        return self.count

    def __iter__(self):
        for _ in range(self.count):
            yield np.asarray(self.sampler.draw(self.size))


_NO_UNNUMPIFY: set[str] = set()  # the games whose missing unnumpify was logged


class Augmenter:
    """Shows each sample in a random symmetric image: x via unnumpify -> transform -> numpify,
    pi and the legal mask permuted with transform_actions (pi_new[perm[a]] = pi[a])."""

    def __init__(self, graph):
        self.graph = graph
        self.count = graph.symmetry_count
        self.perms = [np.asarray(graph.transform_actions(k)) for k in range(self.count)]
        try:
            graph.unnumpify(graph.numpify(graph.roots[0]))
            self.ok = self.count > 1
        except NotImplementedError:
            name = type(graph).__name__
            if self.count > 1 and name not in _NO_UNNUMPIFY:  # once per game and process
                _NO_UNNUMPIFY.add(name)
                log.warning(
                    "%s has no unnumpify: training shows no symmetric images "
                    "(train.augment_symmetries has no effect)",
                    name,
                )
            self.ok = False

    def __call__(self, x, pi, legal, rng):
        """Images of x [B, ...], pi [B, A], legal [B, A] (new arrays; the inputs are kept)."""
        if not self.ok:
            return x, pi, legal
        ks = rng.integers(0, self.count, len(x))
        x, pi, legal = x.copy(), pi.copy(), legal.copy()
        for i, k in enumerate(ks):
            if k == 0:
                continue
            x[i] = self.image(x[i], k)
            pi[i], legal[i] = self.permute(pi[i], k), self.permute(legal[i], k)
        return x, pi, legal

    def image(self, x: np.ndarray, k: int) -> np.ndarray:
        """The numpify of symmetry k of the position numpified as x."""
        graph = self.graph
        return graph.numpify(graph.transform(graph.unnumpify(x), int(k)))

    def permute(self, row: np.ndarray, k: int) -> np.ndarray:
        """A row over action ids moved by symmetry k: new[perm[a]] = row[a]."""
        new = np.zeros_like(row)
        new[self.perms[k]] = row
        return new
