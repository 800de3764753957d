"""The int8 form of a conv network on the CPU fast path: checked against float32 within the
stated tolerances, stored in the fast-path file when predict.precision is "int8", and left out
(float32 kept, one log line) when it disagrees or cannot be made."""

import logging
import pickle
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import batchnorm_as_trained

from gamegym.config import ConfigError, GymConfig, PredictConfig
from gamegym.data.session import Session
from gamegym.learners import get_learner
from gamegym.nets import quantize
from gamegym.nets.fastmodels import fast_model_bytes, int8_inputs, int8_share
from gamegym.nets.onnxnet import OnnxNet
from gamegym.nets.portable import FastModelError, evaluator_from_bytes, from_bytes, to_bytes
from games.connectfour import ConnectFour

pytest.importorskip("onnxruntime.quantization")


@pytest.fixture(scope="module")
def model():
    """A small Connect Four residual network with trained-looking batch normalisation."""
    model = get_learner("alphazero").build_model(
        ConnectFour(), {"kind": "residual", "width": 8, "blocks": 1}, seed=3
    )
    rng = np.random.default_rng(0)
    for layer in model._flatten_layers():
        batchnorm_as_trained(layer, rng)
    return model


@pytest.fixture(scope="module")
def net(model):
    return get_learner("alphazero").fast_form(model).nets["evaluate"]


def positions(count, seed):
    return quantize.random_positions(ConnectFour(), count, np.random.default_rng(seed))


def test_random_positions_come_from_play():
    graph = ConnectFour()
    x = positions(100, 0)
    assert x.shape == (100, *graph.numpify(graph.roots[0]).shape) and x.dtype == np.float32
    assert np.array_equal(x[0], graph.numpify(graph.roots[0]))  # each game starts at the root
    assert len({row.tobytes() for row in x}) > 50
    assert np.array_equal(x, positions(100, 0))  # the rng decides


def test_int8_agrees_with_float32_within_the_tolerance(net, caplog):
    with caplog.at_level(logging.INFO):
        model = quantize.checked_int8(net, positions(200, 1), positions(300, 2))
    assert model is not None
    assert "Please consider" not in caplog.text  # ONNX Runtime's advice, at every call
    assert "int8 model agrees with float32 on 300 positions" in caplog.text
    int8 = OnnxNet(net, quantized=model)
    ops = {node.op_type for node in _onnx_graph(model).node}
    assert {"QuantizeLinear", "DequantizeLinear", "Conv"} <= ops  # an int8 graph
    assert int8.precision == "int8" and OnnxNet(net).precision == "float32"
    found = quantize.agreement(OnnxNet(net), int8, positions(300, 4))
    assert found.positions == 300
    assert 0 < found.max_value_diff <= quantize.VALUE_TOLERANCE
    assert 0 < found.max_policy_tv <= quantize.POLICY_TOLERANCE


def test_agreement_of_a_net_with_itself_is_exact(net):
    found = quantize.agreement(OnnxNet(net), OnnxNet(net), positions(40, 5))
    assert found == quantize.Agreement(0.0, 0.0, 40)
    assert found.within(0.0, 0.0) and not quantize.Agreement(0.2, 0.0, 1).within(0.1, 0.1)


def test_disagreement_falls_back_to_float32_with_one_log_line(net, caplog):
    with caplog.at_level(logging.INFO, "gamegym.nets.quantize"):
        got = quantize.checked_int8(net, positions(64, 1), positions(64, 2), 0.0, 0.0)
    assert got is None
    lines = [r for r in caplog.records if r.name == "gamegym.nets.quantize"]
    assert len(lines) == 1 and "staying float32" in lines[0].getMessage()
    assert "disagrees with float32 on 64 positions" in lines[0].getMessage()


def test_a_failed_quantization_falls_back_to_float32(net, caplog):
    with caplog.at_level(logging.WARNING, "gamegym.nets.quantize"):
        got = quantize.checked_int8(net, positions(0, 1), positions(16, 2))
    assert got is None
    assert "needs at least one calibration position" in caplog.text
    assert "staying float32" in caplog.text


