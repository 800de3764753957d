"""The chaos soak's checks (scripts/soak.py): a published model loads with Keras and from its
fast-path file, both answering alike (`load_as_runtime`), and a fast form of another model, a
cut fast file and a sound archive without weights are each a violation; a game two processes
wrote is a repeat; its settings take changes by section; a soak run again on its folder
(`--resume`) adds to its record, a line per run (its cycles stubbed: no processes here)."""

import json
import shutil
import sys
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
import soak  # noqa: E402 (a script, not a package)


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
    x = soak.positions(graph)
    assert len(x) > 1  # a batch, cut where the first moves end the game
    for iteration in (0, 1):
        assert session.fast_model_path(iteration).is_file()
        assert soak.load_as_runtime(learner, session.model_path(iteration), iteration, x) == []

    bad = tmp_path / "bad"
    bad.mkdir()
    shutil.copy(session.model_path(1), bad / "1.keras")
    shutil.copy(session.fast_model_path(0), bad / "1.fast.npz")  # another model's fast form
    [(name, detail)] = soak.load_as_runtime(learner, bad / "1.keras", 1, x)
    assert name == "fast_form_differs" and "1.fast.npz" in detail

    data = session.fast_model_path(1).read_bytes()
    (bad / "1.fast.npz").write_bytes(data[: len(data) // 2])
    [(name, detail)] = soak.load_as_runtime(learner, bad / "1.keras", 1, x)
    assert name == "model_does_not_load" and "1.fast.npz" in detail

    whole = zipfile.ZipFile(session.model_path(1))
    with whole, zipfile.ZipFile(bad / "2.keras", "w") as cut:  # sound, but with no weights
        for member in whole.namelist():
            if "weights" not in member:
                cut.writestr(member, whole.read(member))
    [(name, detail)] = soak.load_as_runtime(learner, bad / "2.keras", 2, x)
    assert name == "model_does_not_load" and "weights" in detail


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
    checker.session, checker.shape = session, soak.SampleShape.of(graph)
    checker.games, checker.seen = {}, set()
    checker.totals = {"violations": dict.fromkeys(soak.INVARIANTS, 0)}
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
