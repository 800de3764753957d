"""The batching Predictor and the CPU fast path (NumPy, ONNX Runtime) return what a direct model
call returns; Selfplayers that run the model themselves get it from the Predictor."""

import multiprocessing
import threading
import time
from multiprocessing.connection import wait

import numpy as np
import pytest
from conftest import (
    SPAWN,
    batchnorm_as_trained,
    publish_as_trained,
    start_predictor,
    stop_predictor,
)

from gamegym.config import GymConfig
from gamegym.data.session import Session
from gamegym.nets.builders import build_network
from gamegym.nets.inference import PolicyValueCall
from gamegym.nets.numpynet import NumpyNet
from gamegym.runtime.messages import EvalRequest, EvalResponse, Reload
from games.connectfour import ConnectFour
from games.santorini import Santorini


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


def answering_session(tmp_path, **predict):
    """(graph, input shape, session, config) of a Santorini 3x3-1 session whose Predictor
    answers every request itself (no evaluator handed to the clients)."""
    graph = Santorini(3, 1)
    session = Session(tmp_path / "s")
    config = GymConfig(
        game="games.santorini:Santorini",
        game_args={"dimension": 3, "units_per_player": 1},
        predict={"evaluate_in_selfplayers": False, **predict},
    )
    session.create(config)
    return graph, graph.numpify(graph.roots[0]).shape, session, config


def trained_like(model, seed=0):
    """The model with batch-normalisation statistics and scales away from their initial 1 and
    0, as after training (so folding them into the convolutions is put to the test)."""
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        batchnorm_as_trained(layer, rng)
    return model


def preset_architectures():
    """(name, graph, network options) of every bundled preset, and Santorini 5x5-2 with the
    network a session without a preset gets."""
    from gamegym.game.graph import load_game
    from gamegym.presets import PRESETS

    found = [
        (name, load_game(p["game"], p["game_args"]), p["network"])
        for name, p in sorted(PRESETS.items())
    ]
    return found + [("santorini-5-2 (default network)", Santorini(5, 2), None)]


@pytest.mark.parametrize(
    "name, graph, network", preset_architectures(), ids=[a[0] for a in preset_architectures()]
)
def test_fast_paths_match_keras_on_every_preset_architecture(name, graph, network):
    from gamegym.nets.builders import network_for_game
    from gamegym.nets.onnxnet import OnnxNet

    model = trained_like(network_for_game(graph, network, seed=3))
    x = positions(graph, 37)
    reference = [t.numpy() for t in model(x, training=False)]
    steps = NumpyNet.from_keras(model)
    assert steps is not None
    for net in (steps, OnnxNet(steps)):
        outputs = net(x)
        for got, want in zip(outputs, reference):
            assert got.shape == want.shape
            assert np.abs(got - want).max() < 1e-4, (type(net).__name__, name)
    evaluator = PolicyValueCall(model)
    assert evaluator.path == "onnx" and evaluator.portable() is evaluator.fast
    probs, values = evaluator(x)
    ref_probs, ref_values = direct(model, x)
    assert np.abs(probs - ref_probs).max() < 1e-4 and np.abs(values - ref_values).max() < 1e-4


def test_fast_path_survives_pickling_and_answers_alike():
    import pickle

    graph = ConnectFour()
    model = trained_like(
        build_network(graph.numpify(graph.roots[0]).shape, 7, "residual", 8, 1, seed=0)
    )
    evaluator = PolicyValueCall(model, iteration=4)
    x = positions(graph, 9)
    copy = pickle.loads(pickle.dumps(evaluator.portable()))
    assert copy.iteration == 4 and copy.kinds == ("evaluate",)
    mine, theirs = copy.run("evaluate", {"x": x}), evaluator.run("evaluate", {"x": x})
    assert np.array_equal(mine["probs"], theirs["probs"])
    assert np.array_equal(mine["values"], theirs["values"])


