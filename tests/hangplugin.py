"""A test's fault, imported as a plug-in (config `plugins`) by every process of a gym: with
GAMEGYM_TEST_HANG=predictor in its environment, the Predictor blocks for good at its first
batch, in a call that releases the interpreter (time.sleep), while its heartbeat thread beats
on: hung as a process stuck in a native library or a pipe is.  With GAMEGYM_TEST_HANG_ONCE
naming a file, only the first Predictor to get there hangs (it makes the file); the ones the
gym starts after it serve as usual."""

import os
import time

if os.environ.get("GAMEGYM_TEST_HANG") == "predictor":
    from gamegym.runtime import predictor

    _evaluate = predictor.Predictor._evaluate
    _once = os.environ.get("GAMEGYM_TEST_HANG_ONCE")

    def _hung(self, pending) -> None:
        if _once:
            try:
                os.close(os.open(_once, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:  # an earlier Predictor hung already
                return _evaluate(self, pending)
        time.sleep(3600)

    predictor.Predictor._evaluate = _hung  # type: ignore[method-assign]
