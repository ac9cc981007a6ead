"""Chat attachments that name workspace files (`{type: "file", file_id}`), on a real
server: the message carries their text for the agent, a file that has none (an image)
is refused with 400 before anything is written, another tenant's file answers 404.
"""

from __future__ import annotations

import pytest

from tests.e2e.client import assert_error, read_sse
from tests.e2e.conftest import StartServer
from tests.e2e.test_workspace_files import upload, user
from tests.integration.test_attachments import a_pdf

pytestmark = [pytest.mark.e2e]


def test_attached_workspace_files_reach_the_agent_as_text(start_server: StartServer) -> None:
    server = start_server("replies")
    alice, workspace, _ = user(server, "alice@example.com")
    eve, eve_workspace, _ = user(server, "eve@example.com")
    session = alice.post("/api/v1/sessions/", json={"workspace_id": workspace}).json()["id"]
    csv = upload(alice, workspace, "sales.csv", b"month,amount\n1,10\n2,32\n").json()
    pdf = upload(alice, workspace, "brief.pdf", a_pdf("Tides at Brest are semidiurnal.")).json()
    png = upload(alice, workspace, "logo.png", b"\x89PNG\r\n\x1a\n" + bytes(64)).json()
    theirs = upload(eve, eve_workspace, "secret.txt", b"eve's").json()
    url = f"/api/v1/chat/{session}/message"

    refused = alice.post(
        url, json={"content": "look", "attachments": [{"type": "file", "file_id": png["id"]}]}
    )
    body = assert_error(refused, 400, "UNSUPPORTED_ATTACHMENT")
    assert "logo.png cannot be attached" in str(body["detail"])
    other = {"content": "look", "attachments": [{"type": "file", "file_id": theirs["id"]}]}
    assert_error(alice.post(url, json=other), 404)
    unknown_kind = {"content": "look", "attachments": [{"type": "folder", "file_id": png["id"]}]}
    assert_error(alice.post(url, json=unknown_kind), 400, "VALIDATION_ERROR")
    assert alice.get(f"/api/v1/sessions/{session}/messages").json()["items"] == []

    attached = [{"type": "file", "file_id": csv["id"]}, {"type": "file", "file_id": pdf["id"]}]
    run = read_sse(alice, "POST", url, json={"content": "Sum the sales.", "attachments": attached})
    assert run.status == 200 and run.of("done"), run.events
    (user_message,) = [e.data for e in run.of("message") if e.data["role"] == "user"]
    assert user_message["content"] == "Sum the sales."
    files = user_message["files"]
    assert isinstance(files, list)
    assert [(f["path"], f["media_type"], f["file_id"]) for f in files] == [
        ("sales.csv", "text/csv", csv["id"]),
        ("brief.pdf", "application/pdf", pdf["id"]),
    ]
    listed = alice.get(f"/api/v1/sessions/{session}/messages").json()["items"]
    assert [m["role"] for m in listed] == ["user", "assistant"]