def test_numpy_fast_path_matches_keras():
    graph = Santorini(3, 1)
    model = build_network(
        graph.numpify(graph.roots[0]).shape,
        graph.action_space_size,
        "dense",
        width=48,
        blocks=3,
        seed=1,
    )
    x = positions(graph, 40)
    fast = NumpyNet.from_keras(model)
    assert fast is not None and not fast.has_conv
    logits, value = fast(x)
    ref_logits, ref_value = model(x, training=False)
    assert np.allclose(logits, ref_logits.numpy(), atol=1e-5)
    assert np.allclose(value, ref_value.numpy(), atol=1e-5)
    for fast_path in (True, False):
        probs, values = PolicyValueCall(model, fast=fast_path)(x)
        ref_probs, ref_values = direct(model, x)
        assert np.allclose(probs, ref_probs, atol=1e-5) and np.allclose(
            values, ref_values, atol=1e-5
        )


@pytest.mark.parametrize("name", ["swish", "sigmoid"])
def test_numpy_activations_are_exact_and_quiet_at_large_inputs(name):
    # a large pre-activation (a weight blown up by training) once made the fast path's swish
    # print "overflow encountered in exp" from the Predictor
    import tensorflow as tf

    from gamegym.nets.numpynet import ACTIVATIONS

    x = np.array([-1e4, -500.0, -90.0, -20.0, -1.0, 0.0, 0.5, 30.0, 1e4], np.float32)
    with np.errstate(over="raise", divide="raise", invalid="raise"):  # numpy's warnings
        got = ACTIVATIONS[name](x)
    assert got.dtype == np.float32
    want = tf.keras.activations.get(name)(tf.constant(x)).numpy()
    assert np.allclose(got, want, rtol=1e-6, atol=1e-6)


def test_unknown_layers_and_fast_off_stay_on_tensorflow():
    import keras

    graph = ConnectFour()
    shape = graph.numpify(graph.roots[0]).shape
    inputs = keras.Input(shape)
    x = keras.layers.Flatten()(keras.layers.Conv2D(4, 3, strides=2)(inputs))
    odd = keras.Model(inputs, [keras.layers.Dense(7)(x), keras.layers.Dense(1)(x)])
    assert NumpyNet.from_keras(odd) is None  # a strided convolution
    model = build_network(shape, 7, "residual", 8, 1, seed=0)
    for evaluator in (PolicyValueCall(odd), PolicyValueCall(model, fast=False)):
        assert evaluator.path == "tensorflow" and evaluator.portable() is None
        x = positions(graph, 10)
        probs, values = evaluator(x)
        ref_probs, ref_values = direct(evaluator.model, x)
        assert np.allclose(probs, ref_probs, atol=1e-5)
        assert np.allclose(values, ref_values, atol=1e-5)
    with pytest.raises(ValueError, match="do not fit the model's input shape"):
        PolicyValueCall(model)(np.zeros((1, 3, 3, 2), np.float32))


@pytest.mark.slow
def test_predictor_process_batches_clients_and_reloads(tmp_path):
    graph, shape, session, config = answering_session(tmp_path)
    models = [build_network(shape, 73, "dense", 32, 2, seed=s) for s in (1, 2)]
    publish_as_trained(session, models[0], 0)  # the Predictor needs no TensorFlow
    pipes = [SPAWN.Pipe() for _ in range(3)]
    process, control_out, stop = start_predictor(session, config, [p[0] for p in pipes])
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
        publish_as_trained(session, models[1], 1)
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
        code = stop_predictor(process, stop, [p[1] for p in pipes])
    assert code == 0


