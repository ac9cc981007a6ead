"""The HTTP layer of `bench.stack_floor`, bare: Litestar on uvicorn answering a chat POST.

A Litestar app as its own process (uvloop, httptools: as `serve` runs), with one route:
a JSON POST with a bearer token, answered by an SSE stream of the frames one chat message
sends (a retry line, 5 stored events, 2 live deltas between the run's start and its turn)
through the product's `EventStream` (litestar's own minus a thread hop per response).
`http_ms` drives it as `bench.chat_accept` drives `serve` and says what a request costs
the server.

python -m bench.bare_http --serve PORT (as `http_ms` starts it)
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import msgspec
from litestar import Litestar, Request, post
from litestar.exceptions import NotAuthorizedException
from litestar.response import ServerSentEvent, ServerSentEventMessage

from adapters.http.streams.streaming import EventStream
from adapters.processes.loop import run
from bench.api_harness import cpu_seconds, free_port, raise_fd_limit

TOKEN = "floor-" + "x" * 40
STORED, DELTAS = 5, 2  # one chat message: message, run requested / started, turn, done


class Body(msgspec.Struct):
    content: str


def _frames() -> list[ServerSentEventMessage]:
    """Frames the size and kind of one chat message's stream, in its order."""
    run_id = str(uuid.uuid4())
    stored: list[dict[str, object]] = [
        {"type": "message", "role": "user", "content": "message 1", "attachments": []},
        {"type": "run", "status": "requested", "run_id": run_id},
        {"type": "run", "status": "started", "run_id": run_id, "worker": "host:1"},
        {"type": "message", "role": "assistant", "content": "OK, noted.", "run_id": run_id,
         "tool_calls": [], "stop_reason": "end_turn", "model": "scripted",
         "usage": {"input": 1200, "output": 4, "cache_read": 0, "cache_write": 0}},
        {"type": "done", "status": "completed", "tokens_used": 1204, "run_id": run_id},
    ]  # fmt: skip
    at = "2026-11-28T00:54:10.068282Z"
    frames = [ServerSentEventMessage(data=None, retry=3000)]
    for version, payload in enumerate(stored, start=7):
        data = msgspec.json.encode({**payload, "version": version, "timestamp": at}).decode()
        frames.append(ServerSentEventMessage(data=data, event=str(payload["type"]), id=version))
    delta = msgspec.json.encode({"type": "content", "content": "OK, "}).decode()
    frames[4:4] = [ServerSentEventMessage(data=delta, event="content")] * DELTAS  # after start
    return frames


def bare_app() -> Litestar:
    frames = _frames()

    async def stream() -> AsyncIterator[ServerSentEventMessage]:
        for frame in frames:
            yield frame

    @post("/message", status_code=200)
    async def message(request: Request[Any, Any, Any]) -> ServerSentEvent:
        if request.headers.get("authorization") != f"Bearer {TOKEN}":
            raise NotAuthorizedException()
        msgspec.json.decode(await request.body(), type=Body)
        return EventStream(stream())

    return Litestar([message], openapi_config=None)


def _serve(port: int) -> None:
    import uvicorn

    config = uvicorn.Config(bare_app(), port=port, log_level="warning", http="auto")
    run(uvicorn.Server(config).serve())


async def _post_many(url: str, requests: int, clients: int) -> None:
    raise_fd_limit()
    limits = httpx.Limits(max_connections=clients + 10)
    headers = {"Authorization": f"Bearer {TOKEN}"}

    async def client(n: int) -> None:
        for i in range(n):
            body = {"content": f"m {i}"}
            async with http.stream("POST", "/message", json=body, headers=headers) as r:
                assert r.status_code == 200, r.status_code
                await r.aread()

    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as http:
        await asyncio.gather(*(client(requests // clients) for _ in range(clients)))


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/message", timeout=1).status_code == 405  # POST only
    except httpx.HTTPError:
        return False


def http_ms(requests: int, clients: int = 100) -> float:
    """Server CPU per request (ms) of the bare app under `clients` clients."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "bench.bare_http", "--serve", str(port)])
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while not _answers(url):
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError("the bare app did not start")
            time.sleep(0.1)
        asyncio.run(_post_many(url, requests // 4, clients))  # warm-up
        before = cpu_seconds(server.pid)
        asyncio.run(_post_many(url, requests, clients))
        return (cpu_seconds(server.pid) - before) / requests * 1000
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", type=int, required=True, help="the port to listen on")
    _serve(parser.parse_args().serve)
