"""The bundled presets from the console (`gamegym presets`, `gamegym new --preset NAME`) and
their starter models as package data: a wheel installed in a fresh venv finds them."""

import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, TICTACTOE, gamegym

from gamegym.cli.main import main
from gamegym.cli.presets import new_session_settings
from gamegym.presets import (
    INITIAL_MODELS,
    PRESETS,
    all_presets,
    get_preset,
    preset_learner,
    registered,
    starter_model,
)

STARTERS = sorted(path.stem for path in INITIAL_MODELS.glob("*.keras"))


def about() -> dict[str, str]:
    """Every preset's line, as registered now (a plug-in imported by another test may have
    added one)."""
    return {name: preset.about for name, preset in registered().items()}


def test_every_preset_says_what_it_is_for():
    assert set(about()) == set(all_presets())
    assert all(line.strip() and "\n" not in line for line in about().values())


def test_the_starter_models_are_in_the_package():
    assert INITIAL_MODELS.parent == ROOT / "gamegym"
    assert sorted(PRESETS) == STARTERS  # one per whole preset
    assert all(starter_model(name) == INITIAL_MODELS / f"{name}.keras" for name in STARTERS)


def test_an_unknown_preset_is_named_with_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown preset 'tictactoe-x'.*tictactoe-muzero"):
        get_preset("tictactoe-x")


