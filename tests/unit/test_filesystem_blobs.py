from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest

from adapters.blobs.filesystem import FilesystemBlobStore
from application.ports import BlobNotFound

DATA = b"the full text of a fetched page"
KEY = hashlib.sha256(DATA).hexdigest()


@pytest.fixture
def store(tmp_path: Path) -> FilesystemBlobStore:
    return FilesystemBlobStore(tmp_path / "blobs")


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


async def test_put_then_get_round_trips_under_fan_out_dirs(store: FilesystemBlobStore) -> None:
    key = await store.put(DATA, content_type="text/plain")

    assert key == KEY
    assert await store.get(key) == DATA
    assert await store.exists(key)
    assert files_under(store.root) == [store.root / KEY[:2] / KEY[2:4] / KEY]


async def test_putting_the_same_bytes_twice_keeps_one_file_unchanged(
    store: FilesystemBlobStore,
) -> None:
    first = await store.put(DATA)
    stored = store.path_of(first)
    before = stored.stat()

    second = await store.put(DATA)

    assert second == first
    assert files_under(store.root) == [stored]
    after = stored.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


async def test_empty_blob_is_stored(store: FilesystemBlobStore) -> None:
    key = await store.put(b"")

    assert key == hashlib.sha256(b"").hexdigest()
    assert await store.get(key) == b""


async def test_unknown_hash_raises_blob_not_found(store: FilesystemBlobStore) -> None:
    with pytest.raises(BlobNotFound):
        await store.get(KEY)
    assert not await store.exists(KEY)


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "abc",
        KEY.upper(),
        KEY[:-1],
        KEY + "0",
        "../" + KEY[3:],
        "/etc/passwd",
        "g" * 64,
        KEY[:62] + "\n",
    ],
)
async def test_malformed_hash_is_rejected_before_touching_disk(
    store: FilesystemBlobStore, bad: str
) -> None:
    with pytest.raises(ValueError):
        await store.get(bad)
    with pytest.raises(ValueError):
        await store.exists(bad)


async def test_concurrent_puts_of_the_same_bytes_both_succeed(
    store: FilesystemBlobStore,
) -> None:
    data = b"x" * 1_000_000
    keys = await asyncio.gather(*(store.put(data) for _ in range(8)))

    assert set(keys) == {hashlib.sha256(data).hexdigest()}
    assert await store.get(keys[0]) == data
    # No temp files left behind by the writers that lost the race.
    assert files_under(store.root) == [store.path_of(keys[0])]


async def test_different_bytes_get_different_keys(store: FilesystemBlobStore) -> None:
    a, b = await asyncio.gather(store.put(b"a"), store.put(b"b"))

    assert a != b
    assert (await store.get(a), await store.get(b)) == (b"a", b"b")
