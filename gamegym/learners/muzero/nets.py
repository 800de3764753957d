"""MuZero's networks and the Predictor's call on them (imports TensorFlow; not for Selfplayers).

Three networks (seed 000), built from the session's `network` config:
  representation h   observation [*input_shape]             -> hidden state s
  dynamics g         s, action (one-hot over action ids)    -> next s, reward (tanh)
  prediction f       s                                      -> policy logits [A], value (tanh)
Hidden states are min-max scaled to [0, 1] per sample (`gamegym.nets.layers.MinMaxScale`).  Values
are from the mover's view at s; the reward is what the player taking the action receives.

kind "dense": h = Flatten + `blocks` dense layers of `width` + a dense hidden state of
`hidden_size` units (0: width); g = the same torso over [s, action]; f = one dense layer, then
the policy and value heads.  kind "residual" (boards): the hidden state is `width` planes over the
board; h = conv stem + `blocks` residual blocks; g takes the action as one learned plane (a dense
map from its one-hot) stacked on s, then a conv and `blocks` residual blocks; f = 1x1 conv heads.

They are saved as ONE Keras container model (one file per iteration, like AlphaZero's), with the
three as its layers "representation", "dynamics", "prediction":
  inputs   [position [B, *input_shape], action [B, A] one-hot]
  outputs  [policy logits f(h(x)) [B, A], value [B, 1], reward of g(h(x), a) [B, 1],
            policy logits [B, A] and value [B, 1] of f(g(h(x), a))]
so `model.inputs[0]` is the observation and `model.outputs[0]` the policy over action ids, as the
gym checks for every model.

`LatentModelCall` answers the Predictor's two request kinds:
  "initial"    {"x": observations}                 -> {"hidden", "probs", "values"}
  "recurrent"  {"hidden": [B, ...], "action": [B]} -> {"hidden", "reward", "probs", "values"}
on the CPU fast path when the networks' layers are known to it (ONNX Runtime, or NumPy for dense
networks without it: gamegym.learners.muzero.fastnets, as AlphaZero's; `portable()` hands that
evaluator to a process without TensorFlow), except convolutional ones when TensorFlow has a
GPU, and with one traced TensorFlow function per kind otherwise.
"""

from __future__ import annotations

import itertools

import numpy as np

from gamegym.nets.tfsetup import import_keras

keras = import_keras()  # quietly: TensorFlow's start goes to the log
layers = keras.layers

from gamegym.learners.muzero.fastnets import PARTS, LatentModelFastCall, muzero_form  # noqa: E402
from gamegym.nets.builders import network_options  # noqa: E402
from gamegym.nets.inference import take_weights  # noqa: E402
from gamegym.nets.layers import MinMaxScale  # noqa: E402

__all__ = ["build_muzero_network", "muzero_parts", "LatentModelCall"]


def build_muzero_network(graph, preset=None, seed: int | None = None) -> keras.Model:  # type: ignore[name-defined]  # keras is bound at run time
    """The container model of h, g and f for `graph` (see the module docstring)."""
    options = network_options(preset)
    shape = tuple(int(d) for d in graph.numpify(graph.roots[0]).shape)
    actions = graph.action_space_size
    kind = options["kind"]
    if kind == "auto":
        kind = "residual" if len(shape) == 3 and min(shape[:2]) >= 5 else "dense"
    if kind not in ("dense", "residual"):
        raise ValueError(f"unknown network kind {kind!r}; use 'dense' or 'residual'")
    if kind == "residual" and len(shape) != 3:
        raise ValueError(f"a residual network needs (rows, columns, planes) input, got {shape}")
    seeds = itertools.count(seed) if seed is not None else itertools.repeat(None)
    regularizer = keras.regularizers.L2(options["l2"]) if options["l2"] else None

    def weights() -> dict:
        return {
            "kernel_initializer": keras.initializers.GlorotUniform(seed=next(seeds)),
            "kernel_regularizer": regularizer,
        }

    width, blocks = options["width"], options["blocks"]
    build = _dense_parts if kind == "dense" else _residual_parts
    h, g, f = build(shape, actions, width, blocks, options["hidden_size"] or width, weights)
    position = keras.Input(shape=shape, name="position")
    action = keras.Input(shape=(actions,), name="action")
    hidden = h(position)
    policy, value = f(hidden)
    next_hidden, reward = g([hidden, action])
    next_policy, next_value = f(next_hidden)
    return keras.Model(
        [position, action],
        [policy, value, reward, next_policy, next_value],
        name=f"muzero_{kind}_{width}x{blocks}",
    )


