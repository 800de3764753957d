"""What a model call and a model service look like, as typing Protocols.

A *model call* (`ModelCall`) answers the request kinds of one learner's self-play with one model
iteration: the Predictor holds one per iteration, `LocalService` calls one in this process.  A
*portable* one (`PortableCall`) runs without TensorFlow, so a Selfplayer may run it itself.  A
*model service* (`ModelService`) is what a search sends its requests to (see
gamegym.nets.inference).  Arrays go by name: the learner names its kinds, inputs and outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from numpy.typing import NDArray

__all__ = ["Arrays", "Answer", "ModelCall", "PortableCall", "ModelService"]

Arrays = dict[str, NDArray[Any]]  # named arrays, the batch axis first
Answer = Callable[[], tuple[Arrays, int]]  # () -> (outputs by name, model iteration)


class PortableCall(Protocol):
    """A model call without TensorFlow that pickles (AlphaZero's `PolicyValueFastCall`)."""

    iteration: int
    kinds: tuple[str, ...]  # the request kinds it answers

    def run(self, kind: str, inputs: Arrays) -> Arrays:
        """The outputs of one batch of requests of `kind`."""
        ...


class ModelCall(Protocol):
    """The Predictor's model call for one iteration (`Learner.make_evaluator`)."""

    iteration: int

    @property
    def path(self) -> str:
        """Where the model runs: "onnx", "numpy" or "tensorflow" (logs, benchmarks)."""
        ...

    def search_request(self, x: NDArray[Any]) -> tuple[str, Arrays]:
        """The request a search makes for positions `x` (benchmarks time it)."""
        ...

    def run(self, kind: str, inputs: Arrays) -> Arrays:
        """The outputs of one batch of requests of `kind`."""
        ...

    def update(self, model: Any, iteration: int) -> bool:
        """Take a new iteration's weights of the same network (a Keras model); False when it
        cannot (another shape)."""
        ...


class ModelService(Protocol):
    """Where a search sends its requests: `submit` now, call the answer to wait for it."""

    def submit(self, kind: str, inputs: Arrays, iteration: int = -1) -> Answer:
        """Send one request; `iteration` >= 0 asks for that model iteration."""
        ...
