"""The S3 blob store (adapters/blobs/s3.py) against a local S3 server (moto), and how the
settings choose it."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import httpx
import pytest

from adapters.blobs.filesystem import FilesystemBlobStore
from adapters.blobs.s3 import S3BlobStore, key_of
from adapters.bootstrap.parts import build_blobs
from adapters.config.settings import Settings
from application.ports import BlobNotFound
from tests.fakes.s3_server import LocalS3, local_s3

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def s3() -> Iterator[LocalS3]:
    with local_s3() as server:
        yield server


@pytest.fixture
def store(s3: LocalS3) -> S3BlobStore:
    """A store on a bucket of the test's own, not made yet."""
    return S3BlobStore.connect(s3.url, f"blobs-{uuid4().hex[:12]}", s3.access_key, s3.secret_key)


async def test_blobs_are_kept_by_their_sha256_in_a_bucket_made_on_first_use(
    store: S3BlobStore,
) -> None:
    data = b"a tide table\n" * 1000
    sha = hashlib.sha256(data).hexdigest()
    assert not store.client.bucket_exists(store.bucket)
    assert await store.put(data, content_type="text/plain") == sha
    assert store.client.bucket_exists(store.bucket)
    assert await store.get(sha) == data and await store.exists(sha)
    assert await store.put(data) == sha  # the same bytes again: the same key, still one object
    objects = list(store.client.list_objects(store.bucket, recursive=True))
    assert [o.object_name for o in objects] == [key_of(sha)] == [f"sha256/{sha[:2]}/{sha}"]
    assert await store.put(b"") == hashlib.sha256(b"").hexdigest()
    assert await store.get(hashlib.sha256(b"").hexdigest()) == b""


async def test_an_unknown_hash_is_not_found_and_a_key_that_is_no_hash_never_reaches_s3(
    store: S3BlobStore,
) -> None:
    unknown = "0" * 64
    assert not await store.exists(unknown)  # no bucket yet
    with pytest.raises(BlobNotFound):
        await store.get(unknown)
    await store.put(b"x")
    assert not await store.exists(unknown)
    with pytest.raises(BlobNotFound):
        await store.get(unknown)
    for bad in ("../../etc/passwd", "A" * 64, "0" * 63, f"{unknown}/x"):
        with pytest.raises(ValueError, match="sha256"):
            await store.get(bad)


async def test_a_presigned_url_serves_the_blob_with_its_name_and_type_for_a_while(
    store: S3BlobStore,
) -> None:
    sha = await store.put(b"%PDF-1.7 not really")
    disposition = 'attachment; filename="report.pdf"'
    url = await store.download_url(sha, media_type="application/pdf", disposition=disposition)
    answer = httpx.get(url)
    assert answer.status_code == 200 and answer.content == b"%PDF-1.7 not really"
    assert answer.headers["content-type"] == "application/pdf"
    assert answer.headers["content-disposition"] == disposition
    tampered = url.replace(sha, hashlib.sha256(b"other").hexdigest())
    assert httpx.get(tampered).status_code == 403  # the signature covers the key


def test_the_settings_choose_s3_or_the_data_directory(s3: LocalS3, tmp_path: Path) -> None:
    env = {**s3.env("chosen"), "TOKENDANCE_DATA_DIR": str(tmp_path)}
    chosen = build_blobs(Settings.from_env(env))
    assert isinstance(chosen, S3BlobStore) and chosen.bucket == "chosen"
    default = build_blobs(Settings.from_env({"TOKENDANCE_DATA_DIR": str(tmp_path)}))
    assert isinstance(default, FilesystemBlobStore) and default.root == tmp_path / "blobs"

    without_keys = {"TOKENDANCE_S3_URL": s3.url}
    with pytest.raises(SystemExit, match="TOKENDANCE_S3_SECRET_KEY must be set"):
        Settings.from_env(without_keys)
    for url in ("minio:9000", "ftp://host", "http://host:9000/bucket"):
        with pytest.raises(SystemExit, match="TOKENDANCE_S3_URL"):
            build_blobs(Settings.from_env({**s3.env("b"), "TOKENDANCE_S3_URL": url}))
