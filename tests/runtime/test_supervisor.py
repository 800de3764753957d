"""The supervisor's and the processes backend's decisions on dead children, and the
Selfplayer's bounded wait for answers.

The children here are stand-ins with the `multiprocessing.Process` attributes the supervisor
reads, so each decision is checked exactly and quickly; tests/test_faults.py kills real ones.
"""

import multiprocessing
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

from gamegym.config import GymConfig
from gamegym.nets.inference import NetworkPositionValuer
from gamegym.runtime.backends import (
    MAX_EVALUATOR_RESTARTS,
    MAX_PREDICTOR_RESTARTS,
    MAX_SELFPLAYER_RESTARTS,
    ProcessBackend,
    RestartBudget,
)
from gamegym.runtime.messages import EvalRequest, EvalResponse
from gamegym.runtime.pipes import PipeService, PredictorGone, PredictorTimeout
from gamegym.runtime.process import EXIT_DISK_FULL
from gamegym.runtime.supervisor import Child, Supervisor
from games.tictactoe import TicTacToe


class DeadProcess:
    def __init__(self, exitcode):
        self.exitcode = exitcode

    def is_alive(self):
        return False


class LiveProcess:
    exitcode = None

    def is_alive(self):
        return True


class FakeGym:
    def __init__(self, path):
        self.session = SimpleNamespace(path=path, logs_dir=path / "logs")
        self.monitor = SimpleNamespace()
        self.config = GymConfig(game="games.tictactoe:TicTacToe")
        self.run_number = 1
        self.stop_requested = threading.Event()
        self.reasons = []

    def request_stop(self, reason):
        self.reasons.append(reason)
        self.stop_requested.set()


@pytest.fixture
def supervisor(tmp_path, monkeypatch):
    return make_supervisor(tmp_path, monkeypatch)


def make_supervisor(tmp_path, monkeypatch):
    supervisor = Supervisor(FakeGym(tmp_path), None, None)
    spawned = []

    def spawn(child):  # a restart: record it, the new process lives
        spawned.append(child.name)
        child.process = LiveProcess()

    monkeypatch.setattr(supervisor, "spawn", spawn)
    supervisor.spawned = spawned
    assert isinstance(supervisor.backend, ProcessBackend)
    (tmp_path / "logs").mkdir()
    joins, supervisor.backend._joins = multiprocessing.Pipe(duplex=False)  # to the Predictor
    supervisor.joins = joins
    for name in ("predictor", "trainer", "selfplayer0", "selfplayer1"):
        owner = supervisor.children if name == "trainer" else supervisor.backend.children
        args = ("path", None, 0, None, 0) if name.startswith("selfplayer") else (0,)
        owner[name] = Child(name, None, args, LiveProcess(), extra={"index": 0})
        (tmp_path / "logs" / f"{name}.log").write_text("started\n")  # as a real child does
    return supervisor


def check(supervisor):
    """One turn of the supervisor's watch loop."""
    supervisor._check_children()
    supervisor._poll_backend()


def child(supervisor, name):
    return {**supervisor.children, **supervisor.backend.children}[name]


def test_dead_selfplayer_is_restarted_with_a_new_seed_until_the_limit(supervisor):
    slot = child(supervisor, "selfplayer1")
    seeds = []
    for _ in range(MAX_SELFPLAYER_RESTARTS):
        slot.process = DeadProcess(-9)
        check(supervisor)
        seeds.append(slot.args[-1])
    assert supervisor.spawned == ["selfplayer1"] * MAX_SELFPLAYER_RESTARTS
    assert len(set(seeds)) == MAX_SELFPLAYER_RESTARTS  # no restart replays the same games
    assert not supervisor.gym.stop_requested.is_set()
    slot.process = DeadProcess(-9)  # one death too many
    check(supervisor)
    assert len(supervisor.spawned) == MAX_SELFPLAYER_RESTARTS
    assert supervisor.failure.startswith(
        "selfplayer1 died (exit code -9), too many restarts "
        f"({MAX_SELFPLAYER_RESTARTS} restarts in 60 minutes); see "
    )
    assert supervisor.failure.endswith("selfplayer1.log")
    assert supervisor.gym.reasons == [supervisor.failure]


