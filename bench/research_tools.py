"""The tool phase of a research run: five searches in one turn, then five page reads in
the next, each call answered after a fixed latency (default 50 ms) by in-process fakes
of the `WebSearch` and `PageReader` ports. The engine runs a turn's calls at once, so a
phase should take about as long as its slowest call, not the sum.

Measured per phase: from the first `ToolCallRequested` to the last `ToolResultRecorded`
of the turn (event timestamps), against the slowest single call. Target: at most 1.5x.

    python -m bench.research_tools [--latency 0.05] [--runs 10]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path
from uuid import uuid4

from adapters.bootstrap import bootstrap_engine
from adapters.config.settings import Settings
from adapters.llm.scripted import ScriptedLLM
from application.ports import Page, SearchHit, SearchQuery
from application.tools.read_url import ReadUrl
from application.tools.web_search import WebSearchTool
from bench.harness import cores, median
from domain.session import AgentSession as S

TARGET = 1.5
TOPICS = ("heat pumps", "solar panels", "wind power", "batteries", "insulation")


class SlowWeb:
    """A search engine and pages that each answer after `latency` seconds."""

    def __init__(self, latency: float) -> None:
        self.latency = latency

    async def search(self, query: SearchQuery) -> list[SearchHit]:
        await asyncio.sleep(self.latency)
        slug = query.query.replace(" ", "-")
        return [SearchHit(f"https://{slug}.example/{i}", f"{query.query} {i}", "text")
                for i in range(3)]  # fmt: skip

    async def read(self, url: str) -> Page:
        await asyncio.sleep(self.latency)
        return Page(url, url, "A page about it. " * 50, "text/html", 900)


def research_model() -> ScriptedLLM:
    def call(name: str, tool_id: str, **args: object) -> dict[str, object]:
        return {"name": name, "id": tool_id, "input": args}

    return ScriptedLLM.from_turns([
        {"tool_calls": [call("web_search", f"s{i}", query=t) for i, t in enumerate(TOPICS)]},
        {"tool_calls": [call("read_url", f"r{i}", url=f"https://{t.replace(' ', '-')}.example/0")
                        for i, t in enumerate(TOPICS)]},
        {"text": "Done [1]."},
    ])  # fmt: skip


async def one_run(latency: float, data_dir: Path) -> list[float]:
    """Each phase's wall time in seconds (searches, then reads)."""
    web = SlowWeb(latency)
    settings = Settings(data_dir=data_dir, embedder="hashing")
    engine = bootstrap_engine(
        settings, llm=research_model(), tools=[WebSearchTool(web), ReadUrl(web)]
    )
    try:
        receipt = await engine.bridge(
            engine.sessions.start_session,
            workspace_id=uuid4(), owner_id=uuid4(),
            title="bench",
        )  # fmt: skip
        sid = receipt.session_id
        await engine.scheduler.send_message(sid, "compare renewable options")
        assert await engine.scheduler.wait(sid) == "completed"
        events = list(engine.sessions.session_events(sid))
    finally:
        engine.bridge.close()
    phases = []
    for prefix in ("s", "r"):
        asked = [
            e.timestamp
            for e in events
            if isinstance(e, S.ToolCallRequested) and e.tool_use_id.startswith(prefix)
        ]
        done = [
            e.timestamp
            for e in events
            if isinstance(e, S.ToolResultRecorded) and e.tool_use_id.startswith(prefix)
        ]
        phases.append((max(done) - min(asked)).total_seconds())
    return phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    searches: list[float] = []
    reads: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            s, r = asyncio.run(one_run(args.latency, Path(tmp)))
            searches.append(s)
            reads.append(r)
    print(f"research tool phase; cores: {cores()}; {args.runs} runs, {args.latency * 1000:.0f} ms "
          "per call")  # fmt: skip
    for name, times in (("5 web_search", searches), ("5 read_url", reads)):
        ratio = median(times) / args.latency
        print(f"  {name:<14} median {median(times) * 1000:7.1f} ms  max {max(times) * 1000:7.1f} ms"
              f"  = {ratio:.2f}x the slowest call (target <= {TARGET}x)")  # fmt: skip


if __name__ == "__main__":
    main()
