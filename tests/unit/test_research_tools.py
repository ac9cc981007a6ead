"""The research tools as the engine runs them: failures kept with what the model needs.

A refused URL is a kept failure carrying `URL_NOT_ALLOWED`; with no search key,
`web_search` says search is not configured. No network is touched.
"""

from __future__ import annotations

from pathlib import Path

from adapters.bootstrap.parts import build_tools
from adapters.config.settings import Settings
from application.ports import Page, SearchHit, SearchQuery
from application.tools.read_url import ReadUrl
from application.tools.web_search import WebSearchTool
from domain.session import AgentSession as S
from tests.fakes.engine import DeleteFile, FlakySearch, make_engine, scripted
from tests.unit.test_replay_and_fork import call, replay_of


async def test_refused_urls_and_unconfigured_search_are_kept_failures(tmp_path: Path) -> None:
    llm = scripted(
        {"tool_calls": [
            call("read_url", "r1", url="http://127.0.0.1:9/admin"),
            call("read_url", "r2", url="http://169.254.169.254/latest/meta-data/"),
            call("read_url", "r3", url="file:///etc/passwd"),
            call("web_search", "w1", query="AI agent market"),
        ]},
        {"text": "I cannot reach those."},
    )  # fmt: skip
    engine = make_engine(llm, tmp_path)
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "research")
    assert await engine.scheduler.wait(sid) == "completed"

    results = {
        e.tool_use_id: e
        for e in engine.sessions.session_events(sid)
        if isinstance(e, S.ToolResultRecorded)
    }
    for refused in ("r1", "r2", "r3"):
        assert results[refused].status == "error"
        assert (results[refused].error or "").startswith("URL_NOT_ALLOWED: "), results[refused]
    assert "169.254.169.254" in (results["r2"].error or "")
    assert "web search is not configured: set TAVILY_API_KEY" in (results["w1"].error or "")


class Corpus:
    """A search engine and a web of three pages, in memory (fakes of the two ports)."""

    PAGES = {
        "https://a.example/1": ("Heat pumps", "Heat pumps move heat."),
        "https://b.example/2": ("Cold climates", "They work at -20 C."),
        "https://c.example/3": ("Costs", "They cost 10k."),
    }

    async def search(self, query: SearchQuery) -> list[SearchHit]:
        urls = list(self.PAGES)[:2] if "pumps" in query.query else list(self.PAGES)[1:]
        return [SearchHit(u, self.PAGES[u][0], self.PAGES[u][1]) for u in urls]

    async def read(self, url: str) -> Page:
        title, text = self.PAGES[url]
        return Page(url, title, f"{text}\n\nMore about {title}.", "text/html", 100)


async def test_every_page_seen_is_a_source_with_a_stable_number(tmp_path: Path) -> None:
    corpus = Corpus()
    llm = scripted(
        {"tool_calls": [call("web_search", "w1", query="heat pumps"),
                        call("web_search", "w2", query="cold costs")]},
        {"tool_calls": [call("read_url", "r1", url="https://b.example/2")]},
        {"text": "They work in the cold [2]."},
    )  # fmt: skip
    tools = [WebSearchTool(corpus), ReadUrl(corpus)]
    engine = make_engine(llm, tmp_path, extra_tools=tools)
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "do heat pumps work in the cold?")
    assert await engine.scheduler.wait(sid) == "completed"

    events = list(engine.sessions.session_events(sid))
    sources = [(e.number, e.url, e.via, e.tool_use_id) for e in events
               if isinstance(e, S.SourceRecorded)]  # fmt: skip
    assert sources == [
        (1, "https://a.example/1", "search", "w1"),
        (2, "https://b.example/2", "search", "w1"),
        (3, "https://c.example/3", "search", "w2"),  # b, seen again, keeps its number
        (2, "https://b.example/2", "read", "r1"),  # read: the same number, now with text
    ]
    results = {e.tool_use_id: e.summary for e in events if isinstance(e, S.ToolResultRecorded)}
    assert (
        results["w1"].startswith("[1] **Heat pumps**")
        and "\n\n[2] **Cold climates**" in (results["w1"])
    )
    assert results["w2"].startswith("[2] **Cold climates**") and "[3] **Costs**" in results["w2"]
    assert "Source [2]: https://b.example/2" in results["r1"]
    read = next(e for e in events if isinstance(e, S.SourceRecorded) and e.via == "read")
    assert read.blob_ref is not None
    page = await engine.runner.tool_calls.blobs.get(read.blob_ref.removeprefix("sha256:"))
    assert b"More about Cold climates." in page
    fresh = {t.name: t for t in [*build_tools(Settings()), DeleteFile(), FlakySearch(), *tools]}
    report = await replay_of(engine, sid, tools=list(fresh.values()))
    assert report.identical, report.divergence