def test_dead_trainer_stops_the_gym_naming_it(supervisor):
    child(supervisor, "trainer").process = DeadProcess(1)
    check(supervisor)
    assert supervisor.spawned == []
    assert supervisor.failure.startswith("trainer died (exit code 1); see ")
    assert supervisor.gym.reasons == [supervisor.failure]


def predictor_gone(supervisor, code=1):
    """The Predictor dead, and its Selfplayers exited as they do when their pipes close."""
    child(supervisor, "predictor").process = DeadProcess(code)
    for name in ("selfplayer0", "selfplayer1"):
        child(supervisor, name).process = DeadProcess(0)


@pytest.mark.parametrize("hung", ["", "no progress for 120 s"])
def test_a_dead_or_hung_predictor_comes_back_with_every_selfplayer_until_its_budget_is_spent(
    supervisor, hung, capsys
):
    """Each restart starts the Predictor and every Selfplayer, each Selfplayer on a new pipe
    with a seed of its own (its slot's budget untouched); past the Predictor's budget the gym
    stops naming it."""
    slots = [child(supervisor, name) for name in ("selfplayer0", "selfplayer1")]
    for slot, index in zip(slots, (0, 1)):
        slot.args = ("path", None, index, None, 0)
    seeds = []
    for restart in range(1, MAX_PREDICTOR_RESTARTS + 1):
        predictor_gone(supervisor)
        child(supervisor, "predictor").hung = hung
        check(supervisor)
        assert not supervisor.failure
        assert supervisor.spawned == ["predictor", "selfplayer0", "selfplayer1"] * restart
        assert all(slot.process.is_alive() for slot in slots)
        assert all(slot.args[3] is not None and slot.args[3].closed for slot in slots)  # new
        seeds += [slot.args[-1] for slot in slots]
    assert len(set(seeds)) == len(seeds)  # no restart replays the same games
    assert not supervisor.backend.budgets  # the Selfplayers' own budgets are untouched
    how = f"was killed ({hung})" if hung else "died (exit code 1)"
    said = capsys.readouterr().out
    assert f"[gamegym] predictor {how}; restarting it and its Selfplayers" in said
    predictor_gone(supervisor)
    child(supervisor, "predictor").hung = hung
    check(supervisor)  # one death too many
    assert supervisor.failure.startswith(
        f"predictor {how}, too many restarts ({MAX_PREDICTOR_RESTARTS} restarts in 60 minutes); "
        "see "
    )
    assert supervisor.failure.endswith("predictor.log")
    assert supervisor.gym.reasons == [supervisor.failure]


def test_a_selfplayer_that_found_the_disk_full_as_its_predictor_went_stops_the_gym(supervisor):
    predictor_gone(supervisor)
    child(supervisor, "selfplayer1").process = DeadProcess(EXIT_DISK_FULL)
    check(supervisor)
    assert supervisor.spawned == []
    assert "selfplayer1 could not write" in supervisor.failure


def test_a_selfplayer_restarted_as_the_predictor_died_is_restarted_again_with_it(supervisor):
    """The Predictor dies between the poll that saw it alive and the Selfplayer's restart: the
    hand-over of the new pipe fails (EPIPE), and the next poll restarts the Predictor with
    every Selfplayer."""
    supervisor.joins.close()  # the Predictor's end: gone with it
    child(supervisor, "selfplayer0").process = DeadProcess(1)
    check(supervisor)  # no BrokenPipeError out of the restart
    assert supervisor.spawned == ["selfplayer0"] and not supervisor.failure
    predictor_gone(supervisor)
    check(supervisor)
    assert supervisor.spawned == ["selfplayer0", "predictor", "selfplayer0", "selfplayer1"]
    assert not supervisor.failure


