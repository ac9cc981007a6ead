"""An SSE stream read in a background thread, for tests that act while it is open."""

from __future__ import annotations

import threading
import time
from datetime import datetime

import httpx

from tests.e2e.client import SseEvent, parse_sse, wait_until


class Follower(threading.Thread):
    """Reads one SSE response until the server ends it; `events` grows as they arrive.

    `ended` says the server closed the stream cleanly; `error` holds what broke it
    otherwise (a cut connection, a non-200 answer).
    """

    def __init__(self, base_url: str, token: str, method: str, url: str, **kwargs: object) -> None:
        super().__init__(daemon=True, name=f"follower {url}")
        self.base_url, self.token = base_url, token
        self.method, self.url, self.kwargs = method, url, kwargs
        self.events: list[SseEvent] = []
        self.arrived: list[float] = []  # time.time() at each event's arrival
        self.ended = False
        self.error: BaseException | None = None

    def run(self) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        timeout = httpx.Timeout(30, read=40)  # keep-alives come every 15 s
        try:
            with (
                httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout) as http,
                http.stream(self.method, self.url, **self.kwargs) as response,  # type: ignore[arg-type]
            ):
                assert response.status_code == 200, response.read()
                for event in parse_sse(response.iter_lines()):
                    self.arrived.append(time.time())
                    self.events.append(event)
            self.ended = True
        except BaseException as e:  # noqa: BLE001 - the test reports it
            self.error = e

    @property
    def ids(self) -> list[int]:
        return [e.id for e in list(self.events) if e.id is not None]

    def delays(self) -> list[float]:
        """Seconds from each stored event's timestamp to its arrival here."""
        return [
            at - datetime.fromisoformat(str(e.data["timestamp"])).timestamp()
            for e, at in zip(list(self.events), list(self.arrived), strict=False)
            if e.id is not None and e.data.get("timestamp")
        ]

    def of(self, event: str) -> list[SseEvent]:
        return [e for e in list(self.events) if e.event == event]

    def wait_for_ids(self, count: int, timeout: float = 20.0) -> None:
        """Until at least `count` stored events have arrived."""
        wait_until(lambda: len(self.ids) >= count or self.error, timeout)
        assert self.error is None, self.error

    def wait_for_event(self, event: str, count: int = 1, timeout: float = 30.0) -> None:
        wait_until(lambda: len(self.of(event)) >= count or self.error, timeout)
        assert self.error is None, self.error

    def finish(self, timeout: float = 20.0) -> None:
        """Until the server has ended the stream; it must have ended cleanly."""
        self.join(timeout)
        assert not self.is_alive(), f"{self.url}: the stream is still open"
        assert self.error is None and self.ended, f"{self.url}: {self.error!r}"
