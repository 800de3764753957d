"""Every learner's network on the CPU fast path, checked against Keras (the reference), and the
fast-path model files that let a Predictor on the CPU run without TensorFlow."""

import multiprocessing
import pickle

import numpy as np
import pytest
from conftest import SPAWN, batchnorm_as_trained, start_predictor, stop_predictor

from gamegym.config import GymConfig
from gamegym.data.session import Session
from gamegym.learners import get_learner
from gamegym.nets.numpynet import NumpyNet
from gamegym.nets.portable import FastModelError, evaluator_from_bytes, from_bytes, to_bytes
from gamegym.runtime.messages import EvalRequest, EvalResponse
from games.connectfour import ConnectFour
from games.tictactoe import TicTacToe

TOLERANCE = 1e-4  # max abs difference from Keras
KINDS = [("dense", TicTacToe), ("residual", ConnectFour)]


def trained_like(model, seed=0):
    """Batch-normalisation statistics and scales away from their initial values, and weights
    larger than at initialisation, as after training (so folding is put to the test)."""
    rng = np.random.default_rng(seed)
    for layer in model._flatten_layers() if hasattr(model, "_flatten_layers") else model.layers:
        if batchnorm_as_trained(layer, rng):
            continue
        if type(layer).__name__ in ("Dense", "EinsumDense") and layer.trainable:
            layer.set_weights(
                [
                    w * 1.5 + rng.normal(0, 0.05, w.shape).astype(np.float32)
                    for w in layer.get_weights()
                ]
            )
    return model


def random_inputs(shape, n=23, seed=1):
    return np.random.default_rng(seed).random((n, *shape), dtype=np.float32)


def max_diff(got: dict, want: dict) -> dict:
    assert set(got) == set(want)
    for key in want:
        assert got[key].shape == want[key].shape, key
    return {key: float(np.abs(got[key] - want[key]).max()) for key in want}


def muzero_model(kind, game):
    return trained_like(
        get_learner("muzero").build_model(
            game(), {"kind": kind, "width": 16, "blocks": 2, "hidden_size": 12}, seed=2
        )
    )


def q_model(kind, game, prior):
    return trained_like(
        get_learner("bootstrapped").build_model(
            game(), {"kind": kind, "width": 16, "blocks": 2, "heads": 3, "prior_scale": prior}
        )
    )


# ----- MuZero -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind, game", KINDS, ids=[k for k, _ in KINDS])
def test_muzero_fast_path_matches_keras(kind, game):
    from gamegym.learners.muzero.fastnets import LatentModelFastCall, muzero_form

    model = muzero_model(kind, game)
    learner = get_learner("muzero")
    reference = learner.make_evaluator(model, 0, fast=False)
    assert reference.path == "tensorflow" and reference.portable() is None
    evaluator = learner.make_evaluator(model, 5)
    assert evaluator.path == "onnx" and evaluator.portable().iteration == 5
    form = muzero_form(model)
    on_numpy = LatentModelFastCall(form.nets, 5, reference.input_shape, reference.actions)
    x = random_inputs(reference.input_shape)
    actions = np.random.default_rng(3).integers(reference.actions, size=len(x))
    want = reference.run("initial", {"x": x})
    hidden = want["hidden"]
    want_next = reference.run("recurrent", {"hidden": hidden, "action": actions})
    for fast in (evaluator.portable(), on_numpy):
        got = fast.run("initial", {"x": x})
        assert max(max_diff(got, want).values()) < TOLERANCE, (fast.path, kind)
        got = fast.run("recurrent", {"hidden": hidden, "action": actions})
        assert max(max_diff(got, want_next).values()) < TOLERANCE, (fast.path, kind)
    assert hidden.min() >= 0 and hidden.max() <= 1


# ----- Bootstrapped -----------------------------------------------------------------------------


