"""A test's fault, imported as a plug-in (config `plugins`) by every process of a gym: with
GAMEGYM_TEST_HANG=predictor in its environment, the Predictor blocks for good at the first
message a client sends it, in a call that releases the interpreter (time.sleep), while its
heartbeat thread beats on: hung as a process stuck in a native library or a pipe is.  The
first message, not the first batch: a Selfplayer that hears of the model before it asks for
anything fetches the evaluator and evaluates its own leaves, and no batch need ever come.
With GAMEGYM_TEST_HANG_ONCE naming a file, only the first Predictor to get there hangs (it
makes the file); the ones the gym starts after it serve as usual."""

import os
import time

if os.environ.get("GAMEGYM_TEST_HANG") == "predictor":
    from gamegym.runtime import predictor

    _receive = predictor.Predictor._receive
    _once = os.environ.get("GAMEGYM_TEST_HANG_ONCE")

    def _hung(self, ready, pending, live) -> None:
        if _once:
            try:
                os.close(os.open(_once, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:  # an earlier Predictor hung already
                return _receive(self, ready, pending, live)
        time.sleep(3600)

    predictor.Predictor._receive = _hung  # type: ignore[method-assign]
