"""Rate limits, Idempotency-Key, uploads and /metrics, against a real `tokendance serve`."""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from adapters.config.settings import Settings
from tests.e2e.client import Server, SseEvent, parse_sse
from tests.waiting import eventually

pytestmark = [pytest.mark.e2e]

ERROR_KEYS = {"detail", "error_code", "timestamp"}
# One model turn: the run completes right after it (the delay keeps it running a moment).
SCRIPT = """\
model: scripted-e2e
turns:
  - text: All done.
    usage: {input: 1200, output: 80, cache_read: 0, cache_write: 0}
    delay: 1.0
"""
GENEROUS = {
    "TOKENDANCE_RATE_LIMIT_PER_MINUTE": "1000",
    "TOKENDANCE_MAX_STREAMS_PER_USER": "10",
    "TOKENDANCE_UPLOADS_PER_MINUTE": "100",
    "TOKENDANCE_LOGIN_ATTEMPTS": "1000",  # failed logins have their own tests (test_login_limits)
}

StartServer = Callable[..., Server]


@pytest.fixture
def start_server(
    database_url: str, nats_url: str, settings: Settings, data_root: Path, tmp_path: Path
) -> Iterator[StartServer]:
    """Starts `tokendance serve` on the test's database and stream; stopped at the end."""
    servers: list[Server] = []
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)

    def start(*, scripted: bool = False, **limits: str) -> Server:
        server = Server(
            database_url,
            nats_url,
            settings.nats_stream,
            data_root / f"limits-{uuid.uuid4().hex[:8]}",
            script=script if scripted else None,
            extra_env={**GENEROUS, **limits},
        )
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()


def account(server: Server, email: str) -> tuple[httpx.Client, str]:
    """A logged-in client and the user's workspace id."""
    password = "correct horse battery"
    with server.client() as anonymous:
        user = anonymous.post(
            "/api/v1/auth/register", json={"email": email, "password": password, "name": "x"}
        )
        assert user.status_code == 201, user.text
        tokens = anonymous.post("/api/v1/auth/login", json={"email": email, "password": password})
        assert tokens.is_success, tokens.text
    return server.client(tokens.json()["access_token"]), user.json()["workspace_id"]


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, object]:
    assert response.status_code == status, response.text
    body = response.json()
    assert body.keys() >= ERROR_KEYS and body["error_code"] == code, body
    return body


def retry_after(response: httpx.Response) -> int:
    seconds = int(response.headers["retry-after"])
    assert 1 <= seconds <= 60
    return seconds


def new_session(http: httpx.Client, workspace_id: str, **headers: str) -> httpx.Response:
    return http.post("/api/v1/sessions", json={"workspace_id": workspace_id}, headers=headers)


def read_run(
    http: httpx.Client, url: str, key: str, body: dict[str, object], *, until: str
) -> list[SseEvent]:
    """POST a chat message and read its SSE answer up to the first `until` event."""
    events: list[SseEvent] = []
    with http.stream("POST", url, json=body, headers={"Idempotency-Key": key}) as response:
        assert response.status_code == 200, response.read()
        for event in parse_sse(response.iter_lines()):
            events.append(event)
            if event.event == until:
                return events
    raise AssertionError(f"the stream ended before {until!r}: {[e.event for e in events]}")


# -- rate limits ----------------------------------------------------------------------


def test_a_user_over_the_request_limit_gets_429_and_others_are_unaffected(
    start_server: StartServer,
) -> None:
    server = start_server(TOKENDANCE_RATE_LIMIT_PER_MINUTE="20")
    alice, _ = account(server, "alice@example.com")
    bob, _ = account(server, "bob@example.com")  # 4 requests from this address so far
    with alice, bob:
        answers = [alice.get("/api/v1/workspaces").status_code for _ in range(20)]
        assert answers == [200] * 20
        refused = alice.get("/api/v1/workspaces")
        assert_error(refused, 429, "RATE_LIMITED")
        retry_after(refused)
        assert alice.get("/api/v1/workspaces").status_code == 429  # still over: refusals are free

        assert bob.get("/api/v1/workspaces").status_code == 200
        assert alice.get("/health").status_code == 200  # exempt
        assert alice.get("/metrics").status_code == 200

    with server.client() as anonymous:  # before login, the limit is per client address
        logins = [
            anonymous.post(
                "/api/v1/auth/login", json={"email": "alice@example.com", "password": "wrong"}
            ).status_code
            for _ in range(16)
        ]
        assert 429 not in logins
        refused = anonymous.post(
            "/api/v1/auth/login", json={"email": "alice@example.com", "password": "wrong"}
        )
        assert_error(refused, 429, "RATE_LIMITED")
        retry_after(refused)


