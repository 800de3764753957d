"""Sample files: finished self-play games on disk, tagged by the model iteration that played them.

A sample is one training position.  A sample file holds the samples of one or more whole games,
as a compressed ``.npz`` (zip members carry CRC32, so a truncated or flipped file fails to load):

  x           float32 [N, *input_shape]  numpify(vertex) of each position, mover's view
  pi          float32 [N, A]             search policy over action ids (visit counts, sums to 1)
  z           float32 [N]                value target from the mover's view: the game result, or
                                         for a truncated game the root value of its last position
  action      int32   [N]                action id played at the position
  root_value  float32 [N]                search value of the position, mover's view, in [-1, 1]
  legal       bool    [N, A]             legal action ids at the position
  game        int32   [N]                game index within the file (unique per load)
  step        int32   [N]                move number within the game
  policy_weight float32 [N]              weight of the position's policy target: 1 after a full
                                         search, 0 after a fast one (playout-cap randomization);
                                         a file without it reads as all 1
  result      float32 [G]                final score per game from the first mover's view
  truncated   bool    [G]                True when the game was cut at max_moves (not a loss/draw)
  format_version int64 []                the file's format (gamegym.data.formats; absent: 1)

A learner may add columns of its own, one row per position (Bootstrapped's head masks): any
other member of length N.  Each learner declares them (`Learner.sample_columns`: a
`SampleColumn`, dtype and row shape, per name); read with the learner's `SampleShape`, a file
must hold every declared column as declared, and what it holds beyond them is left out.  They
arrive in `SampleBatch.extra` by name.

Reading checks every file (`read_sample_file`): its format version, the members' lengths,
dtypes (`legal` and `truncated` bool, ids integers, the rest numbers), that every number is
finite and within its range (pi and policy_weight in [0, 1], z and result in [-1, 1]) and, given
the game's and learner's `SampleShape`, the shapes and the learner's columns.  A file that fails
is moved to the session's quarantine by the loaders, never trained on, never fatal.  The samples
folder (its files, their counts, the window the Trainer loads) is gamegym.data.samplefolder.

A published sample file never changes.  Targets a newer model searched for its positions
(`train.reanalyze`) are kept beside it, in samples/<it>/reanalysed/<name>.npz, and replace its
own when the samples are loaded (gamegym.data.reanalysis).

Games are kept whole so sequence learners (MuZero unrolls, DQN transitions) can rebuild them:
position i+1 of a game is the child of position i reached by action[i], seen by the opponent.
"""

from __future__ import annotations

import io
import logging
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gamegym.data.faults import mutated
from gamegym.data.fileio import atomic_write_bytes
from gamegym.data.formats import SAMPLE_FORMAT, FormatError, check_format
from gamegym.game.graph import SCORE_RANGE

__all__ = [
    "GameRecord",
    "SampleBatch",
    "SampleColumn",
    "SampleShape",
    "encode_sample_file",
    "write_sample_file",
    "read_sample_file",
    "n_step_value_targets",
]

log = logging.getLogger(__name__)
FIELDS = (
    "x",
    "pi",
    "z",
    "action",
    "root_value",
    "legal",
    "game",
    "step",
    "policy_weight",
)  # one row a sample
GAME_FIELDS = ("result", "truncated")  # one row a game
VERSION_FIELD = "format_version"  # one per file


@dataclass
class GameRecord:
    """One finished self-play game, built move by move by a Selfplayer."""

    x: list = field(default_factory=list)  # numpify arrays, one per position
    pi: list = field(default_factory=list)  # float32 [A] per position
    action: list = field(default_factory=list)  # int per position
    root_value: list = field(default_factory=list)  # float per position
    legal: list = field(default_factory=list)  # bool [A] per position
    policy_weight: list = field(default_factory=list)  # float per position (1 full search,
    #                                                    0 fast); empty: every position 1
    result: float = 0.0  # final score from the first mover's view (0 when truncated)
    truncated: bool = False
    extra: dict = field(default_factory=dict)  # name -> list, one array per position (a learner's)

    def __len__(self) -> int:
        return len(self.x)

    def policy_weights(self) -> np.ndarray:
        """float32 [N]: the policy target weight of each position (all 1 when none was
        recorded)."""
        if not self.policy_weight:
            return np.ones(len(self.x), np.float32)
        if len(self.policy_weight) != len(self.x):
            raise ValueError(
                f"a game record has {len(self.policy_weight)} policy weights for "
                f"{len(self.x)} positions"
            )
        return np.asarray(self.policy_weight, np.float32)

    def value_targets(self) -> np.ndarray:
        """z per position from that position's mover's view (negamax alternation)."""
        n = len(self.x)
        if self.truncated:
            # a cut game is neither lost nor drawn: bootstrap from the search value at the cut
            last = bounded_value(self.root_value[-1]) if n else 0.0
            return np.array([last * (-1) ** (n - 1 - i) for i in range(n)], dtype=np.float32)
        return np.array([self.result * (-1) ** i for i in range(n)], dtype=np.float32)


