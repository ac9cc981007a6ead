"""Content-addressed blobs in a local directory (the embedded default).

A blob lives at `root/ab/cd/<sha256>`: two fan-out levels keep directories small
enough for any filesystem. Writes go to a temp file in the target directory, are
fsynced, then renamed into place, so a reader or a crash never sees half a blob and
two writers of the same bytes both succeed. The content type is not stored: the
port returns bytes only, and the events that reference a blob carry its meaning.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import tempfile
from pathlib import Path

from application.ports import BlobNotFound

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def _check_key(sha256: str) -> str:
    # The key becomes a path: only 64 lowercase hex characters can ever reach the disk.
    if not isinstance(sha256, str) or not _SHA256_HEX.fullmatch(sha256):
        raise ValueError(f"not a sha256 hex digest (64 lowercase hex characters): {sha256!r}")
    return sha256


def _fsync_dir(path: Path) -> None:
    # Makes the rename itself durable, not only the file's bytes.
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FilesystemBlobStore:
    """`BlobStore` on a local directory, keyed by the sha256 of the bytes."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path_of(self, sha256: str) -> Path:
        """Where the blob with this key is (or would be) stored."""
        key = _check_key(sha256)
        return self.root / key[:2] / key[2:4] / key

    async def put(self, data: bytes, *, content_type: str = "application/octet-stream") -> str:
        key = hashlib.sha256(data).hexdigest()
        await asyncio.to_thread(self._write, self.path_of(key), data)
        return key

    async def get(self, sha256: str) -> bytes:
        path = self.path_of(sha256)
        try:
            return await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError:
            raise BlobNotFound(sha256) from None

    async def exists(self, sha256: str) -> bool:
        return await asyncio.to_thread(self.path_of(sha256).is_file)

    async def delete(self, sha256: str) -> None:
        await asyncio.to_thread(self.path_of(sha256).unlink, missing_ok=True)

    @staticmethod
    def _write(path: Path, data: bytes) -> None:
        if path.is_file():
            return  # same key, same bytes: nothing to do
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp_name, path)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
        _fsync_dir(path.parent)
