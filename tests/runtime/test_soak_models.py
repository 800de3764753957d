"""The chaos soak's checks (scripts/soak.py): a published model loads with Keras and from its
fast-path file, both answering alike (`load_as_runtime`), and a fast form of another model, a
cut fast file and a sound archive without weights are each a violation; a game two processes
wrote is a repeat; its settings take changes by section; a soak run again on its folder
(`--resume`) adds to its record, a line per run, and `--cycles` runs that many (its cycles
stubbed: no processes here); the watch of the current iteration sees a step back the end of a
cycle hides; the mutation check needs each violation a check names (its soaks stubbed); a
long stop that something else continues is a missed fault, one the gym kills (it leaves the
stopped state as it exits) is reached; each gym runs in a session of its
own, which the soak's Ctrl+C stops (stand-ins for the target and the gym: `sleep`, `sh`)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import publish_as_trained

from gamegym.config import GymConfig
from gamegym.data.samples import GameRecord, write_sample_file
from gamegym.data.session import Session
from gamegym.learners import get_learner
from gamegym.nets.builders import build_network

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import soak  # noqa: E402 (scripts, not a package)
import soak_checks  # noqa: E402
import soak_gym  # noqa: E402
import soak_mutations  # noqa: E402


def test_published_models_load_as_the_runtime_loads_them_and_broken_ones_are_violations(
    tmp_path,
):
    graph = soak.load_game(soak.GAME)
    learner = get_learner("alphazero")
    session = Session(tmp_path / "s")
    session.create(GymConfig(game=soak.GAME))
    shape = graph.numpify(graph.roots[0]).shape
    for iteration in (0, 1):
        model = build_network(shape, graph.action_space_size, "dense", 16, 1, seed=iteration)
        publish_as_trained(session, model, iteration)
    x = soak_checks.positions(graph)
    assert len(x) > 1  # a batch, cut where the first moves end the game
    for iteration in (0, 1):
        assert session.fast_model_path(iteration).is_file()
        assert (
            soak_checks.load_as_runtime(learner, session.model_path(iteration), iteration, x) == []
        )

    bad = tmp_path / "bad"
    bad.mkdir()
    shutil.copy(session.model_path(1), bad / "1.keras")
    shutil.copy(session.fast_model_path(0), bad / "1.fast.npz")  # another model's fast form
    [(name, detail)] = soak_checks.load_as_runtime(learner, bad / "1.keras", 1, x)
    assert name == "fast_form_differs" and "1.fast.npz" in detail

    data = session.fast_model_path(1).read_bytes()
    (bad / "1.fast.npz").write_bytes(data[: len(data) // 2])
    [(name, detail)] = soak_checks.load_as_runtime(learner, bad / "1.keras", 1, x)
    assert name == "model_does_not_load" and "1.fast.npz" in detail

    whole = zipfile.ZipFile(session.model_path(1))
    with whole, zipfile.ZipFile(bad / "2.keras", "w") as cut:  # sound, but with no weights
        for member in whole.namelist():
            if "weights" not in member:
                cut.writestr(member, whole.read(member))
    [(name, detail)] = soak_checks.load_as_runtime(learner, bad / "2.keras", 2, x)
    assert name == "model_does_not_load" and "weights" in detail


def test_a_model_is_published_twice_only_once_current_json_named_it(tmp_path):
    """A model file whose current.json could not be written (the disk filled between the two)
    is not published: the next gym trains that iteration again and writes it anew.  Once
    current.json names it, a second file of that iteration is a violation."""
    graph = soak.load_game(soak.GAME)
    session = Session(tmp_path / "s")
    session.create(GymConfig(game=soak.GAME))
    shape = graph.numpify(graph.roots[0]).shape
    checker = soak.Soak.__new__(soak.Soak)
    checker.session, checker.positions = session, soak_checks.positions(graph)
    checker.published, checker.loaded, checker.checked_until = {}, set(), -1
    checker.totals = {"violations": dict.fromkeys(soak_checks.INVARIANTS, 0)}

    def publish(iteration: int, seed: int, named: bool = True) -> None:
        model = build_network(shape, graph.action_space_size, "dense", 16, 1, seed=seed)
        before = session.current_iteration()
        publish_as_trained(session, model, iteration)
        if not named:  # as when the write of current.json found the disk full
            (session.models_dir / "current.json").write_text(json.dumps({"iteration": before}))
        checker.check_models_load(set())

    publish(0, seed=0)
    publish(1, seed=1, named=False)
    publish(1, seed=2)  # trained again by the next gym: its first publication
    assert checker.totals["violations"]["iteration_published_twice"] == 0
    publish(1, seed=3)
    assert checker.totals["violations"]["iteration_published_twice"] == 1


def test_soak_settings_take_changes_by_section_and_refuse_what_names_nothing():
    changed = soak.settings({"selfplay": {"positions_per_iteration": 100}})
    assert changed["selfplay"]["positions_per_iteration"] == 100
    assert changed["selfplay"]["selfplayprocesses"] == soak.CONFIG["selfplay"]["selfplayprocesses"]
    assert changed["train"] == soak.CONFIG["train"]
    for bad, message in [
        ({"selfpaly": {}}, "names no section of the soak's settings: selfpaly"),
        ([1], "needs a JSON object of sections"),
        ({"selfplay": 3}, "needs a JSON object of sections"),
    ]:
        with pytest.raises(SystemExit, match=message):
            soak.settings(bad)


def _game(graph, seed: int) -> GameRecord:
    """A whole random game of tic-tac-toe as a Selfplayer records it."""
    rng = np.random.default_rng(seed)
    record, vertex = GameRecord(), graph.roots[0]
    while not graph.terminal_at(vertex):
        actions = graph.actions_at(vertex)
        pi = np.zeros(graph.action_space_size, np.float32)
        pi[list(actions)] = rng.dirichlet(np.ones(len(actions)))
        index = int(rng.integers(len(actions)))
        record.x.append(graph.numpify(vertex))
        record.pi.append(pi)
        record.action.append(actions[index])
        record.root_value.append(float(rng.uniform(-1, 1)))
        record.legal.append(graph.legal_mask(vertex))
        vertex = graph.children_at(vertex)[index]
    record.result = 0.0
    return record


def test_a_game_two_processes_wrote_is_a_repeat_and_one_processs_own_twin_is_not(tmp_path):
    """The soak's repeated-game check (a replayed seed) on sample files named as the runtime
    names them, `<role>-<pid>-<number>-<time>-<token>.npz`."""
    graph = soak.load_game(soak.GAME)
    session = Session(tmp_path / "s")
    session.create(GymConfig(game=soak.GAME))
    checker = soak.Soak.__new__(soak.Soak)  # its checks only, on this folder
    checker.session, checker.shape = session, soak_checks.SampleShape.of(graph)
    checker.games, checker.seen, checker.bad_all = {}, set(), set()
    checker.totals = {"violations": dict.fromkeys(soak_checks.INVARIANTS, 0)}
    folder = session.samples_dir / "0"
    folder.mkdir(parents=True, exist_ok=True)
    write_sample_file(
        folder / "selfplayer0-100-000001-1-a1b2c3d4.npz", [_game(graph, 0), _game(graph, 1)]
    )
    write_sample_file(
        folder / "selfplayer0-100-000002-2-e5f6a7b8.npz", [_game(graph, 0)]
    )  # its own twin
    checker.check_samples()
    assert checker.totals["violations"]["repeated_game"] == 0
    assert len(checker.games) == 2  # one key per distinct game
    write_sample_file(
        folder / "selfplayer1-200-000001-3-c9d0e1f2.npz", [_game(graph, 1), _game(graph, 2)]
    )
    checker.check_samples()
    assert checker.totals["violations"]["repeated_game"] == 1  # game 1, from another process
    assert checker.totals["violations"]["sample_file_lost"] == 0
    (folder / "selfplayer0-100-000002-2-e5f6a7b8.npz").unlink()
    checker.check_samples()
    assert checker.totals["violations"]["sample_file_lost"] == 1


def test_a_soak_run_again_on_its_folder_adds_to_its_record(tmp_path, monkeypatch, capsys):
    kinds = iter(["stop_short", "kill_trainer", "disk_full"])

    def cycle(self):  # what a cycle records, without the gym
        self.count_fault(next(kinds))
        self.totals["resumes"] += 1
        self.totals["cycles"] += 1

    monkeypatch.setattr(soak.Soak, "cycle", cycle)
    folder = str(tmp_path / "soak")

    def run(*args) -> dict:
        assert soak.main(["--minutes", "0", "--json", "--folder", folder, *args]) == 0
        return json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    first = run("--seed", "3", "--set", '{"selfplay": {"positions_per_iteration": 100}}')
    assert (first["runs"], first["cycles"], first["faults"]) == (1, 1, 1)
    with pytest.raises(SystemExit, match="exists: add --resume"):
        soak.main(["--minutes", "0", "--folder", folder])
    with pytest.raises(SystemExit, match="a resumed soak keeps its session's settings"):
        soak.main(["--minutes", "0", "--folder", folder, "--resume", "--set", '{"train": {}}'])
    second = run("--seed", "4", "--resume")
    third = run("--seed", "4", "--resume")
    assert (third["runs"], third["cycles"], third["faults"], third["resumes"]) == (3, 3, 3, 3)
    assert third["faults_by_kind"] == {"stop_short": 1, "kill_trainer": 1, "disk_full": 1}
    assert third["seed"] == 3  # the soak's first seed; each run's is in its line
    lines = third["run_log"]
    assert [(line["run"], line["seed"]) for line in lines] == [(1, 3), (2, 4), (3, 4)]
    assert lines[:2] == second["run_log"] and lines[0] == first["run_log"][0]
    for key in ("faults", "cycles"):
        assert [line[key] for line in lines] == [1, 1, 1]
    assert sum(line["minutes"] for line in lines) == pytest.approx(third["minutes"], abs=0.01)
    assert all(line["violations"] == 0 for line in lines)
    config = json.loads((tmp_path / "soak" / "session" / "config.json").read_text())
    assert config["selfplay"]["positions_per_iteration"] == 100  # the first run's settings


def test_what_the_checks_saw_is_kept_for_the_next_run_on_the_folder(tmp_path):
    """A game a later run's process writes again is a repeat across `--resume` runs; a sample
    file checked by an earlier run and gone since is lost; an iteration's model file that
    changes is published twice."""
    graph = soak.load_game(soak.GAME)
    session = Session(tmp_path / "session")
    session.create(GymConfig(game=soak.GAME))

    def checker() -> soak.Soak:
        made = soak.Soak.__new__(soak.Soak)  # its checks and state only, on this folder
        made.session, made.shape = session, soak_checks.SampleShape.of(graph)
        made.state_path = tmp_path / "soak-state.npz"
        made.games, made.seen, made.published = {}, set(), {}
        made.bad_all, made.bad = set(), {}
        made.totals = {"violations": dict.fromkeys(soak_checks.INVARIANTS, 0)}
        return made

    first = checker()
    folder = session.samples_dir / "0"
    folder.mkdir(parents=True, exist_ok=True)
    kept = folder / "selfplayer0-100-000001-1-a1b2c3d4.npz"
    write_sample_file(kept, [_game(graph, 0), _game(graph, 1)])
    first.check_samples()
    first.published = {0: (5, 7)}
    first.save_state()
    second = checker()
    second.load_state()
    assert second.games == first.games and second.seen == {kept}
    assert second.published == {0: (5, 7)}
    write_sample_file(folder / "selfplayer1-300-000001-9-c9d0e1f2.npz", [_game(graph, 1)])
    kept.unlink()
    second.check_samples()
    violations = second.totals["violations"]
    assert (violations["repeated_game"], violations["sample_file_lost"]) == (1, 1)
    fresh = checker()  # what a soak without the state file sees: nothing of the earlier run
    fresh.check_samples()
    assert fresh.totals["violations"]["repeated_game"] == 0


def test_each_fault_has_its_expected_stop_and_a_stop_has_a_short_reason():
    assert soak_checks.expected_stop("kill_trainer", "trainer") == ({1}, "trainer died")
    assert soak_checks.expected_stop("stop_long", "trainer") == ({1}, "trainer stopped responding")
    # the gym plays on after these: the Predictor comes back with its Selfplayers
    assert soak_checks.expected_stop("stop_long", "predictor") == ({0}, soak_checks.EXIT_TYPED)
    assert soak_checks.expected_stop("kill_predictor", "predictor") == ({0}, soak_checks.EXIT_TYPED)
    assert soak_checks.expected_stop("bad_sample", None) == ({0}, soak_checks.EXIT_TYPED)
    assert soak_checks.expected_stop("stop_long", "selfplayer0") == ({0}, soak_checks.EXIT_TYPED)
    assert soak_checks.expected_stop("kill_gym", None) == ({-9}, "")
    assert soak_checks.expected_stop("disk_full", "lock")[0] == {2}
    assert soak_checks.expected_stop("disk_full", "model") == ({1}, "is full")
    assert (
        soak_checks.stop_key(1, "trainer died (exit code -9); see logs/trainer.log")
        == "trainer died"
    )
    assert soak_checks.stop_key(-9, "") == "killed by SIGKILL"
    assert soak_checks.stop_key(
        1, "trainer could not write (see x): the disk holding s is full"
    ) == ("disk full")
    assert soak_checks.stop_key(0, soak_checks.EXIT_TYPED) == soak_checks.EXIT_TYPED


def test_a_bad_sample_file_must_reach_quarantine_within_two_iterations(tmp_path):
    """The soak's bad sample file: quarantined (by a name the quarantine gives it) is as
    expected; still in samples/ two iterations after it came, it is
    `bad_sample_not_quarantined`; one iteration after, it may still wait; what is pending is
    kept for the next run on the folder."""
    graph = soak.load_game(soak.GAME)
    session = Session(tmp_path / "session")
    session.create(GymConfig(game=soak.GAME))
    checker = soak.Soak.__new__(soak.Soak)
    checker.session, checker.shape = session, soak_checks.SampleShape.of(graph)
    checker.state_path = tmp_path / "soak-state.npz"
    checker.games, checker.seen, checker.published = {}, set(), {}
    checker.totals = {"violations": dict.fromkeys(soak_checks.INVARIANTS, 0)}
    folder = session.samples_dir / "3"
    folder.mkdir(parents=True)
    moved, left = "soak-1-000001-5-bad.npz", "soak-1-000002-6-bad.npz"
    for name in (moved, left):
        write_sample_file(folder / name, [_game(graph, 0)])
    checker.bad = {f"samples/3/{moved}": 3, f"samples/3/{left}": 3}
    checker.bad_all = set(checker.bad)

    def at_iteration(iteration):
        (session.models_dir / "current.json").write_text(json.dumps({"iteration": iteration}))

    session.quarantine_dir.mkdir(exist_ok=True)
    (folder / moved).rename(session.quarantine_dir / f"1700000000-3-{moved}")  # as quarantine()
    at_iteration(4)
    checker.check_bad_samples()
    assert checker.bad == {f"samples/3/{left}": 3}  # left still waits: one iteration only
    checker.save_state()
    again = soak.Soak.__new__(soak.Soak)
    again.session, again.state_path = session, checker.state_path
    again.load_state()
    assert (again.bad, again.bad_all) == (checker.bad, checker.bad_all)
    at_iteration(5)
    checker.check_bad_samples()
    assert checker.bad == {} and checker.totals["violations"]["bad_sample_not_quarantined"] == 1
    checker.check_samples()  # the soak's own files are neither read as samples nor lost
    assert checker.seen == set() and checker.totals["violations"]["sample_file_invalid"] == 0


def test_cycles_runs_that_many_cycles_at_least(tmp_path, monkeypatch, capsys):
    def cycle(self):
        self.count_fault("exit")
        self.totals["resumes"] += 1
        self.totals["cycles"] += 1

    monkeypatch.setattr(soak.Soak, "cycle", cycle)
    folder = str(tmp_path / "soak")
    assert soak.main(["--minutes", "0", "--cycles", "3", "--json", "--folder", folder]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["cycles"] == 3
    with pytest.raises(SystemExit):
        soak.main(["--minutes", "0", "--cycles", "0", "--folder", folder, "--resume"])
    assert "--cycles must be at least 1" in capsys.readouterr().err


def test_the_iteration_watch_sees_a_step_back_that_the_end_of_a_cycle_hides(tmp_path):
    """A gym that steps back at its start, then trains past the iteration again, ends the
    cycle higher than it began: only a watch while it runs sees the step back."""
    session = Session(tmp_path / "s")
    session.models_dir.mkdir(parents=True)

    def point(iteration):
        (session.models_dir / "current.json").write_text(json.dumps({"iteration": iteration}))

    point(4)
    watch = soak_checks.IterationWatch(session, session.current_iteration(), interval=0.01)
    for iteration in (5, 3, 6):
        point(iteration)
        time.sleep(0.2)
    assert watch.stop() == ["3 after 5"] and watch.highest == 6
    calm = soak_checks.IterationWatch(session, 6, interval=0.01)
    point(7)
    assert calm.stop() == [] and calm.highest == 7  # (the last look, after the stop)


def test_the_mutation_check_needs_every_violation_a_check_names_and_says_what_it_showed(
    tmp_path, monkeypatch, capsys
):
    """Each check's soak (stubbed here) must report each violation it names; the report names
    the invariants shown to fire, whatever check showed them, and why the others are not."""
    seen = {
        "atomic_publish:sample": {"quarantined_file": 2, "sample_file_lost": 2},
        "heartbeat": {"hung_process_not_killed": 1},  # the stop after it went unchecked
    }
    commands = []

    def run(command, **_):
        commands.append(command)
        name = command[command.index("--folder") + 1].rsplit("/", 1)[1].replace("-", ":", 1)
        out = json.dumps({"violations": {"repeated_game": 0, **seen[name]}})
        return subprocess.CompletedProcess(command, 1, out + "\n", "")

    monkeypatch.setattr(soak_mutations.subprocess, "run", run)
    assert soak_mutations.mutation_check(tmp_path, 0, sorted(seen)) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["checks"] == {
        "atomic_publish:sample": {
            "caught": True,
            "violations": {"quarantined_file": 2, "sample_file_lost": 2},
        },
        "heartbeat": {"caught": False, "violations": {"hung_process_not_killed": 1}},
    }
    assert report["shown"] == ["hung_process_not_killed", "quarantined_file", "sample_file_lost"]
    assert set(report["not_shown"]) == set(soak_checks.INVARIANTS) - set(report["shown"])
    not_shown = report["not_shown"]
    assert not_shown["model_does_not_load"] == soak_mutations.NOT_MUTATED["model_does_not_load"]
    assert not_shown["unsound_model"] == "no check reported it"
    sample = commands[0]
    assert sample[sample.index("--mutate") + 1] == "atomic_publish"
    assert sample[sample.index("--cycles") + 1] == "2"
    assert sample[sample.index("--wait-iterations") + 1] == "1" and "--faults-in-order" in sample
    assert sample[sample.index("--faults") + 1 :] == ["disk_full:sample", "exit"]


def test_every_mutation_check_switches_off_a_mutation_and_names_invariants_the_soak_has():
    for name, check in soak_mutations.MUTATION_CHECKS.items():
        assert check.mutation in soak.MUTATIONS, name
        assert set(check.catches) <= set(soak_checks.INVARIANTS), name
        for fault in check.faults:
            soak.fault_spec(fault)  # a fault --faults takes
    assert set(soak.MUTATIONS) == {c.mutation for c in soak_mutations.MUTATION_CHECKS.values()}
    assert set(soak_mutations.NOT_MUTATED) <= set(soak_checks.INVARIANTS)


def test_faults_in_order_are_taken_one_a_cycle_in_turn():
    made = soak.Soak.__new__(soak.Soak)
    made.faults = ("disk_full:sample", "exit", "kill_selfplayer")
    made.in_order, made.rng = True, np.random.default_rng(0)
    made.totals, made.run_start = {"cycles": 7}, {"cycles": 7}  # a resumed soak's 8th cycle
    kinds = []
    for _ in range(4):
        kinds.append(made.draw())
        made.totals["cycles"] += 1
    assert kinds[:2] == [("disk_full", "sample"), ("exit", None)]
    assert [kind for kind, _ in kinds[2:]] == ["kill_selfplayer", "disk_full"]


def test_a_long_stop_continued_from_outside_the_soak_is_missed_not_the_gyms_failure(tmp_path):
    """A `stop_long` target that something else continues before the gym's deadline (the
    kernel does so to an orphaned process group that holds a stopped process) is neither
    killed nor a violation: the fault did not reach its target."""
    target = subprocess.Popen(["sleep", "60"])
    gym = subprocess.Popen(["sleep", "60"])  # what `inject` asks: is the gym running
    try:
        logs = tmp_path / "logs"
        logs.mkdir()
        (logs / "selfplayer1.log").write_text(f"selfplayer1 starting (pid {target.pid})\n")
        made = soak.Soak.__new__(soak.Soak)
        made.session = type("FakeSession", (), {"logs_dir": logs})()
        made.config, made.rng = {"heartbeat_timeout": 6.0}, np.random.default_rng(0)
        made.totals = {"violations": {}}

        def continue_it():
            deadline = time.monotonic() + 10.0
            while not soak_gym.stopped(target.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(1.0)
            os.kill(target.pid, signal.SIGCONT)

        threading.Thread(target=continue_it, daemon=True).start()
        started = time.monotonic()
        reached = made.inject("stop_long", "selfplayer1", gym, None, {target.pid})
        assert reached is False and time.monotonic() - started < 15.0  # the deadline: 21 s
        assert made.totals["violations"] == {}
        assert soak_gym.running(target.pid) and not soak_gym.stopped(target.pid)
    finally:
        for process in (target, gym):
            process.kill()
            process.wait()


def test_each_gym_runs_in_a_session_of_its_own_and_ctrl_c_of_the_soak_stops_it(
    tmp_path, monkeypatch
):
    """Outside job control cannot reach a gym the soak started (its own session), so the
    soak's Ctrl+C sends the gym's group what a terminal would: SIGCONT, then SIGINT."""
    gym_code = "trap 'echo SIGINT; exit 0' INT; echo ready; while :; do sleep 0.1; done"
    monkeypatch.setattr(soak_gym, "gamegym", lambda *args: ["sh", "-c", gym_code])
    gym = soak_gym.start_gym(tmp_path, dict(os.environ))
    try:
        assert gym.stdout.readline() == "ready\n"
        assert os.getsid(gym.pid) == os.getpgid(gym.pid) == gym.pid != os.getsid(0)
        assert gym in soak_gym.GYMS
        soak_gym.interrupt_gyms(wait_s=20.0)
        assert gym.returncode == 0 and gym.stdout.read() == "SIGINT\n"
    finally:
        if gym.poll() is None:
            os.killpg(gym.pid, signal.SIGKILL)
            gym.wait()


def test_a_long_stopped_process_the_gym_kills_is_reached_though_it_leaves_the_stopped_state(
    monkeypatch,
):
    """A stopped process that the gym kills runs for a moment as it exits before it is a
    zombie: that moment is not a continue from outside, and the fault reached its target."""
    import soak_faults

    clock = [0.0]  # soak_faults' own clock (the time module itself stays as it is)
    fake_time = type(
        "FakeTime",
        (),
        {
            "monotonic": staticmethod(lambda: clock[0]),
            "sleep": staticmethod(lambda s: clock.__setitem__(0, clock[0] + s)),
        },
    )
    monkeypatch.setattr(soak_faults, "time", fake_time)
    # on that clock: stopped until 3 s, then killed: exiting until 4 s, then a zombie
    monkeypatch.setattr(soak_faults, "stopped", lambda pid: clock[0] < 3.0)
    monkeypatch.setattr(soak_faults, "running", lambda pid: clock[0] < 4.0)
    monkeypatch.setattr(soak_faults, "role_pid", lambda session, role, family: 4242)
    fake_os = type("FakeOs", (), {"kill": staticmethod(lambda pid, sig: None)})  # no signal sent
    monkeypatch.setattr(soak_faults, "os", fake_os)
    made = soak.Soak.__new__(soak.Soak)
    made.session, made.config = None, {"heartbeat_timeout": 6.0}
    made.rng, made.totals = np.random.default_rng(0), {"violations": {}}
    gym = type("LiveGym", (), {"poll": lambda self: None})()
    assert made.inject("stop_long", "trainer", gym, None, {4242}) is True
    assert made.totals["violations"] == {} and clock[0] < 10.0
