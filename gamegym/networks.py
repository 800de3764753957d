"""Keras model builders: a policy head (logits over action ids) and a value head (tanh).

Models use only built-in Keras layers, so `keras.models.load_model(path, compile=False)` needs no
custom objects.  Outputs are named "policy" and "value", in that order.
"""
from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
from keras import layers  # noqa: E402

__all__ = ["build_network", "network_for_game"]


def build_network(input_shape: tuple, action_space_size: int, kind: str = "dense",
                  width: int = 64, blocks: int = 2, l2: float = 1e-4,
                  seed: int | None = None) -> keras.Model:
    """A two-headed policy/value network for positions of `input_shape`."""
    if seed is not None:
        keras.utils.set_random_seed(seed)
    regularizer = keras.regularizers.L2(l2) if l2 else None
    inputs = keras.Input(shape=tuple(input_shape), name="position")
    if kind == "dense":
        torso = _dense_torso(inputs, width, blocks, regularizer)
    elif kind == "residual":
        if len(input_shape) != 3:
            raise ValueError(f"a residual network needs (rows, columns, planes) input, "
                             f"got {tuple(input_shape)}")
        torso = _residual_torso(inputs, width, blocks, regularizer)
    else:
        raise ValueError(f"unknown network kind {kind!r}; use 'dense' or 'residual'")
    policy = layers.Dense(action_space_size, kernel_regularizer=regularizer,
                          name="policy")(torso)
    hidden = layers.Dense(max(8, width // 2), activation="swish", kernel_regularizer=regularizer,
                          name="value_hidden")(torso)
    value = layers.Dense(1, activation="tanh", kernel_regularizer=regularizer, name="value")(hidden)
    return keras.Model(inputs, [policy, value], name=f"{kind}_{width}x{blocks}")


def _dense_torso(inputs, width, blocks, regularizer):
    x = layers.Flatten()(inputs)
    for i in range(blocks):
        x = layers.Dense(width, activation="swish", kernel_regularizer=regularizer,
                         name=f"dense_{i}")(x)
    return x


def _residual_torso(inputs, width, blocks, regularizer):
    def conv(x, name):
        x = layers.Conv2D(width, 3, padding="same", use_bias=False,
                          kernel_regularizer=regularizer, name=name)(x)
        return layers.BatchNormalization(name=f"{name}_bn")(x)

    x = layers.Activation("relu")(conv(inputs, "stem"))
    for i in range(blocks):
        y = layers.Activation("relu")(conv(x, f"block{i}_a"))
        y = conv(y, f"block{i}_b")
        x = layers.Activation("relu")(layers.Add()([x, y]))
    x = layers.Conv2D(4, 1, kernel_regularizer=regularizer, name="head_conv")(x)
    return layers.Flatten()(x)


def network_for_game(graph, network_config=None, seed: int | None = None) -> keras.Model:
    """The network for a game: kind "auto" picks residual for boards of at least 5x5."""
    shape = tuple(graph.numpify(graph.roots[0]).shape)
    kind = getattr(network_config, "kind", "auto")
    if kind == "auto":
        kind = "residual" if len(shape) == 3 and min(shape[:2]) >= 5 else "dense"
    return build_network(shape, graph.action_space_size, kind=kind,
                         width=getattr(network_config, "width", 64),
                         blocks=getattr(network_config, "blocks", 2),
                         l2=getattr(network_config, "l2", 1e-4), seed=seed)
