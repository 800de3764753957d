"""What a user sees on the console, and which processes carry TensorFlow: one clear line for a
real problem, and no TensorFlow in the status, check and new commands (a gym's quiet start, with
TensorFlow in its Trainer only, is checked on its first resume in tests/runtime/test_gym_e2e.py,
with `assert_quiet_start`)."""

import json
import subprocess
import sys
import zipfile

import pytest
from conftest import TICTACTOE, user_env

from gamegym.nets.tfsetup import gpu_problem, load_model

SHOW_MODULES = """
import sys
from gamegym.cli.main import main
assert main(sys.argv[2:]) == 0
print("tensorflow imported:", "tensorflow" in sys.modules)
"""


@pytest.mark.slow
@pytest.mark.parametrize("command", ["status", "check", "new", "evaluate"])
def test_status_check_new_and_evaluate_do_not_import_tensorflow(new_session, tmp_path, command):
    """`evaluate` plays the model from its fast-path file, as the Predictor loads it."""
    args = {
        "status": [str(new_session())],
        "evaluate": [
            str(new_session("rated")),
            "--opponent",
            "random",
            "--games",
            "2",
            "--searchcount",
            "4",
        ],
        "check": ["--game", TICTACTOE, "--games", "3"],
        "new": [str(tmp_path / "fresh"), "--game", TICTACTOE],
    }[command]
    done = subprocess.run(
        [sys.executable, "-c", SHOW_MODULES, "-", command, *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=user_env(),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "tensorflow imported: False"
    assert done.stderr == "", done.stderr
    if command == "new":  # the first model was made (in a child process) all the same
        assert (
            json.loads((tmp_path / "fresh" / "models" / "current.json").read_text())["iteration"]
            == 0
        )


def test_a_missing_gpu_is_one_line_only_when_one_was_expected():
    assert gpu_problem(True, 0, 0, driver_present=False) is None  # a plain CPU machine
    assert gpu_problem(False, 0, 0, driver_present=True) is None  # the CPU was asked for
    assert gpu_problem(True, 0, 1, driver_present=True) is None  # the GPU is seen
    limit = gpu_problem(True, 2048, 0, driver_present=False)
    assert "predict.gpu_memorylimit is 2048 MiB but TensorFlow sees no GPU" in limit
    driver = gpu_problem(True, 0, 0, driver_present=True)
    assert "NVIDIA driver but TensorFlow sees no GPU" in driver
    assert "\n" not in limit + driver


def test_a_model_file_that_does_not_load_is_one_line(tmp_path):
    path = tmp_path / "broken.keras"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("config.json", '{"class_name": "NoSuchLayer", "config": {}}')
        archive.writestr("metadata.json", "{}")
    with pytest.raises(ValueError) as error:
        load_model(path)
    message = str(error.value)
    assert message.startswith(f"cannot load model file {path}: ") and "\n" not in message
