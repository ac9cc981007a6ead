"""A local S3-compatible server for tests: moto's server mode on 127.0.0.1.

Not a fake of our own but a real S3 wire protocol (signatures, buckets, presigned
URLs) that the `minio` client talks to, as it would to MinIO:

    with local_s3() as s3:
        store = S3BlobStore.connect(s3.url, "bucket", s3.access_key, s3.secret_key)
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from moto.server import ThreadedMotoServer


@dataclass(frozen=True)
class LocalS3:
    url: str
    access_key: str = "testing"  # moto takes any credentials
    secret_key: str = "testing-secret"

    def env(self, bucket: str) -> dict[str, str]:
        """What `tokendance serve` needs to keep its blobs in `bucket` here."""
        return {
            "TOKENDANCE_S3_URL": self.url,
            "TOKENDANCE_S3_BUCKET": bucket,
            "TOKENDANCE_S3_ACCESS_KEY": self.access_key,
            "TOKENDANCE_S3_SECRET_KEY": self.secret_key,
        }


@contextmanager
def local_s3() -> Iterator[LocalS3]:
    """An S3 server on a free port of 127.0.0.1, stopped on exit."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # else a line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield LocalS3(f"http://{host}:{port}")
    finally:
        server.stop()
