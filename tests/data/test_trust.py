"""Code from a session folder runs only with the user's consent (gamegym.data.trust): the
commands that read a session import none of its plugins, `serve`, `evaluate` and `continue`
import a game that is not bundled only for a folder allowed here, a folder made here resumes
without a question and says what it imports first, and a folder from elsewhere that names
modules not bundled with gamegym is refused until `--trust`."""

from __future__ import annotations

import json
import shutil
import sys
import uuid
from pathlib import Path

import pytest
from conftest import SMALL, TICTACTOE, create_session, gamegym, merged

from gamegym.cli.main import main
from gamegym.config import ConfigError, GymConfig
from gamegym.data.session import Session, SessionError
from gamegym.data.trust import (
    UntrustedCodeError,
    is_bundled,
    read_session,
    session_code,
    trusted_modules,
)
from gamegym.runtime.continuation import continue_session
from gamegym.runtime.gym import GameGym


def code_module(folder: Path, body: str = "") -> tuple[str, Path]:
    """A module of a name of its own in `folder` that, when imported, writes a marker file and
    prints a line; (its name, the marker)."""
    name = f"consent_{uuid.uuid4().hex[:12]}"
    marker = folder / f"{name}.imported"
    (folder / f"{name}.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nprint('MODULE {name} RAN', flush=True)\n{body}"
    )
    return name, marker


def set_config(session: Path, **changes) -> None:
    path = session / "config.json"
    path.write_text(json.dumps(merged(json.loads(path.read_text()), changes)))