@pytest.mark.slow
def test_a_stopped_predictor_serves_until_its_clients_leave(tmp_path):
    """After the stop a Selfplayer still finishes its move, and that move may ask the Predictor
    for the first time after seconds of quiet (one that evaluates its own leaves asks only for a
    new iteration's evaluator; one still starting asks for the first time): the Predictor
    answers it, and exits once every client's pipe is closed."""
    graph, shape, session, config = answering_session(tmp_path)
    model = build_network(shape, 73, "dense", 16, 1, seed=3)
    publish_as_trained(session, model, 0)
    pipes = [SPAWN.Pipe() for _ in range(2)]
    process, _control_out, stop = start_predictor(session, config, [p[0] for p in pipes])
    x = positions(graph, 4, seed=1)
    try:
        pipes[0][1].send(EvalRequest(1, "evaluate", {"x": x}))
        assert pipes[0][1].poll(120) and pipes[0][1].recv().request_id == 1
        stop.set()
        time.sleep(2.5)  # seconds of quiet after the stop, as in a Selfplayer's long move
        assert process.is_alive(), "the Predictor left while its clients were connected"
        pipes[1][1].send(EvalRequest(2, "evaluate", {"x": x}))  # its first request
        assert pipes[1][1].poll(60), "no answer after the stop"
        answer = pipes[1][1].recv()
        assert answer.request_id == 2 and not answer.error
        assert np.allclose(answer.outputs["probs"], direct(model, x)[0], atol=1e-5)
        pipes[0][1].close()
        process.join(2.0)
        assert process.is_alive(), "the Predictor left while one client was connected"
        pipes[1][1].close()
        process.join(30)
        assert not process.is_alive(), "the Predictor did not exit once its clients had left"
    finally:
        code = stop_predictor(process, stop, [p[1] for p in pipes])
    assert code == 0


RELOADS, WARM_UP = 16, 6


@pytest.mark.slow
@pytest.mark.parametrize("fast", [True, False])
def test_reloads_keep_memory_flat_and_answers_right(tmp_path, fast):
    import psutil

    from gamegym.runtime.predictor import Predictor

    graph = Santorini(3, 1) if fast else ConnectFour()
    shape = graph.numpify(graph.roots[0]).shape
    kind = "dense" if fast else "residual"
    session = Session(tmp_path / "s")
    config = GymConfig(game="games.santorini:Santorini", predict={"numpy_fastpath": fast})
    session.create(config)
    models = [build_network(shape, graph.action_space_size, kind, 16, 1, seed=s) for s in (1, 2)]
    for iteration in range(3):  # one more iteration than the Predictor holds: every load loads
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
    assert (predictor.evaluator.path != "tensorflow") == fast
    growth = (rss[-1] - rss[WARM_UP - 1]) / 2**20
    assert growth < 8, f"memory grew {growth:.1f} MiB over {RELOADS - WARM_UP} reloads"


def test_requests_tagged_with_an_iteration_are_answered_by_it_or_refused(tmp_path):
    from gamegym.runtime.predictor import HOLD, Predictor

    graph = Santorini(3, 1)
    shape = graph.numpify(graph.roots[0]).shape
    session = Session(tmp_path / "s")
    config = GymConfig(
        game="games.santorini:Santorini", predict={"evaluate_in_selfplayers": False}
    )  # every answer from here
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
    pending = [
        (theirs, EvalRequest(1, "evaluate", {"x": x}, iteration=1)),
        (theirs, EvalRequest(2, "evaluate", {"x": x[:1]}, iteration=0)),
        (theirs, EvalRequest(3, "evaluate", {"x": x[:2]})),
    ]
    predictor._evaluate(pending)
    answers = {a.request_id: a for a in (mine.recv() for _ in range(3))}
    assert answers[1].iteration == 1 and not answers[1].error
    assert np.allclose(answers[1].outputs["probs"], direct(models[1], x)[0], atol=1e-5)
    assert answers[2].outputs == {} and "iteration 0 is no longer held" in answers[2].error
    assert answers[3].iteration == HOLD  # untagged: the newest
    assert np.allclose(answers[3].outputs["values"], direct(models[HOLD], x[:2])[1], atol=1e-5)