def test_the_fast_path_file_carries_the_int8_form(model):
    learner, graph = get_learner("alphazero"), ConnectFour()
    data = fast_model_bytes(learner, model, "int8", int8_inputs(graph, np.random.default_rng(0)))
    form = from_bytes(data)
    assert list(form.int8) == ["evaluate"]
    evaluator = evaluator_from_bytes(data, 4)
    assert evaluator.precision == "int8" and evaluator.path == "onnx"
    plain = evaluator_from_bytes(fast_model_bytes(learner, model), 4)
    assert (
        plain.precision == "float32" and from_bytes(fast_model_bytes(learner, model)).int8 is None
    )
    x = positions(50, 7)
    sent = pickle.loads(pickle.dumps(evaluator))  # as handed to a Selfplayer
    assert sent.precision == "int8" and np.array_equal(sent(x)[1], evaluator(x)[1])
    (p8, v8), (p32, v32) = evaluator(x), plain(x)
    assert np.abs(v8 - v32).max() <= quantize.VALUE_TOLERANCE
    assert 0.5 * np.abs(p8 - p32).sum(axis=1).max() <= quantize.POLICY_TOLERANCE
    recent = positions(30, 8)  # the Trainer's samples calibrate; random play checks
    calibration, check = int8_inputs(graph, np.random.default_rng(0), recent)()
    assert np.array_equal(calibration, recent) and len(check) == 256


def test_int8_calibration_is_drawn_from_the_whole_sample_window():
    graph = ConnectFour()
    window = np.zeros((2000, *graph.numpify(graph.roots[0]).shape), np.float32)
    window[:, 0, 0, 0] = np.arange(2000)  # each sample's row number, to see which were drawn
    calibration, check = int8_inputs(graph, np.random.default_rng(5), window)()
    rows = calibration[:, 0, 0, 0].astype(int)
    assert len(rows) == 256 and len(set(rows)) == 256  # no sample twice
    assert np.array_equal(calibration, window[rows])  # whole samples, unchanged
    assert rows.min() < 200 and rows.max() > 1800  # from the window's both ends, not one stretch
    assert len(check) == 256 and set(np.unique(check)) <= {0.0, 1.0}  # random-play boards
    few, _ = int8_inputs(graph, np.random.default_rng(5), window[:100])()
    assert np.array_equal(few, window[:100])  # a window smaller than the draw: all of it
    again, _ = int8_inputs(graph, np.random.default_rng(5), window)()
    assert np.array_equal(again, calibration)  # seeded: the same session draws the same


def test_a_disagreeing_int8_form_is_left_out_of_the_file(model, monkeypatch, caplog):
    monkeypatch.setattr(quantize, "VALUE_TOLERANCE", 0.0)
    inputs = int8_inputs(ConnectFour(), np.random.default_rng(0))
    with caplog.at_level(logging.WARNING, "gamegym.nets.quantize"):
        data = fast_model_bytes(get_learner("alphazero"), model, "int8", inputs)
    assert from_bytes(data).int8 is None
    assert evaluator_from_bytes(data, 1).precision == "float32"
    assert "staying float32" in caplog.text


def test_the_session_sets_the_tolerances_and_the_bench_counts_int8_models(model, tmp_path):
    """predict.int8_value_tolerance / int8_policy_tolerance decide (their defaults are the
    module's); `int8_share` counts the published models that run int8."""
    assert PredictConfig().int8_tolerances() == (
        quantize.VALUE_TOLERANCE,
        quantize.POLICY_TOLERANCE,
    )
    learner, graph = get_learner("alphazero"), ConnectFour()

    def made(tolerances):
        inputs = int8_inputs(graph, np.random.default_rng(0))
        return fast_model_bytes(learner, model, "int8", inputs, tolerances)

    strict, loose = made((0.0, 0.0)), made((2.0, 1.0))
    assert from_bytes(strict).int8 is None and list(from_bytes(loose).int8) == ["evaluate"]
    session = Session(tmp_path / "s")
    session.create(GymConfig(game="games.connectfour:ConnectFour"))
    for iteration, data in enumerate([loose, strict, loose, None]):
        session.publish_model(model, iteration, fast_form=data)
    session.fast_model_path(2).write_bytes(b"damaged")
    assert int8_share(session) == (1, 2)  # of 0 and 1 (2 unreadable, 3 without a fast file)


def test_int8_positions_that_cannot_be_made_leave_the_float32_file(model, caplog):
    def broken():
        raise RuntimeError("no positions")

    with caplog.at_level(logging.WARNING, "gamegym.nets.fastmodels"):
        data = fast_model_bytes(get_learner("alphazero"), model, "int8", broken)
    assert evaluator_from_bytes(data, 1).precision == "float32"
    assert "int8 model not made, staying float32: RuntimeError: no positions" in caplog.text