@pytest.mark.parametrize("prior", [0.0, 2.0], ids=["no-prior", "prior"])
@pytest.mark.parametrize("kind, game", KINDS, ids=[k for k, _ in KINDS])
def test_q_network_fast_path_matches_keras(kind, game, prior):
    from gamegym.learners.bootstrapped.evaluators import q_form

    model = q_model(kind, game, prior)
    learner = get_learner("bootstrapped")
    online = model.get_layer("online")
    x = random_inputs(tuple(online.inputs[0].shape[1:]))
    want = online(x, training=False).numpy()
    reference = learner.make_evaluator(model, 0, fast=False)
    assert reference.path == "tensorflow" and reference.portable() is None
    assert np.abs(reference.run("q", {"x": x})["q"] - want).max() < 1e-5
    evaluator = learner.make_evaluator(model, 2)
    assert evaluator.path == "onnx" and evaluator.portable().kinds == ("q",)
    net = q_form(model).nets["q"]
    for fast in (
        evaluator.run,
        lambda kind, inputs: {"q": net(inputs["x"])[0]},
        pickle.loads(pickle.dumps(evaluator.portable())).run,
    ):
        got = fast("q", {"x": x})["q"]
        assert got.shape == want.shape and np.abs(got - want).max() < TOLERANCE


def test_q_network_takes_new_weights_on_the_fast_path():
    learner = get_learner("bootstrapped")
    first, second = q_model("dense", TicTacToe, 0.0), q_model("dense", TicTacToe, 0.0)
    evaluator = learner.make_evaluator(first, 0)
    assert evaluator.update(second, 1) and evaluator.iteration == 1
    x = random_inputs((3, 3, 2), 5)
    want = second.get_layer("online")(x, training=False).numpy()
    assert np.abs(evaluator.run("q", {"x": x})["q"] - want).max() < TOLERANCE


# ----- fast-path model files --------------------------------------------------------------------

FORMS = [
    (
        "alphazero",
        lambda: trained_like(
            get_learner("alphazero").build_model(
                ConnectFour(), {"kind": "residual", "width": 8, "blocks": 1}, seed=0
            )
        ),
    ),
    ("muzero", lambda: muzero_model("residual", ConnectFour)),
    ("bootstrapped", lambda: q_model("residual", ConnectFour, 1.0)),
]


@pytest.mark.parametrize("learner_name, build", FORMS, ids=[f[0] for f in FORMS])
def test_a_fast_form_file_answers_as_the_evaluator_it_was_made_from(learner_name, build):
    learner, model = get_learner(learner_name), build()
    data = to_bytes(learner.fast_form(model))
    from_file = evaluator_from_bytes(data, 7)
    in_process = learner.make_evaluator(model, 7).portable()
    assert type(from_file) is type(in_process) and from_file.iteration == 7
    assert from_file.portable() is from_file and from_file.path == "onnx"
    x = random_inputs((6, 7, 2), 9)
    for kind, inputs in (in_process.search_request(x), (in_process.kinds[0], {"x": x})):
        mine, theirs = from_file.run(kind, inputs), in_process.run(kind, inputs)
        assert all(np.array_equal(mine[k], theirs[k]) for k in theirs), kind


def test_a_fast_form_file_runs_on_numpy_without_onnxruntime(monkeypatch):
    from gamegym.nets import onnxnet

    model = muzero_model("dense", TicTacToe)
    learner = get_learner("muzero")
    data = to_bytes(learner.fast_form(model))
    monkeypatch.setattr(onnxnet, "available", lambda: False)
    evaluator = evaluator_from_bytes(data, 0)
    assert evaluator.path == "numpy"
    x = random_inputs((3, 3, 2), 4)
    want = learner.make_evaluator(model, 0, fast=False).run("initial", {"x": x})
    assert max(max_diff(evaluator.run("initial", {"x": x}), want).values()) < TOLERANCE
    conv = to_bytes(learner.fast_form(muzero_model("residual", ConnectFour)))
    assert evaluator_from_bytes(conv, 0) is None  # NumPy convolutions: TensorFlow's job


