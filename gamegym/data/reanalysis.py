"""Reanalysed targets: a sample file's policy and value targets searched again by a newer model.

MuZero Reanalyze (Schrittwieser et al. 2021, "Online and Offline Reinforcement Learning by
Planning with a Learned Model"; EfficientZero's value-target refresh) runs the current model's
search again over stored positions.  A sample file never changes once published, so the new
targets go to a file of their own beside it, which replaces the one before each time the
sample file is reanalysed again:

  samples/<it>/<name>.npz              the sample file (gamegym.data.samples)
  samples/<it>/reanalysed/<name>.npz   its reanalysed targets, one row per sample:

  pi          float32 [N, A]  the new search's policy target over action ids (sums to 1)
  root_value  float32 [N]     the new search's value of each position, mover's view, in [-1, 1]
  iteration   int64   []      the model iteration that searched (the oldest, when a reload came
                              during the file)
  format_version int64 []     REANALYSIS_FORMAT

The file is written atomically (gamegym.data.fileio), whole or not at all: a reanalysis
stopped or killed part way leaves the targets before it, never half of a file's new ones.

The Trainer takes them where present (`apply_reanalysis`, called by `load_samples`): the new pi
replaces the stored one (a full search, so its policy_weight is 1 whatever the stored search
was), the new root values replace the stored ones, so the n-step value targets
(`train.value_td_steps`) bootstrap from the newer model's values, as EfficientZero's do, and
`value_target_mix` mixes in the newer value; a truncated game's value target, which
bootstraps from its last position's root value, is taken from the new one.  The game result
(the value target with `value_td_steps` 0) and the moves played are facts of the game and stay.

A reanalysis file that is damaged, of a newer format or does not fit its sample file (rows,
action count, values out of range) is left out with a warning and moved to the quarantine;
the sample file is trained on with its own targets.  The sample folders' readers never see
these files: `sample_files` lists a folder's own `.npz` files, not those of a subfolder.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gamegym.data.fileio import atomic_write_bytes
from gamegym.data.formats import FormatError, check_format

__all__ = [
    "REANALYSIS_FORMAT",
    "REANALYSIS_FOLDER",
    "Reanalysis",
    "reanalysis_path",
    "write_reanalysis",
    "read_reanalysis",
    "reanalysed_iteration",
    "apply_reanalysis",
]

REANALYSIS_FORMAT = 1
REANALYSIS_FOLDER = "reanalysed"  # the subfolder of a sample folder that holds them
SLACK = 1e-4  # float rounding of probabilities and values


@dataclass
class Reanalysis:
    """The targets of one sample file's positions searched again."""

    pi: np.ndarray  # float32 [N, A] the search's policy target
    root_value: np.ndarray  # float32 [N] the search's value, mover's view
    iteration: int  # the model iteration that searched


def reanalysis_path(sample_path: Path) -> Path:
    """Where the reanalysed targets of the sample file at `sample_path` are kept."""
    sample_path = Path(sample_path)
    return sample_path.parent / REANALYSIS_FOLDER / sample_path.name


def write_reanalysis(sample_path: Path, reanalysis: Reanalysis) -> Path:
    """Publish the reanalysed targets of a sample file atomically, in place of any before;
    returns the path written."""
    pi = np.asarray(reanalysis.pi, np.float32)
    values = np.clip(np.asarray(reanalysis.root_value, np.float32), -1.0, 1.0)
    if pi.ndim != 2 or values.shape != (len(pi),):
        raise ValueError(
            f"reanalysed targets need pi [N, A] and root_value [N], got {pi.shape} and "
            f"{values.shape}"
        )
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        pi=pi,
        root_value=values,
        iteration=np.int64(reanalysis.iteration),
        format_version=np.int64(REANALYSIS_FORMAT),
    )
    path = reanalysis_path(sample_path)
    atomic_write_bytes(path, buffer.getvalue())
    return path


def _load(path: Path) -> dict[str, np.ndarray]:
    try:
        with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError) as error:
        raise ValueError(f"damaged reanalysis file {path}: {error}") from error


def read_reanalysis(sample_path: Path, rows: int, actions: int) -> Reanalysis | None:
    """The reanalysed targets of the sample file at `sample_path`, which holds `rows` samples
    over `actions` action ids; None when it has none.  ValueError naming the problem when the
    file is damaged, of a newer format, or does not fit the sample file."""
    path = reanalysis_path(sample_path)
    if not path.is_file():
        return None
    arrays = _load(path)
    version = arrays.get("format_version")
    try:
        check_format(
            None if version is None else version.item() if version.size == 1 else version.tolist(),
            REANALYSIS_FORMAT,
            f"reanalysis file {path}",
        )
    except FormatError as error:
        raise ValueError(str(error)) from error
    missing = [k for k in ("pi", "root_value", "iteration") if k not in arrays]
    if missing:
        raise ValueError(f"reanalysis file {path} lacks {missing}")
    pi, values, iteration = arrays["pi"], arrays["root_value"], arrays["iteration"]
    if pi.shape != (rows, actions) or values.shape != (rows,) or iteration.size != 1:
        raise ValueError(
            f"reanalysis file {path} does not fit its sample file ({rows} samples over "
            f"{actions} action ids): pi {pi.shape}, root_value {values.shape}"
        )
    if pi.dtype.kind != "f" or values.dtype.kind != "f" or iteration.dtype.kind not in "iu":
        raise ValueError(f"reanalysis file {path} holds columns of the wrong dtype")
    if not (np.isfinite(pi).all() and np.isfinite(values).all()):
        raise ValueError(f"reanalysis file {path} holds a value that is not finite")
    if pi.size and (pi.min() < -SLACK or pi.max() > 1 + SLACK):
        raise ValueError(f"reanalysis file {path} holds a policy outside [0, 1]")
    if values.size and np.abs(values).max() > 1 + SLACK:
        raise ValueError(f"reanalysis file {path} holds root values outside [-1, 1]")
    return Reanalysis(
        pi.astype(np.float32),
        np.clip(values, -1.0, 1.0).astype(np.float32),
        int(iteration.reshape(-1)[0]),
    )


def reanalysed_iteration(sample_path: Path) -> int | None:
    """The model iteration that reanalysed the sample file at `sample_path`, None when none
    did or its reanalysis file cannot be read (reads one small member)."""
    path = reanalysis_path(sample_path)
    if not path.is_file():
        return None
    try:
        with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as data:
            return int(data["iteration"].reshape(-1)[0])
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError, IndexError):
        return None


def apply_reanalysis(arrays: dict[str, np.ndarray], reanalysis: Reanalysis) -> None:
    """Put a sample file's reanalysed targets in place of its own (`arrays` as
    gamegym.data.samples.read_sample_file returns them; see the module for what changes)."""
    arrays["pi"] = reanalysis.pi
    arrays["root_value"] = reanalysis.root_value
    arrays["policy_weight"] = np.ones(len(reanalysis.root_value), np.float32)
    truncated = np.flatnonzero(arrays["truncated"])
    if not len(truncated):
        return
    z = np.array(arrays["z"], np.float32)
    game, step = arrays["game"], arrays["step"]
    for g in truncated:  # the cut game's value target: its last position's value, negamax
        rows = np.flatnonzero(game == g)
        if not len(rows):
            continue
        last = rows[np.argmax(step[rows])]
        plies = step[last] - step[rows]
        z[rows] = reanalysis.root_value[last] * np.where(plies % 2, -1.0, 1.0)
    arrays["z"] = z
