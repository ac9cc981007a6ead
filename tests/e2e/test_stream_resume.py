"""SSE resumes from `Last-Event-ID` with no gap and no duplicate (DESIGN 8.7).

A run of many events is read in pieces: the connection is cut after some stored
events and opened again with the last id seen (the `Last-Event-ID` header, and once
the `last_event_id` query); the ids received, put together, are exactly 1..final
version, each once, in order. The same holds across a restart of the server, mid-run.
"""

from __future__ import annotations

import httpx
import pytest

from tests.e2e.client import (
    SseRead,
    SseTimeout,
    assert_error,
    is_event,
    read_sse,
    sign_up,
)
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]

DONE = is_event("done", "error")


def login(server_client: httpx.Client, email: str) -> tuple[dict[str, object], httpx.Client]:
    account = sign_up(server_client, email)
    server_client.headers["Authorization"] = f"Bearer {account['access_token']}"
    return account, server_client


def new_session(http: httpx.Client, workspace_id: object) -> str:
    created = http.post("/api/v1/sessions/", json={"workspace_id": str(workspace_id)})
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def stream(http: httpx.Client, sid: str, **kwargs: object) -> SseRead:
    read = read_sse(http, "GET", f"/api/v1/sessions/{sid}/stream", **kwargs)
    assert read.status == 200, read.body
    return read


def log_versions(http: httpx.Client, sid: str) -> list[int]:
    page = http.get(f"/api/v1/sessions/{sid}/events", params={"limit": 1000})
    assert page.status_code == 200, page.text
    return [i["version"] for i in page.json()["items"]]


def assert_in_order_once(*reads: SseRead) -> list[int]:
    """Each connection's ids strictly increase, and each starts right after the last."""
    ids: list[int] = []
    for read in reads:
        assert read.ids == sorted(set(read.ids)), f"out of order or twice: {read.ids}"
        if ids and read.ids:
            assert read.ids[0] == ids[-1] + 1, f"gap or repeat between {ids[-1]} and {read.ids}"
        ids.extend(read.ids)
    return ids


def test_cut_and_resumed_streams_give_every_event_exactly_once(
    start_server: StartServer,
) -> None:
    server = start_server("many")
    account, http = login(server.client(), "resume@example.com")
    sid = new_session(http, account["workspace_id"])

    opened = stream(http, sid, stored=1, timeout=10)  # SessionStarted, then cut
    chat = read_sse(
        http,
        "POST",
        f"/api/v1/chat/{sid}/message",
        json={"content": "do ten steps"},
        stored=5,
        timeout=15,
    )  # cut in the middle of the run
    assert chat.status == 200, chat.body
    by_header = stream(
        http, sid, headers={"Last-Event-ID": str(chat.ids[-1])}, stored=12, timeout=15
    )
    by_query = stream(http, sid, params={"last_event_id": str(by_header.ids[-1])}, until=DONE)
    assert by_query.events[-1].event == "done", by_query.events[-1]
    assert by_query.events[-1].data["status"] == "completed"

    ids = assert_in_order_once(opened, chat, by_header, by_query)
    final = by_query.ids[-1]
    assert final > 40, f"the script makes a run of ~46 events, got {final}"
    assert ids == list(range(1, final + 1))
    assert log_versions(http, sid) == ids, "the stream and the log hold the same events"

    # Again from the middle, after the end: exactly the rest, then nothing more.
    middle = final // 2
    again = stream(http, sid, headers={"Last-Event-ID": str(middle)}, until=DONE)
    assert again.ids == list(range(middle + 1, final + 1))
    # The header wins over the query when both are given.
    both = stream(
        http,
        sid,
        headers={"Last-Event-ID": str(final - 1)},
        params={"last_event_id": "1"},
        until=DONE,
    )
    assert both.ids == [final]
    with pytest.raises(SseTimeout) as quiet:
        stream(http, sid, headers={"Last-Event-ID": str(final)}, stored=1, timeout=1.5)
    assert [e.id for e in quiet.value.events if e.id is not None] == []
    # From zero (header "0" and no header at all): the whole log.
    assert stream(http, sid, headers={"Last-Event-ID": "0"}, until=DONE).ids == ids
    assert stream(http, sid, until=DONE).ids == ids