def test_a_pipe_handed_to_a_predictor_that_died_before_taking_it_closes_with_its_restart(
    supervisor,
):
    """The Predictor dies after the gym handed it a restarted Selfplayer's pipe end (a
    NewClient waiting in the joins pipe) and before it took it.  multiprocessing keeps the
    gym's copy of a sent pipe end until the receiver takes it, so that Selfplayer would wait on
    a pipe that never closes; the Predictor's restart lets the copy go, and the Selfplayer
    finds its pipe closed (then writes its games and exits) as the others do."""
    import os
    from multiprocessing.connection import Connection

    recording = supervisor.spawn
    held = []

    def spawn(child):  # what the restarted Selfplayer's process would hold: its end
        recording(child)
        if child.name == "selfplayer0" and not held:
            held.append(Connection(os.dup(child.args[3].fileno())))

    supervisor.spawn = spawn
    child(supervisor, "selfplayer0").process = DeadProcess(1)
    check(supervisor)  # restarted; the other end of its pipe goes to the Predictor
    assert supervisor.joins.poll(5)  # sent, and never taken: the Predictor dies
    [end] = held
    assert not end.poll(0.2)  # the gym's unclaimed copy keeps the pipe open
    predictor_gone(supervisor)
    check(supervisor)
    assert supervisor.spawned == ["selfplayer0", "predictor", "selfplayer0", "selfplayer1"]
    assert end.poll(5)
    with pytest.raises(EOFError):  # closed: the Selfplayer sees its Predictor gone
        end.recv()
    end.close()


def test_a_restart_is_tallied_logged_and_said_alike_for_every_role(capsys, caplog):
    budget = RestartBudget(2, window=60.0)
    evaluator = Child("evaluator", None, ())
    where = "see logs/evaluator.log"
    with caplog.at_level("WARNING", logger="gamegym.runtime.backends"):
        assert budget.tally(0.0, evaluator, "evaluator", "died (exit code 1)", where) == ""
    assert evaluator.restarts == 1
    assert capsys.readouterr().out == "[gamegym] evaluator died (exit code 1); restarting it\n"
    assert caplog.messages == [
        "evaluator died (exit code 1); restart 1 (1 of 2 within 1 minutes); restarting it"
    ]
    assert budget.tally(1.0, evaluator, "evaluator", "was killed (hung)", where) == ""
    failure = budget.tally(2.0, evaluator, "evaluator", "died (exit code 1)", where)
    assert failure == (
        "evaluator died (exit code 1), too many restarts (2 restarts in 1 minutes); "
        "see logs/evaluator.log"
    )
    assert evaluator.restarts == 2  # not restarted past the budget
    assert budget.tally(60.5, evaluator, "evaluator", "died (exit code 1)", where) == ""  # window


def test_the_predictor_and_the_evaluator_have_restart_budgets_of_their_own(tmp_path, monkeypatch):
    """A Predictor's restarts count against the Predictor's budget and the Evaluator's against
    its own, not a Selfplayer slot's; the failure names the role that ran out."""
    from gamegym.runtime.process import SEED_EVALUATOR, process_seed

    monkeypatch.setattr("gamegym.runtime.backends.MAX_PREDICTOR_RESTARTS", 1)
    monkeypatch.setattr("gamegym.runtime.supervisor.MAX_EVALUATOR_RESTARTS", 2)
    supervisor = make_supervisor(tmp_path, monkeypatch)
    config = supervisor.config
    evaluator = supervisor.children["evaluator"] = Child(
        "evaluator", None, ("path", config, process_seed(config.seed, SEED_EVALUATOR, 1)), None
    )
    for _ in range(2):
        evaluator.process = DeadProcess(1)
        check(supervisor)
        assert not supervisor.failure
    evaluator.process = DeadProcess(1)
    check(supervisor)
    assert supervisor.failure.startswith(
        "evaluator died (exit code 1), too many restarts (2 restarts in 60 minutes)"
    )
    (tmp_path / "again").mkdir()
    supervisor = make_supervisor(tmp_path / "again", monkeypatch)
    predictor_gone(supervisor)
    check(supervisor)
    assert not supervisor.failure
    predictor_gone(supervisor)
    check(supervisor)
    assert supervisor.failure.startswith(
        "predictor died (exit code 1), too many restarts (1 restarts in 60 minutes)"
    )
    assert not supervisor.backend.budgets  # no Selfplayer slot's budget was touched


