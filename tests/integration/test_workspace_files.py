"""Workspace files through the API and the agent's tools, on real Postgres and NATS (the
app in process, its services running), with the blobs on the filesystem and on S3 (a
local moto server, tests/fakes/s3_server.py): every test runs on both stores.

A user uploads, the agent reads it and writes a file of its own (its tools run by hand
through `/mcp/tools/{name}/execute`, in a session of the workspace), both are listed
with who wrote them, download with their type and name, and are deleted. Another
tenant's workspace and file ids answer 404, a viewer may read but not write, and bad
uploads are refused with the error body, writing nothing.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from urllib.parse import quote
from uuid import UUID, uuid4

import httpx
import pytest
from litestar.testing import TestClient

from adapters.blobs.s3 import S3BlobStore, key_of
from adapters.config.settings import Settings
from adapters.http.app import create_app
from adapters.http.middleware.limits import RateLimits
from adapters.system import System
from projections.rebuild import rebuild
from projections.workspace_files import WorkspaceFilesView
from tests.fakes.s3_server import LocalS3, local_s3
from tests.integration.test_artifacts_api import sign_up

pytestmark = pytest.mark.integration

Client = TestClient  # type: ignore[type-arg]
LIMIT = 64 * 1024  # the upload limit these tests run with
CSV = b"city,sales\nBrest,12\nNantes,30\n"
ERROR_KEYS = {"detail", "error_code", "timestamp"}


@pytest.fixture(scope="module")
def s3() -> Iterator[LocalS3]:
    with local_s3() as server:
        yield server


@pytest.fixture(params=["filesystem", "s3"])
def settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    """The test's settings with a small upload limit, blobs on the filesystem or in a
    bucket of the test's own."""
    small = replace(settings, max_upload_bytes=LIMIT)
    if request.param == "filesystem":
        return small
    s3: LocalS3 = request.getfixturevalue("s3")
    return replace(
        small,
        s3_url=s3.url,
        s3_bucket=f"test-{uuid4().hex[:12]}",
        s3_access_key=s3.access_key,
        s3_secret_key=s3.secret_key,
    )


def stored_blobs(system: System) -> list[bytes]:
    """Every blob the store holds, whichever store it is."""
    blobs = system.engine.blobs
    if isinstance(blobs, S3BlobStore):
        client, bucket = blobs.client, blobs.bucket
        if not client.bucket_exists(bucket):
            return []
        names = [o.object_name for o in client.list_objects(bucket, recursive=True)]
        return [client.get_object(bucket, name).read() for name in names if name]
    root = system.settings.data_dir / "blobs"
    return [p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()]


def upload(
    client: Client, headers: dict[str, str], workspace: str, name: str, data: bytes,
    path: str | None = None, media_type: str = "application/octet-stream",
) -> httpx.Response:  # fmt: skip
    form = {"path": path} if path is not None else None
    return client.post(
        f"/api/v1/workspaces/{workspace}/files",
        files={"file": (name, data, media_type)},
        data=form,
        headers=headers,
    )


def tool(
    client: Client, headers: dict[str, str], session: str, name: str, **args: object
) -> dict[str, object]:
    """Run one of the agent's tools by hand in the session; its answer."""
    answer = client.post(
        f"/api/v1/mcp/tools/{name}/execute",
        json={"session_id": session, "args": args},
        headers=headers,
    )
    assert answer.status_code in (200, 202), answer.text
    body = answer.json()
    assert isinstance(body, dict)
    return body


def assert_error(answer: httpx.Response, status: int, code: str) -> str:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body.keys() >= ERROR_KEYS and body["error_code"] == code, body
    return str(body["detail"])


