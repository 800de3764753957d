"""Typed messages between the gym's processes (all picklable)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gamegym.nets.protocols import PortableCall


@dataclass
class EvalRequest:
    """A batch of network evaluations asked of the Predictor (see gamegym.nets.inference).

    The learner names the kinds and their arrays; AlphaZero's "evaluate" has
    inputs {"x": float32 [B, *input_shape]}, the numpify of each leaf."""

    request_id: int
    kind: str  # which model call, e.g. "evaluate" (AlphaZero), "recurrent" (MuZero)
    inputs: dict  # name -> array [B, ...]; every array has the same batch size B
    iteration: int = -1  # the model iteration that must answer; -1: the newest


@dataclass
class EvalResponse:
    """The Predictor's answer to one EvalRequest.

    "evaluate" answers {"probs": float32 [B, A] softmax policy over action ids,
    "values": float32 [B] value from each leaf's mover's view}."""

    request_id: int
    iteration: int  # model iteration that evaluated the batch
    outputs: dict = field(default_factory=dict)  # name -> array [B, ...]
    error: str = ""  # why there is no answer (an iteration no longer held)


@dataclass
class Reload:
    """A new model iteration was published: the Trainer tells the Predictor, and the Predictor
    tells its clients when they run the model themselves (`predict.evaluate_in_selfplayers`)."""

    iteration: int


@dataclass
class EvaluatorRequest:
    """A Predictor client asks for the evaluator of a model iteration in a form it can run
    itself, without TensorFlow (see gamegym.nets.inference.PipeService)."""

    iteration: int = -1  # -1: the newest


@dataclass
class EvaluatorUpdate:
    """The Predictor's answer to an EvaluatorRequest: the evaluator (an object with
    `iteration`, `kinds` and `run(kind, inputs) -> outputs`), or None when the model does not
    run outside TensorFlow or the session turned this off."""

    iteration: int
    evaluator: PortableCall | None = None


@dataclass
class Report:
    """Figures a process reports to the gym's monitor (role, pid, counters since last report)."""

    role: str
    pid: int
    figures: dict = field(default_factory=dict)


@dataclass
class NewClient:
    """The gym hands the Predictor its end of a restarted Selfplayer's pipe: each incarnation
    of a Selfplayer has a pipe of its own, so no answer meant for a dead one reaches it."""

    conn: object  # a multiprocessing Connection (duplex)