def test_a_child_that_found_the_disk_full_is_not_restarted(supervisor):
    child(supervisor, "selfplayer0").process = DeadProcess(EXIT_DISK_FULL)
    check(supervisor)
    assert supervisor.spawned == []
    assert "selfplayer0 could not write" in supervisor.failure
    assert "free some space" in supervisor.failure


def test_selfplayer_wait_for_the_predictor_times_out():
    mine, predictor_end = multiprocessing.Pipe(duplex=True)
    client = NetworkPositionValuer(TicTacToe(), PipeService(mine, timeout=0.3))
    started = time.monotonic()
    with pytest.raises(PredictorTimeout, match="no answer from the Predictor within 0.3 s"):
        client([TicTacToe().roots[0]])
    assert 0.3 <= time.monotonic() - started < 3.0
    assert predictor_end.poll()  # the request did go out


def test_selfplayer_names_a_predictor_that_is_gone():
    """A Predictor that stops or dies while a request waits, or before one is sent, is named
    as such (not a bare EOFError or BrokenPipeError)."""
    mine, predictor_end = multiprocessing.Pipe(duplex=True)
    service = PipeService(mine, timeout=30.0)
    answer = service.submit("evaluate", {"x": np.zeros((1, 3, 3, 2), np.float32)})
    assert isinstance(predictor_end.recv(), EvalRequest)
    predictor_end.close()  # gone before it answered
    started = time.monotonic()
    with pytest.raises(PredictorGone, match="the Predictor's end of the pipe is closed"):
        answer()
    assert time.monotonic() - started < 3.0  # at once, not after the timeout
    with pytest.raises(PredictorGone, match="stopped or died"):
        service.submit("evaluate", {"x": np.zeros((1, 3, 3, 2), np.float32)})


def test_selfplayer_skips_answers_to_requests_it_gave_up():
    mine, predictor_end = multiprocessing.Pipe(duplex=True)
    graph = TicTacToe()
    client = NetworkPositionValuer(graph, PipeService(mine, timeout=5.0))
    size = graph.action_space_size
    predictor_end.send(
        EvalResponse(
            0, 3, {"probs": np.zeros((1, size), np.float32), "values": np.array([0.9], np.float32)}
        )
    )  # stale
    answer = np.full((1, size), 1.0 / size, np.float32)
    predictor_end.send(
        EvalResponse(1, 3, {"probs": answer, "values": np.array([-0.25], np.float32)})
    )
    probs, values = client([graph.roots[0]])
    assert np.array_equal(probs, answer) and values.tolist() == [-0.25]
    assert client.iteration == 3


def test_the_restart_budget_counts_restarts_in_a_sliding_window(supervisor):
    """A long session with rare crashes never runs out of restarts; a burst still stops it."""
    from gamegym.runtime.backends import RESTART_WINDOW_S

    now = [1000.0]
    supervisor.backend.clock = lambda: now[0]
    slot = child(supervisor, "selfplayer1")
    seeds = []
    for _ in range(4 * MAX_SELFPLAYER_RESTARTS):  # a death every window / limit + a bit
        now[0] += RESTART_WINDOW_S / MAX_SELFPLAYER_RESTARTS + 1.0
        slot.process = DeadProcess(-9)
        check(supervisor)
        seeds.append(slot.args[-1])
    assert not supervisor.gym.stop_requested.is_set()
    assert len(supervisor.spawned) == 4 * MAX_SELFPLAYER_RESTARTS
    assert len(set(seeds)) == len(seeds)
    for _ in range(MAX_SELFPLAYER_RESTARTS):  # a burst: the window fills up
        now[0] += 1.0
        slot.process = DeadProcess(-9)
        check(supervisor)
    assert supervisor.failure.startswith("selfplayer1 died (exit code -9), too many restarts")
    assert f"{MAX_SELFPLAYER_RESTARTS} restarts in" in supervisor.failure


