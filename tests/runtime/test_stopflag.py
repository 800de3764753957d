"""The gym's stop signal survives a child killed while it waits on it.

With `multiprocessing.Event` the gym's `set()` waited for a dead waiter to wake: a Trainer or
Evaluator SIGKILLed between its rounds hung the gym's shutdown, and every child that then tried
to stop on its own, after the gym was killed, hung with it (the chaos soak found five such
processes still running).
"""

import multiprocessing
import os
import signal
import threading
import time

import pytest

from gamegym.runtime.stopflag import StopFlag

pytestmark = pytest.mark.slow  # real processes


def _wait_forever(flag, answer):
    answer.send("waiting")
    flag.wait()


def _wait_and_report(flag, answer):
    answer.send("waiting")
    answer.send(flag.wait(timeout=30.0))


def test_set_returns_when_a_waiter_was_killed_and_the_other_waiters_wake():
    ctx = multiprocessing.get_context("spawn")
    flag = StopFlag(ctx)
    # "waiting" comes through pipes, not semaphores: no resource tracker in this test
    doomed_receive, doomed_send = ctx.Pipe(duplex=False)
    receive, send = ctx.Pipe(duplex=False)
    doomed = ctx.Process(target=_wait_forever, args=(flag, doomed_send), daemon=True)
    waiter = ctx.Process(target=_wait_and_report, args=(flag, send), daemon=True)
    doomed.start()
    waiter.start()
    try:
        assert doomed_receive.poll(60) and doomed_receive.recv() == "waiting"
        assert receive.poll(60) and receive.recv() == "waiting"
        time.sleep(0.3)  # both are inside wait()
        os.kill(doomed.pid, signal.SIGKILL)
        doomed.join(10)
        done = threading.Event()
        threading.Thread(target=lambda: (flag.set(), done.set()), daemon=True).start()
        assert done.wait(5), "set() hung on a waiter that was killed"
        assert receive.poll(10) and receive.recv() is True
        waiter.join(10)
        assert waiter.exitcode == 0
    finally:
        for process in (doomed, waiter):
            if process.is_alive():
                process.kill()


def test_wait_times_out_false_and_sees_a_set_flag_at_once():
    flag = StopFlag()
    assert flag.wait(0.1) is False
    assert flag.is_set() is False
    flag.set()
    assert flag.is_set() is True and flag.wait(0) is True and flag.wait() is True
    flag.clear()
    assert flag.is_set() is False and flag.wait(0) is False