def test_selfplayers_get_the_fast_path_evaluator_and_answer_themselves(tmp_path):
    from gamegym.nets.inference import PolicyValueFastCall
    from gamegym.runtime.messages import EvaluatorRequest, EvaluatorUpdate
    from gamegym.runtime.pipes import PipeService
    from gamegym.runtime.predictor import Predictor

    graph = Santorini(3, 1)
    shape = graph.numpify(graph.roots[0]).shape
    session = Session(tmp_path / "s")
    config = GymConfig(game="games.santorini:Santorini")
    session.create(config)
    models = [build_network(shape, 73, "dense", 16, 1, seed=s) for s in range(2)]
    for iteration, model in enumerate(models):
        session.publish_model(model, iteration)
    client_end, predictor_end = multiprocessing.Pipe()
    predictor = Predictor(session, config, [predictor_end], None)
    predictor.load(0)
    assert client_end.recv() == Reload(0)  # announced to every client on load
    x = positions(graph, 6)
    # a request the client could have answered itself is answered, and the iteration announced
    pending = [(predictor_end, EvalRequest(1, "evaluate", {"x": x}))]
    predictor._evaluate(pending)
    assert client_end.recv() == Reload(0)
    assert isinstance(client_end.recv(), EvalResponse)
    # the client asks for the evaluator and gets one that runs without TensorFlow
    client_end.send(EvaluatorRequest(-1))
    predictor._receive(wait([predictor_end], 5), [], predictor.live)
    update = client_end.recv()
    assert isinstance(update, EvaluatorUpdate) and update.iteration == 0
    assert isinstance(update.evaluator, PolicyValueFastCall)

    # the client side: a Reload read on the pipe makes it fetch, then it answers itself
    # (generous waits: a loaded machine, e.g. the whole suite on 2 cores, can stall either side
    # for seconds; they only bound a failure)
    service = PipeService(client_end, timeout=60.0)
    predictor.load(1)  # sends Reload(1), from the client's outbox thread
    # the client reads the Reload before it would send a request: only then does it fetch the
    # evaluator (the Predictor side below answers one message and evaluates nothing)
    assert client_end.poll(60)
    thread = threading.Thread(
        target=lambda: predictor._receive(wait([predictor_end], 60), [], predictor.live)
    )
    thread.start()
    outputs, iteration = service.submit("evaluate", {"x": x})()
    thread.join()
    assert iteration == 1 and service.requests == 0 and service.local_batches == 1
    probs, values = direct(models[1], x)
    assert np.allclose(outputs["probs"], probs, atol=1e-5)
    assert np.allclose(outputs["values"], values, atol=1e-5)
    assert not predictor_end.poll()  # nothing more was sent to the Predictor
    # a kind the evaluator does not answer still goes to the Predictor
    service.submit("recurrent", {"x": x})
    assert predictor_end.recv().kind == "recurrent"


def test_no_evaluator_is_handed_out_when_the_session_turns_it_off(tmp_path):
    from gamegym.runtime.messages import EvaluatorRequest, EvaluatorUpdate
    from gamegym.runtime.predictor import Predictor

    session = Session(tmp_path / "s")
    config = GymConfig(game="games.santorini:Santorini", predict={"evaluate_in_selfplayers": False})
    session.create(config)
    session.publish_model(build_network((3, 3, 9), 73, "dense", 16, 1, seed=0), 0)
    client_end, predictor_end = multiprocessing.Pipe()
    predictor = Predictor(session, config, [predictor_end], None)
    predictor.load(0)
    client_end.send(EvaluatorRequest(-1))
    predictor._receive([predictor_end], [], predictor.live)
    assert client_end.recv() == EvaluatorUpdate(0, None)
    assert not client_end.poll()  # and no Reload was announced


class Constant:
    """A picklable stand-in for a handed-out evaluator: answers "evaluate" with its iteration."""

    kinds = ("evaluate",)

    def __init__(self, iteration):
        self.iteration = iteration

    def run(self, kind, inputs):
        return {"values": np.full(len(inputs["x"]), self.iteration, np.float32)}


