"""A client written only from the seeds' shapes reads everything a session shows.

The types below are transcribed from seed 002 (section 3.1's JSON, 3.2's WebSocket
messages and section 5's TypeScript: `Message`, `ToolCall`, `Citation`, `Session`,
`Artifact`, the SSE events) and seed 001, and nothing else: a field the seed marks
optional (`?`) is optional here, every other one is required with the seed's type;
fields the seeds do not know are allowed (msgspec ignores them). Where the backend's
documents deliberately differ (DESIGN.md wins over the seeds) the transcription says so on the line:
- lists are paged by cursor (`next_cursor`), not by `offset`;
- a session's status is the log's (`created`, `running`, `waiting`, `completed`,
  `error`, `stopped`; seed 001's list), where seed 002's type says `active`/`failed`;
- an artifact's type includes `file` (a file the agent wrote);
- a deck preview's `thumbnail_url` is null where LibreOffice is not installed.

Against a real `tokendance serve` with the scripted research model and the fake
Tavily: one session researches (searches, reads, findings, a cited report), then makes
a deck; a file is uploaded to its workspace. Every list and detail the client reads,
every SSE event of the seed's types, and every WebSocket message it follows the session
with, decodes strictly.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import httpx
import msgspec
import pytest
import yaml
from websockets.sync.client import connect

from adapters.commands.demo import research_script
from adapters.web_search.local_web import CORPUS
from tests.e2e.chat_helpers import audit_log
from tests.e2e.client import read_sse, settled, sign_up
from tests.e2e.conftest import StartServer
from tests.e2e.seed_types import (
    PUSH_TYPES,
    SSE_TYPES,
    ArtifactPage,
    DeckPreview,
    FilePage,
    MessagePage,
    Notification,
    Other,
    Pong,
    PushMessage,
    SessionCreated,
    SessionDetail,
    SessionPage,
    SessionUpdate,
    Uploaded,
    WorkspacePage,
)
from tests.fakes.tavily_server import FakeTavily, serve_fake_tavily

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
T = TypeVar("T")

DECK_TURNS = [
    {"tool_calls": [{"name": "activate_skill", "input": {"name": "slides"}}]},
    {
        "thinking": "A short deck from the findings: a title slide and the evidence.",
        "text": "Making the deck now.",
        "tool_calls": [
            {
                "name": "create_deck",
                "input": {
                    "title": "Heat pumps in cold climates",
                    "template": "business",
                    "slides": [
                        {
                            "title": "Heat pumps in cold climates",
                            "layout": "title",
                            "body": "What the evidence says",
                        },
                        {
                            "title": "They keep working below freezing",
                            "bullets": ["COP 2.4 at -15 °C", "Backup heat for 4% of winter"],
                        },
                    ],
                },
            }
        ],
    },
    {"text": "The deck is ready: two slides."},
]


@pytest.fixture
def fake() -> Iterator[FakeTavily]:
    with serve_fake_tavily(link_pages=True, corpus_path=CORPUS) as running:
        yield running


def strict(kind: type[T], response: httpx.Response, status: int = 200) -> T:
    assert response.status_code == status, response.text
    return msgspec.json.decode(response.content, type=kind)


def research_then_deck(fake: FakeTavily, into: Path) -> Path:
    """The demo's research script, then the deck's turns."""
    path = research_script(fake.base_url, into)
    script = yaml.safe_load(path.read_text())
    script["turns"].extend(DECK_TURNS)
    path.write_text(yaml.safe_dump(script, allow_unicode=True))
    return path


def chat(http: httpx.Client, sid: str, text: str) -> None:
    """One message; every SSE event of the seed's types decodes as the seed has it."""
    read = read_sse(
        http, "POST", f"/api/v1/chat/{sid}/message", json={"content": text}, timeout=120
    )
    assert read.status == 200, read.body
    seen = {e.event for e in read.events}
    assert {"tool_call", "tool_result", "content", "done"} <= seen, seen
    for e in read.events:
        if e.event in SSE_TYPES:
            msgspec.convert(e.data, SSE_TYPES[e.event])
    (done,) = read.of("done")
    assert done.data["status"] == "completed", read.of("error")


