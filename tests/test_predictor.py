"""The batching Predictor and its NumPy fast path return what a direct model call returns."""
import multiprocessing
import threading

import numpy as np
import pytest

from games.connectfour import ConnectFour
from games.santorini import Santorini
from gamegym.config import GymConfig
from gamegym.messages import EvalRequest, EvalResponse, Reload
from gamegym.networks import build_network
from gamegym.numpynet import NumpyDenseModel
from gamegym.inference import ModelEvaluator
from gamegym.predictor import predictor_main
from gamegym.session import Session


def direct(model, x):
    logits, value = model(x, training=False)
    logits = logits.numpy()
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    return probs / probs.sum(axis=1, keepdims=True), value.numpy().reshape(-1)


def positions(graph, n, seed=0):
    rng = np.random.default_rng(seed)
    out, vertex = [], graph.roots[0]
    while len(out) < n:
        children = graph.children_at(vertex)
        if not children:
            vertex = graph.roots[0]
            continue
        out.append(graph.numpify(vertex))
        vertex = children[rng.integers(len(children))]
    return np.stack(out)


def test_numpy_fast_path_matches_keras():
    graph = Santorini(3, 1)
    model = build_network(graph.numpify(graph.roots[0]).shape, graph.action_space_size,
                          "dense", width=48, blocks=3, seed=1)
    x = positions(graph, 40)
    fast = NumpyDenseModel.from_keras(model)
    assert fast is not None
    logits, value = fast(x)
    ref_logits, ref_value = model(x, training=False)
    assert np.allclose(logits, ref_logits.numpy(), atol=1e-5)
    assert np.allclose(value, ref_value.numpy().reshape(-1), atol=1e-5)
    for fast_path in (True, False):
        probs, values = ModelEvaluator(model, fast=fast_path)(x)
        ref_probs, ref_values = direct(model, x)
        assert np.allclose(probs, ref_probs, atol=1e-5) and np.allclose(values, ref_values,
                                                                        atol=1e-5)


@pytest.mark.parametrize("name", ["swish", "sigmoid"])
def test_numpy_activations_are_exact_and_quiet_at_large_inputs(name):
    # a large pre-activation (a weight blown up by training) once made the fast path's swish
    # print "overflow encountered in exp" from the Predictor
    import tensorflow as tf
    from gamegym.numpynet import ACTIVATIONS
    x = np.array([-1e4, -500.0, -90.0, -20.0, -1.0, 0.0, 0.5, 30.0, 1e4], np.float32)
    with np.errstate(over="raise", divide="raise", invalid="raise"):   # numpy's warnings
        got = ACTIVATIONS[name](x)
    assert got.dtype == np.float32
    want = tf.keras.activations.get(name)(tf.constant(x)).numpy()
    assert np.allclose(got, want, rtol=1e-6, atol=1e-6)


def test_conv_models_stay_on_tensorflow():
    graph = ConnectFour()
    model = build_network(graph.numpify(graph.roots[0]).shape, 7, "residual", 8, 1, seed=0)
    assert NumpyDenseModel.from_keras(model) is None
    evaluator = ModelEvaluator(model)
    assert evaluator.numpy is None
    x = positions(graph, 10)
    probs, values = evaluator(x)
    ref_probs, ref_values = direct(model, x)
    assert np.allclose(probs, ref_probs, atol=1e-5) and np.allclose(values, ref_values, atol=1e-5)
    with pytest.raises(ValueError, match="do not fit the model's input shape"):
        evaluator(np.zeros((1, 3, 3, 2), np.float32))


