"""What the chat end-to-end tests share: a signed-up user's client, a session, a chat
read to its end, the session stream followed, the audit log."""

from __future__ import annotations

import httpx

from tests.e2e.client import SseEvent, SseRead, is_event, read_sse, sign_up

QUESTION = is_event("confirm_required")


def user(server_client: httpx.Client, email: str) -> tuple[dict[str, object], httpx.Client]:
    account = sign_up(server_client, email)
    token = str(account["access_token"])
    http = httpx.Client(
        base_url=str(server_client.base_url), headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )  # fmt: skip
    return account, http


def new_session(http: httpx.Client, workspace_id: object, **settings: object) -> dict[str, object]:
    body: dict[str, object] = {"workspace_id": str(workspace_id), "title": "Heat pumps"}
    if settings:
        body["settings"] = settings
    created = http.post("/api/v1/sessions/", json=body)
    assert created.status_code == 201, created.text
    return created.json()


def chat(http: httpx.Client, session_id: object, text: str, **kwargs: object) -> SseRead:
    """Send a message; read the run's SSE until the server ends it."""
    read = read_sse(
        http, "POST", f"/api/v1/chat/{session_id}/message", json={"content": text}, **kwargs
    )
    assert read.status == 200, read.body
    return read


def follow(http: httpx.Client, session_id: object, after: int, **kwargs: object) -> SseRead:
    """The session stream from `Last-Event-ID: after` until the run is done (or fails)."""
    read = read_sse(
        http,
        "GET",
        f"/api/v1/sessions/{session_id}/stream",
        headers={"Last-Event-ID": str(after)},
        until=is_event("done", "error"),
        **kwargs,
    )
    assert read.status == 200, read.body
    return read


def audit_log(http: httpx.Client, session_id: object) -> list[dict[str, object]]:
    """Every stored event of the session, page by page."""
    items: list[dict[str, object]] = []
    params: dict[str, str | int] = {"limit": 1000}
    while True:
        page = http.get(f"/api/v1/sessions/{session_id}/events", params=params)
        assert page.status_code == 200, page.text
        body = page.json()
        items.extend(body["items"])
        if body["next_cursor"] is None:
            return items
        params["cursor"] = body["next_cursor"]


def assert_contiguous(ids: list[int], first: int) -> None:
    assert ids == list(range(first, first + len(ids))), ids


def stored_types(events: list[SseEvent]) -> list[str]:
    return [e.event for e in events if e.id is not None]
