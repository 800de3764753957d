"""MuZero's unrolled training (see gamegym.learners.muzero.learner): the targets of every step of an
unroll, minibatches of sequences, sequences drawn through a replay's sampler, and the traced
training steps with the paper's gradient scaling.  TensorFlow is imported only by the functions
that run the networks."""

from __future__ import annotations

import numpy as np

from gamegym.learners.base import option

__all__ = [
    "unroll_targets",
    "Unrolls",
    "augment_sequences",
    "SequenceDraws",
    "scale_gradient",
    "unroll_predictions",
    "step_weights",
    "make_steps",
    "loss_weights",
]

HIDDEN_GRADIENT_SCALE = 0.5
PRESENT, ABSORBING, UNKNOWN = 0, 1, 2  # what step k of an unroll is
END, TRUNCATED, CUT, MIDDLE = 0, 1, 2, 3  # what follows a game's row in the batch
MAX_DRAW_ROUNDS = 200


def loss_weights(train_config) -> np.ndarray:
    """float32 [2]: the weights of the value and the reward losses (a tensor argument)."""
    return np.array(
        [option(train_config, "value_loss_weight"), option(train_config, "reward_loss_weight")],
        np.float32,
    )


def unroll_targets(batch, unroll: int, z: np.ndarray) -> dict:
    """Rows, actions, value and reward targets with their masks for an unroll of `unroll`
    steps from every sample of `batch` (see the module docstring); `z` [N] is each sample's
    value target.  Arrays are indexed [sample, step]."""
    n = len(batch)
    order = np.lexsort((batch.step, batch.game))
    game, step = np.asarray(batch.game)[order], np.asarray(batch.step)[order]
    follows = np.zeros(n, bool)  # sorted position p + 1 is the next move of p's game
    follows[:-1] = (game[1:] == game[:-1]) & (step[1:] == step[:-1] + 1)
    last_of_game = np.ones(n, bool)
    last_of_game[:-1] = game[1:] != game[:-1]
    after = np.full(n, MIDDLE, np.int8)  # what comes after each row (sorted)
    ends = ~follows
    after[ends] = CUT
    finished = ends & last_of_game & (game != (batch.game[-1] if n else -1))
    truncated = np.asarray(batch.truncated, bool)[order]
    after[finished & truncated] = TRUNCATED
    after[finished & ~truncated] = END
    zs = np.asarray(z, np.float32)[order]
    actions_sorted = np.asarray(batch.action, np.int32)[order]

    pos = np.arange(n)  # sorted position of each step, -1 when none
    state = np.full(n, PRESENT, np.int8)
    rows = np.full((n, unroll + 1), -1, np.int64)
    actions = np.full((n, unroll), -1, np.int32)
    value = np.zeros((n, unroll + 1), np.float32)
    value_mask = np.zeros((n, unroll + 1), np.float32)
    reward = np.zeros((n, unroll + 1), np.float32)
    reward_mask = np.zeros((n, unroll + 1), np.float32)
    for k in range(unroll + 1):
        if k:
            present = state == PRESENT
            kind = np.where(present, after[np.maximum(pos, 0)], MIDDLE)
            reward[:, k] = np.where(present & (kind == END), zs[np.maximum(pos, 0)], 0.0)
            reward_mask[:, k] = (state == ABSORBING) | (present & (kind != CUT))
            moved = present & (kind == MIDDLE)
            state = np.where(
                moved, PRESENT, np.where(present, np.where(kind == END, ABSORBING, UNKNOWN), state)
            ).astype(np.int8)
            pos = np.where(moved, pos + 1, -1)
        here = state == PRESENT
        rows[here, k] = order[pos[here]]
        value[here, k] = zs[pos[here]]
        value_mask[:, k] = here | (state == ABSORBING)
        if k < unroll:
            actions[here, k] = actions_sorted[pos[here]]
    out: dict[str, np.ndarray] = {
        "rows": rows,
        "actions": actions,
        "value": value,
        "value_mask": value_mask,
        "reward": reward,
        "reward_mask": reward_mask,
    }
    back = np.empty(n, np.int64)
    back[order] = np.arange(n)
    return {k: v[back] for k, v in out.items()}  # indexed by batch row again


