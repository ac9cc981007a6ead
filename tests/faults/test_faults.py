"""Faults injected for real into a running `tokendance serve` while sessions chat.

One `serve` on its own embedded Postgres and NATS (the default a user runs), chats in
several sessions with a session stream following each, and then: the server SIGKILLed
and restarted at once, three times; the embedded NATS killed; the server frozen with
SIGSTOP. Afterwards nothing acknowledged is lost or doubled, the log has no gap, every
tool call has one result, the followers saw every version once in order, the read
model agrees with the log, no run is left active, every message that asked to be
remembered is one memory (none lost in a kill, none kept twice), and every session
chats again.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from application.auto_memory import remembered_request
from tests.e2e.client import wait_until
from tests.faults.chatter import (
    Chatter,
    Follower,
    audit_events,
    demo_serve,
    freeze,
    new_session,
    signed_up,
    wait_idle,
)
from tests.faults.serve import Serve, nats_state

pytestmark = [pytest.mark.fault, pytest.mark.slow]

SESSIONS = 4


@pytest.fixture
def serve(data_root: Path) -> Iterator[Serve]:
    server = demo_serve(data_root / f"faults-{uuid.uuid4().hex[:8]}")
    try:
        yield server.start().wait_ready()
    finally:
        server.stop()


def test_nothing_is_lost_or_doubled_through_kills_outages_and_freezes(serve: Serve) -> None:
    http = signed_up(serve)
    sessions = [new_session(http, f"faults {i}") for i in range(SESSIONS)]
    stop = threading.Event()
    followers = [Follower(serve, http.headers["Authorization"], sid) for sid in sessions]
    chatters = [Chatter(serve, http.headers["Authorization"], sid, stop) for sid in sessions]
    for worker in (*followers, *chatters):
        worker.start()

    inject_faults(serve, chatters)

    stop.set()
    for chatter in chatters:
        chatter.join(timeout=180)
        assert not chatter.is_alive(), "a chatter never finished its last message"
    for sid in sessions:
        wait_idle(http, sid)
    for sid, chatter, follower in zip(sessions, chatters, followers, strict=True):
        check_session(http, sid, chatter, follower)
    check_memories(http, sessions)
    for sid in sessions:  # and each session chats again
        assert Chatter.send(serve, http, sid, f"after the faults {uuid.uuid4()}") == "completed"


def inject_faults(serve: Serve, chatters: list[Chatter]) -> None:
    """Kill, restart, kill NATS, freeze; each after the chats have made progress."""

    def progress() -> None:
        before = sum(c.acknowledged_count for c in chatters)
        deadline = time.monotonic() + 60
        while sum(c.acknowledged_count for c in chatters) <= before:
            assert time.monotonic() < deadline, "no chat was acknowledged for a minute"
            time.sleep(0.1)

    for _ in range(3):
        progress()
        serve.kill()
        serve.start().wait_ready()
    progress()
    os.kill(nats_state(serve.data_dir)["pid"], signal.SIGKILL)
    progress()
    freeze(serve, seconds=3)
    progress()


def check_memories(http: httpx.Client, sessions: list[str]) -> None:
    texts = [
        str(e["payload"]["text"])  # type: ignore[index]
        for sid in sessions
        for e in audit_events(http, sid)
        if e["type"] == "UserMessageAppended"
    ]
    wanted = sorted(filter(None, map(remembered_request, texts)))
    assert wanted, "no message asked to be remembered"

    def preferences() -> list[str]:
        found: list[str] = []
        params = {"category": "preference", "limit": "200"}
        while True:
            page = http.get("/api/v1/memories", params=params).json()
            found += [m["text"] for m in page["items"]]
            if page["next_cursor"] is None:
                return sorted(found)
            params["cursor"] = page["next_cursor"]

    # The keeper follows the log behind the runs: give it a few passes.
    wait_until(lambda: set(preferences()) >= set(wanted), timeout=60)
    assert preferences() == wanted, "a memory was lost or kept twice"


def check_session(http: httpx.Client, sid: str, chatter: Chatter, follower: Follower) -> None:
    events = audit_events(http, sid)
    versions = [e["version"] for e in events]
    assert versions == list(range(1, len(events) + 1)), "the log has a gap or a repeat"
    texts = [e["payload"]["text"] for e in events if e["type"] == "UserMessageAppended"]
    assert len(texts) == len(set(texts)), "a message was recorded twice"
    assert set(chatter.acknowledged) <= set(texts), "an acknowledged message was lost"
    calls = [e["payload"]["tool_use_id"] for e in events if e["type"] == "ToolCallRequested"]
    results = [e["payload"]["tool_use_id"] for e in events if e["type"] == "ToolResultRecorded"]
    assert sorted(calls) == sorted(results), "a tool call without exactly one result"
    follower.wait_for(len(events))
    assert follower.seen[: len(events)] == versions, "the follower missed or repeated a version"
    row = http.get(f"/api/v1/sessions/{sid}").json()
    assert row["version"] >= len(events) and row["active_run_id"] is None
    if row["version"] > len(events):  # a message whose sender gave up landed since: read it
        events = audit_events(http, sid)
    at_row = events[: row["version"]]
    turns = sum(e["type"] in ("UserMessageAppended", "AssistantTurnRecorded") for e in at_row)
    assert row["message_count"] == turns, "the read model disagrees with the log"