@pytest.fixture
def code_folder(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "code"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    return folder


def test_status_serve_and_evaluate_import_no_plugin(new_session, code_folder, capsys):
    from gamegym.serve import create_app

    session = new_session()
    plugin, marker = code_module(code_folder)
    set_config(session, plugins=[plugin, "this"])  # "this" prints the Zen of Python
    assert main(["status", str(session)]) == 0
    out = capsys.readouterr().out
    assert f"plugin {plugin} from {code_folder / plugin}.py" in out
    assert f"not allowed for this folder yet: {plugin}, this" in out
    create_app(session)  # the page loads the game (bundled) and nothing else
    code = main(["evaluate", str(session), "--games", "2", "--searchcount", "4", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert json.loads(out.out)["games"] == 2
    assert not marker.exists() and plugin not in sys.modules
    assert "Zen of Python" not in out.out + out.err


def test_a_config_read_without_its_plugins_keeps_what_only_they_could_register():
    data = {
        "game": TICTACTOE,
        "plugins": ["absent_plugin"],
        "train": {"learner": "nosuch", "replay": "mine"},
        "nosuch": {"depth": 3},
    }
    with pytest.raises(ConfigError, match="cannot import module 'absent_plugin'"):
        GymConfig.from_dict(data)
    config = GymConfig.from_dict(data, plugins=False)
    assert not config.runs_plugins
    assert config.unregistered() == ["train.learner 'nosuch'", "train.replay 'mine'"]
    assert config.to_dict()["nosuch"] == {"depth": 3}
    assert config.updated({"seed": 3}).unregistered() == config.unregistered()
    with pytest.raises(ConfigError, match="cannot import module 'absent_plugin'"):
        config.with_plugins()
    with pytest.raises(ConfigError, match="not an importable module name"):
        GymConfig.from_dict({**data, "plugins": ["../evil"]}, plugins=False)


def test_a_command_that_reads_a_session_refuses_a_learner_only_a_plugin_registers(
    new_session, capsys
):
    session = new_session()
    set_config(session, plugins=["absent_plugin"], train={"learner": "nosuch"})
    with pytest.raises(SessionError, match="train.learner 'nosuch', which only its plugins"):
        read_session(session, "serve")
    assert main(["evaluate", str(session)]) == 2
    assert "'gamegym evaluate' imports no plugin of a session folder" in capsys.readouterr().err


def test_a_game_that_is_not_bundled_is_imported_for_a_folder_from_elsewhere_only_with_trust(
    new_session, code_folder, capsys, tmp_path
):
    from gamegym.serve import create_app

    session = new_session()  # a copy: made elsewhere as far as this machine knows
    game, marker = code_module(code_folder, "from games.tictactoe import TicTacToe as Game\n")
    set_config(session, game=f"{game}:Game")
    with pytest.raises(UntrustedCodeError) as refused:
        create_app(session)
    message = str(refused.value)
    assert f"game module {game} (from {code_folder / game}.py)" in message
    assert "'gamegym serve' again with --trust" in message
    assert main(["evaluate", str(session)]) == 2
    assert "--trust" in capsys.readouterr().err
    with pytest.raises(UntrustedCodeError, match=game):
        continue_session(session, tmp_path / "next")
    assert not (tmp_path / "next").exists()
    assert not marker.exists()
    create_app(session, trust=True)  # allowed, and remembered for the folder
    assert marker.exists() and trusted_modules(session) == {game}
    read_session(session, "serve")  # no flag needed any more


def test_a_folder_from_elsewhere_is_refused_and_one_made_here_says_what_it_imports(
    tmp_path, code_folder, capsys
):
    plugin, marker = code_module(code_folder)
    made = create_session(tmp_path / "made", TICTACTOE, merged(SMALL, {"plugins": [plugin]}))
    assert trusted_modules(made) == {plugin}  # made here: the maker chose its modules
    del sys.modules[plugin]  # as a new process would find it
    marker.unlink()
    capsys.readouterr()
    GameGym(made)
    out = capsys.readouterr().out
    line = "[gamegym] imports game games.tictactoe (bundled) from "
    assert line in out and f"plugin {plugin} from {code_folder / plugin}.py" in out
    assert out.index(line) < out.index(f"MODULE {plugin} RAN")  # named, then imported
    del sys.modules[plugin]
    marker.unlink()
    copied = tmp_path / "copied"
    shutil.copytree(made, copied)
    assert main(["resume", str(copied)]) == 2
    err = capsys.readouterr().err
    assert f"plugin {plugin} (from {code_folder / plugin}.py)" in err
    assert "'gamegym resume' again with --trust" in err
    assert not marker.exists() and not Session(copied).lock_path.exists()
    asked = []
    with pytest.raises(UntrustedCodeError):
        GameGym(copied, ask=lambda question: asked.append(question) or False)
    assert plugin in asked[0] and not marker.exists()
    GameGym(copied, ask=lambda question: True)  # a yes at the console
    assert marker.exists() and trusted_modules(copied) == {plugin}


def test_only_gamegym_s_own_packages_in_this_installation_are_bundled(tmp_path):
    code = session_code(TICTACTOE, ["gamegym.learners.alphazero"])
    assert code.foreign() == []
    assert not is_bundled("games.tictactoe", str(tmp_path / "games" / "tictactoe.py"))
    assert not is_bundled("gamesx.tictactoe", code.origins[code.game])
    assert session_code(TICTACTOE, ["no_such_module_here"]).foreign() == ["no_such_module_here"]


@pytest.mark.slow
def test_resume_runs_a_folder_from_elsewhere_with_trust(tmp_path, code_folder):
    import os

    plugin, marker = code_module(code_folder)
    made = create_session(tmp_path / "made", TICTACTOE, merged(SMALL, {"plugins": [plugin]}))
    copied = tmp_path / "copied"
    shutil.copytree(made, copied)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(code_folder), os.environ["PYTHONPATH"]]),
    }
    marker.unlink()
    done = gamegym("resume", copied, "--max-iterations", 1, env=env, timeout=300)
    assert done.returncode == 2 and "--trust" in done.stderr and not marker.exists()
    done = gamegym("resume", copied, "--max-iterations", 1, "--trust", env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.index(f"plugin {plugin} from") < done.stdout.index(f"MODULE {plugin} RAN")
    assert marker.exists() and (copied / "models" / "1.keras").is_file()
    done = gamegym("status", copied, env=env, timeout=120)  # allowed now: nothing to say
    assert "not allowed" not in done.stdout and f"MODULE {plugin} RAN" not in done.stdout
