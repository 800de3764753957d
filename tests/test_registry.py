"""The registries (gamegym.registry): what a config names is looked up there, and a learner
from outside the package joins the gym by registering itself."""

import json
import os
from pathlib import Path

import pytest
from conftest import SMALL, TICTACTOE, gamegym, merged

from gamegym.cli.main import main
from gamegym.cli.presets import new_session_settings
from gamegym.config import ConfigError, GymConfig
from gamegym.presets import get_preset, learner_presets, preset_for, starter_model
from gamegym.registry import BACKENDS, LEARNERS, REPLAYS, SEARCHES, Registry, RegistryError


def test_the_built_in_implementations_register_themselves():
    # (the toy learner of the test folder may have joined them in this process)
    assert {"alphazero", "bootstrapped", "muzero"} <= set(LEARNERS.names())
    assert set(REPLAYS.names()) == {"window", "uniform", "prioritized", "curious"}
    assert set(BACKENDS.names()) == {"processes", "ray"}
    assert "puct" in SEARCHES
    for name, cls in LEARNERS.items():
        assert cls.name == name


def test_the_names_a_registry_declares_are_those_its_providers_register():
    """A declared name is known without importing the providers (`knows`), so it must be one
    they register; a name not declared is looked up as before."""
    for registry in (LEARNERS, REPLAYS, BACKENDS, SEARCHES):
        assert registry.declared <= set(registry.names()), registry.kind
    fresh = Registry("thing", "x.thing", providers=("no.such.module",), declared=("a",))
    assert fresh.knows("a") and not fresh._loaded  # answered without importing anything
    with pytest.raises(ModuleNotFoundError):
        fresh.knows("b")  # an undeclared name loads the providers


def test_an_unknown_name_is_refused_with_the_known_ones():
    with pytest.raises(ConfigError, match=r"'train.learner' must be one of \['alphazero'"):
        GymConfig(game=TICTACTOE, train={"learner": "alfazero"})
    with pytest.raises(
        RegistryError,
        match="unknown replay 'curios' \\(did you mean 'curious'\\?\\); known replays: curious, ",
    ):
        REPLAYS.get("curios")
    with pytest.raises(ConfigError, match="'selfplay.backend' must be one of"):
        GymConfig(game=TICTACTOE, selfplay={"backend": "slurm"})


def test_a_name_is_registered_once():
    registry = Registry("widget", "x.widget")

    @registry.register
    class Widget:
        name = "w"

    registry.register(Widget)  # the same class again: fine
    with pytest.raises(ValueError, match="widget 'w' is registered already"):
        registry.register(type("Other", (), {"name": "w"}))
    with pytest.raises(ValueError, match="needs a non-empty string name"):
        registry.register(type("Nameless", (), {}))
    assert registry.names() == ["w"] and registry.get("w") is Widget


def test_a_capability_is_declared_at_registration_and_inherited_by_a_subclass():
    registry = Registry("widget", "x.widget")

    @registry.register
    class Plain:
        name = "plain"

    registry.register(type("Fast", (Plain,), {"name": "fast"}), speed=3, paths=True)
    fast = registry.get("fast")
    registry.register(type("Faster", (fast,), {"name": "faster"}), speed=5)
    registry.register(fast)  # the same class again keeps what it declared
    assert registry.capability("plain", "speed", 1) == 1  # declared nothing: the default
    assert registry.capability("fast", "speed") == 3 and registry.capability("fast", "paths")
    assert registry.capability("faster", "speed") == 5  # its own declaration first
    assert registry.capability("faster", "paths") is True  # then its base class's
    assert registry.capability("faster", "colour") is None
    with pytest.raises(RegistryError, match="unknown widget 'slow'"):
        registry.capability("slow", "speed")
    registry.unregister("fast")
    assert registry.capability("faster", "paths", False) is False  # forgotten with its class


def test_a_plugin_that_cannot_be_imported_is_named():
    with pytest.raises(ConfigError, match="'plugins': cannot import module 'no_such_plugin'"):
        GymConfig(game=TICTACTOE, plugins=["no_such_plugin"])