def test_a_restarted_selfplayer_gets_a_channel_of_its_own(tmp_path):
    """Nothing the Predictor wrote for the dead Selfplayer (nor a message torn by its death)
    can reach the new one: it gets a new pipe, whose other end goes to the Predictor; the gym
    keeps no end of either, so the Predictor reads the dead one's end to its EOF."""
    import os
    from multiprocessing.connection import Connection

    from gamegym.runtime.messages import NewClient

    gym = FakeGym(tmp_path)
    gym.config = GymConfig(game="games.tictactoe:TicTacToe", selfplay={"selfplayprocesses": 2})
    gym.monitor = SimpleNamespace(watch=lambda name, pid: None, backend=None)
    supervisor = Supervisor(gym, None, None)
    held = {}  # what each started process holds, as spawn hands it over

    def spawn(child):
        child.process = LiveProcess()
        if child.name == "predictor":
            held["predictor"] = [Connection(os.dup(c.fileno())) for c in child.args[2]]
            held["joins"] = Connection(os.dup(child.args[-1].fileno()))
        else:
            held.setdefault(child.name, []).append(Connection(os.dup(child.args[3].fileno())))

    supervisor.spawn = spawn
    (tmp_path / "logs").mkdir()
    backend = supervisor.backend
    backend.start()
    predictor, slot = backend.children["predictor"], backend.children["selfplayer1"]
    assert slot.args[3].closed and all(end.closed for end in predictor.args[2])  # gym's copies
    slot.process = DeadProcess(-9)
    os.write(held["selfplayer1"][0].fileno(), b"\x00\x00\x10\x00torn")  # killed mid-message
    held["selfplayer1"][0].close()  # ... and gone
    check(supervisor)
    with pytest.raises((EOFError, OSError)):  # a clean disconnect
        held["predictor"][1].recv()
    joins = held["joins"]
    assert joins.poll(5)
    joined = joins.recv()
    assert isinstance(joined, NewClient)
    held["selfplayer1"][1].send("from the new incarnation")
    assert joined.conn.recv() == "from the new incarnation"
    assert held["predictor"][0].poll() is False  # the other slot: untouched


class StoppedProcess(LiveProcess):
    """Alive, but its heartbeat never moves (SIGSTOP, or hung with the GIL held)."""

    def __init__(self):
        self.killed = False

    def kill(self):
        self.killed = True


@pytest.mark.parametrize("role", ["trainer", "predictor", "selfplayer0"])
def test_a_process_without_a_heartbeat_is_named_killed_and_handled_as_a_crash(
    supervisor, role, caplog, capsys
):
    import logging

    from gamegym.runtime.heartbeat import Heartbeat

    now = [500.0]
    supervisor.clock = lambda: now[0]
    deadline = supervisor.config.heartbeat_timeout
    assert 0 < deadline < 60
    for owner in (supervisor.children, supervisor.backend.children):
        for slot in owner.values():
            slot.heartbeat = Heartbeat()
            slot.heartbeat.seen(now[0])
            slot.heartbeat.beat()  # started up
    stuck = child(supervisor, role)
    stuck.process = StoppedProcess()
    with caplog.at_level(logging.WARNING):
        for _ in range(int(deadline) + 2):
            now[0] += 1.0
            for _name, slot in {**supervisor.children, **supervisor.backend.children}.items():
                if slot is not stuck:
                    slot.heartbeat.beat()  # the others beat on
            supervisor._check_heartbeats()
    assert stuck.process.killed
    message = f"{role} is not responding (no heartbeat for"
    assert message in caplog.text and message in capsys.readouterr().out
    others = [
        c for c in {**supervisor.children, **supervisor.backend.children}.values() if c is not stuck
    ]
    assert not any(getattr(c.process, "killed", False) for c in others)
    stuck.process = DeadProcess(-9)  # what the kill leaves
    handled_as_a_crash(supervisor, role, "no heartbeat for")


