"""Test-only switches read from the environment, for the chaos soak (scripts/soak.py) and its
mutation check.  Unset (as in every normal run) they change nothing.

GAMEGYM_FAULT_ENOSPC=<kind>:<n>[,<kind>:<n>...]  the n-th write of a file of that kind in each
    process, and every later one, fails with ENOSPC after writing part of its data, as a disk
    that fills mid-write; `<kind>:<p>` with a fraction p (0.2) fails each write with that
    probability.  The kinds are FILE_KINDS ("*" is any).  Each injected failure appends a line
    "<kind> <pid> <path>" to the file GAMEGYM_FAULT_RECORD names, when it is set.
GAMEGYM_MUTATE=<name>[,<name>...]  switches off one protection, so the soak can show that it
    sees the violation (MUTATIONS names them and what each one switches off).
"""

from __future__ import annotations

import errno
import os
import random
from pathlib import Path

ENOSPC_VAR = "GAMEGYM_FAULT_ENOSPC"
RECORD_VAR = "GAMEGYM_FAULT_RECORD"
MUTATE_VAR = "GAMEGYM_MUTATE"
FILE_KINDS = (
    "sample",
    "model",
    "fastmodel",
    "current",
    "runs",
    "lock",
    "config",
    "replay_state",
    "results",
    "ratings",
    "status",
    "train_report",
    "other",
)
MUTATIONS = {
    "atomic_publish": "files are written in place instead of under a temporary name",
    "seed": "every process of every run draws from the session's seed alone",
    "heartbeat": "the gym never kills a child whose heartbeat or work stopped",
    "lock": "a dead gym's children neither hold the session lock nor are waited for",
    "quarantine": "a sample file's values go unchecked: a bad one is trained on, not quarantined",
    "tidy": "a write that fails leaves its temporary file, and no tidy-up removes leftovers",
    "parent_watch": "a child does not watch its gym: one whose gym died plays on",
    "publish_order": "current.json names a new model before the model's file is in place",
    "stale_lock": "the lock record a dead gym left is taken for a held lock (a pid file)",
    "fast_form": "with weight averaging, the fast-path file is made from the weights trained, "
    "not from the average published",
}
_writes: dict[str, int] = {}


def file_kind(path: Path) -> str:
    """The kind of a session file, by its name and folder (FILE_KINDS)."""
    path = Path(path)
    name, folder = path.name, path.parent.name
    if name.startswith(".") and ".tmp" in name:  # a temporary name: the kind of its target
        name = name[1:].split(".")[0] + path.suffix
    fixed = {"session.lock": "lock", "runs.json": "runs", "config.json": "config"}
    if name in fixed:
        return fixed[name]
    if folder == "models":
        if name == "current.json":
            return "current"
        return "fastmodel" if name.endswith(".fast.npz") else "model"
    if path.parent.parent.name == "samples" or folder == "samples":
        return "sample"
    if folder == "replay":
        return "replay_state"
    if folder == "evaluation":
        return "results" if name.startswith("results") else "ratings"
    if name == "status.jsonl":
        return "status"
    if folder == "train":
        return "train_report"
    return "other"


def _fails(kind: str) -> bool:
    spec = os.environ.get(ENOSPC_VAR)
    if not spec:
        return False
    for part in spec.split(","):
        want, _, value = part.strip().partition(":")
        if want not in (kind, "*"):
            continue
        if "." in value:
            return random.random() < float(value)
        _writes[kind] = _writes.get(kind, 0) + 1
        return _writes[kind] >= int(value or 1)
    return False


def disk_full_here(path: Path, handle=None, data: bytes = b"") -> None:
    """Raise ENOSPC for a write of `path` when GAMEGYM_FAULT_ENOSPC says so (a no-op when it
    is unset), after writing half of `data` to `handle`, as a disk that fills mid-write."""
    kind = file_kind(path)
    if not _fails(kind):
        return
    if handle is not None and data:
        handle.write(data[: len(data) // 2])
        handle.flush()
    record = os.environ.get(RECORD_VAR)
    if record:
        with open(record, "a", encoding="utf-8") as out:
            out.write(f"{kind} {os.getpid()} {path}\n")
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


def mutated(name: str) -> bool:
    """Whether GAMEGYM_MUTATE switches off the protection `name` (MUTATIONS)."""
    spec = os.environ.get(MUTATE_VAR)
    return spec is not None and name in spec.split(",")
