"""Keras model builders: a policy head (logits over action ids) and a value head (tanh).

Outputs, in this order:
  policy  float32 [B, A]  logits over action ids, no softmax: callers mask the illegal actions
  value   float32 [B, 1]  tanh, the position's value from the mover's view

Models use only built-in Keras layers (MuZero's also `gamegym.nets.layers.MinMaxScale`, which
`gamegym.nets.tfsetup.load_model` registers), so `load_model(path)` needs no custom objects.  L2
weight decay lives in the layers' kernel regularizers (`model.losses`).  A seed makes the
initial weights reproducible without touching any global random state.  Keras is imported when
a network is built, not with this module (through `gamegym.nets.tfsetup`, quietly).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import TYPE_CHECKING

from gamegym.nets.tfsetup import import_keras

if TYPE_CHECKING:
    import keras

__all__ = ["build_network", "build_torso", "network_for_game", "network_kind", "NETWORK_OPTIONS"]

# network options and their defaults (gamegym.config.NetworkConfig holds the same fields);
# heads and prior_scale shape the bootstrapped learner's Q-network (gamegym.learners.bootstrapped.qnetwork)
# (hidden_size: MuZero's hidden state)
NETWORK_OPTIONS = {
    "kind": "auto",
    "width": 64,
    "blocks": 2,
    "l2": 1e-4,
    "hidden_size": 0,
    "heads": 10,
    "prior_scale": 0.0,
}


def build_network(
    input_shape: tuple,
    action_space_size: int,
    kind: str = "dense",
    width: int = 64,
    blocks: int = 2,
    l2: float = 1e-4,
    seed: int | None = None,
) -> keras.Model:
    """A two-headed policy/value network for positions of `input_shape`.

    kind "dense": flatten + `blocks` dense layers of `width` units (swish).
    kind "residual": 3x3 conv stem + `blocks` residual blocks (conv-BN-relu, conv-BN, add, relu)
    of `width` filters, then a 1x1 conv to 4 planes shared by both heads.
    """
    keras = import_keras()  # quietly, through gamegym.nets.tfsetup
    layers = keras.layers
    input_shape = _checked_shape(input_shape, kind)
    weights = layer_weights(seed, l2)
    inputs = keras.Input(shape=input_shape, name="position")
    torso = _TORSOS[kind](inputs, width, blocks, weights)
    policy = layers.Dense(action_space_size, name="policy", **weights())(torso)
    hidden = layers.Dense(max(8, width // 2), activation="swish", name="value_hidden", **weights())(
        torso
    )
    value = layers.Dense(1, activation="tanh", name="value", **weights())(hidden)
    return keras.Model(inputs, [policy, value], name=f"{kind}_{width}x{blocks}")


def build_torso(
    input_shape: tuple,
    kind: str = "dense",
    width: int = 64,
    blocks: int = 2,
    l2: float = 1e-4,
    seed: int | None = None,
    name: str = "torso",
) -> keras.Model:
    """The body of `build_network` as a model of its own: positions -> flat features [B, F],
    for learners that put other heads on it (the bootstrapped learner's Q-heads)."""
    keras = import_keras()
    input_shape = _checked_shape(input_shape, kind)
    inputs = keras.Input(shape=input_shape, name="position")
    return keras.Model(
        inputs, _TORSOS[kind](inputs, width, blocks, layer_weights(seed, l2)), name=name
    )


def _checked_shape(input_shape: tuple, kind: str) -> tuple:
    input_shape = tuple(int(d) for d in input_shape)
    if kind not in ("dense", "residual"):
        raise ValueError(f"unknown network kind {kind!r}; use 'dense' or 'residual'")
    if kind == "residual" and len(input_shape) != 3:
        raise ValueError(
            f"a residual network needs (rows, columns, planes) input, got {input_shape}"
        )
    return input_shape


def layer_weights(seed: int | None, l2: float):
    """A function giving the keyword arguments of each new layer with a kernel: its initializer
    (seeded from `seed` onwards when given) and its L2 regularizer."""
    keras = import_keras()
    seeds = itertools.count(seed) if seed is not None else itertools.repeat(None)
    regularizer = keras.regularizers.L2(l2) if l2 else None

    def weights() -> dict:
        return {
            "kernel_initializer": keras.initializers.GlorotUniform(seed=next(seeds)),
            "kernel_regularizer": regularizer,
        }

    return weights


def _dense_torso(inputs, width, blocks, weights):
    layers = import_keras().layers
    x = layers.Flatten()(inputs)
    for i in range(blocks):
        x = layers.Dense(width, activation="swish", name=f"dense_{i}", **weights())(x)
    return x


def _residual_torso(inputs, width, blocks, weights):
    layers = import_keras().layers

    def conv_bn(x, name):
        x = layers.Conv2D(width, 3, padding="same", use_bias=False, name=name, **weights())(x)
        return layers.BatchNormalization(name=f"{name}_bn")(x)

    x = layers.Activation("relu")(conv_bn(inputs, "stem"))
    for i in range(blocks):
        y = layers.Activation("relu")(conv_bn(x, f"block{i}_a"))
        y = conv_bn(y, f"block{i}_b")
        x = layers.Activation("relu")(layers.Add()([x, y]))
    x = layers.Conv2D(4, 1, name="head_conv", **weights())(x)
    return layers.Flatten()(x)


_TORSOS = {"dense": _dense_torso, "residual": _residual_torso}


def network_options(preset=None) -> dict:
    """kind / width / blocks / l2 from a NetworkConfig-like object, a dict of those keys, a whole
    preset dict (its "network" entry), or None (the defaults).  Unknown dict keys are errors."""
    if preset is None:
        return dict(NETWORK_OPTIONS)
    if isinstance(preset, Mapping):
        if "game" in preset:  # a whole preset (gamegym.presets): its network entry
            preset = preset.get("network", {})
        unknown = sorted(set(preset) - set(NETWORK_OPTIONS))
        if unknown:
            raise ValueError(
                f"unknown network option(s) {unknown}; known: {sorted(NETWORK_OPTIONS)}"
            )
        return {**NETWORK_OPTIONS, **preset}
    return {name: getattr(preset, name, default) for name, default in NETWORK_OPTIONS.items()}


def network_for_game(graph, preset=None, seed: int | None = None) -> keras.Model:
    """The network for a game.  Kind "auto" (the default) picks a residual network for boards
    (rank-3 input) of at least 5x5 and a dense one otherwise."""
    options = network_options(preset)
    shape = tuple(graph.numpify(graph.roots[0]).shape)
    return build_network(
        shape,
        graph.action_space_size,
        kind=network_kind(shape, options["kind"]),
        width=options["width"],
        blocks=options["blocks"],
        l2=options["l2"],
        seed=seed,
    )


def network_kind(input_shape: tuple, kind: str = "auto") -> str:
    """The kind a network of this input shape gets: "auto" means residual for boards (rank-3
    input) of at least 5x5, dense otherwise."""
    if kind == "auto":
        return "residual" if len(input_shape) == 3 and min(input_shape[:2]) >= 5 else "dense"
    return kind