def test_upload_read_and_write_by_the_agent_list_download_delete(
    system: System, client: Client
) -> None:
    alice, workspace = sign_up(client, "alice@example.com")
    made = client.post(
        "/api/v1/sessions/", json={"workspace_id": workspace, "title": "files"}, headers=alice
    )
    session = made.json()["id"]
    alice_id = client.get("/api/v1/auth/me", headers=alice).json()["id"]

    up = upload(client, alice, workspace, "sales.csv", CSV, path="data/sales.csv")
    assert up.status_code == 201, up.text
    uploaded = up.json()
    assert (uploaded["path"], uploaded["name"], uploaded["size"]) == (
        "data/sales.csv", "sales.csv", len(CSV),
    )  # fmt: skip
    assert uploaded["type"] == "text/csv"  # from the name: the part said octet-stream
    assert uploaded["created_by"] == {"kind": "user", "id": alice_id}
    assert uploaded["url"] == f"/api/v1/workspaces/{workspace}/files/{uploaded['id']}"
    assert uploaded["created_at"] == uploaded["updated_at"]

    # The agent reads the upload and writes a file of its own.
    read = tool(client, alice, session, "read_file", path="data/sales.csv")
    assert read["status"] == "success" and str(read["result"]).endswith(CSV.decode())
    wrote = tool(client, alice, session, "write_file", path="out/summary.md", content="# Sum\n")
    assert wrote["status"] == "success", wrote
    listed = tool(client, alice, session, "list_files")
    assert "data/sales.csv" in str(listed["result"]) and "out/summary.md" in str(listed["result"])

    page = client.get(f"/api/v1/workspaces/{workspace}/files", headers=alice)
    assert page.status_code == 200, page.text
    items = page.json()["items"]
    assert [(f["path"], f["created_by"]) for f in items] == [
        ("data/sales.csv", {"kind": "user", "id": alice_id}),
        ("out/summary.md", {"kind": "agent", "id": session}),
    ]
    assert all(f["created_at"] and f["updated_at"] and f["version"] == 1 for f in items)
    when = [datetime.fromisoformat(f["created_at"]) for f in (items[0], uploaded)]
    assert when[0] == when[1]  # the upload's answer said when, truly
    summary_id = items[1]["id"]

    down = client.get(f"/api/v1/workspaces/{workspace}/files/{uploaded['id']}", headers=alice)
    assert down.status_code == 200 and down.content == CSV
    assert down.headers["content-type"].startswith("text/csv")
    assert down.headers["content-disposition"] == 'attachment; filename="sales.csv"'
    assert down.headers["x-content-type-options"] == "nosniff"
    down = client.get(f"/api/v1/workspaces/{workspace}/files/{summary_id}", headers=alice)
    assert down.content == b"# Sum\n" and down.headers["content-type"].startswith("text/markdown")

    # A new version keeps the id; the list says the agent changed the user's file.
    again = tool(client, alice, session, "write_file", path="data/sales.csv", content="a,b\n")
    assert again["status"] == "success" and "version 2" in str(again["result"])
    items = client.get(f"/api/v1/workspaces/{workspace}/files", headers=alice).json()["items"]
    assert (items[0]["id"], items[0]["version"], items[0]["updated_by"]) == (
        uploaded["id"], 2, {"kind": "agent", "id": session},
    )  # fmt: skip

    # The agent's delete asks first; the user's goes through at once.
    asked = tool(client, alice, session, "delete_file", path="out/summary.md")
    assert asked["status"] == "confirm_required" and asked["action_id"]
    gone = client.delete(f"/api/v1/workspaces/{workspace}/files/{uploaded['id']}", headers=alice)
    assert gone.status_code == 204, gone.text
    assert_error(
        client.get(f"/api/v1/workspaces/{workspace}/files/{uploaded['id']}", headers=alice),
        404, "NOT_FOUND",
    )  # fmt: skip
    items = client.get(f"/api/v1/workspaces/{workspace}/files", headers=alice).json()["items"]
    assert [f["path"] for f in items] == ["out/summary.md"]

    # The bytes are in the configured store, and only there.
    assert sorted(stored_blobs(system)) == sorted([CSV, b"# Sum\n", b"a,b\n"])
    if isinstance(system.engine.blobs, S3BlobStore):
        assert not (system.settings.data_dir / "blobs").exists()

    # The read model is the log's: rebuilt, it is the same.
    view = system.container.views[WorkspaceFilesView.name]
    assert isinstance(view, WorkspaceFilesView)
    live = view.all_rows()
    accounts = system.container.accounts
    rebuild(view, accounts.recorder, accounts.mapper)  # type: ignore[arg-type]
    assert view.all_rows() == live


def test_a_download_may_redirect_to_a_presigned_url_where_the_store_has_them(
    system: System, client: Client
) -> None:
    alice, workspace = sign_up(client, "alice@example.com")
    name = "rapport d'été.csv"
    file_id = upload(client, alice, workspace, name, CSV, media_type="text/csv").json()["id"]
    url = f"/api/v1/workspaces/{workspace}/files/{file_id}?redirect=true"
    answer = client.get(url, headers=alice, follow_redirects=False)
    if not isinstance(system.engine.blobs, S3BlobStore):
        assert answer.status_code == 200 and answer.content == CSV  # streamed, as ever
        return
    assert answer.status_code == 307, answer.text
    presigned = answer.headers["location"]
    assert key_of(hashlib.sha256(CSV).hexdigest()) in presigned and "X-Amz-Signature" in presigned
    fetched = httpx.get(presigned)  # no token: the signature is the permission
    assert fetched.status_code == 200 and fetched.content == CSV
    assert fetched.headers["content-type"] == "text/csv"
    assert quote(name, safe="") in fetched.headers["content-disposition"]


