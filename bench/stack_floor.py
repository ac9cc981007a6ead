"""The floor under a chat message's CPU: what the layers it crosses cost bare.

`bench.chat_accept` measures one `serve` process's CPU per chat message with its run.
This drives the libraries underneath on their own, each the way the product drives
them, with nothing of the product's on top (the one exception: the SSE response is the
product's `EventStream`, litestar's own minus a thread hop per response):
- http: a Litestar app on uvicorn answering a chat POST with one message's SSE frames,
  as its own process, driven by 100 clients as `chat_accept` drives `serve`; the
  server's CPU per request (`bench.bare_http`).
- postgres: one prepared statement with a uuid parameter, 8 callers at once: on the
  loop, each caller on an async connection of its own and on one taken from psycopg's
  async pool; and from the loop through a thread pool (as `SyncBridge` calls the event
  store) to a thread that takes an autocommit connection from a psycopg pool, with 8
  threads (the product's before TOKENDANCE_STORE_THREADS), 4 (its default now) and 1.
- nats: one message's 5 stored events published to a JetStream stream (pipelined, their
  acks gathered, as the relay does), delivered to a durable push consumer that acks the
  last of what it got (the projections) and to a subscription on the session's subject
  (the session's SSE readers); and its 2 live deltas published and delivered. 20
  sessions at once.
Then the floor of a chat message: http + statements x statement + nats, at the
statements `serve` runs per message (--statements; see docs/performance.md), with the statements
on the loop and through the thread pool, before any of the product's own work: the
events' domain logic and encoding, the model's turn and context, authentication,
limits, what the views compute.

python -m bench.stack_floor [--requests 2000] [--statements 29]
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import nats
from nats.aio.msg import Msg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from adapters.processes.loop import run
from bench.api_harness import machine
from bench.bare_http import DELTAS, STORED, http_ms
from bench.harness import fresh_servers

SESSIONS = 20
THREADS = (8, 4, 1)  # the thread pools measured: the product's before and now, and one


async def _cpu_per(n: int, work: Callable[[int], Awaitable[None]], tasks: int) -> float:
    """Process CPU per unit (µs) of `n` units done by `tasks` tasks at once (each
    calls `work` with its number)."""

    async def worker(k: int) -> None:
        for _ in range(n // tasks):
            await work(k)

    await asyncio.gather(*map(worker, range(tasks)))  # warm-up: prepared statements
    start = time.process_time()
    await asyncio.gather(*map(worker, range(tasks)))
    return (time.process_time() - start) / n * 1e6


async def postgres_us(url: str, n: int) -> dict[str, float]:
    """CPU per statement (µs), 8 callers at once: on the loop, each caller on a
    connection of its own and on one from an async pool; and through a thread pool to a
    pooled connection (as the event store is called), with 8, 4 and 1 threads."""
    query = "SELECT oid FROM pg_class WHERE oid = 1259 AND %s::uuid IS NOT NULL"
    key = uuid.uuid4()
    loop = asyncio.get_running_loop()
    pool = ConnectionPool(url, min_size=8, max_size=8, kwargs={"autocommit": True})
    pool.wait()

    def one() -> None:
        with pool.connection() as conn:
            conn.execute(query, (key,)).fetchone()

    def through(executor: ThreadPoolExecutor) -> Callable[[int], Awaitable[None]]:
        async def call(_: int) -> None:
            await loop.run_in_executor(executor, one)

        return call

    async_pool = AsyncConnectionPool(
        url, min_size=8, max_size=8, kwargs={"autocommit": True}, open=False
    )
    await async_pool.open(wait=True)

    held = [await AsyncConnection.connect(url, autocommit=True) for _ in range(8)]

    async def pooled(_: int) -> None:
        async with async_pool.connection() as conn:
            await (await conn.execute(query, (key,))).fetchone()

    async def own(k: int) -> None:
        await (await held[k].execute(query, (key,))).fetchone()

    executors = {threads: ThreadPoolExecutor(threads) for threads in THREADS}
    try:
        cpu = {
            "on the loop, each caller its connection": await _cpu_per(n, own, 8),
            "on the loop, from an async pool": await _cpu_per(n, pooled, 8),
        }
        for threads, executor in executors.items():
            how = f"through {threads} thread{'s' if threads > 1 else ''}"
            cpu[how] = await _cpu_per(n, through(executor), 8)
    finally:
        await async_pool.close()
        for conn in held:
            await conn.close()
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
    parser.add_argument("--requests", type=int, default=2000, help="chat messages per layer")
    parser.add_argument("--statements", type=int, default=29, help="statements per message")
    options = parser.parse_args()
    print(machine())
    http = http_ms(options.requests)
    print(f"http: {http:.2f} ms of server CPU per POST answered by 8 SSE frames")
    with fresh_servers("floor") as fresh:
        per_statement = run(postgres_us(fresh.database_url, 4 * options.requests))
        print(
            "postgres: CPU per statement: "
            + "; ".join(f"{how} {us:.0f} us" for how, us in per_statement.items())
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