def test_a_client_built_from_the_seeds_reads_every_list_and_detail_of_a_session(
    start_server: StartServer, fake: FakeTavily, data_root: Path
) -> None:
    script = research_then_deck(fake, data_root / f"seed-client-{uuid.uuid4().hex[:8]}")
    server = start_server(
        script,
        extra_env=fake.server_env(),
    )
    account = sign_up(server.client(), f"seed-{uuid.uuid4().hex[:6]}@example.com")
    http = server.client(str(account["access_token"]))
    workspace_id = str(account["workspace_id"])

    created = strict(
        SessionCreated,
        http.post("/api/v1/sessions", json={"workspace_id": workspace_id, "title": "Heat pumps"}),
        201,
    )
    url = server.url.replace("http://", "ws://") + f"/api/v1/ws?token={account['access_token']}"
    push = connect(url, open_timeout=10)
    push.send(json.dumps({"type": "subscribe", "session_id": created.id}))
    chat(http, created.id, "Research whether heat pumps work in cold climates")
    chat(http, created.id, "Now make slides of it")
    push.send(json.dumps({"type": "ping"}))
    pushed: list[PushMessage] = []
    while not pushed or not isinstance(pushed[-1], Pong):
        raw = push.recv(timeout=20)
        if msgspec.json.decode(raw, type=Other).type in PUSH_TYPES:
            pushed.append(msgspec.json.decode(raw, type=PushMessage))
    push.close()
    upload = http.post(
        f"/api/v1/workspaces/{workspace_id}/files",
        files={"file": ("notes.md", b"# Notes\nHeat pumps.", "text/markdown")},
    )
    uploaded = strict(Uploaded, upload, 201)
    settled(http)

    page = strict(SessionPage, http.get("/api/v1/sessions", params={"workspace_id": workspace_id}))
    assert [s.id for s in page.items] == [created.id] and page.total == 1
    detail = strict(SessionDetail, http.get(f"/api/v1/sessions/{created.id}?include_details=true"))
    activated = [e for e in audit_log(http, created.id) if e["type"] == "SkillActivated"]
    payload = activated[-1]["payload"] if activated else {}
    assert isinstance(payload, dict) and detail.skill_id == payload["name"], detail.skill_id
    roles = [m.role for m in detail.messages]
    assert roles.count("user") == 2 and roles[-1] == "assistant", roles
    calls = [c for m in detail.messages for c in m.tool_calls or ()]
    assert {c.name for c in calls} >= {"web_search", "read_url", "create_doc", "create_deck"}
    assert {c.status for c in calls} == {"success"}, [(c.name, c.error) for c in calls if c.error]
    cited = [m for m in detail.messages if m.citations]
    assert cited and all(c.url.startswith("http") for m in cited for c in m.citations or ())

    messages = strict(MessagePage, http.get(f"/api/v1/sessions/{created.id}/messages"))
    assert [m.id for m in messages.items] == [m.id for m in detail.messages]
    for path in (f"/api/v1/sessions/{created.id}/artifacts", "/api/v1/artifacts"):
        listed = strict(ArtifactPage, http.get(path, params={"session_id": created.id}))
        assert [a.type for a in listed.items] == ["report", "ppt"], listed
        assert [a.id for a in listed.items] == [a.id for a in detail.artifacts]
    report, deck = detail.artifacts
    statuses = [m.data.status for m in pushed if isinstance(m, SessionUpdate)]
    assert statuses[0] == "created" and statuses[-1] == "completed", statuses
    ready = [m.data for m in pushed if isinstance(m, Notification) and m.data.artifact_id]
    assert [n.artifact_id for n in ready] == [report.id, deck.id], ready
    assert all(n.title and n.message for n in ready)
    assert http.get(report.download_url).status_code == 200
    assert http.get(deck.download_url).status_code == 200
    assert deck.preview_url is not None
    preview = strict(DeckPreview, http.get(deck.preview_url))
    assert [p.index for p in preview.pages] == [1, 2]

    workspaces = strict(WorkspacePage, http.get("/api/v1/workspaces"))
    (workspace,) = workspaces.items
    assert (workspace.id, workspace.session_count) == (workspace_id, 1)
    files = strict(FilePage, http.get(f"/api/v1/workspaces/{workspace_id}/files"))
    assert [(f.id, f.name, f.type) for f in files.items] == [
        (uploaded.id, "notes.md", "text/markdown")
    ]
    assert http.get(uploaded.url).content == b"# Notes\nHeat pumps."

    # Pages: messages scroll back from the latest; sessions go on, none twice.
    ids = [m.id for m in messages.items]
    latest = http.get(f"/api/v1/sessions/{created.id}/messages", params={"limit": 2}).json()
    assert [m["id"] for m in latest["items"]] == ids[-2:] and latest["total"] == len(ids)
    earlier = http.get(
        f"/api/v1/sessions/{created.id}/messages",
        params={"limit": 2, "cursor": latest["next_cursor"]},
    ).json()
    assert [m["id"] for m in earlier["items"]] == ids[-4:-2]
    for title in ("second", "third"):
        http.post("/api/v1/sessions", json={"workspace_id": workspace_id, "title": title})
    seen: list[str] = []
    params: dict[str, str | int] = {"workspace_id": workspace_id, "limit": 1}
    while True:
        listed = strict(SessionPage, http.get("/api/v1/sessions", params=params))
        seen += [s.id for s in listed.items]
        if listed.next_cursor is None:
            break
        params["cursor"] = listed.next_cursor
    assert len(seen) == len(set(seen)) == 3 and listed.total == 3