def test_another_tenants_workspace_and_files_answer_404_and_a_viewer_only_reads(
    system: System, client: Client
) -> None:
    alice, workspace = sign_up(client, "alice@example.com")
    eve, eves_workspace = sign_up(client, "eve@example.com")
    vic, _ = sign_up(client, "vic@example.com")
    file_id = upload(client, alice, workspace, "secret.txt", b"secret").json()["id"]
    alice_id = client.get("/api/v1/auth/me", headers=alice).json()["id"]
    organization = system.container.accounts.workspace_of(UUID(alice_id), UUID(workspace))
    system.container.accounts.add_member(
        UUID(alice_id), organization.organization_id, "vic@example.com", "viewer"
    )

    base = f"/api/v1/workspaces/{workspace}/files"
    answers = [
        client.get(base, headers=eve),
        client.get(f"{base}/{file_id}", headers=eve),
        client.delete(f"{base}/{file_id}", headers=eve),
        upload(client, eve, workspace, "planted.txt", b"planted"),
        # Her own workspace with Alice's file id; and an id nobody has.
        client.get(f"/api/v1/workspaces/{eves_workspace}/files/{file_id}", headers=eve),
        client.delete(f"/api/v1/workspaces/{eves_workspace}/files/{file_id}", headers=eve),
        client.get(f"{base}/{uuid4()}", headers=alice),
    ]
    for answer in answers:
        assert_error(answer, 404, "NOT_FOUND")

    assert [f["path"] for f in client.get(base, headers=vic).json()["items"]] == ["secret.txt"]
    assert client.get(f"{base}/{file_id}", headers=vic).content == b"secret"
    assert_error(upload(client, vic, workspace, "mine.txt", b"x"), 403, "FORBIDDEN")
    assert_error(client.delete(f"{base}/{file_id}", headers=vic), 403, "FORBIDDEN")

    assert [f["path"] for f in client.get(base, headers=alice).json()["items"]] == ["secret.txt"]
    assert stored_blobs(system) == [b"secret"]  # nothing planted


def test_bad_uploads_get_a_clear_4xx_and_write_nothing(system: System, client: Client) -> None:
    alice, workspace = sign_up(client, "alice@example.com")
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("zeros.bin", b"\0" * (20 * 1024 * 1024))  # 20 MiB in about 20 KB
    refusals = [
        (upload(client, alice, workspace, "empty.txt", b""), 400, "VALIDATION_ERROR", "empty"),
        (upload(client, alice, workspace, "big.bin", b"x" * (LIMIT + 1)), 413,
         "PAYLOAD_TOO_LARGE", f"at most {LIMIT:,} bytes"),
        # Far over: refused while the body arrives, with the same answer.
        (upload(client, alice, workspace, "huge.bin", b"x" * (LIMIT * 3)), 413,
         "PAYLOAD_TOO_LARGE", f"at most {LIMIT:,} bytes"),
        (upload(client, alice, workspace, "../evil.txt", b"x"), 400, "VALIDATION_ERROR", "'..'"),
        (upload(client, alice, workspace, "a.txt", b"x", path="notes/../../evil.txt"), 400,
         "VALIDATION_ERROR", "'..'"),
        (upload(client, alice, workspace, "a.txt", b"x", path="evil\x00.txt"), 400,
         "VALIDATION_ERROR", "NUL"),
        (upload(client, alice, workspace, "a.txt", b"x", path="/etc/passwd"), 400,
         "VALIDATION_ERROR", "absolute"),
        (client.post(f"/api/v1/workspaces/{workspace}/files", headers=alice,
                     files={"attachment": ("a.txt", b"x")}), 400, "VALIDATION_ERROR", "file"),
    ]  # fmt: skip
    for answer, status, code, said in refusals:
        assert said in assert_error(answer, status, code)
    base = f"/api/v1/workspaces/{workspace}/files"
    assert client.get(base, headers=alice).json()["items"] == []
    assert stored_blobs(system) == []
    accounts = system.container.accounts
    topics = [n.topic for n in accounts.recorder.select_notifications(1, 10_000)]
    assert not [t for t in topics if "workspace_files" in t]  # no event either

    # A zip bomb is just bytes: stored as uploaded, never unpacked.
    kept = upload(client, alice, workspace, "bomb.zip", bomb.getvalue())
    assert kept.status_code == 201 and kept.json()["type"] == "application/zip"
    assert stored_blobs(system) == [bomb.getvalue()]
    assert [f["path"] for f in client.get(base, headers=alice).json()["items"]] == ["bomb.zip"]


def test_the_eleventh_upload_in_a_minute_is_refused_with_retry_after(
    system: System, tmp_path: Path
) -> None:
    limits = RateLimits(requests_per_minute=1000, uploads_per_minute=10)
    app = create_app(system, limits=limits)
    with TestClient(app) as client:
        alice, workspace = sign_up(client, "alice@example.com")
        for n in range(10):
            assert upload(client, alice, workspace, f"f{n}.txt", b"%d" % n).status_code == 201
        refused = upload(client, alice, workspace, "f10.txt", b"10")
        assert_error(refused, 429, "RATE_LIMITED")
        assert int(refused.headers["retry-after"]) >= 1
        base = f"/api/v1/workspaces/{workspace}/files"
        assert len(client.get(base, headers=alice).json()["items"]) == 10
