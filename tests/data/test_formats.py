"""Format versions of what a session keeps: config.json, sample files, the replay state.

A config.json or replay state from a newer gamegym is refused with a message naming both
versions (never quarantined or rewritten); a sample file of a format it cannot read is one of
many: it is quarantined whole and the others load.  An older file (no version recorded =
version 1) is read as it is."""

import io
import json
import logging

import numpy as np
import pytest

from gamegym.config import GymConfig
from gamegym.data.formats import CONFIG_FORMAT, REPLAY_FORMAT, SAMPLE_FORMAT, FormatError
from gamegym.data.replaybuffer import ReplayBuffer, read_state
from gamegym.data.samplefolder import load_samples
from gamegym.data.samples import GameRecord, encode_sample_file, read_sample_file
from gamegym.data.session import Session, SessionError

CONFIG = GymConfig(game="games.tictactoe:TicTacToe")


def make_session(tmp_path):
    session = Session(tmp_path / "s")
    session.create(CONFIG)
    return session


def game(n=3):
    record = GameRecord()
    for i in range(n):
        record.x.append(np.full((3, 3, 2), i, np.float32))
        record.pi.append(np.full(9, 1 / 9, np.float32))
        record.action.append(i)
        record.root_value.append(0.0)
        record.legal.append(np.ones(9, bool))
    record.result = 1.0
    return record


def test_config_json_records_its_format_version(tmp_path):
    session = make_session(tmp_path)
    assert json.loads(session.config_path.read_text())["format_version"] == CONFIG_FORMAT
    assert session.load_config() == CONFIG


def test_a_config_json_without_a_version_is_version_1_and_loads(tmp_path):
    session = make_session(tmp_path)
    data = json.loads(session.config_path.read_text())
    del data["format_version"]  # as sessions made before versions were kept
    session.config_path.write_text(json.dumps(data))
    assert session.load_config() == CONFIG


def test_a_session_from_a_newer_gamegym_is_refused_naming_both_versions(tmp_path):
    session = make_session(tmp_path)
    data = json.loads(session.config_path.read_text())
    data["format_version"] = CONFIG_FORMAT + 1
    session.config_path.write_text(json.dumps(data))
    before = session.config_path.read_bytes()
    with pytest.raises(
        SessionError, match=f"format version {CONFIG_FORMAT + 1}.*up to {CONFIG_FORMAT}"
    ):
        session.load_config()
    assert session.config_path.read_bytes() == before


def write_npz(path, **arrays):
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    path.write_bytes(buffer.getvalue())


def test_sample_files_record_their_format_version(tmp_path):
    data, _ = encode_sample_file([game()])
    (tmp_path / "a.npz").write_bytes(data)
    with np.load(tmp_path / "a.npz") as npz:
        assert int(npz["format_version"]) == SAMPLE_FORMAT
    arrays = read_sample_file(tmp_path / "a.npz")
    assert len(arrays["z"]) == 3


def test_a_sample_file_without_a_version_is_version_1_and_loads(tmp_path):
    data, _ = encode_sample_file([game()])
    with np.load(io.BytesIO(data)) as npz:
        arrays = {k: npz[k] for k in npz.files if k != "format_version"}
    folder = tmp_path / "samples" / "0"
    folder.mkdir(parents=True)
    write_npz(folder / "old.npz", **arrays)
    batch = load_samples(tmp_path / "samples", 0, 100, tmp_path / "quarantine")
    assert len(batch) == 3 and batch.extra == {}


@pytest.mark.parametrize("version", [SAMPLE_FORMAT + 1, 999, "x", 0])
def test_a_sample_file_of_a_format_it_cannot_read_is_quarantined_whole_and_the_rest_loads(
    tmp_path, version, caplog
):
    """One file of a newer gamegym (or naming no valid version) among thousands: it is left
    out and moved, unchanged, to the quarantine (a newer gamegym can read it there), and the
    others load; it never stops the Trainer."""
    data, _ = encode_sample_file([game()])
    with np.load(io.BytesIO(data)) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["format_version"] = np.array(version)
    folder = tmp_path / "samples" / "0"
    folder.mkdir(parents=True)
    write_npz(folder / "new.npz", **arrays)
    before = (folder / "new.npz").read_bytes()
    (folder / "old.npz").write_bytes(data)
    message = "format version" + (f" {version}.*up to {SAMPLE_FORMAT}" if version == 999 else "")
    with pytest.raises(ValueError, match=message):
        read_sample_file(folder / "new.npz")
    with caplog.at_level(logging.WARNING):
        batch = load_samples(tmp_path / "samples", 0, 100, tmp_path / "quarantine")
    assert len(batch) == 3 and not (folder / "new.npz").exists()
    [kept] = (tmp_path / "quarantine").iterdir()
    assert kept.name.endswith("new.npz") and kept.read_bytes() == before
    assert "new.npz" in caplog.text and "format version" in caplog.text


def state_bytes(tmp_path, version=None):
    buffer = ReplayBuffer(tmp_path / "samples", 100, None)
    data = buffer.state({"iteration": 0})
    if version is None:
        return data
    with np.load(io.BytesIO(data)) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["version"] = np.int64(version)
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def test_the_replay_state_of_version_1_loads(tmp_path):
    assert REPLAY_FORMAT == 1
    assert read_state(state_bytes(tmp_path, 1))["meta"] == {"iteration": 0}


def test_a_replay_state_from_a_newer_gamegym_is_refused_naming_both_versions(tmp_path):
    with pytest.raises(
        FormatError, match=f"format version {REPLAY_FORMAT + 1}.*up to {REPLAY_FORMAT}"
    ):
        read_state(state_bytes(tmp_path, REPLAY_FORMAT + 1))


def test_a_copy_of_a_sessions_config_json_is_a_valid_config_file(tmp_path):
    session = make_session(tmp_path)
    assert GymConfig.from_json_file(session.config_path) == CONFIG
