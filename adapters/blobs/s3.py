"""Content-addressed blobs in an S3 bucket (MinIO, or any S3-compatible store), through
the `minio` client. Chosen by `TOKENDANCE_S3_URL`; the filesystem stays the default.

Keys are `sha256/<2 hex>/<sha256>` in one bucket. Not a prefix per workspace: the
`BlobStore` port names a blob by its hash alone, and every event that refers to one
(artifacts, tool outputs, read pages, uploads, workspace files) holds just that hash, so
a reader could not find a blob filed under a workspace it is not told. Isolation comes
from the logs instead: a blob is served only through an event of the caller's own
workspace or session; and the same bytes are stored once.

The client is synchronous (urllib3): each call runs in a worker thread. A put first
asks whether the key is there (the same key means the same bytes), so storing what is
already stored sends nothing. Downloads can also be handed out as presigned URLs
(`download_url`), valid for a while, with the file's name and type.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import re
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import urllib3
from minio import Minio
from minio.error import S3Error

from application.ports import BlobNotFound

MISSING = frozenset({"NoSuchKey", "NoSuchObject", "NotFound", "ResourceNotFound", "NoSuchBucket"})
PRESIGNED_FOR = timedelta(minutes=15)
_SHA256 = re.compile(r"[0-9a-f]{64}")


class S3ConfigError(ValueError):
    """The S3 settings do not describe a usable endpoint."""


def key_of(sha256: str) -> str:
    """The object key of a blob; only a sha256 hex digest can become one."""
    if not isinstance(sha256, str) or not _SHA256.fullmatch(sha256):
        raise ValueError(f"not a sha256 hex digest (64 lowercase hex characters): {sha256!r}")
    return f"sha256/{sha256[:2]}/{sha256}"


class S3BlobStore:
    """`BlobStore` on an S3 bucket, keyed by the sha256 of the bytes."""

    def __init__(self, client: Minio, bucket: str) -> None:
        self.client = client
        self.bucket = bucket
        self._bucket_ready = False

    @classmethod
    def connect(
        cls,
        url: str,
        bucket: str,
        access_key: str,
        secret_key: str,
        *,
        region: str | None = None,
        timeout: float = 30.0,
    ) -> S3BlobStore:
        """A store on the endpoint at `url` (`http://host:9000` or `https://...`)."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise S3ConfigError(f"an S3 URL is http:// or https:// and a host, not {url!r}")
        if parts.path not in ("", "/") or parts.query:
            raise S3ConfigError(f"an S3 URL is an endpoint without a path, not {url!r}")
        # Shorter waits than the client's own five minutes, and a few retries on 5xx.
        http = urllib3.PoolManager(
            timeout=urllib3.Timeout(connect=min(timeout, 10.0), read=timeout),
            maxsize=16,
            retries=urllib3.Retry(
                total=3, backoff_factor=0.2, status_forcelist=[500, 502, 503, 504]
            ),
        )
        client = Minio(
            parts.netloc,
            access_key=access_key,
            secret_key=secret_key,
            secure=parts.scheme == "https",
            region=region,
            http_client=http,
        )
        return cls(client, bucket)

    async def put(self, data: bytes, *, content_type: str = "application/octet-stream") -> str:
        sha256 = hashlib.sha256(data).hexdigest()
        await self._ensure_bucket()
        if not await self.exists(sha256):
            await asyncio.to_thread(
                self.client.put_object,
                self.bucket,
                key_of(sha256),
                io.BytesIO(data),
                len(data),
                content_type=content_type,
            )
        return sha256

    async def get(self, sha256: str) -> bytes:
        key = key_of(sha256)
        try:
            return await asyncio.to_thread(self._read, key)
        except S3Error as e:
            if e.code in MISSING:
                raise BlobNotFound(sha256) from None
            raise

    async def exists(self, sha256: str) -> bool:
        key = key_of(sha256)
        try:
            await asyncio.to_thread(self.client.stat_object, self.bucket, key)
        except S3Error as e:
            if e.code in MISSING:
                return False
            raise
        return True

    async def delete(self, sha256: str) -> None:
        # S3 answers a delete of a missing key with success.
        await asyncio.to_thread(self.client.remove_object, self.bucket, key_of(sha256))

    async def download_url(
        self, sha256: str, *, media_type: str, disposition: str, expires: timedelta = PRESIGNED_FOR
    ) -> str:
        """A presigned GET URL of the blob, valid for `expires`, that answers with this
        `Content-Type` and `Content-Disposition`."""
        headers: dict[str, str | list[str] | tuple[str]] = {
            "response-content-type": media_type,
            "response-content-disposition": disposition,
        }
        url: str = await asyncio.to_thread(
            self.client.presigned_get_object,
            self.bucket,
            key_of(sha256),
            expires=expires,
            response_headers=headers,
        )
        return url

    def _read(self, key: str) -> bytes:
        response: Any = self.client.get_object(self.bucket, key)
        try:
            return bytes(response.read())
        finally:
            response.close()
            response.release_conn()

    async def _ensure_bucket(self) -> None:
        """Make the bucket on first use if it is not there (checked once per process)."""
        if self._bucket_ready:
            return
        if not await asyncio.to_thread(self.client.bucket_exists, self.bucket):
            try:
                await asyncio.to_thread(self.client.make_bucket, self.bucket)
            except S3Error as e:  # made meanwhile, by another call or process
                if e.code not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                    raise
        self._bucket_ready = True
