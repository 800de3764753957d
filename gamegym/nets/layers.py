"""gamegym's own Keras layers, registered with Keras when this module is imported.

`gamegym.nets.tfsetup.load_model` imports this module, so a model file that uses them loads without
custom objects.  Import it after `gamegym.nets.tfsetup.import_keras()` (which keeps TensorFlow's start
quiet): this module imports Keras itself so that tfsetup need not be imported back.
"""

from __future__ import annotations

import keras

__all__ = ["MinMaxScale"]


@keras.saving.register_keras_serializable(package="gamegym")
class MinMaxScale(keras.layers.Layer):
    """Scales each sample's values to [0, 1]: (x - min) / (max - min) over all its features
    (MuZero's hidden states, so they share the range of the action input)."""

    EPSILON = 1e-6

    def call(self, x):
        axes = tuple(range(1, len(x.shape)))
        low = keras.ops.min(x, axis=axes, keepdims=True)
        high = keras.ops.max(x, axis=axes, keepdims=True)
        return (x - low) / (high - low + self.EPSILON)
