"""The chaos soak's model check (scripts/soak.py `load_as_runtime`): a published model loads
with Keras and from its fast-path file, both answering alike; a fast form of another model, a
cut fast file and a sound archive without weights are each a violation."""

import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from gamegym.config import GymConfig
from gamegym.data.session import Session
from gamegym.learners import get_learner
from gamegym.nets.builders import build_network
from gamegym.runtime.fastmodels import fast_model_bytes

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
        session.publish_model(model, iteration, fast_form=fast_model_bytes(learner, model))
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
