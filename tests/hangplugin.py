"""A test's fault, imported as a plug-in (config `plugins`) by every process of a gym: with
GAMEGYM_TEST_HANG=predictor in its environment, the Predictor blocks for good at its first
batch, in a call that releases the interpreter (time.sleep), while its heartbeat thread beats
on: hung as a process stuck in a native library or a pipe is."""

import os
import time

if os.environ.get("GAMEGYM_TEST_HANG") == "predictor":
    from gamegym.runtime import predictor

    def _hung(self, pending) -> None:
        time.sleep(3600)

    predictor.Predictor._evaluate = _hung  # type: ignore[method-assign]