def test_a_selfplayer_fetches_each_announced_iteration_once_and_keeps_the_newest_two():
    from gamegym.runtime.messages import EvaluatorRequest, EvaluatorUpdate
    from gamegym.runtime.pipes import PipeService

    client_end, predictor_end = multiprocessing.Pipe()
    service = PipeService(client_end, timeout=5.0)
    asked = []

    def predictor(count):  # answers `count` EvaluatorRequests, announcing again meanwhile
        for _ in range(count):
            request = predictor_end.recv()
            asked.append(request)
            predictor_end.send(Reload(request.iteration))
            predictor_end.send(EvaluatorUpdate(request.iteration, Constant(request.iteration)))

    x = {"x": np.zeros((3, 1), np.float32)}
    for iteration in (3, 4, 5):
        predictor_end.send(Reload(iteration))
        thread = threading.Thread(target=predictor, args=(1,))
        thread.start()
        service._next_check = 0.0  # read the pipe at this submit
        outputs, answered = service.submit("evaluate", x)()
        thread.join()
        assert answered == iteration and outputs["values"].tolist() == [iteration] * 3
        service._next_check = 0.0
        assert service.submit("evaluate", x)()[1] == iteration  # no second fetch
    assert asked == [EvaluatorRequest(3), EvaluatorRequest(4), EvaluatorRequest(5)]
    assert sorted(service.local) == [4, 5] and service.requests == 0
    predictor_end.send(Reload(3))  # older than both held: not fetched again
    service._next_check = 0.0
    assert service.submit("evaluate", x, iteration=5)()[1] == 5
    assert service._wanted is None and not predictor_end.poll()
    # an iteration no longer held goes to the Predictor, whose answers may come out of order
    first = service.submit("evaluate", x, iteration=3)
    second = service.submit("evaluate", x, iteration=2)
    requests = [predictor_end.recv(), predictor_end.recv()]
    for request in reversed(requests):
        predictor_end.send(
            EvalResponse(request.request_id, request.iteration, {"v": request.iteration})
        )
    assert first() == ({"v": 3}, 3) and second() == ({"v": 2}, 2)


def test_without_onnxruntime_dense_models_take_numpy_and_conv_models_tensorflow(monkeypatch):
    from gamegym.nets import onnxnet

    monkeypatch.setattr(onnxnet, "available", lambda: False)
    graph = ConnectFour()
    shape = graph.numpify(graph.roots[0]).shape
    dense = PolicyValueCall(build_network(shape, 7, "dense", 16, 1, seed=0))
    conv = PolicyValueCall(build_network(shape, 7, "residual", 8, 1, seed=0))
    assert dense.path == "numpy" and dense.portable() is not None
    assert conv.path == "tensorflow" and conv.portable() is None


@pytest.mark.slow
def test_large_requests_and_answers_on_one_pipe_do_not_deadlock(tmp_path):
    """A client sends a second large request while the Predictor sends the large answer to the
    first: with both larger than the pipe's socket buffers, neither may wait on the other."""
    import socket

    graph, shape, session, config = answering_session(tmp_path, batchsize=8)
    publish_as_trained(session, build_network(shape, 73, "dense", 8, 1, seed=1), 0)
    mine, theirs = SPAWN.Pipe()
    process, _control_out, stop = start_predictor(session, config, [theirs])
    theirs.close()
    pair = socket.socket(fileno=mine.fileno())
    buffered = pair.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) + pair.getsockopt(
        socket.SOL_SOCKET, socket.SO_RCVBUF
    )
    pair.detach()
    answer_bytes_per_row = 73 * 4 + 4
    rows = 4 * 2 * buffered // answer_bytes_per_row + 1  # answers of 4x both buffers
    x = positions(graph, rows, seed=3)
    assert x.nbytes > 4 * 2 * buffered
    got = []

    def client():
        for request_id in (1, 2, 3):
            mine.send(EvalRequest(request_id, "evaluate", {"x": x}))
        for _ in range(3):
            got.append(mine.recv())

    thread = threading.Thread(target=client, daemon=True)
    try:
        thread.start()
        thread.join(60)
        assert not thread.is_alive(), "the client and the Predictor wait on each other"
        assert [a.request_id for a in got] == [1, 2, 3]
        assert all(a.outputs["probs"].shape == (rows, 73) for a in got)
    finally:
        stop_predictor(process, stop, [mine])


