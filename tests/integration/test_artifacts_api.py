"""The artifacts API on real Postgres and NATS (the app in process, its services running):
metadata from the artifacts read model, the bytes with their type and file name, a
preview of Markdown and of a PDF by page; another tenant's artifact and an unknown id
answer the same 404. The SSE `artifact` payload names the artifact's id.
"""

from __future__ import annotations

import asyncio
from urllib.parse import quote
from uuid import UUID, uuid4

import pytest
from litestar.testing import TestClient

from adapters.documents.pdf import ReportLabDocumentRenderer
from adapters.system import System
from application.tools.create_doc import MARKDOWN, PDF
from domain.values import artifact_id_of

pytestmark = pytest.mark.integration

Client = TestClient  # type: ignore[type-arg]
REPORT = "# Laptops\n\nLight ones [1].\n\n## Sources\n\n[1] One - https://a.example/one\n"


def sign_up(client: Client, email: str) -> tuple[dict[str, str], str]:
    """Auth headers of a new user, and their workspace."""
    password = "correct horse battery"
    made = client.post(
        "/api/v1/auth/register", json={"email": email, "password": password, "name": "n"}
    )
    assert made.status_code == 201, made.text
    login = client.post("/api/v1/auth/login", json={"email": email, "password": password})
    assert login.status_code == 200, login.text
    return {"Authorization": f"Bearer {login.json()['access_token']}"}, made.json()["workspace_id"]


def artifact(system: System, sid: UUID, name: str, data: bytes, media_type: str) -> UUID:
    """An artifact of the session, as `create_doc` leaves it: a blob and its event."""
    blob_ref = asyncio.run(system.engine.blobs.put(data))
    receipt = system.container.sessions.record_artifact(
        sid, "report", name, blob_ref, size=len(data), sha256=blob_ref, media_type=media_type
    )
    return artifact_id_of(sid, receipt.version)


def test_an_artifact_is_served_with_metadata_bytes_and_a_preview(
    system: System, client: Client
) -> None:
    alice, workspace = sign_up(client, "alice@example.com")
    made = client.post(
        "/api/v1/sessions/", json={"workspace_id": workspace, "title": "r"}, headers=alice
    )
    assert made.status_code == 201, made.text
    sid = UUID(made.json()["id"])
    md = artifact(system, sid, "laptops.md", REPORT.encode(), MARKDOWN)
    pdf_bytes = ReportLabDocumentRenderer().render("Laptops", REPORT)
    pdf = artifact(system, sid, "笔记本 laptops.pdf", pdf_bytes, PDF)

    meta = client.get(f"/api/v1/artifacts/{md}", headers=alice)  # found, though just written
    assert meta.status_code == 200, meta.text
    body = meta.json()
    assert body["id"] == str(md) and body["session_id"] == str(sid)
    assert (body["type"], body["name"], body["media_type"]) == ("report", "laptops.md", MARKDOWN)
    assert body["size"] == len(REPORT.encode())
    assert (body["version"], body["latest_version"]) == (1, 1)  # the artifact's, not the log's
    assert artifact_id_of(sid, body["metadata"]["session_version"]) == md
    assert body["created_at"]
    assert body["download_url"] == f"/api/v1/artifacts/{md}/download"
    assert body["preview_url"] == f"/api/v1/artifacts/{md}/preview"

    download = client.get(f"/api/v1/artifacts/{md}/download", headers=alice)
    assert download.status_code == 200, download.text
    assert download.content == REPORT.encode()
    assert download.headers["content-type"] == MARKDOWN
    assert download.headers["content-disposition"] == 'attachment; filename="laptops.md"'
    download = client.get(f"/api/v1/artifacts/{pdf}/download", headers=alice)
    assert download.content == pdf_bytes and download.headers["content-type"] == PDF
    assert download.headers["content-disposition"] == (
        "attachment; filename=\"___ laptops.pdf\"; filename*=UTF-8''"
        + quote("笔记本 laptops.pdf", safe="")
    )

    preview = client.get(f"/api/v1/artifacts/{md}/preview", headers=alice)
    assert preview.json() == {"format": "markdown", "text": REPORT}
    preview = client.get(f"/api/v1/artifacts/{pdf}/preview", headers=alice).json()
    assert preview["format"] == "pdf" and len(preview["pages"]) == 1
    assert "Light ones [1]." in preview["pages"][0]
    assert "[1] One - https://a.example/one" in preview["pages"][0]

    listed = client.get(f"/api/v1/sessions/{sid}/artifacts", headers=alice).json()
    assert [a["id"] for a in listed["items"]] == [str(md), str(pdf)]
    assert listed["next_cursor"] is None
    everywhere = client.get("/api/v1/artifacts", params={"session_id": str(sid)}, headers=alice)
    assert everywhere.json() == listed
    # A page at a time, in the order they were made; one type at a time.
    first = client.get(f"/api/v1/artifacts?session_id={sid}&limit=1", headers=alice).json()
    assert [a["id"] for a in first["items"]] == [str(md)] and first["next_cursor"]
    rest = client.get(
        "/api/v1/artifacts", params={"limit": 1, "cursor": first["next_cursor"]}, headers=alice
    ).json()
    assert [a["id"] for a in rest["items"]] == [str(pdf)] and rest["next_cursor"] is None
    reports = client.get("/api/v1/artifacts?type=report", headers=alice).json()["items"]
    assert [a["id"] for a in reports] == [str(md), str(pdf)]
    assert client.get("/api/v1/artifacts?type=ppt", headers=alice).json()["items"] == []


def test_another_tenants_artifact_answers_as_an_unknown_id(system: System, client: Client) -> None:
    alice, workspace = sign_up(client, "alice@example.com")
    bob, _ = sign_up(client, "bob@example.com")
    made = client.post(
        "/api/v1/sessions/", json={"workspace_id": workspace, "title": "r"}, headers=alice
    )
    sid = UUID(made.json()["id"])
    mine = artifact(system, sid, "secret.md", b"# secret\n", MARKDOWN)
    assert client.get(f"/api/v1/artifacts/{mine}", headers=alice).status_code == 200

    for artifact_id in (mine, uuid4()):
        for tail in ("", "/download", "/preview"):
            answer = client.get(f"/api/v1/artifacts/{artifact_id}{tail}", headers=bob)
            assert answer.status_code == 404, answer.text
            body = answer.json()
            assert body["error_code"] == "NOT_FOUND"
            assert body["detail"] == f"artifact {artifact_id} not found"


def test_an_artifact_with_no_preview_says_so(system: System, client: Client) -> None:
    alice, workspace = sign_up(client, "alice@example.com")
    made = client.post(
        "/api/v1/sessions/", json={"workspace_id": workspace, "title": "r"}, headers=alice
    )
    sid = UUID(made.json()["id"])
    deck = artifact(system, sid, "deck.pptx", b"PK\x03\x04", "application/vnd.ms-powerpoint")
    answer = client.get(f"/api/v1/artifacts/{deck}/preview", headers=alice)
    assert answer.status_code == 415 and answer.json()["error_code"] == "PREVIEW_UNSUPPORTED"
