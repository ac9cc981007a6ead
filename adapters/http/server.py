"""`serve`'s HTTP server: uvicorn, which ends the app's open streams when told to stop.

On SIGTERM or SIGINT uvicorn stops accepting, then waits for the requests in flight. An
SSE stream never ends by itself, so the app is told at once (`end_streams`: each stream
ends, and its client resumes from `Last-Event-ID`); what still runs after the grace
period (`TOKENDANCE_SHUTDOWN_GRACE`) is cancelled. Then the app's lifespan stops the
runs (they stay active in the log, and the next start resumes them) and the background
services, and `serve` returns. uvicorn itself would raise the signal again once drained;
that would end the process before it stops the servers it started, so it does not.

Where installed, the HTTP parser is httptools' and the event loop uvloop's: `serve` runs
in a loop the caller starts (`adapters.processes.loop.run` in `adapters.cli`), so uvicorn's own
`loop` setting never applies.

The client address (`scope["client"]`, which the rate limits before login and the
failed-login limit key on) is the socket's peer, or the client a trusted proxy names
(`proxy_options`).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TypedDict

import uvicorn
from uvicorn.config import LOGGING_CONFIG

from adapters.config.settings import Settings
from adapters.http.app import create_app, end_streams
from adapters.http.routes.web_app import where
from adapters.processes.heap import freeze_started_heap
from adapters.system import System

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class ProxyOptions(TypedDict, total=False):
    proxy_headers: bool
    forwarded_allow_ips: str


def proxy_options(trusted: tuple[str, ...]) -> ProxyOptions:
    """uvicorn's proxy settings: `X-Forwarded-For` and `X-Forwarded-Proto` are read only
    from the peers of `TOKENDANCE_TRUSTED_PROXIES`, and not at all without any. uvicorn's
    own default would trust them from 127.0.0.1 (or `FORWARDED_ALLOW_IPS`), so any local
    process or pass-through proxy could name whatever client it liked: the rate limits
    before login and the failed-login limit key on the client address it resolves."""
    if not trusted:
        return {"proxy_headers": False}
    return {"proxy_headers": True, "forwarded_allow_ips": ",".join(trusted)}


SOCKETS_GRACE = 1.0  # seconds a shutdown waits for the push sockets to close themselves


def _is_socket(connection: object) -> bool:
    """A WebSocket connection, of whichever of uvicorn's implementations."""
    return type(connection).__module__.startswith("uvicorn.protocols.websockets.")


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], object]) -> None:
        super().__init__(config)
        self._on_exit = on_exit

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:  # the app and what it started are built: the heap is settled
            freeze_started_heap()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's, once the push sockets have closed themselves (1001, "connect
        again": the feed ended them at the signal), waiting `SOCKETS_GRACE` seconds at
        most: uvicorn drops a socket still open with 1012, and on a busy machine it used
        to get there first."""
        loop = asyncio.get_running_loop()
        until = loop.time() + SOCKETS_GRACE
        while loop.time() < until and any(map(_is_socket, self.server_state.connections)):
            await asyncio.sleep(0.02)
        await super().shutdown(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        self._on_exit()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """uvicorn's, without raising the signal again when the server has drained."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        originals = {sig: signal.signal(sig, self.handle_exit) for sig in SIGNALS}
        try:
            yield
        finally:
            for sig, handler in originals.items():
                signal.signal(sig, handler)


async def serve(system: System, settings: Settings) -> None:
    """The API over `system` until SIGTERM or SIGINT, then a graceful stop (see above)."""
    app = create_app(system)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        timeout_graceful_shutdown=settings.shutdown_grace,
        http="auto",  # httptools where installed, else h11
        **proxy_options(settings.trusted_proxies),
        # JSON lines: uvicorn's loggers go through the root logger's handler, not uvicorn's.
        log_config=None if settings.log_format == "json" else LOGGING_CONFIG,
    )
    print(where(settings.web_dir, settings.host, settings.port), flush=True)
    loop = asyncio.get_running_loop()
    # A signal handler runs between two steps of the loop: hand the work to the loop.
    await _Server(config, lambda: loop.call_soon_threadsafe(end_streams, app)).serve()