def _heads(torso, actions, width, weights):
    policy = layers.Dense(actions, name="policy", **weights())(torso)
    hidden = layers.Dense(max(8, width // 2), activation="swish", name="value_hidden", **weights())(
        torso
    )
    return policy, layers.Dense(1, activation="tanh", name="value", **weights())(hidden)


def _dense_parts(shape, actions, width, blocks, hidden_size, weights):
    def torso(x, prefix):
        for i in range(blocks):
            x = layers.Dense(width, activation="swish", name=f"{prefix}_{i}", **weights())(x)
        return x

    observation = keras.Input(shape=shape, name="observation")
    x = torso(layers.Flatten()(observation), "h")
    h_out = MinMaxScale(name="h_scale")(layers.Dense(hidden_size, name="h_out", **weights())(x))
    h = keras.Model(observation, h_out, name="representation")

    state = keras.Input(shape=(hidden_size,), name="hidden")
    action = keras.Input(shape=(actions,), name="action")
    x = torso(layers.Concatenate()([state, action]), "g")
    g_out = MinMaxScale(name="g_scale")(layers.Dense(hidden_size, name="g_out", **weights())(x))
    reward = layers.Dense(1, activation="tanh", name="reward", **weights())(x)
    g = keras.Model([state, action], [g_out, reward], name="dynamics")

    state = keras.Input(shape=(hidden_size,), name="hidden")
    x = layers.Dense(width, activation="swish", name="f_0", **weights())(state)
    f = keras.Model(state, list(_heads(x, actions, width, weights)), name="prediction")
    return h, g, f


def _residual_parts(shape, actions, width, blocks, hidden_size, weights):
    rows, columns = shape[0], shape[1]

    def conv_bn(x, name, size=3):
        x = layers.Conv2D(width, size, padding="same", use_bias=False, name=name, **weights())(x)
        return layers.BatchNormalization(name=f"{name}_bn")(x)

    def tower(x, prefix):
        x = layers.Activation("relu")(conv_bn(x, f"{prefix}_stem"))
        for i in range(blocks):
            y = layers.Activation("relu")(conv_bn(x, f"{prefix}_block{i}_a"))
            y = conv_bn(y, f"{prefix}_block{i}_b")
            x = layers.Activation("relu")(layers.Add()([x, y]))
        return x

    observation = keras.Input(shape=shape, name="observation")
    h = keras.Model(
        observation, MinMaxScale(name="h_scale")(tower(observation, "h")), name="representation"
    )

    state = keras.Input(shape=(rows, columns, width), name="hidden")
    action = keras.Input(shape=(actions,), name="action")
    plane = layers.Reshape((rows, columns, 1))(
        layers.Dense(rows * columns, name="action_plane", **weights())(action)
    )
    x = tower(layers.Concatenate()([state, plane]), "g")
    reward = layers.Flatten()(layers.Conv2D(2, 1, name="reward_conv", **weights())(x))
    reward = layers.Dense(1, activation="tanh", name="reward", **weights())(reward)
    g = keras.Model([state, action], [MinMaxScale(name="g_scale")(x), reward], name="dynamics")

    state = keras.Input(shape=(rows, columns, width), name="hidden")
    x = layers.Flatten()(layers.Conv2D(4, 1, name="head_conv", **weights())(state))
    f = keras.Model(state, list(_heads(x, actions, width, weights)), name="prediction")
    return h, g, f


def muzero_parts(model) -> tuple:
    """(h, g, f): the representation, dynamics and prediction models of a container."""
    try:
        return tuple(model.get_layer(name) for name in PARTS)
    except ValueError:
        raise ValueError(
            f"model {model.name!r} is not a MuZero container (it needs layers "
            f"{', '.join(PARTS)}); was the session made by another learner?"
        ) from None


class LatentModelCall:
    """The Predictor's model call for MuZero (see the module docstring)."""

    kinds = ("initial", "recurrent")

    def __init__(self, model, iteration: int = 0, fast: bool = True):
        from gamegym.nets.tfsetup import import_tensorflow

        tf = import_tensorflow()
        self.iteration = iteration
        self.model = model
        h, g, f = muzero_parts(model)
        self.input_shape = tuple(int(d) for d in h.inputs[0].shape[1:])
        self.actions = int(g.inputs[1].shape[-1])
        self.fast = None
        self._conv = not tf.config.list_logical_devices("GPU")  # the GPU path stays TensorFlow
        if fast:
            self.fast = self._fast_path(model, iteration)
        if self.fast is not None:
            self.model = None
            return
        hidden_shape = tuple(int(d) for d in h.outputs[0].shape[1:])
        eye = tf.eye(self.actions)

        @tf.function(
            input_signature=[tf.TensorSpec([None, *self.input_shape], tf.float32)],
            reduce_retracing=True,
        )
        def initial(x):
            hidden = h(x, training=False)
            logits, value = f(hidden, training=False)
            return hidden, tf.nn.softmax(logits, axis=-1), tf.reshape(value, [-1])

        @tf.function(
            input_signature=[
                tf.TensorSpec([None, *hidden_shape], tf.float32),
                tf.TensorSpec([None], tf.int32),
            ],
            reduce_retracing=True,
        )
        def recurrent(hidden, action):
            hidden, reward = g([hidden, tf.gather(eye, action)], training=False)
            logits, value = f(hidden, training=False)
            return (
                hidden,
                tf.reshape(reward, [-1]),
                tf.nn.softmax(logits, axis=-1),
                tf.reshape(value, [-1]),
            )

        self._initial, self._recurrent = initial, recurrent

    def _fast_path(self, model, iteration: int) -> LatentModelFastCall | None:
        form = muzero_form(model)
        return LatentModelFastCall.from_form(form, iteration, self._conv) if form else None

    def update(self, model, iteration: int) -> bool:
        """Take a new iteration's weights of the same network (False when shapes differ)."""
        if self.fast is not None:
            fast = self._fast_path(model, iteration)
            if fast is None:
                return False
            self.fast, self.iteration = fast, iteration
            return True
        if not take_weights(self.model, model):
            return False
        self.iteration = iteration
        return True

    @property
    def path(self) -> str:
        """Where the model runs: "onnx", "numpy" or "tensorflow" (the Predictor's log says)."""
        return self.fast.path if self.fast is not None else "tensorflow"

    def portable(self) -> LatentModelFastCall | None:
        """The fast path's evaluator of this iteration for a process without TensorFlow (the
        Selfplayers), or None when the model runs on TensorFlow."""
        return self.fast

    def run(self, kind: str, inputs: dict) -> dict:
        if self.fast is not None:
            return self.fast.run(kind, inputs)
        if kind == "initial":
            x = np.asarray(inputs["x"], np.float32)
            if x.shape[1:] != self.input_shape:
                raise ValueError(
                    f"positions of shape {x.shape[1:]} do not fit the model's "
                    f"input shape {self.input_shape}"
                )
            hidden, probs, values = self._initial(x)
            return {"hidden": hidden.numpy(), "probs": probs.numpy(), "values": values.numpy()}
        if kind == "recurrent":
            hidden, reward, probs, values = self._recurrent(
                np.asarray(inputs["hidden"], np.float32), np.asarray(inputs["action"], np.int32)
            )
            return {
                "hidden": hidden.numpy(),
                "reward": reward.numpy(),
                "probs": probs.numpy(),
                "values": values.numpy(),
            }
        raise ValueError(
            f"a MuZero model answers {' and '.join(map(repr, self.kinds))} requests, not {kind!r}"
        )

    def search_request(self, x: np.ndarray) -> tuple[str, dict]:
        """The request a search makes for most of its leaves, for positions x (benchmarks)."""
        hidden = self.run("initial", {"x": x})["hidden"]
        return "recurrent", {
            "hidden": hidden,
            "action": np.arange(len(x), dtype=np.int32) % self.actions,
        }
