"""MuZero's networks on the CPU fast path (no TensorFlow): the evaluator the Predictor runs for
models the fast path knows, and hands to processes that run the model themselves (`portable()`).

The container's three networks (gamegym.learners.muzero.nets) become two nets, one per request
kind, each one call (`gamegym.nets.numpynet.NetBuilder` puts h before f, and g before f):
  "initial"    x [B, *input_shape]                    -> hidden, policy logits [B, A], value [B, 1]
  "recurrent"  hidden [B, ...], action one-hot [B, A] -> hidden, reward [B, 1], logits, value
run by ONNX Runtime (or NumPy for dense networks when it is missing; `choose_runner`).
`muzero_form` reads them from a Keras container; `LatentModelFastCall.from_form` runs them.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from gamegym.nets.inference import softmax
from gamegym.nets.numpynet import NetBuilder
from gamegym.nets.portable import FAST_PATH_MAX_PARAMS, FastForm, choose_runner, register_form

__all__ = ["LatentModelFastCall", "muzero_form", "PARTS", "MINMAX_EPSILON"]

PARTS = ("representation", "dynamics", "prediction")  # the container's layers: h, g, f
MINMAX_EPSILON = 1e-6  # gamegym.nets.layers.MinMaxScale.EPSILON


def muzero_form(model) -> FastForm | None:
    """A MuZero container as a fast form (gamegym.nets.portable), or None when a layer has no
    fast form or the model has more than FAST_PATH_MAX_PARAMS weights."""
    if model.count_params() > FAST_PATH_MAX_PARAMS:
        return None
    try:
        h, g, f = (model.get_layer(name) for name in PARTS)
    except ValueError:
        return None
    shape = tuple(int(d) for d in h.inputs[0].shape[1:])
    hidden_shape = tuple(int(d) for d in g.inputs[0].shape[1:])
    actions = int(g.inputs[1].shape[-1])
    initial = NetBuilder()
    hidden = initial.add_model(h, [initial.input("x", shape)], "h/")
    heads = hidden and initial.add_model(f, hidden, "f/")
    recurrent = NetBuilder()
    moved = recurrent.add_model(
        g, [recurrent.input("hidden", hidden_shape), recurrent.input("action", (actions,))], "g/"
    )
    next_heads = moved and recurrent.add_model(f, moved[:1], "f/")
    if not (
        hidden
        and heads
        and moved
        and next_heads
        and len(hidden) == 1
        and len(heads) == 2
        and len(moved) == 2
    ):
        return None
    nets = {
        "initial": initial.build(hidden + heads),
        "recurrent": recurrent.build(moved + next_heads),
    }
    return FastForm(
        LatentModelFastCall.form, nets, {"input_shape": list(shape), "actions": actions}
    )


@register_form("muzero")
class LatentModelFastCall:
    """MuZero's model call on the fast path:
      "initial"    {"x": observations}                 -> {"hidden", "probs", "values"}
      "recurrent"  {"hidden": [B, ...], "action": [B]} -> {"hidden", "reward", "probs", "values"}
    It pickles without TensorFlow."""

    form: ClassVar[str]  # the fast form it runs, set by gamegym.nets.portable.register_form
    kinds = ("initial", "recurrent")

    def __init__(self, nets: dict, iteration: int, input_shape: tuple, actions: int):
        self.nets = nets  # "initial", "recurrent" -> OnnxNet or NumpyNet
        self.iteration = iteration
        self.input_shape = tuple(input_shape)
        self.actions = actions
        self._eye = np.eye(actions, dtype=np.float32)

    @classmethod
    def from_form(
        cls, form: FastForm, iteration: int, conv: bool = True
    ) -> LatentModelFastCall | None:
        """The evaluator of a fast form, or None when a net cannot run here."""
        nets = {kind: choose_runner(form.nets[kind], conv) for kind in cls.kinds}
        if None in nets.values():
            return None
        return cls(nets, iteration, tuple(form.meta["input_shape"]), int(form.meta["actions"]))

    @property
    def path(self) -> str:
        """ "onnx" or "numpy"."""
        return "onnx" if type(self.nets["initial"]).__name__ == "OnnxNet" else "numpy"

    def portable(self):
        """Itself: it runs in any process (a Predictor that loaded it from a fast-path file
        hands it out as it is)."""
        return self

    def run(self, kind: str, inputs: dict) -> dict:
        if kind == "initial":
            x = np.asarray(inputs["x"], np.float32)
            if x.shape[1:] != self.input_shape:
                raise ValueError(
                    f"positions of shape {x.shape[1:]} do not fit the model's "
                    f"input shape {self.input_shape}"
                )
            hidden, logits, value = self.nets["initial"](x)
            return {"hidden": hidden, "probs": softmax(logits), "values": value.reshape(-1)}
        if kind == "recurrent":
            action = self._eye[np.asarray(inputs["action"], np.int64)]
            hidden, reward, logits, value = self.nets["recurrent"](inputs["hidden"], action)
            return {
                "hidden": hidden,
                "reward": reward.reshape(-1),
                "probs": softmax(logits),
                "values": value.reshape(-1),
            }
        raise ValueError(f"a MuZero model answers 'initial' and 'recurrent' requests, not {kind!r}")

    def search_request(self, x: np.ndarray) -> tuple[str, dict]:
        """The request a search makes for most of its leaves, for positions x (benchmarks)."""
        hidden = self.run("initial", {"x": x})["hidden"]
        return "recurrent", {
            "hidden": hidden,
            "action": np.arange(len(x), dtype=np.int32) % self.actions,
        }