def test_the_third_concurrent_stream_is_refused_until_one_closes(
    start_server: StartServer,
) -> None:
    server = start_server(TOKENDANCE_MAX_STREAMS_PER_USER="2")
    alice, workspace = account(server, "alice@example.com")
    bob, bobs_workspace = account(server, "bob@example.com")
    with alice, bob, ExitStack() as streams:
        session = new_session(alice, workspace).json()["id"]
        url = f"/api/v1/sessions/{session}/stream"
        first = streams.enter_context(alice.stream("GET", url))
        second = streams.enter_context(alice.stream("GET", url))
        assert first.status_code == second.status_code == 200

        third = alice.get(url)
        assert_error(third, 429, "RATE_LIMITED")
        retry_after(third)
        chat = alice.post(f"/api/v1/chat/{session}/message", json={"content": "hi"})
        assert_error(chat, 429, "RATE_LIMITED")  # a chat answer is a stream too

        bobs = new_session(bob, bobs_workspace).json()["id"]
        with bob.stream("GET", f"/api/v1/sessions/{bobs}/stream") as his:
            assert his.status_code == 200  # another user's streams are his own

        first.close()  # the client goes away: the server notices and frees the slot

        def reopened() -> httpx.Response | None:
            response = streams.enter_context(alice.stream("GET", url))
            return response if response.status_code == 200 else None

        eventually(reopened, timeout=15, what="a stream in the freed slot", interval=0.1)


def test_uploads_over_the_per_minute_limit_get_429(start_server: StartServer) -> None:
    server = start_server(TOKENDANCE_UPLOADS_PER_MINUTE="3")
    alice, workspace = account(server, "alice@example.com")
    bob, _ = account(server, "bob@example.com")
    with alice, bob:
        session = new_session(alice, workspace).json()["id"]
        url = f"/api/v1/sessions/{session}/attachments"
        data = b"col1,col2\n1,2\n"
        stored = alice.post(url, files={"file": ("data.csv", data, "text/csv")})
        assert stored.status_code == 201, stored.text
        assert stored.json() == {
            "blob_ref": hashlib.sha256(data).hexdigest(),
            "filename": "data.csv",
            "size": len(data),
            "content_type": "text/csv",
        }
        too_big = b"x" * (10 * 1024 * 1024 + 1)
        assert_error(
            alice.post(url, files={"file": ("big.bin", too_big)}), 413, "PAYLOAD_TOO_LARGE"
        )
        assert alice.post(url, files={"file": ("b.txt", b"b")}).status_code == 201

        refused = alice.post(url, files={"file": ("c.txt", b"c")})
        assert_error(refused, 429, "RATE_LIMITED")
        retry_after(refused)
        assert alice.get(f"/api/v1/sessions/{session}").status_code == 200  # not an upload

        theirs = bob.post(url, files={"file": ("d.txt", b"d")})
        assert_error(theirs, 404, "NOT_FOUND")  # another tenant's session

        schema = bob.get("/schema/openapi.json")
        assert schema.status_code == 200
        assert "/api/v1/sessions/{session_id}/attachments" in schema.json()["paths"]


# -- idempotency ----------------------------------------------------------------------