def test_a_learner_from_the_test_folder_registers_and_validates_its_own_section():
    config = GymConfig.from_dict(
        {
            "game": TICTACTOE,
            "plugins": ["toylearner"],
            "train": {"learner": "toy"},
            "toy": {"smoothing": 0.3},
        }
    )
    assert config.learner_config.smoothing == 0.3
    assert config.to_dict()["toy"] == {"smoothing": 0.3}
    assert GymConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ConfigError, match="'toy.smoothing' must be in"):
        GymConfig.from_dict(
            {
                "game": TICTACTOE,
                "plugins": ["toylearner"],
                "train": {"learner": "toy"},
                "toy": {"smoothing": 2},
            }
        )
    with pytest.raises(
        ConfigError, match="unknown config field 'toy.smothing'; did you mean 'toy.smoothing'"
    ):
        GymConfig.from_dict(
            {
                "game": TICTACTOE,
                "plugins": ["toylearner"],
                "train": {"learner": "toy"},
                "toy": {"smothing": 0.2},
            }
        )
    with pytest.raises(ConfigError, match="'toy.smoothing' 1 with train.value_loss_weight 0"):
        GymConfig.from_dict(
            {
                "game": TICTACTOE,
                "plugins": ["toylearner"],
                "train": {"learner": "toy", "value_loss_weight": 0.0},
                "toy": {"smoothing": 1.0},
            }
        )


def test_a_learner_from_the_test_folder_ships_a_preset(capsys):
    import toylearner  # registers the learner and its preset, as a plug-in's import does

    preset, base = get_preset("tictactoe-toy"), get_preset("tictactoe")
    assert preset == {
        **base,
        "plugins": ["toylearner"],
        "train": {**base["train"], "learner": "toy"},
        "toy": {"smoothing": 0.2},
    }
    assert "toy" in learner_presets()
    assert preset_for(TICTACTOE, {}, "toy") == ("tictactoe-toy", preset)
    assert preset_for(TICTACTOE, {}, "alphazero")[0] == "tictactoe"  # the base stays itself
    assert starter_model("tictactoe-toy") is None  # it ships no starter model
    config, model = new_session_settings("tictactoe-toy", None, None, None)
    assert isinstance(config.learner_config, toylearner.ToyConfig)
    assert (config.train.learner, config.learner_config.smoothing, model) == ("toy", 0.2, None)
    assert config.selfplay.search.searchcount == base["selfplay"]["search"]["searchcount"]
    assert main(["presets", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["tictactoe-toy"]
    assert (row["game"], row["learner"], row["starter_model"]) == (TICTACTOE, "toy", None)
    assert row["about"].startswith("the toy learner on tic-tac-toe")


@pytest.mark.slow
def test_a_session_trains_and_resumes_with_a_learner_from_the_test_folder(tmp_path):
    config = merged(
        SMALL, {"plugins": ["toylearner"], "train": {"learner": "toy"}, "toy": {"smoothing": 0.25}}
    )
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(config))
    session = tmp_path / "toy"
    # the command line runs outside the test folder: the plug-in's folder on PYTHONPATH, as a
    # user's own package would be installed
    env = {**os.environ}
    env["PYTHONPATH"] += os.pathsep + str(Path(__file__).parent)
    done = gamegym("new", session, "--game", TICTACTOE, "--config", path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    done = gamegym("resume", session, "--max-iterations", 2, env=env)  # the plug-in reloaded
    assert done.returncode == 0, done.stdout + done.stderr
    stored = json.loads((session / "config.json").read_text())
    assert stored["train"]["learner"] == "toy" and stored["toy"] == {"smoothing": 0.25}
    reports = [json.loads(p.read_text()) for p in sorted((session / "train").glob("*.json"))]
    assert [r["learner"] for r in reports] == ["toy", "toy"]
    assert (session / "models" / "2.keras").is_file()
