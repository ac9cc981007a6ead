"""A run's work directory on the host: made with its input files, watched for size
while the run lasts, read back for what changed, then removed.

Nothing of the run is alive when the directory is read back (its PID namespace is
gone), and nothing here follows a symbolic link the code may have left.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath


class BadFileName(ValueError):
    """An input file's name is not a plain relative path."""


def checked_name(name: str) -> PurePosixPath:
    """`name` as a relative path that stays inside the work directory."""
    path = PurePosixPath(name)
    if (
        not name
        or "\0" in name
        or path.is_absolute()
        or any(part in ("..", ".") for part in PurePosixPath(name).parts)
        or name.endswith("/")
    ):
        raise BadFileName(f"not a relative file name inside the work directory: {name!r}")
    return path


def create(root: Path, files: Mapping[str, bytes], owner: tuple[int, int] | None) -> Path:
    """A fresh directory under `root` holding `files`, owned by `owner` (uid, gid) if
    given, private to it."""
    names = {name: checked_name(name) for name in files}
    work = Path(tempfile.mkdtemp(prefix="run-", dir=root))
    for name, rel in names.items():
        target = work.joinpath(*rel.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(files[name])
    if owner is not None:
        for path in [work, *work.rglob("*")]:
            os.chown(path, *owner, follow_symlinks=False)
    return work


@dataclass(frozen=True)
class Usage:
    bytes: int
    entries: int


POLL_SECONDS = 0.1  # how often a run's work directory is measured


async def over_quota(
    work: Path, inputs: Mapping[str, bytes], work_bytes: int, work_files: int
) -> None:
    """Returns once the work directory has grown past what a run may add to its
    `inputs`: `work_bytes` (and a megabyte of slack) and `work_files` entries."""
    allowed = work_bytes + sum(len(b) for b in inputs.values()) + 1024 * 1024
    while True:
        await asyncio.sleep(POLL_SECONDS)
        used = await asyncio.to_thread(usage, work, work_files)
        if used.bytes > allowed or used.entries > work_files + len(inputs):
            return


def usage(work: Path, max_entries: int) -> Usage:
    """Disk used under `work` (allocated blocks) and its entries, counting stops a
    little past `max_entries`."""
    used, entries = 0, 0
    stack = [str(work)]
    while stack and entries <= max_entries:
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    entries += 1
                    st = entry.stat(follow_symlinks=False)
                    used += st.st_blocks * 512
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(entry.path)
        except OSError:
            continue  # a directory the code made unreadable or removed meanwhile
    return Usage(used, entries)


def changed(
    work: Path, inputs: Mapping[str, bytes], max_bytes: int, max_files: int
) -> dict[str, bytes]:
    """Regular files under `work` that are new or differ from `inputs`, by relative
    name, in name order, until `max_files` files or `max_bytes` bytes. Symbolic links
    and special files are left out."""
    found: dict[str, bytes] = {}
    total = 0
    for rel, size in sorted(_regular_files(work, max_files * 4)):
        if len(found) >= max_files or total + size > max_bytes:
            continue
        data = _read(work / rel, size)
        if data is None or inputs.get(rel) == data:
            continue
        found[rel] = data
        total += len(data)
    return found


def _regular_files(work: Path, limit: int) -> list[tuple[str, int]]:
    files: list[tuple[str, int]] = []
    for dirpath, _dirs, names in os.walk(work):  # never follows symlinked directories
        for name in names:
            st = os.lstat(os.path.join(dirpath, name))
            if stat.S_ISREG(st.st_mode):
                files.append((os.path.relpath(os.path.join(dirpath, name), work), st.st_size))
            if len(files) >= limit:
                return files
    return files


def _read(path: Path, size: int) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None  # made unreadable by the code (as a non-root server)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return f.read(size + 1)[:size]


def remove(work: Path) -> None:
    """Delete `work`, also where the code took away its own permissions."""

    def unlock(func: Callable[..., object], path: str, _exc: object) -> None:
        os.chmod(os.path.dirname(path), 0o700)
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, 0o700)
        func(path)

    shutil.rmtree(work, onerror=unlock)
