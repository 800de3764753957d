"""GameGym: starts, watches and stops the Trainer, the Predictor and the Selfplayers of a session.

gym = GameGym("sessions/ttt", config=GymConfig(game="games.tictactoe:TicTacToe"))
gym.resume(max_seconds=600)      # 'exit' on the console, Ctrl+C or SIGTERM stop it cleanly

The gym takes a config; the config names the game by reference (`GymConfig.game_ref`,
gamegym.game.ref), and every process, the gym's and each child's, builds the graph from that
reference once.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import sys
import threading
from pathlib import Path

from gamegym.config import GymConfig
from gamegym.data.fileio import disk_full_message, is_disk_full
from gamegym.data.session import Session, SessionError
from gamegym.data.trust import record_trust, require_consent, session_code
from gamegym.game.graph import GameGraph, game_module_origin
from gamegym.nets.tfsetup import tensorflow_imported
from gamegym.runtime.monitor import Monitor
from gamegym.runtime.process import in_spawned_child

__all__ = ["GameGym", "GymError"]

log = logging.getLogger("gamegym.runtime.gym")


class GymError(RuntimeError):
    """The gym cannot start or had to stop because a process failed; the message says why."""


class GameGym:
    """A self-play session in a folder: create it once, resume it any number of times."""

    def __init__(
        self,
        session_path,
        config: GymConfig | None = None,
        initial_model=None,
        stored: GymConfig | None = None,
        trust: bool = False,
        ask=None,
    ):
        """`config` makes a new session (its `game` and `game_args` name the game; a graph
        built in your own code is named by its reference, `GameRef.of(graph).settings()`),
        or changes a resumed one's config; `stored`: the session's config.json when the
        caller has read it already.  Reopening a session imports the modules its config.json
        names only when they are bundled or the user allowed them for the folder
        (gamegym.data.trust): `trust` allows them now, `ask(question)` asks (None:
        UntrustedCodeError naming them)."""
        if in_spawned_child():
            # a child started with spawn imports the parent's main script again: without the
            # guard every child would build a gym of its own (and start children of its own)
            raise GymError(
                "a GameGym is being made while a child process starts up: the gym "
                "starts its processes with spawn, which runs your main script again "
                "in each of them; put the code that starts the gym under "
                '`if __name__ == "__main__":`'
            )
        self.session = Session(session_path)
        self._config_to_save = None  # a changed config, written once the lock is held
        self._code_told = False  # the modules it imports said on the console
        if self.session.exists():
            self.config = self._config_for_resume(config, stored, trust, ask)
            if initial_model is not None:
                raise GymError(
                    f"session {self.session.path} already has models; "
                    "initial_model is only for a new session"
                )
        else:
            self.config = self._create(config, initial_model)
        self.run_number = 0  # the session's run number, counted when the lock is taken
        self.stop_requested = threading.Event()
        self.stop_reason = ""
        self.force = False
        self.continued = 0  # SIGCONTs received while running: the gym was stopped (Ctrl+Z)
        self.monitor = Monitor()

    # ----- creating and reopening -----------------------------------------------------------
    def _config_for_resume(self, config, stored=None, trust=False, ask=None) -> GymConfig:
        stored = stored if stored is not None else self.session.load_config()
        if config is not None:
            if not config.game:
                config = config.updated({"game": stored.game, "game_args": stored.game_args})
            config.check_resume(stored)
        chosen = stored if config is None else config
        code = session_code(chosen.game, chosen.plugins)  # refuses a game that is no module
        # what the caller named itself needs no agreement: its own settings' plugins
        given = tuple(chosen.plugins) if chosen.runs_plugins else ()
        require_consent(self.session, code, trust=trust, ask=ask, given=given)
        if not chosen.runs_plugins and chosen.plugins:
            self._tell_code(chosen)  # imported here: said before (else when it runs)
        chosen = chosen.with_plugins()
        if config is not None:
            self._config_to_save = chosen if chosen != stored else None
        return chosen

    def _tell_code(self, config: GymConfig) -> None:
        """One line on the console: the modules the session imports, and from where."""
        code = session_code(config.game, config.plugins)
        print(f"[gamegym] imports {code.describe()}", flush=True)
        self._code_told = True

    def _create(self, config, initial_model) -> GymConfig:
        if config is None or not config.game:
            raise GymError(
                f"no session at {self.session.path}: give a config that names the game "
                "('game', 'game_args') to create one"
            )
        config = config.with_plugins()  # the caller's own settings (or a copy it chose)
        config.game_ref.build()  # this process's graph: a bad game is refused before the folder
        folder_was_there = self.session.path.exists()
        try:
            self.session.create(config)
            publish_initial_model(self.session, config, initial_model)
        except BaseException as error:
            self.session.discard_new(folder_was_there)  # no half-made session
            if is_disk_full(error):
                advice = disk_full_message(self.session.path.parent, error, "try again")
                raise SessionError(
                    f"cannot create session {self.session.path}: {advice}"
                ) from error
            raise
        # made here: the modules it names are the maker's own choice (gamegym.data.trust)
        record_trust(self.session.path, session_code(config.game, config.plugins).foreign())
        log.info("created session %s for %s", self.session.path, config.game)
        return config

    # ----- running --------------------------------------------------------------------------
    def resume(
        self,
        max_seconds: float | None = None,
        max_iterations: int | None = None,
        console: bool = True,
    ) -> int:
        """Run until 'exit', a signal, or a limit; returns the exit code (0 = clean stop)."""
        if not self._code_told:
            self._tell_code(self.config)  # refuses a game spec that is not a module
        self.take_session()
        try:
            self.session.make_folders()
            removed = self.session.tidy()
            _setup_main_logging(self.session, self.config.log_level)
            if removed:
                log.info("removed %d temporary files left by an earlier run", removed)
            start_iteration = self.session.recover_models()
            log.info(
                "resuming %s at iteration %d (run %d, seed %d); game code from %s",
                self.session.path,
                start_iteration,
                self.run_number,
                self.config.seed,
                game_module_origin(self.config.game),
            )
            with _signals(self), _console(self, console):
                if self.config.debug_single_process:
                    from gamegym.runtime.debugrun import run_single_process

                    return run_single_process(self, max_seconds, max_iterations)
                from gamegym.runtime.supervisor import Supervisor

                return Supervisor(self, max_seconds, max_iterations).run()
        finally:
            log.info(
                "gym exiting (%s)",
                "TensorFlow imported" if tensorflow_imported() else "TensorFlow not imported",
            )
            self.session.release_lock()

    def take_session(self) -> None:
        """Take the session's lock (SessionLockedError when a gym runs on it), write a config
        changed for the resume, and count this run (runs.json): the processes' seeds derive
        from the run number.  The processes of a run whose gym died hold the lock until they
        have exited too: they are waited for a few seconds, then named in the refusal."""
        self.session.acquire_lock(waiting=lambda message: print(f"[gamegym] {message}", flush=True))
        try:
            if self._config_to_save is not None:  # only the lock's holder writes config.json
                self._config_to_save.check_resume(self.session.load_config())
                self.session.save_config(self._config_to_save)
                self._config_to_save = None
            self.run_number = self.session.begin_run(self.config.seed)
        except BaseException:
            self.session.release_lock()
            raise

    def request_stop(self, reason: str) -> None:
        if not self.stop_requested.is_set():
            self.stop_reason = reason
            log.info("stop requested: %s", reason)
            print(f"[gamegym] stopping: {reason}", flush=True)
        self.stop_requested.set()

    def print_status(self) -> None:
        print(f"[gamegym] {self.monitor.status_line()}", flush=True)


def publish_initial_model(session: Session, config: GymConfig, initial_model=None) -> None:
    """Publish models/0.keras of a new session (see `make_initial_model`).

    Making it needs TensorFlow; a process that has not imported TensorFlow yet (the gym's own,
    the `gamegym new` command) makes it in a short-lived child process instead, so it stays
    small (the gym's process only supervises).  An error in the child is raised here."""
    if tensorflow_imported() or not isinstance(initial_model, (str, os.PathLike, type(None))):
        _publish_first(session, config, make_initial_model(config, initial_model))
        return
    ctx = multiprocessing.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    path = None if initial_model is None else str(initial_model)
    child = ctx.Process(
        target=_initial_model_main,
        args=(str(session.path), config, path, send),
        name="initial-model",
        daemon=True,
    )
    child.start()
    send.close()
    try:
        error = receive.recv()
    except EOFError:  # it died before it could answer (e.g. while spawn imported the script)
        child.join()
        raise GymError(
            f"the process making the first model of {session.path} died (exit code "
            f"{child.exitcode}); its error is on the console above"
        ) from None
    finally:
        receive.close()
    child.join()
    if error is not None:
        raise error


def _initial_model_main(session_path: str, config: GymConfig, initial_model, answer) -> None:
    """The child of `publish_initial_model`: answers None, or the exception that stopped it."""
    try:
        _publish_first(Session(session_path), config, make_initial_model(config, initial_model))
    except BaseException as error:
        try:
            answer.send(error)
        except Exception:  # an exception that does not pickle: its text
            answer.send(GymError(f"{type(error).__name__}: {error}"))
        return
    answer.send(None)


def _publish_first(session: Session, config: GymConfig, model) -> None:
    """models/0.keras, with its fast-path file (gamegym.nets.fastmodels)."""
    import numpy as np

    from gamegym.learners import get_learner
    from gamegym.nets.fastmodels import fast_model_bytes, int8_inputs

    fast_form = fast_model_bytes(
        get_learner(config.train.learner),
        model,
        config.predict.precision,
        int8_inputs(config.game_ref.build(), np.random.default_rng(config.seed)),
        config.predict.int8_tolerances(),
    )
    session.publish_model(model, 0, fast_form=fast_form)


def make_initial_model(config: GymConfig, initial_model=None):
    """The iteration-0 model of a session of `config`: given (a path or a Keras model) or
    freshly built by the learner."""
    from gamegym.learners import get_learner
    from gamegym.nets.tfsetup import configure_tensorflow, load_model

    configure_tensorflow(use_gpu=False)
    graph = config.game_ref.build()
    learner = get_learner(config.train.learner)
    if initial_model is None:
        model = learner.build_model(graph, config.network_options())
    elif isinstance(initial_model, (str, os.PathLike)):
        model = load_model(Path(initial_model))
    else:
        model = initial_model
    check_model_fits(model, graph)
    try:
        learner.check_fits(model, graph)
    except ValueError as error:
        raise GymError(f"the {learner.name} learner cannot use this model: {error}") from None
    return model


def check_model_fits(model, graph: GameGraph) -> None:
    """A clear error when a model's input or policy size does not match the game."""
    expected = tuple(graph.numpify(graph.roots[0]).shape)
    got = tuple(int(d) for d in model.inputs[0].shape[1:])
    if got != expected:
        raise GymError(
            f"model input shape {got} does not match numpify shape {expected} "
            f"of {type(graph).__name__}"
        )
    outputs = model.outputs
    policy = int(outputs[0].shape[-1])
    if policy != graph.action_space_size:
        raise GymError(
            f"model policy size {policy} does not match action_space_size "
            f"{graph.action_space_size} of {type(graph).__name__}"
        )


def _setup_main_logging(session: Session, level: str) -> None:
    from gamegym.runtime.process import setup_logging

    setup_logging(session.logs_dir, "gym", level)


class _signals:
    """SIGINT / SIGTERM ask for a clean stop; a second SIGINT forces it; SIGCONT (the gym
    continued after Ctrl+Z) is counted, so no child is taken for hung for the time it was
    stopped."""

    def __init__(self, gym: GameGym):
        self.gym = gym
        self.saved: dict = {}

    def __enter__(self):
        if threading.current_thread() is not threading.main_thread():
            return self

        def on_signal(signum, frame):
            if signum == signal.SIGINT and self.gym.stop_requested.is_set():
                self.gym.force = True
                print("[gamegym] second Ctrl+C: forcing the stop", flush=True)
            self.gym.request_stop(f"signal {signal.Signals(signum).name}")

        def on_continue(signum, frame):
            self.gym.continued += 1  # the supervisor watches its children afresh

        for sig in (signal.SIGINT, signal.SIGTERM):
            self.saved[sig] = signal.signal(sig, on_signal)
        if hasattr(signal, "SIGCONT"):  # POSIX: continued after Ctrl+Z (SIGTSTP) or SIGSTOP
            self.saved[signal.SIGCONT] = signal.signal(signal.SIGCONT, on_continue)
        return self

    def __exit__(self, *exc):
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        return False


class _console:
    """A daemon thread reading commands from stdin: 'exit', 'status', 'help'."""

    def __init__(self, gym: GameGym, enabled: bool):
        self.gym = gym
        self.enabled = enabled and sys.stdin is not None

    def __enter__(self):
        if self.enabled:
            threading.Thread(target=self._read, name="console", daemon=True).start()
            print("[gamegym] running; type 'status' or 'exit'", flush=True)
        return self

    def _read(self) -> None:
        try:
            for line in sys.stdin:
                command = line.strip().lower()
                if command in ("exit", "quit", "stop"):
                    self.gym.request_stop("'exit' typed on the console")
                    return
                if command == "status":
                    self.gym.print_status()
                elif command:
                    print("[gamegym] commands: status, exit", flush=True)
        except (OSError, ValueError):
            return

    def __exit__(self, *exc):
        return False
