"""A learner's training step, run the way `train.compile` names: traced, or compiled by XLA.

  traced  `tf.function`: TensorFlow runs the step's graph op by op (its kernels, oneDNN on the
          CPU)
  xla     the same function with `jit_compile=True`: XLA fuses the step's ops into a few
          kernels (on the CPU and on a GPU alike)
  auto    the learner's own choice (`Learner.train_compile`): the path `gamegym bench training`
          found faster for it

XLA compiles a function once per input shape, so only minibatches of the configured size take
the XLA step; any other size (the short last minibatch of an epoch, a replay's draw that holds
fewer transitions) runs the traced step on the same variables and optimizer.  Where XLA cannot
compile the step (a TensorFlow built without it, a device it does not support) the first call
says so in one log line and every later call runs traced.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from gamegym.config import COMPILES

__all__ = ["TrainStep", "compile_path"]

log = logging.getLogger("gamegym.nets.trainstep")


def compile_path(setting: str, learner_default: str) -> str:
    """ "xla" or "traced": the path a `train.compile` setting picks for a learner whose own
    choice ("auto") is `learner_default`."""
    if setting not in COMPILES:
        raise ValueError(f"train.compile must be one of {list(COMPILES)}, got {setting!r}")
    return learner_default if setting == "auto" else setting


class TrainStep:
    """`step(*args)` through a traced `tf.function` of `fn`, and with `path` "xla" through an
    XLA-compiled one when the first argument holds `batch_size` rows.  `options` go to both
    `tf.function`s (input_signature, autograph, reduce_retracing)."""

    def __init__(self, fn: Callable[..., Any], path: str, batch_size: int, **options: Any):
        from gamegym.nets.tfsetup import import_tensorflow

        tf = import_tensorflow()
        self._fn, self._options, self._errors = fn, options, tf.errors.OpError
        self.name = getattr(fn, "__name__", "train_step").replace("_", " ")
        self.traced = tf.function(fn, **options)
        self.xla: Any = None  # the XLA-compiled function, made when first asked for
        self.xla_failed = False  # XLA could not compile the step here: it runs traced
        self._xla_ran = False
        self.path, self.batch_size = "traced", 0
        self.configure(path, batch_size)

    def configure(self, path: str, batch_size: int) -> None:
        """Run full minibatches as `path` says ("xla" or "traced"; "traced" for good once XLA
        failed here), full meaning `batch_size` rows.  The variables and the optimizer are
        the same on both paths, so a change keeps the training state."""
        if path not in ("xla", "traced"):
            raise ValueError(f"a training step runs 'xla' or 'traced', not {path!r}")
        if path == "xla" and self.xla is None and not self.xla_failed:
            import tensorflow as tf

            self.xla = tf.function(self._fn, jit_compile=True, **self._options)
        self.path = "traced" if self.xla_failed else path
        self.batch_size = int(batch_size)

    def __call__(self, *args: Any) -> Any:
        if self.path == "xla" and len(args[0]) == self.batch_size:
            if self._xla_ran:
                return self.xla(*args)
            try:
                out = self.xla(*args)
            except self._errors as error:  # XLA cannot compile it here: nothing ran
                lines = str(error).strip().splitlines()
                log.warning(
                    "XLA cannot compile the %s (%s: %s); it runs traced",
                    self.name,
                    type(error).__name__,
                    (lines[0] if lines else "")[:200],
                )
                self.xla_failed, self.path = True, "traced"
            else:
                self._xla_ran = True
                return out
        return self.traced(*args)