def handled_as_a_crash(supervisor, role, why):
    """What follows the kill of a hung child: a Selfplayer or the Evaluator is restarted, the
    Predictor with every Selfplayer (theirs exit as their pipes close), a Trainer stops the gym."""
    if role == "predictor":
        predictor_gone(supervisor, -9)
    check(supervisor)
    if role in ("selfplayer0", "evaluator"):
        assert supervisor.spawned == [role] and not supervisor.failure
    elif role == "predictor":
        assert supervisor.spawned == ["predictor", "selfplayer0", "selfplayer1"]
        assert not supervisor.failure
    else:
        assert supervisor.failure.startswith(f"{role} stopped responding and was killed ({why}")


def watched(supervisor, now):
    """Every child gets a Heartbeat that has beaten and counted work once, watched from now."""
    from gamegym.runtime.heartbeat import Heartbeat

    for slot in {**supervisor.children, **supervisor.backend.children}.values():
        slot.heartbeat = Heartbeat()
        slot.heartbeat.counter.value = slot.heartbeat.work.value = 1  # started, and working
        slot.heartbeat.seen(now)


@pytest.mark.parametrize("role", ["trainer", "predictor", "selfplayer0", "evaluator"])
def test_a_process_that_beats_but_makes_no_progress_is_killed_and_handled_as_a_crash(
    supervisor, role, capsys
):
    """Hung in a call that released the interpreter: its heartbeat thread beats on, its work
    count stands still for progress_timeout."""
    supervisor.children["evaluator"] = Child(
        "evaluator", None, ("path", supervisor.config, 0), LiveProcess()
    )
    now = [1000.0]
    supervisor.clock = lambda: now[0]
    watched(supervisor, now[0])
    stuck = child(supervisor, role)
    stuck.process = StoppedProcess()
    deadline = supervisor.config.progress_timeout
    assert deadline > supervisor.config.heartbeat_timeout
    for _ in range(int(deadline) + 2):
        now[0] += 1.0
        for slot in {**supervisor.children, **supervisor.backend.children}.values():
            slot.heartbeat.counter.value += 1  # every heartbeat thread runs ...
            if slot is not stuck:
                slot.heartbeat.work.value += 1  # ... and the others work
        supervisor._check_heartbeats()
    assert stuck.process.killed
    said = capsys.readouterr().out
    assert f"{role} made no progress for {int(deadline)} s (its heartbeat goes on: hung" in said
    others = [
        c for c in {**supervisor.children, **supervisor.backend.children}.values() if c is not stuck
    ]
    assert not any(getattr(c.process, "killed", False) for c in others)
    stuck.process = DeadProcess(-9)
    handled_as_a_crash(supervisor, role, "no progress for")


def test_selfplayers_waiting_on_a_hung_predictor_are_left_to_write_their_games(supervisor, capsys):
    """A Predictor hung in a call answers no one, so its Selfplayers count no work either, from
    about the same moment: the gym kills the Predictor only; the Selfplayers find their pipes
    closed and exit by themselves, writing the games they finished (killed, they would lose
    them), and come back with the new Predictor."""
    now = [1000.0]
    supervisor.clock = lambda: now[0]
    watched(supervisor, now[0])
    for name in ("predictor", "selfplayer0", "selfplayer1"):
        slot = child(supervisor, name)
        slot.process = StoppedProcess()
        if name != "predictor":
            slot.extra["waits_on"] = "predictor"  # as ProcessBackend.start makes them
    deadline = supervisor.config.progress_timeout
    for turn in range(3 * int(deadline)):
        now[0] += 1.0
        for name, slot in {**supervisor.children, **supervisor.backend.children}.items():
            slot.heartbeat.counter.value += 1  # every heartbeat thread runs ...
            if name == "trainer" or (name.startswith("selfplayer") and turn < 3):
                slot.heartbeat.work.value += 1  # ... the Selfplayers' last searches come after
        supervisor._check_heartbeats()
    killed = [n for n, c in supervisor.backend.children.items() if c.process.killed]
    assert killed == ["predictor"]
    said = capsys.readouterr().out
    assert "predictor made no progress for" in said and "selfplayer" not in said


