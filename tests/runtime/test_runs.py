"""Every run of a session, and every restart of a Selfplayer slot, plays with seeds of its own,
and the session's record (runs.json) reproduces them."""

import json
import threading
from types import SimpleNamespace

from gamegym.config import GymConfig
from gamegym.data.session import Session
from gamegym.runtime.backends import restart_seed
from gamegym.runtime.process import SEED_EVALUATOR, SEED_TRAINER, process_seed
from gamegym.runtime.supervisor import Supervisor

CONFIG = GymConfig(
    game="games.tictactoe:TicTacToe",
    seed=7,
    selfplay={"selfplayprocesses": 3},
    evaluate={"every": 1},
)


def make_session(tmp_path):
    session = Session(tmp_path / "s")
    session.create(CONFIG)
    return session


def test_each_run_gets_a_number_of_its_own_kept_in_the_session(tmp_path):
    session = make_session(tmp_path)
    assert [session.begin_run(CONFIG.seed) for _ in range(3)] == [1, 2, 3]
    record = json.loads(session.runs_path.read_text())
    assert record["runs"] == 3 and record["seed"] == 7
    assert Session(session.path).begin_run(CONFIG.seed) == 4  # read back from the folder


def test_a_damaged_run_record_never_gives_a_number_used_before(tmp_path):
    session = make_session(tmp_path)
    for _ in range(5):
        session.begin_run(CONFIG.seed)
    session.runs_path.write_text('{"runs": 5')  # torn
    assert session.begin_run(CONFIG.seed) > 5


class FakeGym:
    def __init__(self, session, run):
        self.session, self.config, self.run_number = session, CONFIG, run
        self.monitor = SimpleNamespace(watch=lambda name, pid: None, backend=None)
        self.stop_requested = threading.Event()


def started_seeds(session, run, monkeypatch) -> dict:
    """The seed each process of a run of the gym starts with (no process is started)."""
    supervisor = Supervisor(FakeGym(session, run), None, None)
    monkeypatch.setattr(supervisor, "spawn", lambda child: None)
    supervisor.start()
    children = {**supervisor.children, **supervisor.backend.children}
    return {name: child.args[-1] for name, child in children.items() if name != "predictor"}


def test_two_runs_of_a_session_start_every_process_with_other_seeds(tmp_path, monkeypatch):
    session = make_session(tmp_path)
    first = started_seeds(session, session.begin_run(CONFIG.seed), monkeypatch)
    second = started_seeds(session, session.begin_run(CONFIG.seed), monkeypatch)
    assert (
        sorted(first)
        == sorted(second)
        == ["evaluator", "selfplayer0", "selfplayer1", "selfplayer2", "trainer"]
    )
    assert not set(first.values()) & set(second.values())
    assert len(set(first.values())) == len(first)
    # the record reproduces them: the config's seed and the run number
    run = json.loads(session.runs_path.read_text())["runs"]
    assert second == {
        "trainer": process_seed(7, SEED_TRAINER, run),
        "evaluator": process_seed(7, SEED_EVALUATOR, run),
        **{f"selfplayer{i}": restart_seed(7, run, i, 0) for i in range(3)},
    }


def test_restart_seeds_differ_per_slot_restart_and_run():
    seeds = {
        restart_seed(0, run, slot, restarts)
        for run in (1, 2, 3)
        for slot in range(4)
        for restarts in range(5)
    }
    assert len(seeds) == 3 * 4 * 5
