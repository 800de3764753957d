"""The bootstrapped learner's network: K Q-heads on a shared torso, and its target network.

One saved model file holds everything the learner needs to go on (so publishing, atomic writes
and quarantine are those of every learner), as layers of one container model:

  online      Q-network being trained: positions -> Q float32 [B, K, A] in [-1, 1], the value
              of each action id for the mover, per head (tanh of the head's output)
  target      a copy of `online` (not trainable), refreshed every `target_update_period`
              gradient steps
  target_age  gradient steps since the target was last copied: the bias of a frozen Dense
              layer whose kernel is zero, so it survives a save and a resume with the weights

The container's outputs are [Q online, Q target, age]; its first output's last dimension is the
action space, as `gym.check_model_fits` expects.

Each head is a hidden layer of its own (`width // 2` units, swish) and a linear layer to the
action space; the K heads are computed together (one Dense to K x hidden, one EinsumDense from
[K, hidden] to [K, A], block-diagonal by construction).  With `prior_scale` > 0 a fixed random
network of the same shape ("prior", never trained, no L2) is added to each head's output before
the tanh: Q_k = tanh(f_k(x) + prior_scale * p_k(x))  (randomized prior functions, Osband et al.
2018, in the squashed form that keeps Q in [-1, 1]).  Only built-in Keras layers are used, so
the file loads without custom objects.
"""

from __future__ import annotations

from gamegym.nets.tfsetup import import_keras

keras = import_keras()  # quietly: TensorFlow's start goes to the log
layers = keras.layers

from gamegym.nets.builders import build_torso, layer_weights, network_kind, network_options  # noqa: E402

__all__ = ["build_q_model", "parts", "target_age", "set_target_age"]


def build_q_model(graph, network_config=None, seed: int | None = None) -> keras.Model:  # type: ignore[name-defined]  # keras is bound at run time
    """The container model (online, target, target_age) for `graph` with the network config's
    kind, width, blocks, l2, heads and prior_scale."""
    options = network_options(network_config)
    shape = tuple(int(d) for d in graph.numpify(graph.roots[0]).shape)
    kind = network_kind(shape, options["kind"])
    build = dict(
        shape=shape,
        actions=graph.action_space_size,
        kind=kind,
        width=options["width"],
        blocks=options["blocks"],
        heads=options["heads"],
        prior_scale=float(options["prior_scale"]),
    )
    online = _q_network(**build, l2=options["l2"], seed=seed, name="online")
    target = _q_network(**build, l2=options["l2"], seed=None, name="target")
    target.set_weights(online.get_weights())
    target.trainable = False
    inputs = keras.Input(shape=shape, name="position")
    age = layers.Dense(
        1, kernel_initializer="zeros", bias_initializer="zeros", trainable=False, name="target_age"
    )(layers.Flatten(name="age_input")(inputs))
    return keras.Model(
        inputs,
        [online(inputs), target(inputs), age],
        name=f"bootstrapped_{kind}_{options['width']}x{options['blocks']}_k{options['heads']}",
    )


def parts(model) -> tuple[keras.Model, keras.Model]:  # type: ignore[name-defined]  # keras is bound at run time
    """(online, target) Q-networks of a container model; ValueError for any other model."""
    try:
        return model.get_layer("online"), model.get_layer("target")
    except ValueError:
        raise ValueError(
            f"model {model.name!r} is not a bootstrapped Q-network (no 'online' "
            "and 'target' layers); was the session made with another learner?"
        ) from None


def target_age(model) -> int:
    """Gradient steps since the target network was last copied (stored in the model)."""
    return int(round(float(model.get_layer("target_age").bias.numpy()[0])))


def set_target_age(model, steps: int) -> None:
    model.get_layer("target_age").bias.assign([float(steps)])


def _q_network(
    shape, actions, kind, width, blocks, heads, prior_scale, l2, seed, name
) -> keras.Model:  # type: ignore[name-defined]  # keras is bound at run time
    inputs = keras.Input(shape=shape, name="position")
    torso = build_torso(shape, kind, width, blocks, l2, seed, name="torso")
    weights = layer_weights(None if seed is None else seed + 1000, l2)
    out = _heads(torso(inputs), heads, actions, max(8, width // 2), weights, "head")
    if prior_scale:
        prior = _prior_network(
            shape, actions, kind, width, blocks, heads, None if seed is None else seed + 2000
        )
        scaled = layers.Rescaling(prior_scale, name="prior_scale")(prior(inputs))
        out = layers.Add(name="with_prior")([out, scaled])
    q = layers.Activation("tanh", name="q")(out)
    return keras.Model(inputs, q, name=name)


def _heads(features, heads: int, actions: int, hidden: int, weights, prefix: str):
    """K heads on `features` [B, F]: a hidden layer each, then pre-activation Q [B, K, A]."""
    h = layers.Dense(heads * hidden, activation="swish", name=f"{prefix}_hidden", **weights())(
        features
    )
    h = layers.Reshape((heads, hidden), name=f"{prefix}_split")(h)
    return layers.EinsumDense(
        "bkh,kha->bka",
        output_shape=(heads, actions),
        bias_axes="ka",
        name=f"{prefix}_out",
        **weights(),
    )(h)


def _prior_network(shape, actions, kind, width, blocks, heads, seed) -> keras.Model:  # type: ignore[name-defined]  # keras is bound at run time
    """The fixed random prior: same shape as the trained network, no L2, never trained."""
    inputs = keras.Input(shape=shape, name="position")
    torso = build_torso(shape, kind, width, blocks, 0.0, seed, name="prior_torso")
    weights = layer_weights(None if seed is None else seed + 1000, 0.0)
    prior = keras.Model(
        inputs,
        _heads(torso(inputs), heads, actions, max(8, width // 2), weights, "prior"),
        name="prior",
    )
    prior.trainable = False
    return prior
