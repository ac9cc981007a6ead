"""Workspace files against a real `tokendance serve`, its blobs on the filesystem (the
default) and in S3 (`TOKENDANCE_S3_*` pointing at a local moto server), with the upload
limits set by the environment: the size (`TOKENDANCE_MAX_UPLOAD_BYTES`) and 10 uploads
a minute per user.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
from minio import Minio

from tests.e2e.client import Server, assert_error, sign_up
from tests.e2e.conftest import StartServer
from tests.fakes.s3_server import LocalS3, local_s3

pytestmark = [pytest.mark.e2e]

LIMIT = 4096


@pytest.fixture(scope="module")
def s3() -> Iterator[LocalS3]:
    with local_s3() as server:
        yield server


@pytest.fixture(params=["filesystem", "s3"])
def store(request: pytest.FixtureRequest) -> dict[str, str]:
    """The environment that picks the blob store."""
    if request.param == "filesystem":
        return {}
    s3: LocalS3 = request.getfixturevalue("s3")
    return s3.env(f"e2e-{uuid.uuid4().hex[:12]}")


def user(server: Server, email: str) -> tuple[httpx.Client, str, str]:
    """A client of a new user, their workspace and their id."""
    with server.client() as anonymous:
        account = sign_up(anonymous, email)
    http = server.client(str(account["access_token"]))
    return http, str(account["workspace_id"]), str(account["user_id"])


def upload(
    http: httpx.Client, workspace: str, name: str, data: bytes, path: str | None = None
) -> httpx.Response:
    return http.post(
        f"/api/v1/workspaces/{workspace}/files",
        files={"file": (name, data)},
        data={"path": path} if path is not None else None,
    )


def test_files_round_trip_and_bad_input_on_a_real_server(
    start_server: StartServer, store: dict[str, str]
) -> None:
    env = {"TOKENDANCE_MAX_UPLOAD_BYTES": str(LIMIT), "TOKENDANCE_UPLOADS_PER_MINUTE": "10"}
    server = start_server(None, extra_env={**env, **store})
    alice, workspace, alice_id = user(server, "alice@example.com")
    eve, _, _ = user(server, "eve@example.com")
    base = f"/api/v1/workspaces/{workspace}/files"

    # Bad input: a clear 4xx each, nothing kept.
    assert_error(upload(alice, workspace, "empty.txt", b""), 400, "VALIDATION_ERROR")
    too_large = assert_error(upload(alice, workspace, "big.bin", b"x" * (LIMIT + 1)), 413)
    assert f"at most {LIMIT:,} bytes" in str(too_large["detail"])
    assert_error(upload(alice, workspace, "../up.txt", b"x"), 400, "VALIDATION_ERROR")
    nul = assert_error(upload(alice, workspace, "a.txt", b"x", "a\x00.txt"), 400)
    assert "NUL" in str(nul["detail"])
    assert alice.get(base).json()["items"] == []

    # Upload, the agent reads it and writes one, list, download, delete.
    session = alice.post("/api/v1/sessions/", json={"workspace_id": workspace}).json()["id"]
    made = upload(alice, workspace, "notes.md", b"# Notes\n\nTides at Brest.\n")
    assert made.status_code == 201, made.text
    file_id = made.json()["id"]

    def run(tool: str, **args: object) -> dict[str, object]:
        answer = alice.post(
            f"/api/v1/mcp/tools/{tool}/execute", json={"session_id": session, "args": args}
        )
        assert answer.status_code == 200, answer.text
        body: dict[str, object] = answer.json()
        assert body["status"] == "success", body
        return body

    assert "Tides at Brest." in str(run("read_file", path="notes.md")["result"])
    run("write_file", path="out/answer.txt", content="7 metres")
    items = alice.get(base).json()["items"]
    assert [(f["path"], f["updated_by"]["kind"]) for f in items] == [
        ("notes.md", "user"), ("out/answer.txt", "agent"),
    ]  # fmt: skip
    assert items[0]["created_by"] == {"kind": "user", "id": alice_id}
    answer = alice.get(f"{base}/{items[1]['id']}")
    assert answer.content == b"7 metres" and answer.headers["content-type"].startswith("text/plain")

    for refused in (eve.get(base), eve.get(f"{base}/{file_id}"), eve.delete(f"{base}/{file_id}")):
        assert_error(refused, 404, "NOT_FOUND")
    assert alice.delete(f"{base}/{file_id}").status_code == 204
    assert [f["path"] for f in alice.get(base).json()["items"]] == ["out/answer.txt"]

    if store:  # the bytes went to the bucket
        s3 = Minio(store["TOKENDANCE_S3_URL"].removeprefix("http://"), secure=False,
                   access_key="testing", secret_key="testing-secret")  # fmt: skip
        found = list(s3.list_objects(store["TOKENDANCE_S3_BUCKET"], recursive=True))
        assert len(found) == 2

    # Five uploads so far (four refused, one kept); five more pass, the eleventh waits.
    for n in range(5):
        assert upload(alice, workspace, f"f{n}.txt", b"x").status_code == 201
    limited = upload(alice, workspace, "f5.txt", b"x")
    assert "uploads" in str(assert_error(limited, 429, "RATE_LIMITED")["detail"])
    assert int(limited.headers["retry-after"]) >= 1
    assert len(alice.get(base).json()["items"]) == 6
