"""Bad input gets a clear error naming the problem, and leaves no half-made session."""

import json
import os
import random
import re
import signal
import subprocess
import sys
import time

import pytest
from conftest import create_session, gamegym

from gamegym.data.samplefolder import sample_files
from gamegym.data.samples import read_sample_file


@pytest.mark.parametrize(
    "game,message",
    [
        ("games.nosuchgame:Game", "cannot import module 'games.nosuchgame'"),
        ("games.tictactoe:NoSuchClass", "module 'games.tictactoe' has no class 'NoSuchClass'"),
        ("numpy:ndarray", "'numpy:ndarray' is not a gamegym.GameGraph subclass"),
        ("tictactoe", "must look like 'package.module:ClassName'"),
    ],
)
@pytest.mark.slow
def test_new_with_a_bad_game(tmp_path, game, message):
    done = gamegym("new", str(tmp_path / "s"), "--game", game)
    assert done.returncode == 2 and message in done.stderr
    assert not (tmp_path / "s" / "config.json").exists()


@pytest.mark.slow
def test_new_with_bad_game_arguments_and_bad_config(tmp_path):
    done = gamegym(
        "new",
        str(tmp_path / "s"),
        "--game",
        "games.santorini:Santorini",
        "--game-args",
        '{"dimension": 9}',
    )
    assert done.returncode == 2 and "dimension" in done.stderr
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"selfplay": {"search": {"searchcont": 5}}}))
    done = gamegym(
        "new", str(tmp_path / "s"), "--game", "games.tictactoe:TicTacToe", "--config", str(config)
    )
    assert done.returncode == 2
    assert (
        "unknown config field 'selfplay.search.searchcont'; did you mean "
        "'selfplay.search.searchcount'?" in done.stderr
    )
    assert not (tmp_path / "s").exists()


def test_load_game_names_the_argument_a_game_refuses():
    from gamegym.game.graph import GameSpecError, load_game

    with pytest.raises(
        GameSpecError,
        match=r"cannot build games.santorini:Santorini with "
        r"arguments \{\"dimension\": 9\}: Santorini dimension must be an integer",
    ):
        load_game("games.santorini:Santorini", {"dimension": 9})
    with pytest.raises(GameSpecError, match="unexpected keyword argument 'size'"):
        load_game("games.tictactoe:TicTacToe", {"size": 4})


@pytest.mark.slow
def test_resume_of_a_missing_or_foreign_folder(tmp_path):
    done = gamegym("resume", str(tmp_path / "missing"))
    assert done.returncode == 2 and "no session folder at" in done.stderr
    (tmp_path / "plain").mkdir()
    done = gamegym("status", str(tmp_path / "plain"))
    assert done.returncode == 2 and "is not a gamegym session (no config.json)" in done.stderr


@pytest.mark.slow
def test_model_that_does_not_fit_the_game_and_session_of_another_game(tmp_path):
    from gamegym import ConfigError, GameGym, GameRef, GymConfig, GymError
    from gamegym.presets import INITIAL_MODELS
    from games.connectfour import ConnectFour
    from games.tictactoe import TicTacToe

    def game_of(graph):  # a graph built here enters a session by its reference
        return GymConfig.from_dict(GameRef.of(graph).settings())

    with pytest.raises(
        GymError,
        match=r"model input shape \(6, 7, 2\) does not match numpify "
        r"shape \(3, 3, 2\) of TicTacToe",
    ):
        GameGym(
            tmp_path / "a",
            config=game_of(TicTacToe()),
            initial_model=INITIAL_MODELS / "connectfour.keras",
        )
    assert not (tmp_path / "a" / "config.json").exists()
    GameGym(tmp_path / "b", config=game_of(TicTacToe()))
    with pytest.raises(
        ConfigError,
        match=r"config field 'game' cannot change on resume \(session has 'games.tictactoe:",
    ):
        GameGym(tmp_path / "b", config=game_of(ConnectFour()))
    done = gamegym("new", str(tmp_path / "b"), "--game", "games.tictactoe:TicTacToe")
    assert done.returncode == 2 and "already exists" in done.stderr


UNGUARDED = """
import sys
from gamegym import GameGym, GymConfig
config = GymConfig(game="games.tictactoe:TicTacToe",
                   selfplay={"selfplayprocesses": 1,
                             "search": {"threads": 4, "searchcount": 16}})
sys.exit(GameGym(sys.argv[1], config=config).resume(max_seconds=60, console=False))
"""


