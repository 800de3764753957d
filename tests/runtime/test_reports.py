"""The children's report pipes: one per process incarnation, so a child killed mid-message
tears only its own pipe and leaves no lock held that the others wait on."""

import multiprocessing
import os
import struct
import threading

import pytest

from gamegym.runtime.messages import Report, ReportInbox


def take_within(inbox, timeout, limit=10.0):
    """inbox.take(timeout) in a thread: fails instead of hanging the suite."""
    out: dict = {}
    thread = threading.Thread(target=lambda: out.update(taken=inbox.take(timeout)), daemon=True)
    thread.start()
    thread.join(limit)
    assert not thread.is_alive(), "take() hung"
    return out["taken"]


def test_a_torn_message_drops_only_its_pipe_and_the_others_go_on():
    inbox = ReportInbox(multiprocessing.get_context("spawn"))
    torn, whole = inbox.sender(), inbox.sender()
    torn.put(Report("selfplayer0", 1, {"games": 2}))
    # the process dies mid-message: a length header for 1,000 bytes, then 10 of them, then EOF
    os.write(torn._conn.fileno(), struct.pack("!i", 1000) + b"x" * 10)
    torn.close()
    whole.put(Report("selfplayer1", 2, {"games": 3}))
    taken = take_within(inbox, 1.0)
    assert sorted((r.role, r.figures["games"]) for r in taken) == [
        ("selfplayer0", 2),
        ("selfplayer1", 3),
    ]
    assert len(inbox._ends) == 1  # the torn pipe is closed and forgotten
    whole.put(Report("selfplayer1", 2, {"games": 1}))
    assert [r.figures for r in take_within(inbox, 1.0)] == [{"games": 1}]
    whole.close()
    assert take_within(inbox, 1.0) == [] and inbox._ends == []
    assert take_within(inbox, 0.01) == []  # no pipe left: it waits, then answers none


def test_a_sender_whose_gym_is_gone_does_not_raise():
    inbox = ReportInbox(multiprocessing.get_context("spawn"))
    sender = inbox.sender()
    inbox.close()
    sender.put(Report("trainer", 1, {}))  # EPIPE: nobody reads any more, nothing to do


def _report_then_die(sender, count):
    for n in range(count):
        sender.put(Report("selfplayer0", os.getpid(), {"games": n}))
    os._exit(9)  # no clean-up, as a SIGKILL


@pytest.mark.slow  # a real process
def test_a_child_that_dies_after_reporting_is_read_to_its_end_and_dropped():
    ctx = multiprocessing.get_context("spawn")
    inbox = ReportInbox(ctx)
    sender = inbox.sender()
    child = ctx.Process(target=_report_then_die, args=(sender, 5), daemon=True)
    child.start()
    sender.close()  # the gym keeps no copy of a child's sender
    child.join(60)
    taken: list = []
    while inbox._ends:
        taken += take_within(inbox, 1.0)
    assert [r.figures["games"] for r in taken] == [0, 1, 2, 3, 4]