class Unrolls:
    """A batch's unroll targets, assembled into minibatches of sequences."""

    def __init__(self, inputs: dict, targets: dict, graph, augment: bool):
        from gamegym.learners.alphazero.learner import Augmenter

        self.x, self.actions = inputs["x"], inputs["actions"]
        self.targets = targets
        self.unroll = self.actions.shape[1]
        self.action_space = targets["pi"].shape[1]
        self.augmenter = Augmenter(graph) if augment and graph is not None else None

    def minibatch(self, starts, rng, augment: bool = False, steps: int | None = None) -> tuple:
        """(x, actions, pi, value, value_mask, reward, reward_mask, policy_mask) for the
        unrolls from `starts` over `steps` steps (default all): actions past a game's end are
        drawn with `rng` (action 0 without one), and with `augment` each sequence is shown in a
        random symmetric image.  policy_mask is each step's sample's `policy_weight` (0 past
        the game, and after a fast search of playout-cap randomization)."""
        steps = self.unroll if steps is None else steps
        t = self.targets
        rows = t["rows"][starts, : steps + 1]
        x = self.x[starts]
        actions = self.actions[starts, :steps]
        missing = actions < 0
        if missing.any():
            actions = actions.copy()
            actions[missing] = (
                rng.integers(0, self.action_space, int(missing.sum())) if rng is not None else 0
            )
        present = rows >= 0
        pi = t["pi"][np.maximum(rows, 0)] * present[..., None]
        weights = t.get("policy_weight")
        policy_mask = present if weights is None else present * weights[np.maximum(rows, 0)]
        if augment and self.augmenter is not None and self.augmenter.ok:
            x, actions, pi = augment_sequences(self.augmenter, x, actions, pi, rng)
        return (
            x,
            actions,
            pi.astype(np.float32),
            t["value"][starts, : steps + 1],
            t["value_mask"][starts, : steps + 1],
            t["reward"][starts, : steps + 1],
            t["reward_mask"][starts, : steps + 1],
            policy_mask.astype(np.float32),
        )

    def trained(self, starts, step_losses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(sample ids, their step losses) of the steps of these unrolls that are samples."""
        rows = self.targets["rows"][starts, : step_losses.shape[1]]
        here = rows >= 0
        return rows[here], step_losses[here].astype(np.float32)


def augment_sequences(augmenter, x, actions, pi, rng) -> tuple:
    """One random symmetry per sequence: the start position x [B, ...], the actions [B, K] and
    the policies [B, K+1, A] of all its steps (new arrays)."""
    ks = rng.integers(0, augmenter.count, len(x))
    x, actions, pi = x.copy(), actions.copy(), pi.copy()
    graph = augmenter.graph
    for i, k in enumerate(ks):
        if k == 0:
            continue
        perm = augmenter.perms[k]
        x[i] = graph.numpify(graph.transform(graph.unnumpify(x[i]), int(k)))
        actions[i] = perm[actions[i]]
        image = np.zeros_like(pi[i])
        image[:, perm] = pi[i]
        pi[i] = image
    return x, actions, pi


class SequenceDraws:
    """`count` minibatches of unroll starts drawn through a replay's sampler, each sequence by
    the priority of its last step (the Curious Replay sequence rule).

    A sequence is the unroll from a start s; its last step is the last sample it reaches
    (s + K, or the last row of its game when the game ends sooner).  A drawn sample j is the
    last step of c_j sequences (1 inside a game, none among its first K rows, up to K + 1 at its
    last row); it is kept with probability c_j / (K + 1) and one of those sequences is taken at
    random, so every sequence is drawn with probability proportional to its last step's
    priority.  The Learner then reports every unrolled step's own loss to `sampler.update`.
    """

    def __init__(
        self, sampler, batch, unroll: int, size: int, count: int, rng: np.random.Generator
    ):
        self.sampler, self.size, self.count, self.rng = sampler, size, count, rng
        self.unroll = unroll
        n = len(batch)
        order = np.lexsort((batch.step, batch.game))
        game, step = np.asarray(batch.game)[order], np.asarray(batch.step)[order]
        follows = np.zeros(n, bool)
        follows[:-1] = (game[1:] == game[:-1]) & (step[1:] == step[:-1] + 1)
        first = np.zeros(n, np.int64)  # sorted position where each row's run begins
        starts = np.flatnonzero(np.r_[True, ~follows[:-1]]) if n else np.zeros(0, np.int64)
        first[starts] = starts
        first = np.maximum.accumulate(first) if n else first
        is_last = ~follows
        pos = np.arange(n)
        low = np.where(is_last, np.maximum(first, pos - unroll), pos - unroll)
        high = np.where(is_last, pos, pos - unroll)
        none = low < first
        low[none], high[none] = 0, -1  # no sequence ends here
        self.order = order
        self.low, self.high = np.empty(n, np.int64), np.empty(n, np.int64)
        self.low[order], self.high[order] = low, high  # indexed by batch row

    def __len__(self) -> int:
        return self.count

    def __iter__(self):
        for _ in range(self.count):
            yield self.draw()

    def draw(self) -> np.ndarray:
        """Unroll starts (sample ids) of one minibatch."""
        chosen, need = [], self.size
        for _ in range(MAX_DRAW_ROUNDS):
            j = np.asarray(self.sampler.draw(need * (self.unroll + 1)), np.int64)
            c = self.high[j] - self.low[j] + 1
            j = j[self.rng.random(len(j)) * (self.unroll + 1) < c][:need]
            if len(j):
                chosen.append(self.order[self.rng.integers(self.low[j], self.high[j] + 1)])
                need -= len(j)
            if need == 0:
                return np.concatenate(chosen)
        raise RuntimeError(
            "the replay's sampler keeps drawing samples that end no sequence "
            "(the first rows of games); cannot fill a minibatch"
        )


def scale_gradient(tensor, scale: float):
    """The tensor unchanged, its gradient multiplied by `scale` (the paper's scale_gradient)."""
    import tensorflow as tf

    return tensor * scale + tf.stop_gradient(tensor) * (1.0 - scale)


def unroll_predictions(
    parts, x, actions, training: bool, hidden_scale: float = HIDDEN_GRADIENT_SCALE
):
    """(policy logits [B, K+1, A], values [B, K+1], rewards [B, K+1]) of h, then K steps of g
    with the `actions` [B, K] (int); the gradient into each dynamics step is scaled by
    `hidden_scale`.  The reward of step 0 is 0."""
    import tensorflow as tf

    h, g, f = parts
    action_space = int(g.inputs[1].shape[-1])
    hidden = h(x, training=training)
    logits, value = f(hidden, training=training)
    all_logits, values, rewards = [logits], [tf.reshape(value, [-1])], [tf.zeros_like(value)[:, 0]]
    for k in range(actions.shape[1]):
        hidden = scale_gradient(hidden, hidden_scale)
        hidden, reward = g([hidden, tf.one_hot(actions[:, k], action_space)], training=training)
        logits, value = f(hidden, training=training)
        all_logits.append(logits)
        values.append(tf.reshape(value, [-1]))
        rewards.append(tf.reshape(reward, [-1]))
    return tf.stack(all_logits, axis=1), tf.stack(values, axis=1), tf.stack(rewards, axis=1)


def step_weights(unroll: int) -> np.ndarray:
    """float32 [K+1]: the weight of each step's loss in a sequence's (1, then 1/K each)."""
    return np.array([1.0] + [1.0 / unroll] * unroll, np.float32)


class _Steps:
    """The traced training and evaluation steps of one model."""

    def __init__(self, train, evaluate, start):
        self.train, self.evaluate, self.start = train, evaluate, start


def make_steps(model, parts, optimizer, path: str = "traced", batch_size: int = 0) -> _Steps:
    """The training step (run as `path` says for minibatches of `batch_size` unrolls,
    gamegym.nets.trainstep.TrainStep), the evaluation step and the start losses."""
    import tensorflow as tf

    from gamegym.nets.trainstep import TrainStep

    def losses(
        x, actions, pi, value, value_mask, reward, reward_mask, policy_mask, weight, training
    ):
        logits, values, rewards = unroll_predictions(parts, x, actions, training)
        policy = tf.nn.softmax_cross_entropy_with_logits(labels=pi, logits=logits) * policy_mask
        value_loss = tf.square(value - values) * value_mask
        reward_loss = tf.square(reward - rewards) * reward_mask
        step_losses = policy + weight[0] * value_loss + weight[1] * reward_loss  # [B, K+1]
        unroll = actions.shape[1]
        scale = tf.constant(step_weights(unroll)) if unroll else tf.ones([1])
        sequence = tf.reduce_sum(step_losses * scale, axis=1)
        stats = [tf.reduce_mean(sequence)] + [
            tf.reduce_sum(part) / tf.maximum(tf.reduce_sum(mask), 1.0)
            for part, mask in (
                (policy, policy_mask),
                (value_loss, value_mask),
                (reward_loss, reward_mask),
            )
        ]
        return step_losses, stats

    def train_step(x, actions, pi, value, value_mask, reward, reward_mask, policy_mask, weight):
        with tf.GradientTape() as tape:
            step_losses, stats = losses(
                x, actions, pi, value, value_mask, reward, reward_mask, policy_mask, weight, True
            )
            l2 = tf.add_n(model.losses) if model.losses else tf.constant(0.0)
            total = stats[0] + l2
        grads = tape.gradient(total, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return step_losses, tf.stack([total, *stats[1:], l2])

    @tf.function(reduce_retracing=True, autograph=False)
    def evaluate(x, actions, pi, value, value_mask, reward, reward_mask, policy_mask, weight):
        step_losses, stats = losses(
            x, actions, pi, value, value_mask, reward, reward_mask, policy_mask, weight, False
        )
        return step_losses, tf.stack([*stats, tf.constant(0.0)])

    @tf.function(reduce_retracing=True, autograph=False)
    def start(x, pi, value, value_mask, policy_mask, weight):
        h, _, f = parts
        logits, v = f(h(x, training=False), training=False)
        policy = tf.nn.softmax_cross_entropy_with_logits(labels=pi[:, 0], logits=logits)
        policy = policy * policy_mask[:, 0]
        value_loss = tf.square(value[:, 0] - tf.reshape(v, [-1])) * value_mask[:, 0]
        return policy + weight[0] * value_loss

    train = TrainStep(train_step, path, batch_size, reduce_retracing=True, autograph=False)
    return _Steps(train, evaluate, start)