@pytest.mark.slow
def test_script_without_a_main_guard_is_told_so_and_stops(tmp_path):
    """spawn runs the main script again in every child: the gym made there names the fix,
    whether the script creates the session (its first model is made in a child) or resumes it."""
    script = tmp_path / "unguarded.py"
    script.write_text(UNGUARDED)
    fix = 'put the code that starts the gym under `if __name__ == "__main__":`'
    session = tmp_path / "s"

    def run_script():
        return subprocess.run(
            [sys.executable, str(script), str(session)],
            capture_output=True,
            text=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )

    done = run_script()
    assert done.returncode == 1, done.stderr[-2000:]
    assert fix in done.stderr
    assert "the process making the first model of " in done.stderr
    assert not session.exists()  # no half-made session

    create_session(session, "games.tictactoe:TicTacToe", {})  # as `gamegym new` makes it
    done = run_script()
    assert done.returncode == 1, done.stderr[-2000:]
    assert fix in done.stderr
    # whichever child the supervisor sees die first (the Predictor or the Trainer, by timing)
    assert re.search(
        r"(predictor|trainer|selfplayer\S*) died \(exit code 1\); its error is on the "
        r"console above: it died before it opened its log",
        done.stdout,
    ), done.stdout
    assert json.loads((session / "config.json").read_text())["game"] == "games.tictactoe:TicTacToe"
    assert not (session / "session.lock").exists()  # the session is whole and not locked


WRITER = """
import sys, numpy as np
from pathlib import Path
from gamegym.data.samples import GameRecord, write_sample_file
folder, i = Path(sys.argv[1]), 0
rng = np.random.default_rng(0)
print("ready", flush=True)
while True:
    record = GameRecord(result=1.0)
    for step in range(200):
        record.x.append(rng.random((6, 7, 2), dtype=np.float32))
        record.pi.append(np.full(7, 1 / 7, np.float32))
        record.action.append(0)
        record.root_value.append(0.0)
        record.legal.append(np.ones(7, bool))
    write_sample_file(folder / "0" / f"w-{i:06d}.npz", [record])
    i += 1
"""


@pytest.mark.slow
def test_sigkill_of_a_writer_at_random_moments_leaves_only_whole_files(tmp_path):
    rng = random.Random(0)
    for _ in range(8):
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True
        )
        assert writer.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.05, 0.6))
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
        writer.stdout.close()
    files = sample_files(tmp_path, 0)
    assert len(files) >= 5
    for path in files:
        assert len(read_sample_file(path)["z"]) == 200


MODEL_WRITER = """
import sys, time
from gamegym.presets import INITIAL_MODELS
from gamegym.data.session import Session


class SlowModel:    # saves the starter model's bytes in small pieces, as a real save does
    data = (INITIAL_MODELS / "tictactoe.keras").read_bytes()

    def save(self, path):
        with open(path, "wb") as handle:
            for i in range(0, len(self.data), 4096):
                handle.write(self.data[i:i + 4096])
                handle.flush()
                time.sleep(0.0005)


session = Session(sys.argv[1])
session.models_dir.mkdir(parents=True, exist_ok=True)
# as the Trainer does: a model file past current.json is an unfinished publish, written again
iteration = session.current_iteration() + 1
print("ready", flush=True)
while True:
    session.publish_model(SlowModel(), iteration)
    iteration += 1
"""


@pytest.mark.slow
def test_sigkill_of_a_model_publisher_at_random_moments_leaves_only_whole_models(tmp_path):
    from gamegym.data.session import Session
    from gamegym.presets import INITIAL_MODELS

    rng = random.Random(1)
    for _ in range(10):
        writer = subprocess.Popen(
            [sys.executable, "-c", MODEL_WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True
        )
        assert writer.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.02, 0.3))
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
        writer.stdout.close()
    session = Session(tmp_path)
    iterations = session.model_iterations()
    assert len(iterations) >= 10
    assert iterations == list(range(len(iterations)))  # no gap: each kill lost at most one
    whole = (INITIAL_MODELS / "tictactoe.keras").read_bytes()
    for iteration in iterations:  # every visible model is all there
        assert session.model_path(iteration).read_bytes() == whole
        assert session.model_is_sound(iteration)
    current = json.loads((session.models_dir / "current.json").read_text())  # whole, too
    assert current["iteration"] in (iterations[-1], iterations[-1] - 1)  # killed before it moved
    leftovers = list(tmp_path.rglob(".*.tmp*"))  # a killed save's temporary file ...
    assert leftovers  # (some kill did land mid-save)
    assert session.tidy() == len(leftovers)  # ... is removed at the next start
    assert not list(tmp_path.rglob(".*.tmp*"))