def test_a_model_pruned_before_it_is_loaded_is_skipped_for_the_newest(tmp_path):
    """The Trainer published iterations 1 and 2 and `keep_models` deleted 1 before the
    Predictor got to its Reload: the Predictor loads 2 instead of failing."""
    from gamegym.runtime.predictor import Predictor

    graph, shape, session, config = answering_session(tmp_path)
    for iteration in range(3):
        session.publish_model(build_network(shape, 73, "dense", 16, 1, seed=iteration), iteration)
    session.model_path(1).unlink()
    session.fast_model_path(1).unlink(missing_ok=True)
    predictor = Predictor(session, config, [], None)
    predictor.load(0)
    fast = predictor.fast_files
    predictor.load(1)
    assert sorted(predictor.held) == [0, 2]
    assert predictor.fast_files == fast  # the path it takes is unchanged


def test_the_predictor_closes_the_pipes_of_clients_that_are_gone(tmp_path):
    """Each restarted Selfplayer comes with a pipe of its own; once it is gone, the
    Predictor's end is closed: its file descriptors do not grow with the restarts."""
    import os

    from gamegym.runtime.messages import NewClient
    from gamegym.runtime.predictor import Predictor
    from gamegym.runtime.stopflag import StopFlag

    graph, shape, session, config = answering_session(tmp_path)
    session.publish_model(build_network(shape, 73, "dense", 16, 1, seed=0), 0)
    joins_in, joins = multiprocessing.Pipe(duplex=False)
    predictor = Predictor(session, config, [], None, joins=joins_in)
    stop = StopFlag()
    serving = threading.Thread(target=predictor.serve, args=(stop,), daemon=True)
    serving.start()
    x = positions(graph, 2)

    def restart_one(request_id):
        predictor_end, selfplayer_end = multiprocessing.Pipe(duplex=True)
        joins.send(NewClient(predictor_end))
        predictor_end.close()  # the gym keeps no end
        selfplayer_end.send(EvalRequest(request_id, "evaluate", {"x": x}))
        assert selfplayer_end.poll(30) and selfplayer_end.recv().request_id == request_id
        selfplayer_end.close()  # the Selfplayer dies

    def open_fds():
        deadline = time.monotonic() + 10
        while predictor.live and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)  # the outbox threads close the ends they sent on
        return len(os.listdir("/proc/self/fd"))

    restart_one(0)
    before = open_fds()
    for request_id in range(1, 21):
        restart_one(request_id)
    after = open_fds()
    stop.set()
    serving.join(timeout=10)
    joins.close()
    assert not serving.is_alive()
    assert after - before < 5, f"{after - before} file descriptors more after 20 restarts"


def test_an_answer_to_a_client_that_is_gone_leaves_the_loop_serving(tmp_path):
    """A Selfplayer dies with an answer on its way: the send of that answer fails, and the
    pipe stays open until the Predictor's loop reads its end and drops the client (closed
    earlier, under the loop's wait, it would stop the Predictor: "handle is closed")."""
    from gamegym.runtime.predictor import Predictor
    from gamegym.runtime.stopflag import StopFlag

    _, shape, session, config = answering_session(tmp_path)
    session.publish_model(build_network(shape, 73, "dense", 16, 1, seed=0), 0)
    predictor_end, selfplayer_end = multiprocessing.Pipe(duplex=True)
    predictor = Predictor(session, config, [predictor_end], None)
    selfplayer_end.close()  # the Selfplayer dies
    predictor._send(predictor_end, Reload(0))  # the answer it will never read
    outbox = predictor._outboxes[id(predictor_end)]
    deadline = time.monotonic() + 10
    while not outbox.queue.empty() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # the send has failed by now
    assert not predictor_end.closed  # it is in the loop's list of clients still
    stop = StopFlag()
    stop.set()
    predictor.serve(stop)  # reads the end, drops the client, and returns: no client is left
    assert predictor.live == []
    deadline = time.monotonic() + 10
    while not predictor_end.closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert predictor_end.closed  # and its pipe is closed: no file descriptor is left behind
