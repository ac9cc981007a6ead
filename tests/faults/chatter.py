"""What the fault test drives: a `serve` it can kill and freeze, chatting clients, followers.

A chatter sends messages with an Idempotency-Key and retries the same key through any
failure until the run is seen to end; a message counts as acknowledged once the server
answered it with 200. A follower reads the session stream and resumes from the last id
it saw after every disconnect, recording each version it receives.
"""

from __future__ import annotations

import signal
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.e2e.client import E2E_JWT_SECRET, parse_sse, register, wait_until
from tests.faults.serve import Serve

RUN_END = ("done", "error")


def demo_serve(data_dir: Path) -> Serve:
    """A `serve` whose every session chats with the scripted demo model."""
    env = {"TOKENDANCE_LLM": "scripted:demo", "TOKENDANCE_JWT_SECRET": E2E_JWT_SECRET}
    return Serve(data_dir, extra_env={**env, "TOKENDANCE_MAX_STREAMS_PER_USER": "1000"})


def signed_up(serve: Serve) -> httpx.Client:
    """A client of a new user's, its token in every request."""
    http = httpx.Client(base_url=serve.url, timeout=30)
    token = register(http, f"faults-{uuid.uuid4().hex[:8]}@example.com")["access_token"]
    http.headers["Authorization"] = f"Bearer {token}"
    return http


def new_session(http: httpx.Client, title: str) -> str:
    workspace = http.get("/api/v1/workspaces").json()["items"][0]["id"]
    created = http.post("/api/v1/sessions/", json={"workspace_id": workspace, "title": title})
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def freeze(serve: Serve, *, seconds: float) -> None:
    assert serve.process is not None
    serve.process.send_signal(signal.SIGSTOP)
    time.sleep(seconds)  # the fault itself: a process that does nothing for a while
    serve.process.send_signal(signal.SIGCONT)


class Chatter(threading.Thread):
    """Sends one message after another to a session until told to stop."""

    def __init__(self, serve: Serve, auth: str, session_id: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.serve, self.auth, self.session_id, self.stop_event = serve, auth, session_id, stop
        self.acknowledged: list[str] = []
        self._lock = threading.Lock()

    @property
    def acknowledged_count(self) -> int:
        with self._lock:
            return len(self.acknowledged)

    def run(self) -> None:
        with httpx.Client(base_url=self.serve.url, headers={"Authorization": self.auth}) as http:
            while not self.stop_event.is_set():
                # Each message also asks to be remembered: memories are checked after the faults.
                text = f"Remember that message {uuid.uuid4()}"
                if self.send(self.serve, http, self.session_id, text, self._acknowledge):
                    wait_idle(http, self.session_id)

    def _acknowledge(self, text: str) -> None:
        with self._lock:
            self.acknowledged.append(text)

    @staticmethod
    def send(
        serve: Serve,
        http: httpx.Client,
        session_id: str,
        text: str,
        acknowledge: Callable[[str], None] | None = None,
    ) -> str:
        """Send `text` (one key, retried through failures) until its run ends; its status."""
        key = str(uuid.uuid4())
        acknowledged = False
        for _ in range(200):
            try:
                with http.stream(
                    "POST", f"/api/v1/chat/{session_id}/message",
                    json={"content": text}, headers={"Idempotency-Key": key},
                    timeout=httpx.Timeout(30, read=60),
                ) as response:  # fmt: skip
                    if response.status_code == 200 and not acknowledged:
                        acknowledged = True
                        if acknowledge is not None:
                            acknowledge(text)
                    if response.status_code == 200:
                        for event in parse_sse(response.iter_lines()):
                            if event.event in RUN_END:
                                return str(event.data.get("status", event.event))
            except httpx.HTTPError:
                pass
            time.sleep(0.2)  # the server is restarting, frozen, or the session still busy
        raise AssertionError(f"message {text!r} never got to the end of its run")


class Follower(threading.Thread):
    """Follows a session's stream for good, resuming after every disconnect."""

    def __init__(self, serve: Serve, auth: str, session_id: str) -> None:
        super().__init__(daemon=True)
        self.serve, self.auth, self.session_id = serve, auth, session_id
        self.seen: list[int] = []

    def run(self) -> None:
        headers = {"Authorization": self.auth}
        with httpx.Client(base_url=self.serve.url, headers=headers) as http:
            while True:
                last = self.seen[-1] if self.seen else 0
                try:
                    with http.stream(
                        "GET", f"/api/v1/sessions/{self.session_id}/stream",
                        headers={"Last-Event-ID": str(last)}, timeout=httpx.Timeout(30, read=30),
                    ) as response:  # fmt: skip
                        for event in parse_sse(response.iter_lines()):
                            if event.id is not None:
                                self.seen.append(event.id)
                except httpx.HTTPError:
                    time.sleep(0.2)

    def wait_for(self, version: int) -> None:
        wait_until(lambda: self.seen and self.seen[-1] >= version, timeout=60)


def wait_idle(http: httpx.Client, session_id: str) -> None:
    """Until the session has no active run (recovery after a restart included)."""

    def idle() -> bool:
        try:
            response = http.get(f"/api/v1/sessions/{session_id}")
        except httpx.HTTPError:
            return False
        return response.status_code == 200 and response.json()["active_run_id"] is None

    wait_until(idle, timeout=120, interval=0.2)


def audit_events(http: httpx.Client, session_id: str) -> list[dict[str, object]]:
    """Every stored event of the session, from the audit endpoint, in version order."""
    events: list[dict[str, object]] = []
    while True:
        after = events[-1]["version"] if events else 0
        page = http.get(f"/api/v1/sessions/{session_id}/events", params={"after": after})
        assert page.status_code == 200, page.text
        items = page.json()["items"]
        if not items:
            return events
        events.extend(items)
