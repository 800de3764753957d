"""A full disk, for real: a small tmpfs that fills up (needs root to mount; skipped otherwise)
and a file-size limit (RLIMIT_FSIZE, any user), which makes the kernel refuse writes."""

import json
import resource
import subprocess
import zipfile

import pytest
from conftest import gamegym

from gamegym.data.samples import read_sample_file

pytestmark = pytest.mark.slow

SMALL = {
    "selfplay": {
        "selfplayprocesses": 1,
        "search": {"threads": 4, "searchcount": 16},
        "gamelog_dump_threshold": 2,
    },
    "train": {"min_samplecount": 60, "min_new_samples": 60, "epochs": 1, "batchsize": 32},
    "status_interval": 1.0,
}
TICTACTOE = "games.tictactoe:TicTacToe"


@pytest.fixture
def small_disk(tmp_path):
    """A 16 MiB tmpfs mounted for this test (the tests fill it up to what they leave free; a
    resumed gym's Selfplayers, which need no TensorFlow, write games from the first second,
    while its Trainer starts TensorFlow: the room left after the filler goes covers that)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or 'not root'})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(mount, leave_bytes):
    """Fill the disk with a filler file until about `leave_bytes` are free."""
    import shutil

    free = shutil.disk_usage(mount).free
    filler = mount / "filler"
    with open(filler, "wb") as handle:
        handle.write(b"\0" * max(0, free - leave_bytes))
    return filler


def test_new_on_a_full_disk_names_it_and_leaves_no_folder(small_disk):
    fill(small_disk, 16 * 1024)  # less than the starter model
    done = gamegym("new", str(small_disk / "s"), "--game", TICTACTOE)
    assert done.returncode == 2
    assert "is full" in done.stderr and "No space left on device" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (small_disk / "s").exists()  # no half-made session


def test_new_under_a_file_size_limit_names_it_and_leaves_no_folder(tmp_path):
    # any file past 1 KiB: the kernel refuses the write (EFBIG) of the session's config, the
    # first file `new` writes (a full disk while the first model is written is the test above)
    def limit():
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    done = gamegym("new", str(tmp_path / "s"), "--game", TICTACTOE, preexec_fn=limit)
    assert done.returncode == 2
    assert "is full" in done.stderr and "File too large" in done.stderr
    assert not (tmp_path / "s").exists()


def test_gym_that_fills_the_disk_stops_cleanly_and_resumes_once_there_is_room(small_disk):
    import tensorflow  # noqa: F401 - the first model is made here, not in a child process

    from gamegym import GameGym, GymConfig

    session = small_disk / "s"  # made in this process (the two tests above run `gamegym new`)
    GameGym(session, config=GymConfig.from_dict({"game": TICTACTOE, **SMALL}))
    filler = fill(small_disk, 300 * 1024)  # room for a few models and sample files

    stopped = gamegym("resume", str(session), "--max-seconds", "200")
    output = stopped.stdout + stopped.stderr
    assert stopped.returncode == 1, output
    assert "stopped with an error" in output and "is full" in output
    assert "gamegym resume" in output  # tells what to do next
    assert not (session / "session.lock").exists()
    assert not list(session.rglob(".*.tmp*"))  # no half-written file is left
    for path in (session / "samples").glob("*/*.npz"):  # every published file loads
        read_sample_file(path)
    current = json.loads((session / "models" / "current.json").read_text())
    for path in (session / "models").glob("*.keras"):
        assert zipfile.ZipFile(path).testzip() is None
    assert (session / "models" / current["file"]).exists()
    samples_before = set((session / "samples").glob("*/*.npz"))

    filler.unlink()
    resumed = gamegym("resume", str(session), "--max-iterations", "1")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    after = json.loads((session / "models" / "current.json").read_text())
    assert after["iteration"] == current["iteration"] + 1
    assert samples_before <= set((session / "samples").glob("*/*.npz"))