def test_presets_lists_each_with_its_game_learner_and_purpose(capsys):
    assert main(["presets", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    presets, lines = all_presets(), about()
    assert set(listed) == set(presets)
    for name, row in listed.items():
        assert row["game"] == presets[name]["game"]
        assert row["learner"] == preset_learner(presets[name])
        assert row["about"] == lines[name]
        assert (row["starter_model"] is not None) == (name in STARTERS)
    assert main(["presets"]) == 0
    text = capsys.readouterr().out
    assert all(name in text and lines[name] in text for name in presets)


def test_new_from_a_preset_takes_its_settings_and_starter_model():
    config, model = new_session_settings("tictactoe", None, None, None)
    preset = PRESETS["tictactoe"]
    assert (config.game, config.game_args) == (TICTACTOE, {})
    assert config.selfplay.search.searchcount == preset["selfplay"]["search"]["searchcount"]
    assert config.train.min_samplecount == preset["train"]["min_samplecount"]
    assert model == INITIAL_MODELS / "tictactoe.keras"


def test_a_config_file_changes_the_preset_section_by_section(tmp_path):
    changes = tmp_path / "changes.json"
    changes.write_text(json.dumps({"selfplay": {"search": {"searchcount": 32}}, "seed": 7}))
    config, model = new_session_settings("connectfour", None, None, changes)
    preset = PRESETS["connectfour"]
    assert config.selfplay.search.searchcount == 32 and config.seed == 7
    assert config.selfplay.search.threads == preset["selfplay"]["search"]["threads"]
    assert config.game_args == {"rows": 6, "columns": 7}
    assert model == INITIAL_MODELS / "connectfour.keras"  # the network is the preset's


def test_other_game_arguments_or_network_start_from_a_fresh_network(tmp_path, caplog):
    config, model = new_session_settings("connectfour", None, {"rows": 5, "columns": 6}, None)
    assert config.game_args == {"rows": 5, "columns": 6} and model is None
    config, model = new_session_settings("tictactoe", "games.connectfour:ConnectFour", None, None)
    assert (config.game, config.game_args, model) == ("games.connectfour:ConnectFour", {}, None)
    wider = tmp_path / "wider.json"
    wider.write_text(json.dumps({"network": {"width": 128}}))
    with caplog.at_level("WARNING", logger="gamegym.presets"):
        config, model = new_session_settings("tictactoe", None, None, wider)
    assert config.network.width == 128 and model is None
    assert "is not the network" in caplog.text


def test_new_needs_a_game_or_a_preset(tmp_path, capsys):
    assert main(["new", str(tmp_path / "s")]) == 2
    assert "--preset NAME" in capsys.readouterr().err
    assert main(["new", str(tmp_path / "s"), "--preset", "chess"]) == 2
    assert "unknown preset 'chess'" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


@pytest.mark.slow
def test_new_with_a_preset_from_the_console(tmp_path):
    changes = tmp_path / "changes.json"
    changes.write_text(json.dumps({"selfplay": {"search": {"searchcount": 32}}}))
    done = gamegym("new", tmp_path / "s", "--preset", "tictactoe", "--config", changes)
    assert done.returncode == 0, done.stderr
    assert "from the preset tictactoe" in done.stdout
    config = json.loads((tmp_path / "s" / "config.json").read_text())
    assert config["game"] == TICTACTOE and config["selfplay"]["search"]["searchcount"] == 32
    assert config["train"]["min_samplecount"] == PRESETS["tictactoe"]["train"]["min_samplecount"]
    assert (tmp_path / "s" / "models" / "0.keras").is_file()


def run(command: list, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """A command outside the checkout: no PYTHONPATH to it, so only what is installed counts."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def venv_seeing_these_packages(venv: Path) -> Path:
    """A new venv, without pip, that sees the packages of the environment running the tests
    after its own; its python.  `venv --system-site-packages` alone links the new venv to the
    base interpreter (Python makes a venv from `sys._base_executable`), so when the tests run
    in a venv it would miss that venv's packages (psutil, TensorFlow, pip); a .pth file in
    the new venv's site-packages adds every site-packages folder of this environment that the
    base interpreter does not have.  Run system-wide, there is none."""
    run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv], venv.parent
    )
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    purelib = "import sysconfig; print(sysconfig.get_path('purelib'))"
    own = Path(run([python, "-c", purelib], venv.parent).stdout.strip())
    base = set(site.getsitepackages([sys.base_prefix]))
    folders = [folder for folder in site.getsitepackages() if folder not in base]
    if site.ENABLE_USER_SITE and os.path.isdir(site.getusersitepackages()):
        folders.append(site.getusersitepackages())  # a venv never reads the user's folder
    (own / "parent-environment.pth").write_text("".join(f"{folder}\n" for folder in folders))
    return python


FINDS_THE_MODELS = """
import sys, gamegym
from gamegym.presets import INITIAL_MODELS, PRESETS, starter_model
assert gamegym.__file__.startswith(sys.prefix), gamegym.__file__   # the venv's copy
found = {name: str(starter_model(name)) for name in PRESETS}
assert all(path.startswith(sys.prefix) for path in found.values()), found
print(sorted(found))
"""
TRIAL_RUN_FINDS_ITS_MODEL = """
import runpy, sys
trial = runpy.run_path(sys.argv[1], run_name="trialrun")
config = trial["trial_config"]()
print(trial["initial_model_path"](config.game, config.game_args, config.network))
"""


@pytest.mark.slow
def test_a_wheel_installed_in_a_fresh_venv_finds_every_starter_model(tmp_path):
    source = tmp_path / "source"  # a copy, so the build leaves no build/ in the checkout
    source.mkdir()
    for name in ("setup.cfg", "pyproject.toml", "README.md", "LICENSE", "script_trialrun.py"):
        shutil.copy(ROOT / name, source / name)
    for package in ("gamegym", "games"):
        shutil.copytree(
            ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--no-cache-dir",
            "-w",
            tmp_path / "dist",
            ".",
        ],
        cwd=source,
    )
    (wheel,) = (tmp_path / "dist").glob("gamegym-*.whl")
    with zipfile.ZipFile(wheel) as archive:  # the licence setup.cfg names travels with it
        assert [n for n in archive.namelist() if ".dist-info/" in n and n.endswith("/LICENSE")]
    venv = tmp_path / "venv"
    python = venv_seeing_these_packages(venv)
    # pip from this environment's site-packages installs into the venv; -I leaves this
    # environment's own gamegym (editable or not) alone
    run(
        [python, "-m", "pip", "install", "--no-deps", "--no-index", "--no-cache-dir", "-I", wheel],
        cwd=tmp_path,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    found = run([python, "-c", FINDS_THE_MODELS], cwd=elsewhere).stdout
    assert found.strip() == str(sorted(PRESETS))
    listed = run([python, "-m", "gamegym", "presets", "--json"], cwd=elsewhere).stdout
    rows = json.loads(listed)
    for name in STARTERS:
        assert Path(rows[name]["starter_model"]).is_relative_to(venv), rows[name]
    model = run(
        [python, "-c", TRIAL_RUN_FINDS_ITS_MODEL, source / "script_trialrun.py"], cwd=elsewhere
    ).stdout.strip()
    assert Path(model).is_relative_to(venv) and Path(model).name == "tictactoe.keras"


@pytest.mark.parametrize(
    "presets, message",
    [
        (
            [("x-on-nothing", "nothing")],
            "preset 'x-on-nothing' changes the preset 'nothing', which is not known",
        ),
        (
            [("x-a", "x-b"), ("x-b", "x-a")],
            r"preset 'x-a': its bases go round in a circle \('x-a' again\)",
        ),
        ([("x-no-game", None)], "preset 'x-no-game' names no game and no base preset"),
    ],
)
def test_a_preset_that_cannot_be_made_whole_is_named(presets, message):
    from gamegym.learners import Preset, register_preset
    from gamegym.registry import PRESETS as REGISTRY

    try:
        for name, base in presets:
            register_preset(Preset(name, {"seed": 1}, "a broken preset", base=base))
        with pytest.raises(ValueError, match=message):
            get_preset(presets[0][0])
    finally:
        for name, _ in presets:
            REGISTRY.unregister(name)
    assert get_preset("tictactoe")["game"] == TICTACTOE  # the others are unharmed
