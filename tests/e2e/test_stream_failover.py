"""Open streams go on through a NATS outage, from the store, and back to NATS after it.

The server runs on a NATS server the test owns. A chat stream and a session stream are
open when NATS stops mid-run: the chat stream still ends in `done` and the session
stream gets every stored version once, in order. NATS comes back on the same port: the
next run's live chunks (which only NATS carries) reach the same session stream, and
its ids still run 1..N with no gap and no repeat.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from adapters.config.settings import Settings
from tests.e2e.client import Server, is_event, read_sse, sign_up, wait_until
from tests.e2e.follower import Follower
from tests.e2e.own_nats import server_on_own_nats

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_streams_go_on_through_a_nats_outage_and_live_again_after_it(
    database_url: str, settings: Settings, data_root: Path
) -> None:
    with server_on_own_nats(database_url, settings, data_root, "outage") as (server, nats):
        token, http, sid, session = followed_session(server, "outage@example.com")

        chat = follow(server, token, "POST", f"/api/v1/chat/{sid}/message", json={"content": "go"})
        chat.wait_for_ids(3)
        nats.stop()  # in the middle of the run
        chat.finish(timeout=60)
        assert chat.events[-1].event == "done", [e.event for e in chat.events[-3:]]
        assert chat.events[-1].data["status"] == "completed"
        final = log_versions(http, sid)[-1]
        assert chat.ids == list(range(chat.ids[0], final + 1)), chat.ids
        session.wait_for_ids(final)
        assert session.ids == list(range(1, final + 1)), session.ids

        nats.restart()
        wait_until(lambda: nats_ready(http), timeout=30)
        seen = len(session.events)
        again = read_sse(
            http, "POST", f"/api/v1/chat/{sid}/message", json={"content": "and now?"},
            until=is_event("done", "error"), timeout=30,
        )  # fmt: skip
        assert again.events[-1].event == "done", again.events[-1]
        final = log_versions(http, sid)[-1]
        session.wait_for_ids(final)
        assert session.ids == list(range(1, final + 1)), session.ids
        live = [e for e in session.events[seen:] if e.event == "content" and e.id is None]
        assert live, "once NATS is back the session stream carries live chunks again"


def test_a_frozen_nats_delays_no_stored_event_past_the_grace(
    database_url: str, settings: Settings, data_root: Path
) -> None:
    """NATS frozen (SIGSTOP): every connection stays open and carries nothing, and the
    clients notice only after their pings go unanswered. The store announces its commits
    itself, so no stream waits for that, nor for a keep-alive (15 s): each stored event
    reaches the chat stream and the session stream about `GRACE` (1 s) after it was
    written."""
    with server_on_own_nats(database_url, settings, data_root, "outage") as (server, nats):
        token, http, sid, session = followed_session(server, "frozen@example.com")
        nats.freeze()
        try:
            chat = follow(
                server, token, "POST", f"/api/v1/chat/{sid}/message", json={"content": "go"}
            )
            chat.finish(timeout=60)
            final = log_versions(http, sid)[-1]
            session.wait_for_ids(final, timeout=30)
        finally:
            nats.thaw()
        assert chat.events[-1].event == "done", [e.event for e in chat.events[-3:]]
        assert chat.ids == list(range(chat.ids[0], final + 1)), chat.ids
        assert session.ids == list(range(1, final + 1)), session.ids
        late = max(chat.delays() + session.delays()[1:])
        print(f"the latest stored event arrived {late:.2f} s after it was written")
        # 1 s of grace, and room for a busy machine; a keep-alive's read (15 s) or a
        # noticed disconnect (two unanswered 5 s pings) fails it.
        assert late < 6.0, late


def followed_session(server: Server, email: str) -> tuple[str, httpx.Client, str, Follower]:
    """A new user's new session, with its session stream open once NATS is ready."""
    account = sign_up(server.client(), email)
    token = str(account["access_token"])
    http = server.client(token)
    sid = new_session(http, account["workspace_id"])
    wait_until(lambda: nats_ready(http), timeout=30)
    session = follow(server, token, "GET", f"/api/v1/sessions/{sid}/stream")
    session.wait_for_ids(1)
    return token, http, sid, session


def nats_ready(http: httpx.Client) -> bool:
    return bool(http.get("/readiness").json()["checks"]["nats"] == "ok")


def follow(server: Server, token: str, method: str, url: str, **kwargs: object) -> Follower:
    follower = Follower(server.url, token, method, url, **kwargs)
    follower.start()
    return follower


def new_session(http: httpx.Client, workspace_id: object) -> str:
    created = http.post("/api/v1/sessions/", json={"workspace_id": str(workspace_id)})
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def log_versions(http: httpx.Client, sid: str) -> list[int]:
    page = http.get(f"/api/v1/sessions/{sid}/events", params={"limit": 1000})
    assert page.status_code == 200, page.text
    return [i["version"] for i in page.json()["items"]]