@dataclass
class SampleBatch:
    """Arrays of many samples, concatenated (shapes as in the module docstring)."""

    x: np.ndarray
    pi: np.ndarray
    z: np.ndarray
    action: np.ndarray
    root_value: np.ndarray
    legal: np.ndarray
    game: np.ndarray
    step: np.ndarray
    iteration: np.ndarray  # int32 [N] model iteration that played each sample
    truncated: np.ndarray  # bool [N] the sample's game was truncated
    policy_weight: np.ndarray | None = None  # float32 [N] (None: all 1)
    extra: dict = field(default_factory=dict)  # name -> [N, ...] a learner's own columns

    def __post_init__(self):
        if self.policy_weight is None:
            self.policy_weight = np.ones(len(self.z), np.float32)

    def __len__(self) -> int:
        return len(self.z)

    def take(self, index: np.ndarray) -> SampleBatch:
        columns = {k: v[index] for k, v in vars(self).items() if k != "extra"}
        return SampleBatch(**columns, extra={k: v[index] for k, v in self.extra.items()})


# the dtype kinds a learner's column of each declared kind may be stored as
_STORED_KINDS = {"b": "b", "i": "iu", "u": "iu", "f": "fiu"}


@dataclass(frozen=True)
class SampleColumn:
    """A learner's own sample column (`Learner.sample_columns`): one row per position."""

    dtype: str  # the numpy dtype it is read as: "bool", an integer ("int16") or a float type
    shape: tuple[int, ...] = ()  # the shape of one row (): one number per position

    def misfit(self, values: np.ndarray, n: int) -> str:
        """Why the stored column `values` of a file of `n` positions is not this column, or
        ""."""
        want = np.dtype(self.dtype)
        if values.shape != (n, *self.shape):
            return f"has shape {values.shape}, the learner needs {(n, *self.shape)}"
        if values.dtype.kind not in _STORED_KINDS.get(want.kind, want.kind):
            return f"has dtype {values.dtype}, the learner needs {want}"
        if want.kind in "iu" and values.size:
            info = np.iinfo(want)
            if values.min() < info.min or values.max() > info.max:
                return f"holds values outside the range of {want}"
        if want.kind == "f" and not np.isfinite(values).all():
            return "holds a value that is not finite"
        return ""


@dataclass(frozen=True)
class SampleShape:
    """What the arrays of a game's sample files must look like, with the session learner's
    own columns (checked on load)."""

    input_shape: tuple  # numpify(vertex).shape
    actions: int  # action_space_size
    columns: tuple[tuple[str, SampleColumn], ...] = ()  # the learner's columns, by name

    @classmethod
    def of(cls, graph, columns: dict[str, SampleColumn] | None = None) -> SampleShape:
        """The shape of `graph`'s sample files; `columns`: the learner's own
        (`Learner.sample_columns`)."""
        return cls(
            tuple(np.asarray(graph.numpify(graph.roots[0])).shape),
            int(graph.action_space_size),
            tuple(sorted((columns or {}).items())),
        )


VALUE_SLACK = 1e-4  # float rounding of values in [-1, 1]


def bounded_value(value: float) -> float:
    """A search's estimate of a position's value as a sample file holds it (`root_value`, and a
    cut game's value target): within the game's score range [-1, 1], where every position's
    true value lies.  A learned model is not bound to it (MuZero backs up predicted rewards plus
    values; a Q-head is unbounded).  Every recorder's games are bounded when they are encoded
    (`records_to_arrays`); a file read is bounded too (`read_sample_file`)."""
    low, high = SCORE_RANGE
    return min(high, max(low, float(value)))


