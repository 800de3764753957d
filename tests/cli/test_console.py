"""What a user sees on the console, and which processes carry TensorFlow: a quiet start (no
TensorFlow, CUDA or absl line), one clear line for a real problem, and no TensorFlow in the gym's
own process, the Selfplayers, the Predictor on the CPU fast path or the status, check and new
commands."""

import json
import re
import subprocess
import sys
import zipfile

import pytest
from conftest import TICTACTOE, gamegym, user_env

from gamegym.nets.tfsetup import gpu_problem, load_model

# what TensorFlow, CUDA, XLA, oneDNN and absl print at start-up on a machine without a GPU
NOISE = re.compile(
    r"tensorflow|absl|cuda|cuInit|cudart|oneDNN|XLA|cpu_feature_guard|"
    r"^[IWE]\d{4} |StreamExecutor|TF_ENABLE",
    re.IGNORECASE | re.MULTILINE,
)


@pytest.mark.slow
def test_resume_prints_no_tensorflow_noise_and_only_the_trainer_imports_it(new_session):
    session = new_session()
    # until an iteration is trained: every role has started and worked (a time limit could
    # stop the gym before a Selfplayer, slow to start on a loaded machine, got going)
    done = gamegym("resume", session, "--max-iterations", "1", env=user_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == "", done.stderr
    assert not NOISE.search(done.stdout), done.stdout
    logs = {
        role: (session / "logs" / f"{role}.log").read_text()
        for role in ("gym", "selfplayer0", "predictor", "trainer")
    }
    # the Predictor on the CPU fast path reads the models' fast-path files: no TensorFlow
    for role in ("gym", "selfplayer0", "predictor"):
        assert f"{role} exiting (TensorFlow not imported)" in logs[role], logs[role][-2000:]
    # the start-up text is kept, in the log, at INFO
    assert "trainer exiting (TensorFlow imported)" in logs["trainer"]
    assert re.search(
        r"INFO \w+\[\d+\] gamegym\.tensorflow: .*(oneDNN|cuda|TensorFlow)", logs["trainer"]
    ), logs["trainer"][-2000:]


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
            "--against",
            "random",
            "--games",
            "2",
            "--searchcount",
            "4",
        ],
        "check": [TICTACTOE, "--games", "3"],
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