@pytest.mark.slow
def test_predictor_process_batches_clients_and_reloads(tmp_path):
    graph = Santorini(3, 1)
    shape = graph.numpify(graph.roots[0]).shape
    session = Session(tmp_path / "s")
    config = GymConfig(game="games.santorini:Santorini", game_args={"dimension": 3,
                                                                    "units_per_player": 1})
    session.create(config)
    models = [build_network(shape, 73, "dense", 32, 2, seed=s) for s in (1, 2)]
    session.publish_model(models[0], 0)
    ctx = multiprocessing.get_context("spawn")
    pipes = [ctx.Pipe() for _ in range(3)]
    control_in, control_out = ctx.Pipe(duplex=False)
    stop, reports = ctx.Event(), ctx.Queue()
    process = ctx.Process(target=predictor_main, args=(
        session.logs_dir, "INFO", "predictor", str(session.path), config,
        [p[0] for p in pipes], control_in, reports), kwargs={"stop_event": stop})
    process.start()
    try:
        xs = [positions(graph, n, seed=n) for n in (5, 9, 3)]
        answers = [None] * 3

        def ask(i):
            pipes[i][1].send(EvalRequest(i + 10, "evaluate", {"x": xs[i]}))
            assert pipes[i][1].poll(120)
            answers[i] = pipes[i][1].recv()

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i, answer in enumerate(answers):
            assert isinstance(answer, EvalResponse) and answer.request_id == i + 10
            assert answer.iteration == 0
            probs, values = direct(models[0], xs[i])
            assert np.allclose(answer.outputs["probs"], probs, atol=1e-5)
            assert np.allclose(answer.outputs["values"], values, atol=1e-5)
        session.publish_model(models[1], 1)
        control_out.send(Reload(1))
        for _ in range(50):  # the reload is applied before the next batch it sees
            pipes[0][1].send(EvalRequest(99, "evaluate", {"x": xs[0]}))
            assert pipes[0][1].poll(60)
            answer = pipes[0][1].recv()
            if answer.iteration == 1:
                break
        assert answer.iteration == 1
        probs, values = direct(models[1], xs[0])
        assert np.allclose(answer.outputs["probs"], probs, atol=1e-5)
    finally:
        stop.set()
        process.join(10)
        if process.is_alive():
            process.kill()
    assert process.exitcode == 0


RELOADS, WARM_UP = 24, 8


@pytest.mark.slow
@pytest.mark.parametrize("fast", [True, False])
def test_reloads_keep_memory_flat_and_answers_right(tmp_path, fast):
    import psutil
    from gamegym.predictor import Predictor
    graph = Santorini(3, 1) if fast else ConnectFour()
    shape = graph.numpify(graph.roots[0]).shape
    kind = "dense" if fast else "residual"
    session = Session(tmp_path / "s")
    config = GymConfig(game="games.santorini:Santorini", predict={"numpy_fastpath": fast})
    session.create(config)
    models = [build_network(shape, graph.action_space_size, kind, 16, 1, seed=s) for s in (1, 2)]
    for iteration in range(3):   # one more iteration than the Predictor holds: every load loads
        session.publish_model(models[iteration % 2], iteration)
    predictor = Predictor(session, config, [], None)
    x = positions(graph, 16)
    process = psutil.Process()
    rss = []
    for cycle in range(RELOADS):
        predictor.load(cycle % 3)
        for _ in range(10):
            probs, values = predictor.evaluator(x)
        rss.append(process.memory_info().rss)
        if cycle in (0, 1, 2, RELOADS - 1):
            expected = direct(models[cycle % 3 % 2], x)
            assert np.allclose(probs, expected[0], atol=1e-5)
            assert predictor.evaluator.iteration == cycle % 3
    assert (predictor.evaluator.numpy is not None) == fast
    growth = (rss[-1] - rss[WARM_UP - 1]) / 2**20
    assert growth < 8, f"memory grew {growth:.1f} MiB over {RELOADS - WARM_UP} reloads"


def test_requests_tagged_with_an_iteration_are_answered_by_it_or_refused(tmp_path):
    from gamegym.predictor import HOLD, Predictor
    graph = Santorini(3, 1)
    shape = graph.numpify(graph.roots[0]).shape
    session = Session(tmp_path / "s")
    config = GymConfig(game="games.santorini:Santorini")
    session.create(config)
    models = [build_network(shape, 73, "dense", 16, 1, seed=s) for s in range(HOLD + 1)]
    for iteration, model in enumerate(models):
        session.publish_model(model, iteration)
    mine, theirs = multiprocessing.Pipe()
    predictor = Predictor(session, config, [theirs], None)
    for iteration in range(HOLD + 1):
        predictor.load(iteration)
    assert sorted(predictor.held) == list(range(1, HOLD + 1))
    x = positions(graph, 4)
    pending = [(theirs, EvalRequest(1, "evaluate", {"x": x}, iteration=1)),
               (theirs, EvalRequest(2, "evaluate", {"x": x[:1]}, iteration=0)),
               (theirs, EvalRequest(3, "evaluate", {"x": x[:2]}))]
    predictor._evaluate(pending)
    answers = {a.request_id: a for a in (mine.recv() for _ in range(3))}
    assert answers[1].iteration == 1 and not answers[1].error
    assert np.allclose(answers[1].outputs["probs"], direct(models[1], x)[0], atol=1e-5)
    assert answers[2].outputs == {} and "iteration 0 is no longer held" in answers[2].error
    assert answers[3].iteration == HOLD     # untagged: the newest
    assert np.allclose(answers[3].outputs["values"], direct(models[HOLD], x[:2])[1], atol=1e-5)