def test_an_idempotent_create_answers_the_same_and_creates_one_session(
    start_server: StartServer,
) -> None:
    server = start_server()
    alice, workspace = account(server, "alice@example.com")
    bob, bobs_workspace = account(server, "bob@example.com")
    with alice, bob:
        first = new_session(alice, workspace, **{"Idempotency-Key": "create-1"})
        again = new_session(alice, workspace, **{"Idempotency-Key": "create-1"})
        assert first.status_code == again.status_code == 201
        assert again.json() == first.json()
        assert again.headers["idempotent-replayed"] == "true"
        listed = alice.get("/api/v1/sessions", params={"workspace_id": workspace}).json()
        assert listed["total"] == 1

        other = alice.post(
            "/api/v1/sessions",
            json={"workspace_id": workspace, "title": "else"},
            headers={"Idempotency-Key": "create-1"},
        )
        assert_error(other, 422, "IDEMPOTENCY_KEY_REUSED")
        too_long = new_session(alice, workspace, **{"Idempotency-Key": "k" * 256})
        assert_error(too_long, 400, "VALIDATION_ERROR")

        # A key is the user's own: Bob's "create-1" is a new request.
        his = new_session(bob, bobs_workspace, **{"Idempotency-Key": "create-1"})
        assert his.status_code == 201 and his.json()["id"] != first.json()["id"]

        # A 4xx is kept too: the retry gets the very same body (timestamp included).
        nowhere = str(uuid.uuid4())
        missing = new_session(alice, nowhere, **{"Idempotency-Key": "create-2"})
        assert_error(missing, 404, "NOT_FOUND")
        replayed = new_session(alice, nowhere, **{"Idempotency-Key": "create-2"})
        assert (replayed.status_code, replayed.content) == (404, missing.content)


def test_concurrent_requests_with_one_key_create_one_session(start_server: StartServer) -> None:
    server = start_server()
    alice, workspace = account(server, "alice@example.com")
    with alice, ThreadPoolExecutor(6) as pool:
        barrier = threading.Barrier(6)

        def create(_: int) -> httpx.Response:
            barrier.wait()
            return new_session(alice, workspace, **{"Idempotency-Key": "together"})

        answers = list(pool.map(create, range(6)))
        created = [a for a in answers if a.status_code == 201]
        assert created and len({a.content for a in created}) == 1
        for a in answers:
            if a.status_code != 201:
                assert_error(a, 409, "IDEMPOTENCY_IN_PROGRESS")
        listed = alice.get("/api/v1/sessions", params={"workspace_id": workspace}).json()
        assert listed["total"] == 1


def test_an_idempotent_chat_message_is_appended_once_and_its_run_streamed_again(
    start_server: StartServer,
) -> None:
    server = start_server(scripted=True)
    alice, workspace = account(server, "alice@example.com")
    with alice:
        session = new_session(alice, workspace).json()["id"]
        upload = alice.post(
            f"/api/v1/sessions/{session}/attachments", files={"file": ("notes.txt", b"notes")}
        )
        blob_ref = upload.json()["blob_ref"]
        url = f"/api/v1/chat/{session}/message"
        body: dict[str, object] = {"content": "Summarise my notes", "attachments": [blob_ref]}
        with alice.stream("POST", url, json=body, headers={"Idempotency-Key": "m-1"}) as first:
            assert first.status_code == 200
            started = next(e for e in parse_sse(first.iter_lines()) if e.event == "run")
            run_id = started.data["run_id"]
        # The run goes on without the first client; a retry while it runs follows it.
        replay: list[SseEvent] = []
        with alice.stream("POST", url, json=body, headers={"Idempotency-Key": "m-1"}) as again:
            assert again.status_code == 200
            for event in parse_sse(again.iter_lines()):
                replay.append(event)
        assert replay[0].event == "message" and replay[0].data["attachments"] == [blob_ref]
        assert replay[-1].event == "done" and replay[-1].data["run_id"] == run_id
        # Once more after the run ended: the same stored run, from its message to its end.
        later = read_run(alice, url, "m-1", body, until="done")
        assert [e.id for e in later if e.id] == [e.id for e in replay if e.id]

        changed = alice.post(url, json={"content": "else"}, headers={"Idempotency-Key": "m-1"})
        assert_error(changed, 422, "IDEMPOTENCY_KEY_REUSED")
        events = f"/api/v1/sessions/{session}/events"
        messages = alice.get(events, params={"type": "UserMessageAppended"}).json()["items"]
        assert len(messages) == 1 and messages[0]["payload"]["idempotency_key"] == "m-1"
        runs = alice.get(events, params={"type": "RunRequested"}).json()["items"]
        assert [r["payload"]["run_id"] for r in runs] == [run_id]