def unsound(arrays: dict[str, np.ndarray]) -> str:
    """Why a sample file's arrays cannot be training data whatever the game (a dtype, a value
    that is not finite or out of its range, a game index past the file's games), or ""."""
    n, games = len(arrays["z"]), len(arrays["result"])
    for name in ("x", "pi", "z", "root_value", "policy_weight", "result"):
        if arrays[name].dtype.kind not in "fiub":
            return f"{name} has dtype {arrays[name].dtype}, it needs numbers"
        if not np.isfinite(arrays[name]).all():
            return f"{name} holds a value that is not finite"
    for name in ("action", "game", "step"):
        if arrays[name].dtype.kind not in "iu":
            return f"{name} has dtype {arrays[name].dtype}, it needs integers"
    for name in ("legal", "truncated"):
        if arrays[name].dtype.kind != "b":
            return f"{name} has dtype {arrays[name].dtype}, it needs bool"
    if n and not (arrays["game"].min() >= 0 and arrays["game"].max() < games):
        return f"a game index is outside 0..{games - 1}"
    if n and arrays["step"].min() < 0:
        return "a move number is negative"
    for name, low, high in (  # root_value is an estimate: read_sample_file bounds it
        ("pi", 0.0, 1.0),
        ("policy_weight", 0.0, 1.0),
        ("z", *SCORE_RANGE),
        ("result", *SCORE_RANGE),
    ):
        values = arrays[name]
        if values.size and (values.min() < low - VALUE_SLACK or values.max() > high + VALUE_SLACK):
            return f"{name} holds values outside [{low:g}, {high:g}]"
    return ""


def misfit(arrays: dict[str, np.ndarray], shape: SampleShape) -> str:
    """Why a sound sample file's arrays do not fit the game (shapes, action ids), or ""."""
    n, a, games = len(arrays["z"]), shape.actions, len(arrays["result"])
    expected = {
        "x": (n, *shape.input_shape),
        "pi": (n, a),
        "legal": (n, a),
        "z": (n,),
        "action": (n,),
        "root_value": (n,),
        "game": (n,),
        "step": (n,),
        "policy_weight": (n,),
        "result": (games,),
        "truncated": (games,),
    }
    for name, want in expected.items():
        if arrays[name].shape != want:
            return f"{name} has shape {arrays[name].shape}, the game needs {want}"
    if n and not (arrays["action"].min() >= 0 and arrays["action"].max() < a):
        return f"an action id is outside 0..{a - 1}"
    return ""


def learner_misfit(arrays: dict[str, np.ndarray], shape: SampleShape) -> str:
    """Why a sample file's columns are not those the learner declared (`shape.columns`), or
    ""."""
    n = len(arrays["z"])
    for name, column in shape.columns:
        if name not in arrays:
            return f"it has no column {name!r}"
        wrong = column.misfit(arrays[name], n)
        if wrong:
            return f"its column {name!r} {wrong}"
    return ""


def n_step_value_targets(batch: SampleBatch, td_steps: int) -> np.ndarray:
    """Value targets bootstrapped `td_steps` plies ahead, from each sample's mover's view.

    The target of position t is the search value of position t + n of the same game, negated
    when n is odd (the other player moves there): (-1)^n * root_value[t + n].  Where the game
    ends before t + n, or position t + n is not in the batch (a game cut by the sample window),
    it is the sample's own z (the game result, or the bootstrapped cut value).  td_steps = 0
    gives z unchanged.  Rows may come in any order.
    """
    z = np.asarray(batch.z, np.float32)
    if td_steps <= 0 or len(z) == 0:
        return z.copy()
    order = np.lexsort((batch.step, batch.game))  # by game, then by move number
    game, step = batch.game[order], batch.step[order]
    target = z[order].copy()
    if td_steps < len(order):
        ahead = np.arange(len(order) - td_steps)
        later = ahead + td_steps
        found = (game[later] == game[ahead]) & (step[later] == step[ahead] + td_steps)
        sign = -1.0 if td_steps % 2 else 1.0
        values = np.asarray(batch.root_value, np.float32)[order]
        target[ahead[found]] = sign * values[later[found]]
    out = np.empty_like(z)
    out[order] = target
    return out


