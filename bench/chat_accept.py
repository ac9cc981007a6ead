"""Chat messages accepted and completed per second on one API process.

`tokendance serve` runs as its own process with a scripted model that answers at
once with a short text (one turn per message; usage given, as a real model reports
it). This process drives many sessions at once, each sending its messages one after
another (a session allows one active run): POST /api/v1/chat/{id}/message, a message
is accepted when its 200 response headers arrive (the message and the run request
are committed) and completed when the run's `done` event arrives on that response.

python -m bench.chat_accept [--sessions 100] [--messages 10] [--keys]

`--keys`: each message with an `Idempotency-Key` of its own, as the web app sends it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from uuid import UUID

import httpx
import yaml

from bench.api_harness import (
    Account,
    CpuWindow,
    api_stack,
    cpu_seconds,
    create_sessions,
    machine,
    raise_fd_limit,
    raised_limits,
    register,
)
from bench.harness import percentile

ANSWER = {"text": "OK, noted.", "usage": {"input": 1200, "output": 4}}


@dataclass
class Tally:
    """When each message was sent, accepted and completed (perf_counter)."""

    sent: list[float] = field(default_factory=list)
    accepted: list[float] = field(default_factory=list)
    completed: list[float] = field(default_factory=list)
    accept_ms: list[float] = field(default_factory=list)
    complete_ms: list[float] = field(default_factory=list)
    refused: dict[str, int] = field(default_factory=dict)

    def refuse(self, why: str) -> None:
        self.refused[why] = self.refused.get(why, 0) + 1


def write_script(directory: Path, turns: int) -> Path:
    path = directory / "answers.yaml"
    path.write_text(yaml.safe_dump({"model": "scripted", "turns": [ANSWER] * turns}))
    return path


async def converse(
    http: httpx.AsyncClient,
    account: Account,
    session_id: UUID,
    messages: int,
    tally: Tally,
    keys: bool = False,
) -> None:
    """Send `messages` messages to one session, each after the previous run is done."""
    for n in range(messages):
        sent = time.perf_counter()
        path = f"/api/v1/chat/{session_id}/message"
        body = {"content": f"message {n}"}
        key = {"Idempotency-Key": f"{session_id}-{n}"} if keys else {}
        async with http.stream("POST", path, json=body, headers=account.headers | key) as r:
            if r.status_code != 200:
                tally.refuse(f"HTTP {r.status_code}")
                await r.aread()
                continue
            accepted = time.perf_counter()
            tally.sent.append(sent)
            tally.accepted.append(accepted)
            tally.accept_ms.append((accepted - sent) * 1000)
            async for line in r.aiter_lines():
                if line.startswith("event:") and line[6:].strip() in ("done", "error"):
                    if line[6:].strip() == "error":
                        tally.refuse("run error")
                        break
                    done = time.perf_counter()
                    tally.completed.append(done)
                    tally.complete_ms.append((done - sent) * 1000)
                    break


async def drive(
    url: str, account: Account, sessions: list[UUID], messages: int, keys: bool = False
) -> Tally:
    raise_fd_limit()
    tally = Tally()
    limits = httpx.Limits(max_connections=len(sessions) + 10)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as http:
        await asyncio.gather(*(converse(http, account, s, messages, tally, keys) for s in sessions))
    return tally


def report(tally: Tally, started: float, server_cpu: float) -> None:
    accepted, completed = len(tally.accepted), len(tally.completed)
    accept_span = max(tally.accepted) - started
    complete_span = max(tally.completed) - started
    print(
        f"accepted: {accepted} messages in {accept_span:.1f} s = {accepted / accept_span:.0f}/s; "
        f"latency (POST -> 200 headers) p50 {percentile(tally.accept_ms, 50):.0f} ms, "
        f"p99 {percentile(tally.accept_ms, 99):.0f} ms"
    )
    print(
        f"completed: {completed} runs in {complete_span:.1f} s = "
        f"{completed / complete_span:.0f}/s; latency (POST -> done) "
        f"p50 {percentile(tally.complete_ms, 50):.0f} ms, "
        f"p99 {percentile(tally.complete_ms, 99):.0f} ms"
    )
    print(
        f"refused or failed: {tally.refused or 'none'}; server CPU per message and its run: "
        f"{server_cpu / max(completed, 1) * 1000:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100, help="sessions talking at once")
    parser.add_argument("--messages", type=int, default=10, help="messages per session")
    parser.add_argument(
        "--keys", action="store_true", help="an Idempotency-Key on each message (the web app's)"
    )
    options = parser.parse_args()
    print(machine())
    print(f"server limits raised: {raised_limits()}")
    total = options.sessions * options.messages
    with tempfile.TemporaryDirectory(prefix="tokendance-chatbench-") as scratch:
        script = write_script(Path(scratch), total + 10)
        with api_stack(script=script) as stack:
            with httpx.Client(base_url=stack.server.url, timeout=30) as http:
                account = register(http, "chat@bench.example")
                sessions = create_sessions(http, account, options.sessions + 1)
            warm = asyncio.run(drive(stack.server.url, account, sessions[:1], 5))
            assert len(warm.completed) == 5, warm.refused
            cpu = CpuWindow(server=stack.server.pid, client=os.getpid())
            server_cpu, started = cpu_seconds(stack.server.pid), time.perf_counter()
            tally = asyncio.run(
                drive(stack.server.url, account, sessions[1:], options.messages, options.keys)
            )
            server_cpu = cpu_seconds(stack.server.pid) - server_cpu
            cpu_used = cpu.report()
    keyed = ", each with an Idempotency-Key" if options.keys else ""
    print(f"{options.sessions} sessions at once x {options.messages} messages each, in turn{keyed}")
    report(tally, started, server_cpu)
    print(cpu_used)


if __name__ == "__main__":
    main()