def test_an_int8_entry_for_an_unknown_net_is_refused(model, net):
    form = get_learner("alphazero").fast_form(model)
    data = to_bytes(form._replace(int8={"nonesuch": OnnxNet(net).model_bytes}))
    with pytest.raises(FastModelError, match="int8 model names an unknown net"):
        from_bytes(data, "models/3.fast.npz")


def test_precision_is_validated():
    assert GymConfig(game="games.tictactoe:TicTacToe").predict.precision == "float32"
    config = GymConfig.from_dict(
        {"game": "games.tictactoe:TicTacToe", "predict": {"precision": "int8"}}
    )
    assert config.predict.precision == "int8"
    with pytest.raises(ConfigError) as error:
        GymConfig.from_dict({"game": "games.tictactoe:TicTacToe", "predict": {"precision": "fp16"}})
    assert "config field 'predict.precision' must be one of ['float32', 'int8'], got 'fp16'" in str(
        error.value
    )
    for field, bad in (("int8_value_tolerance", 2.5), ("int8_policy_tolerance", -0.1)):
        with pytest.raises(ConfigError, match=f"predict.{field}"):
            GymConfig.from_dict({"game": "games.tictactoe:TicTacToe", "predict": {field: bad}})


def test_compare_precisions_reports_both_rates_and_their_ratio(net):
    int8 = OnnxNet(net, quantized=quantize.checked_int8(net, positions(64, 1), positions(64, 2)))
    figures = quantize.compare_precisions(OnnxNet(net), int8, positions(20, 3), [4, 16], 0.2, 2)
    assert sorted(figures) == [4, 16]
    for row in figures.values():
        assert row["float32"] > 0 and row["int8"] > 0
        assert row["ratio"] == pytest.approx(row["int8"] / row["float32"])


def _onnx_graph(model_bytes):
    import onnx

    return onnx.load_from_string(model_bytes).graph


def test_a_session_with_int8_precision_publishes_its_first_model_in_int8(model, tmp_path):
    from gamegym.data.session import Session
    from gamegym.runtime.gym import publish_initial_model

    config = GymConfig.from_dict(
        {
            "game": "games.connectfour:ConnectFour",
            "network": {"kind": "residual", "width": 8, "blocks": 1},
            "predict": {"precision": "int8"},
        }
    )
    session = Session(tmp_path / "s")
    session.create(config)
    publish_initial_model(session, config, model)  # in this process: a Keras model is given
    data = session.fast_model_path(0).read_bytes()
    assert evaluator_from_bytes(data, 0).precision == "int8"


class RecentSamples:
    """A replay holding fixed samples (only their positions matter here)."""

    def __init__(self, x):
        self.x = x

    def load(self, iteration):
        return _Batch(self.x), {}

    def sampler(self, batch, rng):
        return None

    def commit(self, iteration):
        pass

    def figures(self):
        return {}


class _Batch:
    def __init__(self, x):
        self.x = x

    def __len__(self):
        return len(self.x)


class PublishingOnly:
    """AlphaZero's fast form, and a training step that changes nothing."""

    name = "alphazero"

    def train_iteration(self, model, batch, cfg, rng, graph=None, sampler=None):
        return SimpleNamespace(history={"loss": [0.5]})

    def fast_form(self, model):
        return get_learner("alphazero").fast_form(model)


def test_the_trainer_publishes_int8_calibrated_on_its_samples(model, tmp_path, caplog):
    from gamegym.data.session import Session
    from gamegym.runtime.trainer import Trainer

    config = GymConfig.from_dict(
        {"game": "games.connectfour:ConnectFour", "predict": {"precision": "int8"}}
    )
    session = Session(tmp_path / "s")
    session.create(config)
    samples = RecentSamples(positions(100, 9))
    trainer = Trainer(
        session,
        config,
        ConnectFour(),
        PublishingOnly(),
        model,
        np.random.default_rng(0),
        replay=samples,
    )
    with caplog.at_level(logging.INFO, "gamegym.nets.quantize"):
        iteration = trainer.train_once()
    data = session.fast_model_path(iteration).read_bytes()
    assert evaluator_from_bytes(data, iteration).precision == "int8"
    assert "int8 model agrees with float32 on 256 positions" in caplog.text
