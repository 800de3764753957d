"""The batching Predictor: the only place outside the Trainer where TensorFlow runs.

Every Selfplayer owns one end of a duplex pipe; the Predictor waits on all of them at once
(`multiprocessing.connection.wait`, no polling), gathers requests until `batchsize` positions,
until every client has a request waiting, or until `batch_timeout_ms` passes, evaluates them in one
network call and sends each client its slice.  A `Reload` on the control pipe loads a new iteration.
"""
from __future__ import annotations

import logging
import os
import time
from multiprocessing.connection import Connection, wait
from pathlib import Path

import numpy as np

from gamegym.numpynet import NumpyDenseModel
from gamegym.messages import EvalRequest, EvalResponse, Reload, Report
from gamegym.process import child_entry

log = logging.getLogger("gamegym.predictor")


def configure_tensorflow(use_gpu: bool = True, gpu_memorylimit: int = 0, threads: int = 0):
    """Import TensorFlow quietly and set device and thread options; returns the module."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    try:
        gpus = tf.config.list_physical_devices("GPU")
        if not use_gpu:
            tf.config.set_visible_devices([], "GPU")
        else:
            for gpu in gpus:
                if gpu_memorylimit:
                    tf.config.set_logical_device_configuration(
                        gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=gpu_memorylimit)])
                else:
                    tf.config.experimental.set_memory_growth(gpu, True)
        if threads:
            tf.config.threading.set_intra_op_parallelism_threads(threads)
            tf.config.threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError as error:  # already initialised in this process
        log.debug("tensorflow already configured: %s", error)
    return tf


def load_model(path: Path):
    """Load a Keras model file for inference; a clear error when the file is damaged."""
    import keras
    try:
        return keras.models.load_model(path, compile=False)
    except Exception as error:
        raise ValueError(f"cannot load model file {path}: {error}") from error


class ModelEvaluator:
    """Evaluates batches with a Keras policy/value model (softmax policy, value in [-1, 1]).

    Small dense models run through the NumPy fast path (`gamegym.numpynet`) unless `fast` is
    False; everything else through one traced TensorFlow function.
    """

    FAST_PATH_MAX_PARAMS = 2_000_000

    def __init__(self, model, iteration: int = 0, fast: bool = True):
        import tensorflow as tf
        self.iteration = iteration
        self.model = model
        shape = model.inputs[0].shape[1:]
        self.input_shape = tuple(int(d) for d in shape)
        self.numpy = None
        if fast and model.count_params() <= self.FAST_PATH_MAX_PARAMS:
            self.numpy = NumpyDenseModel.from_keras(model)
        if self.numpy is not None:
            self.model = None  # the weights live in the NumPy copy
            return

        @tf.function(input_signature=[tf.TensorSpec([None, *self.input_shape], tf.float32)],
                     reduce_retracing=True)
        def predict(x):
            outputs = model(x, training=False)
            if isinstance(outputs, dict):
                logits, value = outputs["policy"], outputs["value"]
            else:
                logits, value = outputs
            return tf.nn.softmax(logits, axis=-1), tf.reshape(value, [-1])

        self._predict = predict

    def update(self, model, iteration: int) -> bool:
        """Take the weights of a new iteration of the same network, keeping the traced function
        (a new trace per reload would grow memory).  False when the shapes differ."""
        if self.numpy is not None:
            fast = NumpyDenseModel.from_keras(model)
            if fast is None:
                return False
            self.numpy, self.iteration = fast, iteration
            return True
        new = model.get_weights()
        if [w.shape for w in new] != [w.shape for w in self.model.get_weights()]:
            return False
        self.model.set_weights(new)
        self.iteration = iteration
        return True

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if x.shape[1:] != self.input_shape:
            raise ValueError(f"positions of shape {x.shape[1:]} do not fit the model's input "
                             f"shape {self.input_shape}")
        if self.numpy is not None:
            logits, values = self.numpy(x)
            logits = np.exp(logits - logits.max(axis=1, keepdims=True))
            return logits / logits.sum(axis=1, keepdims=True), values
        probs, values = self._predict(x)
        return probs.numpy(), values.numpy()


class Predictor:
    """The batching loop over client pipes (runs inside the Predictor process)."""

    def __init__(self, session, config, clients: list[Connection], control: Connection,
                 reports=None):
        self.session = session
        self.config = config.predict
        self.clients = list(clients)
        self.controls = [control]
        self.reports = reports
        self.evaluator: ModelEvaluator | None = None
        self._batches = 0
        self._positions = 0
        self._busy = 0.0
        self._last_report = time.monotonic()

    def load(self, iteration: int) -> None:
        path = self.session.model_path(iteration)
        import keras
        keras.backend.clear_session()  # Keras' global name state would grow with every reload
        model = load_model(path)
        if self.evaluator is None or not self.evaluator.update(model, iteration):
            self.evaluator = ModelEvaluator(model, iteration, fast=self.config.numpy_fastpath)
        log.info("loaded model iteration %d from %s", iteration, path)

    def serve(self, stop_event) -> None:
        self.load(max(0, self.session.current_iteration()))
        timeout = self.config.batch_timeout_ms / 1000.0
        live = list(self.clients)
        while live:
            ready = wait(live + self.controls, timeout=1.0)
            if not ready:
                self._report(force=False)
                if stop_event.is_set():
                    return  # stopping, and a whole second without a request: Selfplayers are done
                continue
            pending: list[tuple[Connection, EvalRequest]] = []
            for control in [c for c in ready if c in self.controls]:
                ready.remove(control)
                self._handle_control(control)
            self._receive(ready, pending, live)
            waiting = {id(c) for c, _ in pending}
            count = sum(len(r.x) for _, r in pending)
            deadline = time.monotonic() + timeout
            while pending and count < self.config.batchsize and len(waiting) < len(live):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                more = [c for c in wait([c for c in live if id(c) not in waiting], timeout=left)]
                if not more:
                    break
                before = len(pending)
                self._receive(more, pending, live)
                for c, r in pending[before:]:
                    waiting.add(id(c))
                    count += len(r.x)
            if pending:
                self._evaluate(pending)
            self._report(force=False)

    def _receive(self, ready, pending, live) -> None:
        for conn in ready:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                live.remove(conn)  # that Selfplayer is gone; the gym restarts it or stops
                continue
            if isinstance(message, EvalRequest):
                pending.append((conn, message))

    def _handle_control(self, control: Connection) -> None:
        """Act on a control message (a Reload from the Trainer)."""
        try:
            message = control.recv()
        except (EOFError, OSError):
            self.controls.remove(control)  # the Trainer is gone; the gym decides what follows
            return
        if isinstance(message, Reload) and message.iteration != self.evaluator.iteration:
            self.load(message.iteration)

    def _evaluate(self, pending) -> None:
        start = time.perf_counter()
        x = np.concatenate([r.x for _, r in pending]) if len(pending) > 1 else pending[0][1].x
        probs, values = self.evaluator(x.astype(np.float32, copy=False))
        offset = 0
        for conn, request in pending:
            n = len(request.x)
            response = EvalResponse(request.request_id, self.evaluator.iteration,
                                    probs[offset:offset + n], values[offset:offset + n])
            offset += n
            try:
                conn.send(response)
            except (BrokenPipeError, OSError):
                pass
        self._batches += 1
        self._positions += len(x)
        self._busy += time.perf_counter() - start

    def _report(self, force: bool) -> None:
        now = time.monotonic()
        if self.reports is None or (not force and now - self._last_report < 2.0):
            return
        self.reports.put(Report("predictor", os.getpid(), {
            "batches": self._batches, "positions": self._positions, "busy_s": self._busy,
            "seconds": now - self._last_report,
            "iteration": self.evaluator.iteration if self.evaluator else -1}))
        self._batches = self._positions = 0
        self._busy = 0.0
        self._last_report = now


@child_entry("predictor")
def predictor_main(session_path, config, clients, control, reports, *, stop_event):
    from gamegym.session import Session
    configure_tensorflow(config.predict.use_gpu, config.predict.gpu_memorylimit, threads=1)
    predictor = Predictor(Session(session_path), config, clients, control, reports)
    predictor.serve(stop_event)
