"""Crash-safe file publication: write to a temporary name, flush, fsync, rename into place.

A file published under a name of its own (`atomic_write_bytes(..., replace=False)`: sample
files) is linked into place, never renamed over an existing file: when the name is taken the
write fails with FileExistsError and the published file stays as it was.  Appends
(`append_jsonl`) and quarantine moves are fsynced, file and folder.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import time
from pathlib import Path

from gamegym.data.faults import disk_full_here, mutated

log = logging.getLogger(__name__)
TMP_MARK = ".tmp"


# errors that mean "no room to write": a full disk, a full quota, a file-size limit
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def is_disk_full(error: BaseException | None) -> bool:
    """True for a write that found no room, also when wrapped (raise ... from error)."""
    while error is not None:
        if isinstance(error, OSError) and error.errno in DISK_FULL_ERRNOS:
            return True
        error = error.__cause__
    return False


def disk_full_message(
    folder: Path, error: BaseException | None = None, then: str = "run 'gamegym resume {folder}'"
) -> str:
    """What to tell the user when a write found no room (free space measured now)."""
    try:
        free = f"{shutil.disk_usage(folder).free / 2**20:.1f} MiB free"
    except OSError:
        free = "free space unknown"
    while error is not None and not (isinstance(error, OSError) and error.errno):
        error = error.__cause__
    cause = ""
    if error is not None:
        cause = f" ({error.strerror or os.strerror(error.errno or 0)}" + (
            f": {error.filename})" if error.filename else ")"
        )
    return (
        f"the disk holding {folder} is full{cause}, {free}; every file published so far is "
        f"intact; free some space, then {then.format(folder=folder)}"
    )


def temporary_path(path: Path) -> Path:
    """A hidden temporary name in the same folder (so the rename is atomic), same extension."""
    return path.with_name(f".{path.stem}.{os.getpid()}{TMP_MARK}{path.suffix}")


def atomic_write_bytes(path: Path, data: bytes, replace: bool = True) -> None:
    """Publish `data` at `path` so a reader sees either the old file or the whole new one.
    With `replace` False, an existing file at `path` is never overwritten: FileExistsError."""
    path = Path(path)
    make_folder(path.parent)
    # (the soak's mutation check: written in place, a torn write is a torn file)
    in_place = mutated("atomic_publish")
    tmp = path if in_place else temporary_path(path)
    try:
        with open(tmp, "xb" if in_place and not replace else "wb") as handle:
            disk_full_here(path, handle, data)  # a test switch (data/faults.py)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if not in_place:
            if replace:
                os.replace(tmp, path)
            else:
                _move_new(tmp, path)
    except BaseException:
        if not in_place and not mutated("tidy"):  # (the soak's mutation check: left behind)
            tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


# what os.link says on a file system without hard links (FAT, some network shares)
_NO_LINKS = frozenset(
    {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EXDEV, errno.EMLINK}
)


def _move_new(source: Path, target: Path) -> None:
    """Move `source` to `target`, which must not exist (FileExistsError; nothing moved): a
    hard link then the old name's removal, so a file another writer put at `target` meanwhile
    is never replaced.  Where the file system has no hard links, a rename after a check that
    `target` is free (on Windows the rename itself refuses an existing target)."""
    try:
        os.link(source, target)
    except FileExistsError:
        raise
    except OSError as error:
        if error.errno not in _NO_LINKS:
            raise
        if target.exists():
            raise FileExistsError(errno.EEXIST, "file exists", str(target)) from None
        if os.name == "nt":
            os.rename(source, target)
        else:
            shutil.move(str(source), str(target))
        return
    os.unlink(source)


def atomic_write_json(path: Path, obj) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode())


def atomic_publish(tmp: Path, path: Path) -> None:
    """Rename a fully written temporary file (made by a library writer) into place."""
    with open(tmp, "rb+") as handle:
        if mutated("atomic_publish"):  # (the soak's mutation check: a torn write in place)
            try:
                disk_full_here(path)
            except OSError:
                handle.truncate(os.path.getsize(tmp) // 2)
                handle.close()
                os.replace(tmp, path)
                raise
        disk_full_here(path)  # a test switch (data/faults.py)
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def append_jsonl(path: Path, obj) -> None:
    """Append one JSON line, fsynced (and the folder too when the file is new).  A torn last
    line (its writer was killed mid-line) is skipped by read_jsonl; the new line starts on a
    line of its own so it is not glued to the torn one."""
    path = Path(path)
    make_folder(path.parent)
    line = (json.dumps(obj, sort_keys=True) + "\n").encode("utf-8")
    with open(path, "ab+") as handle:  # appends go to the end whatever the read position
        new = handle.seek(0, os.SEEK_END) == 0
        if not new:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                line = b"\n" + line
        disk_full_here(path, handle, line)  # a test switch (data/faults.py)
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())
    if new:
        _fsync_dir(path.parent)


def read_jsonl(path: Path) -> list[dict]:
    rows: list[dict] = []
    if not Path(path).exists():
        return rows
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return rows


def last_jsonl(path: Path, tail_bytes: int = 1 << 16) -> dict | None:
    """The last whole record of a JSON-lines file (read from its end), or None."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - tail_bytes))
            lines = handle.read().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue  # torn by a killed writer, or cut by the tail
        if isinstance(record, dict):
            return record
    return None


def remove_leftovers(folder: Path) -> int:
    """Delete temporary files left by writers that died; returns how many."""
    count = 0
    if not folder.is_dir() or mutated("tidy"):  # (the soak's mutation check: none removed)
        return 0
    for tmp in folder.rglob(f".*{TMP_MARK}*"):
        tmp.unlink(missing_ok=True)
        count += 1
    return count


def quarantine(path: Path, quarantine_dir: Path) -> Path:
    """Move a damaged file aside (never delete user data) to a name of its own in
    `quarantine_dir` (never over an earlier quarantined file, even one of the same name moved
    within the same second), fsynced; returns where it went."""
    path = Path(path)
    make_folder(quarantine_dir)
    stamp = int(time.time())
    for attempt in range(1, 1000):
        tag = f"{stamp}" if attempt == 1 else f"{stamp}-{attempt}"
        target = quarantine_dir / f"{tag}-{path.parent.name}-{path.name}"
        if target.exists():
            continue
        try:
            _move_new(path, target)
        except FileExistsError:
            continue
        break
    else:
        raise FileExistsError(f"no free name in {quarantine_dir} for {path.name}")
    _fsync_dir(quarantine_dir)
    _fsync_dir(path.parent)
    log.warning("moved damaged file %s to %s", path, target)
    return target


def make_folder(folder: Path) -> None:
    """Make a folder and its missing parents, each one made durable in its parent (a file
    renamed into a new folder survives a power cut only if the folder does)."""
    folder = Path(folder)
    missing = []
    while not folder.is_dir():
        missing.append(folder)
        folder = folder.parent
    for new in reversed(missing):
        try:
            new.mkdir()
        except FileExistsError:
            if not new.is_dir():
                raise
            continue  # made meanwhile by another process, which syncs it
        _fsync_dir(new.parent)


# what fsync of a folder says on a file system that cannot sync folders: nothing to do
_NO_FOLDER_SYNC = frozenset({errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP})


def _fsync_dir(folder: Path) -> None:
    """Make a folder's entries (a rename, a new file or folder) durable.  Errors are raised,
    save where the file system cannot sync a folder at all (and on Windows, where a folder
    cannot be opened to sync it; NTFS journals its entries)."""
    if os.name == "nt":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as error:
        if error.errno not in _NO_FOLDER_SYNC:
            raise
    finally:
        os.close(fd)