def test_resume_across_a_server_restart_mid_run(start_server: StartServer) -> None:
    first_server = start_server("restart_before")
    account, http = login(first_server.client(), "restart@example.com")
    token = http.headers["Authorization"]
    sid = new_session(http, account["workspace_id"])

    opened = stream(http, sid, stored=1, timeout=10)
    chat = read_sse(
        http,
        "POST",
        f"/api/v1/chat/{sid}/message",
        json={"content": "work slowly"},
        stored=8,
        timeout=15,
    )
    assert chat.status == 200, chat.body
    assert not chat.of("done"), "the run must still be going when the server stops"
    http.close()
    first_server.stop()  # SIGTERM in the middle of the run
    assert first_server.process is not None and first_server.process.returncode == 0

    second_server = start_server("restart_after")
    http = second_server.client()
    http.headers["Authorization"] = token  # the same secret: the login is still valid
    resumed = stream(
        http, sid, headers={"Last-Event-ID": str(chat.ids[-1])}, until=DONE, timeout=30
    )
    done = resumed.events[-1]
    assert done.event == "done" and done.data["status"] == "completed", done
    ids = assert_in_order_once(opened, chat, resumed)
    final = resumed.ids[-1]
    assert ids == list(range(1, final + 1))
    assert log_versions(http, sid) == ids
    texts = [e.data["content"] for e in resumed.of("message") if e.data["role"] == "assistant"]
    assert texts[-1] == "Finished after the restart."

    # And after the run: from any id, exactly the events after it.
    for after in (1, chat.ids[0], chat.ids[-1], final - 1):
        again = stream(http, sid, headers={"Last-Event-ID": str(after)}, until=DONE)
        assert again.ids == list(range(after + 1, final + 1)), after


def test_resume_after_a_restart_once_the_run_is_over(start_server: StartServer) -> None:
    first_server = start_server("many")
    account, http = login(first_server.client(), "after@example.com")
    token = http.headers["Authorization"]
    sid = new_session(http, account["workspace_id"])
    whole = read_sse(
        http, "POST", f"/api/v1/chat/{sid}/message", json={"content": "go"}, until=DONE
    )
    assert whole.events[-1].data["status"] == "completed"
    seen = whole.ids[: len(whole.ids) // 3]
    http.close()
    first_server.stop()

    second_server = start_server(None)
    http = second_server.client()
    http.headers["Authorization"] = token
    rest = stream(http, sid, headers={"Last-Event-ID": str(seen[-1])}, until=DONE)
    assert rest.ids == list(range(seen[-1] + 1, whole.ids[-1] + 1))
    assert [e.event for e in rest.stored] == [e.event for e in whole.stored][len(seen) :]


def test_bad_last_event_ids_are_refused_in_the_error_format(start_server: StartServer) -> None:
    server = start_server(None)
    account, http = login(server.client(), "bad-id@example.com")
    sid = new_session(http, account["workspace_id"])
    version = log_versions(http, sid)[-1]
    url = f"/api/v1/sessions/{sid}/stream"
    bad = ["abc", "-1", "1.5", "0x10", "99999999999999999999999", str(version + 1), "1000"]
    for value in bad:
        for where in ("headers", "params"):
            kwargs = (
                {"headers": {"Last-Event-ID": value}}
                if where == "headers"
                else {"params": {"last_event_id": value}}
            )
            read = read_sse(http, "GET", url, timeout=5, **kwargs)  # type: ignore[arg-type]
            response = httpx.Response(
                read.status, content=read.body, request=httpx.Request("GET", f"{url} {where}")
            )
            body = assert_error(response, 400, "VALIDATION_ERROR")
            assert "Last-Event-ID" in str(body["detail"]), (value, body)
    # The newest version itself is fine: nothing stored follows (yet).
    with pytest.raises(SseTimeout):
        read_sse(http, "GET", url, headers={"Last-Event-ID": str(version)}, stored=1, timeout=1)


def test_a_pending_approval_survives_a_restart_and_the_run_goes_on(
    start_server: StartServer,
) -> None:
    first_server = start_server("one_tool")
    account, http = login(first_server.client(), "approval@example.com")
    token = http.headers["Authorization"]
    created = http.post(
        "/api/v1/sessions/",
        json={"workspace_id": str(account["workspace_id"]), "settings": {"confirmation": "always"}},
    )
    assert created.status_code == 201, created.text
    sid = str(created.json()["id"])
    chat = read_sse(
        http, "POST", f"/api/v1/chat/{sid}/message", json={"content": "note it"},
        until=lambda e: e.event == "confirm_required", timeout=15,
    )  # fmt: skip
    question = chat.events[-1]
    assert question.event == "confirm_required", [e.event for e in chat.events]
    http.close()
    first_server.stop()

    second_server = start_server("after_approval")
    http = second_server.client()
    http.headers["Authorization"] = token
    pending = http.get(f"/api/v1/sessions/{sid}/hitl/pending")
    assert pending.status_code == 200, pending.text
    assert [p["request_id"] for p in pending.json()] == [question.data["action_id"]]
    answered = http.post(
        f"/api/v1/hitl/{question.data['action_id']}/confirm", json={"approved": True}
    )
    assert answered.status_code == 200, answered.text
    rest = stream(http, sid, headers={"Last-Event-ID": str(question.id)}, until=DONE, timeout=15)
    assert [e.event for e in rest.stored] == [
        "confirmed",
        "progress",
        "tool_result",
        "message",
        "done",
    ]
    assert rest.of("tool_result")[0].data["status"] == "success"
    assert rest.events[-1].data["status"] == "completed"
    assert_in_order_once(chat, rest)