def test_a_heartbeat_timeout_of_0_leaves_the_work_watch_and_0_for_both_watches_nothing(
    supervisor, capsys
):
    """heartbeat_timeout = 0 turns the heartbeat watch off: a stopped child (it neither beats
    nor works) is found by its lack of progress only, after progress_timeout, and named so;
    with progress_timeout = 0 too, no child is ever killed as hung."""
    from dataclasses import replace

    now = [1000.0]
    supervisor.clock = lambda: now[0]
    supervisor.config = replace(supervisor.config, heartbeat_timeout=0.0, progress_timeout=30.0)
    watched(supervisor, now[0])
    stuck = child(supervisor, "trainer")
    stuck.process = StoppedProcess()

    def turns(count):
        for _ in range(count):
            now[0] += 1.0
            for slot in {**supervisor.children, **supervisor.backend.children}.values():
                if slot is not stuck:  # the others beat and work
                    slot.heartbeat.counter.value += 1
                    slot.heartbeat.work.value += 1
            supervisor._check_heartbeats()

    turns(29)
    assert not stuck.process.killed  # 29 s silent: the default deadline (20 s) is not used
    turns(2)
    assert stuck.process.killed
    said = capsys.readouterr().out
    assert "trainer made no progress for 30 s (no heartbeat either for 30 s: stopped or hung)" in (
        said
    )
    assert "is not responding" not in said
    supervisor.config = replace(supervisor.config, progress_timeout=0.0)
    stuck.process, stuck.hung = StoppedProcess(), ""
    turns(3600)
    assert not stuck.process.killed and capsys.readouterr().out == ""


def test_after_the_whole_group_was_stopped_no_child_is_killed_as_hung(supervisor, capsys):
    """Ctrl+Z stops the gym and its children alike; on continue (a SIGCONT to the gym) it
    finds every child silent for as long as it was stopped itself, and watches them afresh
    instead of killing them.  One that then stays silent is still killed."""
    now = [1000.0]
    supervisor.clock = lambda: now[0]
    watched(supervisor, now[0])
    for slot in supervisor.backend.children.values():
        slot.process = StoppedProcess()
    supervisor.children["trainer"].process = StoppedProcess()
    supervisor._check_heartbeats()
    now[0] += 10 * supervisor.config.progress_timeout  # stopped: no one beat or worked
    supervisor.gym.continued = 1  # what the gym's SIGCONT handler counts on `fg`
    supervisor._check_heartbeats()
    slots = {**supervisor.children, **supervisor.backend.children}
    assert not any(c.process.killed for c in slots.values())
    assert "not responding" not in capsys.readouterr().out
    for _ in range(int(supervisor.config.heartbeat_timeout) + 2):  # all but one go on
        now[0] += 1.0
        for name, slot in slots.items():
            if name != "selfplayer1":
                slot.heartbeat.counter.value += 1
                slot.heartbeat.work.value += 1
        supervisor._check_heartbeats()
    assert [n for n, c in slots.items() if c.process.killed] == ["selfplayer1"]


def test_a_dead_evaluator_is_restarted_with_a_new_seed_until_its_budget_is_spent(supervisor):
    from gamegym.runtime.process import SEED_EVALUATOR, process_seed

    config = supervisor.config
    slot = supervisor.children["evaluator"] = Child(
        "evaluator", None, ("path", config, process_seed(config.seed, SEED_EVALUATOR, 1)), None
    )
    seeds = [slot.args[-1]]
    for _ in range(MAX_EVALUATOR_RESTARTS):
        slot.process = DeadProcess(1)
        check(supervisor)
        assert not supervisor.failure and slot.process.is_alive()
        seeds.append(slot.args[-1])
    assert len(set(seeds)) == len(seeds)
    slot.process = DeadProcess(1)
    check(supervisor)
    assert supervisor.failure.startswith("evaluator died (exit code 1), too many restarts")
    assert supervisor.gym.reasons == [supervisor.failure]