# -- metrics --------------------------------------------------------------------------


def scrape(http: httpx.Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """This process's metrics and the store's, in one dict (no name is in both)."""
    return {**scrape_scope(http, "process"), **scrape_scope(http, "global")}


def scrape_scope(
    http: httpx.Client, scope: str
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = http.get("/metrics", params={"scope": scope})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def test_metrics_show_requests_streams_events_lags_and_tokens(start_server: StartServer) -> None:
    server = start_server(scripted=True)
    alice, workspace = account(server, "alice@example.com")
    with alice, server.client() as anonymous:
        created = new_session(alice, workspace)
        session = created.json()["id"]
        read_run(alice, f"/api/v1/chat/{session}/message", "m", {"content": "hi"}, until="done")
        assert anonymous.get("/api/v1/workspaces").status_code == 401

        with alice.stream("GET", f"/api/v1/sessions/{session}/stream") as stream:
            assert stream.status_code == 200
            assert scrape(anonymous)[("tokendance_sse_streams_open", ())] == 1

        def settled() -> dict[tuple[str, tuple[tuple[str, str], ...]], float] | None:
            m = scrape(anonymous)
            lags = [v for (name, _), v in m.items() if name == "tokendance_projection_lag_events"]
            ready = (
                m[("tokendance_sse_streams_open", ())] == 0
                # sessions, working_memory, confirmations, accounts, usage, budgets, artifacts,
                # workspace_files, memories, episodes
                and len(lags) == 10
                and not any(lags)
                and m.get(("tokendance_relay_lag_events", ())) == 0
                and m.get(("tokendance_memory_keeper_lag_events", ())) == 0
                and m[("tokendance_model_tokens", (("kind", "input"),))] == 1200
            )
            return m if ready else None

        m = eventually(
            settled, timeout=15, what="streams closed, the relay and views caught up", interval=0.1
        )
        assert isinstance(m, dict)
    route = (("method", "POST"), ("route", "/api/v1/sessions"), ("status", "201"))
    assert m[("tokendance_http_requests_total", route)] == 1
    assert m[("tokendance_http_request_duration_seconds_count", route)] == 1
    unauthorized = (("method", "GET"), ("route", "/api/v1/workspaces"), ("status", "401"))
    assert m[("tokendance_http_requests_total", unauthorized)] == 1
    chat = (("method", "POST"), ("route", "/api/v1/chat/{session_id}/message"), ("status", "200"))
    assert m[("tokendance_http_requests_total", chat)] == 1
    assert m[("tokendance_store_up", ())] == 1
    assert m[("tokendance_events_stored", ())] >= 6  # a session's start and one run
    assert m[("tokendance_model_tokens", (("kind", "output"),))] == 80
    by_model = {labels: v for (name, labels), v in m.items()
                if name == "tokendance_model_tokens_by_model"}  # fmt: skip
    assert sum(v for labels, v in by_model.items() if ("kind", "output") in labels) == 80
    costs = [v for (name, _), v in m.items() if name == "tokendance_model_cost_usd"]
    assert len(costs) == 1  # one model (the test script's own name: unpriced, so 0)
    assert m[("tokendance_rate_limited_total", (("limit", "requests"),))] == 0
    with server.client() as anonymous:
        own, store = scrape_scope(anonymous, "process"), scrape_scope(anonymous, "global")
        assert not any(name.startswith("tokendance_model_") for name, _ in own)  # no totals twice
        assert not any(name.startswith("tokendance_http_") for name, _ in store)
        bad = anonymous.get("/metrics", params={"scope": "everything"})
        assert bad.status_code == 400 and bad.json()["error_code"] == "VALIDATION_ERROR"
