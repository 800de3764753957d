"""The code a session folder names: `gamegym status` and `resume` say which module a session
will import and from where; a game module path that is not an importable module name is
refused before anything is imported."""

import json

import pytest
from conftest import gamegym

from gamegym.config import GymConfig
from gamegym.data.session import Session
from gamegym.game.graph import GameSpecError, game_module_origin, load_game


def test_the_origin_of_a_game_module_is_found_without_running_it(tmp_path, monkeypatch):
    package = tmp_path / "theirs"
    package.mkdir()
    marker = tmp_path / "ran"
    (package / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (package / "game.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert game_module_origin("theirs.game:Game") == str(package / "game.py")
    assert not marker.exists()
    assert game_module_origin("games.tictactoe:TicTacToe").endswith("tictactoe.py")
    with pytest.raises(GameSpecError, match="cannot find module 'theirs.nothing'"):
        game_module_origin("theirs.nothing:Game")


@pytest.mark.parametrize(
    "spec",
    [
        "/tmp/evil:Game",
        "../evil:Game",
        ".evil:Game",
        "games..tictactoe:TicTacToe",
        "~/evil:Game",
        "games/tictactoe:TicTacToe",
    ],
)
def test_a_game_module_path_that_is_not_a_module_name_is_refused(spec):
    with pytest.raises(GameSpecError, match="is not an importable module name"):
        load_game(spec)
    with pytest.raises(GameSpecError, match="is not an importable module name"):
        game_module_origin(spec)


@pytest.mark.slow
def test_status_and_resume_say_which_module_the_session_imports(tmp_path):
    session = Session(tmp_path / "s")
    session.create(GymConfig(game="games.tictactoe:TicTacToe"))
    done = gamegym("status", session.path, "--json", timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["game_module"].endswith("tictactoe.py")
    done = gamegym("status", session.path, timeout=120)
    assert "imports game games.tictactoe (bundled) from " in done.stdout
    assert "tictactoe.py" in done.stdout
    data = json.loads(session.config_path.read_text())
    data["game"] = "../../evil:Game"
    session.config_path.write_text(json.dumps(data))
    done = gamegym("resume", session.path, timeout=120)
    assert done.returncode != 0
    assert "is not an importable module name" in done.stderr
    assert not session.lock_path.exists()


def test_a_game_package_known_only_to_a_meta_path_finder_is_found(tmp_path, monkeypatch):
    """An editable install (`pip install -e .`) maps its packages through a finder on
    sys.meta_path, not through sys.path: a session of a bundled game resumes from any folder."""
    import importlib.machinery
    import sys

    package = tmp_path / "elsewhere" / "mapped"
    package.mkdir(parents=True)
    marker = tmp_path / "ran"
    (package / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (package / "game.py").write_text(f"open({str(marker)!r}, 'w').close()\n")

    class EditableFinder:  # what setuptools' editable finder does: a name -> its folder
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name != "mapped":
                return None
            return importlib.machinery.PathFinder.find_spec(name, [str(package.parent)])

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, EditableFinder()])
    assert game_module_origin("mapped.game:Game") == str(package / "game.py")
    assert not marker.exists()
