"""gamegym.nets.trainstep: full minibatches take the XLA step and other sizes the traced one;
where XLA cannot compile the step, one log line and the traced step from then on."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import logging  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from gamegym.nets.tfsetup import configure_tensorflow  # noqa: E402

tf = configure_tensorflow(use_gpu=False, threads=2)

from gamegym.nets.trainstep import TrainStep, compile_path  # noqa: E402


def counting_step():
    """A step that adds its batch's sum to a variable, and the variable."""
    total = tf.Variable(0.0)

    def add(x):
        total.assign_add(tf.reduce_sum(x))
        return total.read_value()

    return add, total


def test_only_full_minibatches_take_the_xla_step():
    add, total = counting_step()
    step = TrainStep(add, "xla", 4, reduce_retracing=True, autograph=False)
    step(np.ones(4, np.float32))
    step(np.ones(3, np.float32))  # a short last minibatch: traced
    assert float(total.numpy()) == 7.0
    assert step.xla.experimental_get_tracing_count() == 1
    assert step.traced.experimental_get_tracing_count() == 1
    step.configure("traced", 4)
    step(np.ones(4, np.float32))
    assert step.xla.experimental_get_tracing_count() == 1  # not asked again
    assert float(total.numpy()) == 11.0


def test_where_xla_cannot_compile_the_step_it_runs_traced_with_one_log_line(caplog):
    seen = tf.Variable(0.0)

    def through_python(x):  # a Python call inside: XLA cannot compile it
        y = tf.numpy_function(lambda a: a * 2, [x], tf.float32)
        seen.assign_add(tf.reduce_sum(y))
        return seen.read_value()

    step = TrainStep(through_python, "xla", 2, autograph=False)
    with caplog.at_level(logging.WARNING, logger="gamegym.nets.trainstep"):
        step(np.ones(2, np.float32))
        step(np.ones(2, np.float32))
    assert float(seen.numpy()) == 8.0  # both steps ran, once each
    assert step.path == "traced" and step.xla_failed
    lines = [r.getMessage() for r in caplog.records if r.name == "gamegym.nets.trainstep"]
    assert len(lines) == 1 and lines[0].startswith("XLA cannot compile the through python")
    step.configure("xla", 2)  # asked again: it stays traced
    assert step.path == "traced"


def test_a_path_is_named_by_the_setting_or_the_learners_choice():
    assert compile_path("auto", "xla") == "xla"
    assert compile_path("traced", "xla") == "traced"
    with pytest.raises(ValueError, match="train.compile must be one of"):
        compile_path("jit", "traced")
    with pytest.raises(ValueError, match="'xla' or 'traced'"):
        TrainStep(lambda x: x, "auto", 2)
