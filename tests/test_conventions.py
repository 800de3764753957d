"""The suite's own conventions: the order its workers take the tests in (`conftest.dealt`),
the durations file that order comes from (`conftest.stored_durations`), and the quick run
holding no real process (`conftest.slow_if_it_starts_processes`)."""

import multiprocessing
import subprocess
import sys

import pytest
from conftest import dealt, stored_durations


class Item:
    def __init__(self, nodeid: str, slow: bool):
        self.nodeid = nodeid
        self.slow = slow

    def get_closest_marker(self, name):
        return object() if name == "slow" and self.slow else None


def test_the_long_tests_start_the_shares_and_each_share_has_worksteals_size():
    weights = {"a": 60.0, "b": 30.0, "c": 24.0, "d": 21.0, "e": 20.0, "q1": 6.0}
    items = [Item(n, slow=True) for n in "edcba"] + [Item("x", slow=True)]
    items += [Item(f"q{i}", slow=False) for i in range(1, 11)]
    order = dealt(items, weights, 3)
    assert sorted(i.nodeid for i in order) == sorted(i.nodeid for i in items)
    # worksteal cuts 16 items into 5, 5, 6: the first item of each share is a long test
    shares = [order[:5], order[5:10], order[10:]]
    assert [s[0].nodeid for s in shares] == ["a", "b", "c"]
    # the rest go where the least work is: d and e join the shares of c and b, the unknown
    # slow test (5 s) the share of c; a's share gets nothing long beside it
    loads = [sum(weights.get(i.nodeid, 5.0 if i.slow else 0.05) for i in s) for s in shares]
    assert max(loads) == pytest.approx(60.0 + 4 * 0.05)
    assert all(not i.slow for i in shares[0][1:])
    # within a share, slow tests come before quick ones, longest first
    for share in shares:
        kinds = [i.slow for i in share]
        assert kinds == sorted(kinds, reverse=True)


def test_one_worker_runs_the_slow_tests_first_longest_first():
    items = [Item("q", slow=False), Item("s1", slow=True), Item("s2", slow=True)]
    assert [i.nodeid for i in dealt(items, {"s1": 2.0, "s2": 9.0}, 1)] == ["s2", "s1", "q"]


def test_the_stored_durations_keep_the_skipped_tests_lines_and_drop_the_quick_and_the_gone():
    old = {"browser": 25.1, "gone": 9.0, "soak": 30.0, "now_quick": 3.0}
    measured = {"browser": 0.01, "soak": 27.94, "now_quick": 0.4, "new": 1.26}
    stored = stored_durations(old, measured, skipped={"browser"})
    # the skipped test keeps its line, the rest are this run's, rounded, the longest first;
    # a test under STORED_FROM (1 s) and one this run did not have lose theirs
    assert list(stored.items()) == [("soak", 27.9), ("browser", 25.1), ("new", 1.3)]


def test_a_quick_test_that_starts_a_process_is_told_to_mark_itself_slow():
    with pytest.raises(AssertionError, match=r"starts a process .* mark it @pytest.mark.slow"):
        multiprocessing.get_context("spawn").Process(target=print).start()
    with pytest.raises(AssertionError, match=r"starts the command python"):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    # a program that is not Python (a tool some library calls) is let through
    assert subprocess.run(["true"], check=True).returncode == 0