def records_to_arrays(records: list[GameRecord]) -> dict[str, np.ndarray]:
    """The npz members for a list of finished games."""
    records = [r for r in records if len(r)]
    arrays = {
        "x": np.stack([x for r in records for x in r.x]).astype(np.float32),
        "pi": np.stack([p for r in records for p in r.pi]).astype(np.float32),
        "z": np.concatenate([r.value_targets() for r in records]).astype(np.float32),
        "action": np.array([a for r in records for a in r.action], dtype=np.int32),
        "root_value": np.array(
            [bounded_value(v) for r in records for v in r.root_value], dtype=np.float32
        ),
        "legal": np.stack([m for r in records for m in r.legal]).astype(bool),
        "game": np.concatenate([np.full(len(r), g, np.int32) for g, r in enumerate(records)]),
        "step": np.concatenate([np.arange(len(r), dtype=np.int32) for r in records]),
        "policy_weight": np.concatenate([r.policy_weights() for r in records]),
        "result": np.array([r.result for r in records], dtype=np.float32),
        "truncated": np.array([r.truncated for r in records], dtype=bool),
    }
    for name in sorted({k for r in records for k in r.extra}):
        if name in arrays:
            raise ValueError(f"a learner's sample column may not be named {name!r}")
        if any(len(r.extra.get(name, ())) != len(r) for r in records):
            raise ValueError(f"sample column {name!r} needs one row per position of every game")
        arrays[name] = np.stack([row for r in records for row in r.extra[name]])
    return arrays


def encode_sample_file(records: list[GameRecord]) -> tuple[bytes, int]:
    """The bytes of a sample file holding finished games, and its number of samples
    (b"", 0 when no game has a position)."""
    records = [r for r in records if len(r)]
    if not records:
        return b"", 0
    arrays = records_to_arrays(records)
    buffer = io.BytesIO()
    # numpy's stub takes **arrays for its allow_pickle keyword
    np.savez_compressed(
        buffer,
        **arrays,  # type: ignore[arg-type]
        **{VERSION_FIELD: np.int64(SAMPLE_FORMAT)},
    )
    return buffer.getvalue(), len(arrays["z"])


def write_sample_file(path: Path, records: list[GameRecord]) -> int:
    """Atomically write finished games to `path` (.npz); returns the number of samples."""
    data, samples = encode_sample_file(records)
    if samples:
        atomic_write_bytes(Path(path), data)
    return samples


def read_sample_file(path: Path, shape: SampleShape | None = None) -> dict[str, np.ndarray]:
    """Load and verify one sample file (see the module docstring for the checks); raises
    ValueError naming the problem when it is damaged, of a format this gamegym cannot read
    (newer, or not a number), holds bad data or, given the game's and learner's `shape`, does
    not fit them.  The arrays returned hold no version; with a `shape`, the learner's columns
    are those it declared, in their declared dtypes, and no others."""
    try:
        # the file is opened here, not by np.load: a damaged archive makes np.load raise before
        # it hands back the object that would close the file (an unclosed file per bad file)
        with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError) as error:
        raise ValueError(f"damaged sample file {path}: {error}") from error
    version = arrays.pop(VERSION_FIELD, None)
    try:
        check_format(
            None if version is None else version.item() if version.size == 1 else version.tolist(),
            SAMPLE_FORMAT,
            f"sample file {path}",
        )
    except FormatError as error:  # one file of thousands: left out, kept whole in quarantine
        raise ValueError(str(error)) from error
    if "policy_weight" not in arrays and "z" in arrays:  # format 1: written before the column
        arrays["policy_weight"] = np.ones(len(arrays["z"]), np.float32)
    missing = [k for k in FIELDS + GAME_FIELDS if k not in arrays]
    if missing:
        raise ValueError(f"sample file {path} lacks {missing}")
    if any(arrays[k].ndim == 0 for k in FIELDS + GAME_FIELDS):
        raise ValueError(f"sample file {path} has a member that is a single value, not a column")
    n = len(arrays["z"])
    if any(len(arrays[k]) != n for k in FIELDS):
        raise ValueError(f"sample file {path} has members of different lengths")
    if len(arrays["truncated"]) != len(arrays["result"]):
        raise ValueError(f"sample file {path} has a truncated flag per game of another count")
    wrong = [] if mutated("quarantine") else unsound(arrays)  # (the soak's mutation check)
    if wrong:
        raise ValueError(f"sample file {path} holds bad data: {wrong}")
    if shape is not None:
        wrong = misfit(arrays, shape)
        if wrong:
            raise ValueError(f"sample file {path} does not fit the game: {wrong}")
        wrong = learner_misfit(arrays, shape)
        if wrong:
            raise ValueError(f"sample file {path} does not fit the learner: {wrong}")
        columns = dict(shape.columns)
        arrays = {
            k: v.astype(columns[k].dtype) if k in columns else v
            for k, v in arrays.items()
            if k in FIELDS or k in GAME_FIELDS or k in columns
        }
    # an estimate past the score range (from a recorder that did not bound it) is bounded here,
    # not refused: the rest of the file is sound (see bounded_value)
    arrays["root_value"] = np.clip(arrays["root_value"], *SCORE_RANGE)
    return arrays
