"""The floor under a chat message's CPU: what the layers it crosses cost bare.

`bench.chat_accept` measures one `serve` process's CPU per chat message with its run.
This drives the libraries underneath on their own, each the way the product drives
them, with nothing of the product's on top (the one exception: the SSE response is the
product's `EventStream`, litestar's own minus a thread hop per response):
- http: a Litestar app on uvicorn (uvloop, httptools) as its own process, answering a
  JSON POST with a bearer token by an SSE stream of the frames one chat message sends
  (a retry line, 5 stored events, 2 live deltas); 100 clients each sending one request
  after another, as `chat_accept` does; the server's CPU per request.
- postgres: one prepared statement with a uuid parameter, 8 callers at once: on
  psycopg's async connections, on the loop; and from the loop through a thread pool
  (as `SyncBridge` calls the event store) to a thread that takes an autocommit
  connection from a psycopg pool, with 8 threads (the product's before
  TOKENDANCE_STORE_THREADS), 4 (its default now) and 1.
- nats: one message's 5 stored events published to a JetStream stream (pipelined, their
  acks gathered, as the relay does), delivered to a durable push consumer that acks the
  last of what it got (the projections) and to a subscription on the session's subject
  (the session's SSE readers); and its 2 live deltas published and delivered. 20
  sessions at once.
Then the floor of a chat message: http + statements x statement + nats, at the
statements `serve` runs per message (--statements; see the README), with the statements
on the loop and through the thread pool, before any of the product's own work: the
events' domain logic and encoding, the model's turn and context, authentication,
limits, what the views compute.

python -m bench.stack_floor [--requests 2000] [--statements 29]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx
import msgspec
import nats
import psycopg
from litestar import Litestar, Request, post
from litestar.exceptions import NotAuthorizedException
from litestar.response import ServerSentEvent, ServerSentEventMessage
from nats.aio.msg import Msg
from psycopg_pool import ConnectionPool

from adapters.http.streaming import EventStream
from adapters.loop import run
from bench.api_harness import cpu_seconds, free_port, machine, raise_fd_limit
from bench.harness import fresh_servers

TOKEN = "floor-" + "x" * 40
STORED, DELTAS = 5, 2  # one chat message: message, run requested / started, turn, done
SESSIONS = 20
THREADS = (8, 4, 1)  # the thread pools measured: the product's before and now, and one


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


def http_ms(requests: int, clients: int = 100) -> float:
    """Server CPU per request (ms) of the bare app under `clients` clients."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "bench.stack_floor", "--serve", str(port)])
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.post(f"{url}/message", json={"content": "warm"}, headers={
                    "Authorization": f"Bearer {TOKEN}"}, timeout=1).raise_for_status()  # fmt: skip
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.1)
        asyncio.run(_post_many(url, requests // 4, clients))  # warm-up
        before = cpu_seconds(server.pid)
        asyncio.run(_post_many(url, requests, clients))
        return (cpu_seconds(server.pid) - before) / requests * 1000
    finally:
        server.terminate()
        server.wait(10)


async def _cpu_per(n: int, work: Callable[[], Awaitable[None]], tasks: int) -> float:
    """Process CPU per unit (µs) of `n` units done by `tasks` tasks at once."""

    async def worker() -> None:
        for _ in range(n // tasks):
            await work()

    await asyncio.gather(*(worker() for _ in range(tasks)))  # warm-up: prepared statements
    start = time.process_time()
    await asyncio.gather(*(worker() for _ in range(tasks)))
    return (time.process_time() - start) / n * 1e6


async def postgres_us(url: str, n: int) -> dict[str, float]:
    """CPU per statement (µs), 8 callers at once: on an async connection on the loop;
    and through a thread pool to a pooled connection (as the event store is called),
    with 8, 4 and 1 threads."""
    query = "SELECT oid FROM pg_class WHERE oid = 1259 AND %s::uuid IS NOT NULL"
    key = uuid.uuid4()
    loop = asyncio.get_running_loop()
    pool = ConnectionPool(url, min_size=8, max_size=8, kwargs={"autocommit": True})
    pool.wait()

    def one() -> None:
        with pool.connection() as conn:
            conn.execute(query, (key,)).fetchone()

    def through(executor: ThreadPoolExecutor) -> Callable[[], Awaitable[None]]:
        async def call() -> None:
            await loop.run_in_executor(executor, one)

        return call

    free: asyncio.Queue[psycopg.AsyncConnection[tuple[object, ...]]] = asyncio.Queue()
    for _ in range(8):
        free.put_nowait(await psycopg.AsyncConnection.connect(url, autocommit=True))

    async def on_loop() -> None:
        conn = await free.get()
        try:
            await (await conn.execute(query, (key,))).fetchone()
        finally:
            free.put_nowait(conn)

    executors = {threads: ThreadPoolExecutor(threads) for threads in THREADS}
    try:
        cpu = {"on the loop": await _cpu_per(n, on_loop, 8)}
        for threads, executor in executors.items():
            how = f"through {threads} thread{'s' if threads > 1 else ''}"
            cpu[how] = await _cpu_per(n, through(executor), 8)
    finally:
        while not free.empty():
            await free.get_nowait().close()
        for executor in executors.values():
            executor.shutdown()
        pool.close()
    return cpu


@dataclass
class Deliveries:
    """What reached each NATS reader this round; `done` once all of `messages` did."""

    messages: int = 0
    views: int = 0  # stored events, to the durable consumer
    readers: int = 0  # stored events, to the session's subscription
    live: int = 0  # deltas
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def count(self, what: str, n: int = 1) -> None:
        setattr(self, what, getattr(self, what) + n)
        stored = STORED * self.messages
        if min(self.views, self.readers) >= stored and self.live >= DELTAS * self.messages:
            self.done.set()


async def nats_ms(url: str, messages: int) -> float:
    """CPU per chat message's stored events and live deltas through NATS."""
    nc = await nats.connect(url)
    js = nc.jetstream()
    name = f"FLOOR{uuid.uuid4().hex[:8].upper()}"
    await js.add_stream(name=name, subjects=[f"{name}.>"])
    sessions = [uuid.uuid4().hex for _ in range(SESSIONS)]
    tally = Deliveries()

    async def on_session(msg: Msg) -> None:  # a session's SSE readers
        tally.count("readers")

    async def on_live(msg: Msg) -> None:
        tally.count("live")

    for s in sessions:
        await nc.subscribe(f"{name}.{s}", cb=on_session)
        await nc.subscribe(f"{name}-live.{s}", cb=on_live)
    feed = await js.subscribe(f"{name}.>", durable="views", manual_ack=True)

    async def views() -> None:  # the projections: take what has come, ack the last
        while True:
            msgs = [await feed.next_msg(timeout=None)]
            while feed.pending_msgs:
                msgs.append(await feed.next_msg())
            await msgs[-1].ack()
            tally.count("views", len(msgs))

    body = b'{"type":"x","state":"' + b"y" * 300 + b'"}'

    async def chat(session: str, n: int) -> None:
        for _ in range(n):
            acks = [await js.publish_async(f"{name}.{session}", body) for _ in range(STORED)]
            await asyncio.gather(*acks)
            for _ in range(DELTAS):
                await nc.publish(f"{name}-live.{session}", b'{"type":"content"}')

    async def round_of(n: int) -> float:
        nonlocal tally
        tally = Deliveries(messages=n - n % SESSIONS)
        start = time.process_time()
        await asyncio.gather(*(chat(s, n // SESSIONS) for s in sessions))
        await asyncio.wait_for(tally.done.wait(), 60)
        return (time.process_time() - start) / tally.messages * 1000

    consumer = asyncio.create_task(views())
    try:
        await round_of(messages // 4)  # warm-up
        return await round_of(messages)
    finally:
        consumer.cancel()
        await js.delete_stream(name)
        await nc.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--requests", type=int, default=2000, help="chat messages per layer")
    parser.add_argument("--statements", type=int, default=29, help="statements per message")
    options = parser.parse_args()
    if options.serve:
        _serve(options.serve)
        return
    print(machine())
    http = http_ms(options.requests)
    print(f"http: {http:.2f} ms of server CPU per POST answered by 8 SSE frames")
    with fresh_servers("floor") as fresh:
        per_statement = run(postgres_us(fresh.database_url, 4 * options.requests))
        print(
            "postgres: CPU per statement, on an async connection on the loop and through a "
            "thread pool: " + ", ".join(f"{how} {us:.0f} us" for how, us in per_statement.items())
        )
        bus = run(nats_ms(fresh.nats_url, options.requests))
        print(f"nats: {bus:.2f} ms per message ({STORED} stored events, {DELTAS} live deltas)")
    statements = options.statements
    for how, per in per_statement.items():
        store = statements * per / 1000
        print(
            f"floor of a chat message, its statements {how}: {http + store + bus:.2f} ms = "
            f"http {http:.2f} + {statements} statements {store:.2f} + nats {bus:.2f}"
        )


if __name__ == "__main__":
    main()
