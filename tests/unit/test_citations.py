"""Citations the agent cannot invent: pages reach the model as citable search results, and
what a turn cites is resolved against the session's sources when the turn is recorded.

A `[n]` with no source n is flagged (stored on the turn, a `notice`, never a citation);
the model's own citations (by URL) become the source's number with the cited passage.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from uuid import UUID

from adapters.http.streams.sse import payloads
from adapters.llm.scripted import ScriptedLLM
from application.tools.base import AnyTool
from application.tools.read_url import ReadUrl
from application.tools.web_search import WebSearchTool
from domain.conversation import (
    ContentBlock,
    Message,
    ModelCitation,
    SearchResultBlock,
    TextBlock,
    ToolResultBlock,
)
from domain.session import AgentSession as S
from domain.sources import NumberedSource, resolve_citations
from domain.values import CitedSource
from schemas import sse
from tests.fakes.engine import Engine, make_engine, scripted
from tests.unit.test_replay_and_fork import call, replay_of
from tests.unit.test_research_tools import Corpus

THREE = {
    n: NumberedSource(n, f"https://s{n}.example/", f"Source {n}", f"snippet {n}", None)
    for n in (1, 2, 3)
}


def test_markers_resolve_in_order_of_first_use_and_unknown_ones_are_flagged() -> None:
    content = (TextBlock("Warm [2], cold [7], and costs [1] [2]."),)
    cited, unknown = resolve_citations(content, THREE)
    assert [c.number for c in cited] == [2, 1]
    assert cited[0] == CitedSource(2, "https://s2.example/", "Source 2", "snippet 2")
    assert unknown == [7]


def test_the_models_own_citations_resolve_by_url_with_the_passage_it_cited() -> None:
    quoted = ModelCitation("https://s3.example/", "[3] Source 3", "COP stays above 2.")
    stranger = ModelCitation("https://nowhere.example/", "?", "made up")
    content = (TextBlock("It works", (quoted, stranger)), TextBlock(" as [1] says."))
    cited, unknown = resolve_citations(content, THREE)
    assert cited == [
        CitedSource(3, "https://s3.example/", "Source 3", "COP stays above 2."),
        CitedSource(1, "https://s1.example/", "Source 1", "snippet 1"),
    ]
    assert unknown == []


async def test_a_turn_citing_seven_of_three_sources_is_flagged_and_never_linked(
    tmp_path: Path,
) -> None:
    _, engine, sid = await research(
        tmp_path,
        {"tool_calls": [call("web_search", "w1", query="heat pumps"),
                        call("web_search", "w2", query="cold costs")]},
        {"text": "They work in the cold [2], cost 10k [3], and last forever [7]."},
    )  # fmt: skip

    events = list(engine.sessions.session_events(sid))
    assert len([e for e in events if isinstance(e, S.SourceRecorded)]) == 3
    turn = [e for e in events if isinstance(e, S.AssistantTurnRecorded)][-1]
    assert [(c.number, c.url) for c in turn.citations] == [
        (2, "https://b.example/2"),
        (3, "https://c.example/3"),
    ]
    assert turn.unknown_markers == [7]

    shown = payloads(turn)
    content = [p for p in shown if isinstance(p, sse.Content)]
    message = next(p for p in shown if isinstance(p, sse.Message))
    notice = next(p for p in shown if isinstance(p, sse.Notice))
    assert len(content) == 1 and content[0].content == ""
    assert content[0].citations == message.citations
    assert [(c.index, c.domain) for c in message.citations or []] == [
        (2, "b.example"),
        (3, "c.example"),
    ]
    assert 7 not in [c.index for c in message.citations or []]
    assert message.unresolved_citations == [7]
    assert notice.kind == "citation" and notice.markers == [7]
    assert "[7]" in (notice.message or "")
    assert [type(p) for p in shown] == [sse.Content, sse.Message, sse.Notice]

    report = await replay_of(engine, sid, tools=research_tools())
    assert report.identical, report.divergence


async def test_pages_reach_the_model_as_search_results_and_the_prefix_holds(
    tmp_path: Path,
) -> None:
    """A search shows each page by its snippet; a read page is its text; a URL seen
    again keeps its number; reading a page later leaves the earlier result unchanged."""
    llm, _, _ = await research(
        tmp_path,
        {"tool_calls": [call("web_search", "w1", query="heat pumps")]},
        {"tool_calls": [call("web_search", "w2", query="cold costs")]},
        {"tool_calls": [call("read_url", "r1", url="https://b.example/2")]},
        {"text": "Done [2]."},
    )  # fmt: skip

    last = llm.requests[-1]
    results = {
        b.tool_use_id: b for m in last.messages for b in m.content if isinstance(b, ToolResultBlock)
    }
    assert results["w1"].results == (
        SearchResultBlock("https://a.example/1", "[1] Heat pumps", "Heat pumps move heat."),
        SearchResultBlock("https://b.example/2", "[2] Cold climates", "They work at -20 C."),
    )
    # w2 shows b.example/2 again (already number 2) and c.example/3 for the first time.
    assert [r.title for r in results["w2"].results] == ["[2] Cold climates", "[3] Costs"]
    (read,) = results["r1"].results
    assert read.title == "[2] Cold climates" and "More about Cold climates." in read.text
    assert "Source [2]: https://b.example/2" in read.text

    # Every request repeats the one before it unchanged (the plan recitation aside).
    for before, after in zip(llm.requests[1:], llm.requests[2:], strict=False):
        n = len(before.messages)
        assert _plain(after.messages[: n - 1]) == _plain(before.messages[: n - 1])


def research_tools() -> list[AnyTool]:
    corpus = Corpus()
    return [WebSearchTool(corpus), ReadUrl(corpus)]


async def research(tmp_path: Path, *turns: dict[str, object]) -> tuple[ScriptedLLM, Engine, UUID]:
    """A completed run of `turns` over the in-memory search engine and web."""
    llm = scripted(*turns)
    engine = make_engine(llm, tmp_path, extra_tools=research_tools())
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "research heat pumps")
    assert await engine.scheduler.wait(sid) == "completed"
    return llm, engine, sid


def _plain(messages: Sequence[Message]) -> list[tuple[str, tuple[ContentBlock, ...]]]:
    """Messages without their cache breakpoint (it moves to the newest one each step)."""
    return [(m.role, m.content) for m in messages]