def test_a_damaged_or_foreign_fast_form_file_is_a_clear_error():
    model = get_learner("alphazero").build_model(
        TicTacToe(), {"kind": "dense", "width": 8, "blocks": 1}, seed=0
    )
    data = to_bytes(get_learner("alphazero").fast_form(model))
    with pytest.raises(FastModelError, match="m.fast.npz is not a readable fast-path model"):
        from_bytes(data[: len(data) // 2], "m.fast.npz")
    with pytest.raises(FastModelError, match="not a gamegym fast-path model file"):
        import io

        buffer = io.BytesIO()
        np.savez(buffer, header=np.frombuffer(b'{"format": "other"}', np.uint8))
        from_bytes(buffer.getvalue(), "m.fast.npz")
    form = from_bytes(data)
    with pytest.raises(FastModelError, match="form 'nosuch', which no loaded learner runs"):
        evaluator_from_bytes(to_bytes(form._replace(form="nosuch")), 0)
    net = form.nets["evaluate"]
    broken = NumpyNet(net.steps[:1], net.inputs, net.outputs)  # outputs of missing steps
    with pytest.raises(FastModelError, match="is damaged"):
        from_bytes(to_bytes(form._replace(nets={"evaluate": broken})))
    with pytest.raises(FastModelError, match="is damaged: KeyError"):  # a net missing
        evaluator_from_bytes(to_bytes(form._replace(form="muzero")), 0)


def test_publishing_writes_the_fast_file_and_never_leaves_a_stale_one(tmp_path):
    learner = get_learner("muzero")
    session = Session(tmp_path / "s")
    session.create(GymConfig(game="games.tictactoe:TicTacToe", train={"learner": "muzero"}))
    model = muzero_model("dense", TicTacToe)
    for iteration in range(3):
        session.publish_model(model, iteration, fast_form=to_bytes(learner.fast_form(model)))
    assert all(session.fast_model_path(i).is_file() for i in range(3))
    session.publish_model(model, 2)  # no fast form this time: none is left
    assert not session.fast_model_path(2).exists()
    session.prune_models(1)
    assert session.fast_model_path(0).is_file() and not session.fast_model_path(1).exists()
    assert sorted(p.name for p in session.models_dir.iterdir() if p.name.startswith(".")) == []


# ----- the Predictor on the CPU fast path -------------------------------------------------------


def predictor_for(tmp_path, learner_name, models, fast_files=True, **predict):
    from gamegym.nets.fastmodels import fast_model_bytes
    from gamegym.runtime.predictor import Predictor

    session = Session(tmp_path / "s")
    config = GymConfig(
        game="games.connectfour:ConnectFour",
        train={"learner": learner_name},
        predict={"use_gpu": False, **predict},
    )
    session.create(config)
    learner = get_learner(learner_name)
    for iteration, model in enumerate(models):
        session.publish_model(
            model, iteration, fast_form=fast_model_bytes(learner, model) if fast_files else None
        )
    mine, theirs = multiprocessing.Pipe()
    return Predictor(session, config, [theirs], None), mine, theirs


@pytest.mark.parametrize("learner_name, build", FORMS, ids=[f[0] for f in FORMS])
def test_the_predictor_reads_fast_files_and_answers_as_tensorflow(
    tmp_path, monkeypatch, learner_name, build
):
    from gamegym.runtime import predictor as predictor_module

    models = [build(), build()]
    predictor, mine, theirs = predictor_for(tmp_path, learner_name, models)
    monkeypatch.setattr(
        predictor_module.Predictor,
        "_load_tensorflow",
        lambda *args: pytest.fail("the Predictor loaded a model with TensorFlow"),
    )
    for iteration in (0, 1):
        predictor.load(iteration)
    learner = get_learner(learner_name)
    x = random_inputs((6, 7, 2), 8)
    for iteration, model in enumerate(models):
        held = predictor.held[iteration]
        assert held.path == "onnx" and held.iteration == iteration
        reference = learner.make_evaluator(model, iteration, fast=False)
        kind, inputs = reference.search_request(x)
        predictor._evaluate([(theirs, EvalRequest(iteration + 1, kind, inputs, iteration))])
        answer = next(m for m in iter(mine.recv, None) if isinstance(m, EvalResponse))
        assert answer.iteration == iteration and not answer.error
        diff = max_diff(answer.outputs, reference.run(kind, inputs))
        assert max(diff.values()) < TOLERANCE, diff


def test_the_predictor_converts_a_model_without_a_fast_file_and_falls_back_to_tensorflow(tmp_path):
    import keras

    model = get_learner("alphazero").build_model(
        ConnectFour(), {"kind": "dense", "width": 8, "blocks": 1}, seed=0
    )
    predictor, _, _ = predictor_for(tmp_path, "alphazero", [model], fast_files=False)
    predictor.load(0)  # converted here (TensorFlow is loaded)
    fast_file = predictor.models.fast_model_path(0)
    assert fast_file.is_file()
    assert predictor.evaluator.path == "onnx" and predictor.fast_files
    fast_file.write_bytes(fast_file.read_bytes()[:100])  # damaged (and newer than the model)
    predictor.held.clear()
    predictor.load(0)  # made again
    assert from_bytes(fast_file.read_bytes()).form == "evaluate"
    assert predictor.evaluator.path == "onnx" and predictor.fast_files
    # a model the fast path does not know: no file, and TensorFlow from then on
    inputs = keras.Input((6, 7, 2))
    x = keras.layers.Flatten()(keras.layers.Conv2D(4, 2, strides=2)(inputs))
    odd = keras.Model(inputs, [keras.layers.Dense(7)(x), keras.layers.Dense(1)(x)])
    predictor.models.publish_model(odd, 1)
    predictor.load(1)
    assert not predictor.models.fast_model_path(1).exists()
    assert predictor.evaluator.path == "tensorflow" and not predictor.fast_files


def test_a_gpu_keeps_the_predictor_on_tensorflow(monkeypatch):
    from gamegym.nets import fastmodels

    config = GymConfig(game="games.tictactoe:TicTacToe").predict
    monkeypatch.setattr(fastmodels, "gpu_may_be_present", lambda: True)
    assert not fastmodels.cpu_fast_path(config)
    assert fastmodels.cpu_fast_path(
        GymConfig(game="games.tictactoe:TicTacToe", predict={"use_gpu": False}).predict
    )
    monkeypatch.setattr(fastmodels, "gpu_may_be_present", lambda: False)
    assert fastmodels.cpu_fast_path(config)
    assert not fastmodels.cpu_fast_path(
        GymConfig(game="games.tictactoe:TicTacToe", predict={"numpy_fastpath": False}).predict
    )


# ----- the Predictor process --------------------------------------------------------------------

PREDICTOR_MAX_MIB = 250


def ask(conn, request):
    conn.send(request)
    while True:
        assert conn.poll(180), "no answer from the Predictor"
        message = conn.recv()
        if isinstance(message, EvalResponse):
            return message


@pytest.mark.slow
@pytest.mark.parametrize(
    "learner_name, build, fast_files",
    [(*f, True) for f in FORMS] + [(*FORMS[0], False)],
    ids=[f[0] for f in FORMS] + ["alphazero-converted"],
)
def test_a_predictor_on_the_cpu_fast_path_never_imports_tensorflow(
    tmp_path, learner_name, build, fast_files
):
    """A real Predictor process: its answers are the fast path's (bit for bit) and the
    TensorFlow path's (within TOLERANCE), it stays small, and its log says it never imported
    TensorFlow, also when it had to convert a model without a fast-path file (in a child)."""
    import psutil

    model = build()
    learner = get_learner(learner_name)
    _, _, _ = predictor_for(tmp_path, learner_name, [model], fast_files=fast_files)
    session = Session(tmp_path / "s")
    config = session.load_config()
    client, predictor_end = SPAWN.Pipe()
    process, _control_out, stop = start_predictor(session, config, [predictor_end])
    try:
        x = random_inputs((6, 7, 2), 11)
        reference = learner.make_evaluator(model, 0, fast=False)
        fast = learner.make_evaluator(model, 0).portable()
        for request_id, (kind, inputs) in enumerate(
            (fast.search_request(x), (fast.kinds[0], {"x": x}))
        ):
            answer = ask(client, EvalRequest(request_id, kind, inputs, 0))
            assert not answer.error
            want = fast.run(kind, inputs)
            assert all(np.array_equal(answer.outputs[k], want[k]) for k in want), kind
            diff = max_diff(answer.outputs, reference.run(kind, inputs))
            assert max(diff.values()) < TOLERANCE, diff
        rss = psutil.Process(process.pid).memory_info().rss / 2**20
        assert rss < PREDICTOR_MAX_MIB, f"the Predictor holds {rss:.0f} MiB"
    finally:
        code = stop_predictor(process, stop, [client], timeout=30.0)
    assert code == 0
    log = (session.logs_dir / "predictor.log").read_text()
    assert "predictor exiting (TensorFlow not imported)" in log, log[-3000:]
    assert f"loaded model iteration 0 from {session.model_path(0)} (onnx)" in log
    assert ("in a child process: done" in log) != fast_files


# ----- a fast-path file runs only for its own model, and only gamegym's operators --------------


def alphazero_session(tmp_path, seeds):
    """A Connect Four session with a dense AlphaZero model per seed, published with their
    fast-path files as a Trainer publishes them; (session, learner, models)."""
    from conftest import publish_as_trained

    learner = get_learner("alphazero")
    session = Session(tmp_path / "s")
    session.create(GymConfig(game="games.connectfour:ConnectFour", predict={"use_gpu": False}))
    models = []
    for iteration, seed in enumerate(seeds):
        model = trained_like(
            learner.build_model(
                ConnectFour(), {"kind": "dense", "width": 8, "blocks": 1}, seed=seed
            ),
            seed,
        )
        publish_as_trained(session, model, iteration)
        models.append(model)
    return session, learner, models


def assert_answers_as(evaluator, model, learner):
    x = random_inputs((6, 7, 2), 8)
    reference = learner.make_evaluator(model, 0, fast=False)
    kind, inputs = reference.search_request(x)
    diff = max_diff(evaluator.run(kind, inputs), reference.run(kind, inputs))
    assert max(diff.values()) < TOLERANCE, diff


def test_a_fast_file_not_made_from_its_model_is_made_again_from_the_model(tmp_path):
    from gamegym.data.session import fast_form_digest, file_sha256
    from gamegym.nets.fastmodels import load_fast_model

    session, learner, models = alphazero_session(tmp_path, [0, 1])
    for iteration in (0, 1):  # each file names its own model file's digest
        digest = fast_form_digest(session.fast_model_path(iteration).read_bytes())
        assert digest == file_sha256(session.model_path(iteration))
    # iteration 1's fast file put beside iteration 0's model (and newer than it)
    session.fast_model_path(0).write_bytes(session.fast_model_path(1).read_bytes())
    evaluator = load_fast_model(learner, session.model_path(0), 0)  # converted here (TF)
    assert_answers_as(evaluator, models[0], learner)
    assert fast_form_digest(session.fast_model_path(0).read_bytes()) == file_sha256(
        session.model_path(0)
    )
    unstamped = to_bytes(learner.fast_form(models[1]))  # a file that names no model at all
    session.fast_model_path(0).write_bytes(unstamped)
    assert_answers_as(load_fast_model(learner, session.model_path(0), 0), models[0], learner)


def graph_with_an_op_of_its_own(net) -> bytes:
    """The ONNX graph of `net` with its value output negated by a node of a standard operator
    that gamegym never writes (Neg): ONNX Runtime runs it without a complaint."""
    import onnx

    from gamegym.nets.onnxnet import _graph

    model = onnx.load_from_string(_graph(net))
    last = model.graph.node[-1]  # Identity -> output_1 (the value)
    assert last.op_type == "Identity" and last.output[0] == "output_1"
    last.op_type = "Neg"
    return model.SerializeToString()


def test_an_onnx_graph_off_the_allowlist_is_refused_and_the_model_made_again(tmp_path):
    import onnx

    from gamegym.data.session import file_sha256, stamped_fast_form
    from gamegym.nets.fastmodels import load_fast_model
    from gamegym.nets.onnxnet import OnnxGraphError, _graph, check_graph

    session, learner, models = alphazero_session(tmp_path, [0])
    form = learner.fast_form(models[0])
    hostile = form._replace(int8={"evaluate": graph_with_an_op_of_its_own(form.nets["evaluate"])})
    data = to_bytes(hostile)
    with pytest.raises(FastModelError, match="m.fast.npz is refused: .* operator 'Neg'"):
        evaluator_from_bytes(data, 0, "m.fast.npz")
    # written by someone who also recorded the model's digest: refused all the same, and the
    # file made again from the model file (float32, as a converting process makes it)
    digest = file_sha256(session.model_path(0))
    session.fast_model_path(0).write_bytes(stamped_fast_form(data, digest))
    evaluator = load_fast_model(learner, session.model_path(0), 0)
    assert evaluator.precision == "float32"
    assert_answers_as(evaluator, models[0], learner)
    assert from_bytes(session.fast_model_path(0).read_bytes()).int8 is None
    # other ways out of the arithmetic: another operator set, a tensor read from a file
    model = onnx.load_from_string(_graph(form.nets["evaluate"]))
    model.graph.node[-1].domain = "com.example"
    with pytest.raises(OnnxGraphError, match="operator 'com.example:Identity'"):
        check_graph(model.SerializeToString())
    model = onnx.load_from_string(_graph(form.nets["evaluate"]))
    tensor = model.graph.initializer[0]
    tensor.data_location = onnx.TensorProto.EXTERNAL
    tensor.external_data.add(key="location", value="../../secret")
    with pytest.raises(OnnxGraphError, match="from a file outside it"):
        check_graph(model.SerializeToString())
    with pytest.raises(OnnxGraphError, match="not a readable ONNX model"):
        check_graph(b"not onnx at all")
