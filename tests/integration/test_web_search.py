"""`web_search` through the real Tavily client against a local fake of Tavily's API:
results ranked and mapped, filters sent, every refusal a message the model can act on,
no key meaning no request at all, searches that overlap, bad queries kept as failures."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from adapters.web_search import TavilySearch, UnconfiguredSearch, build_web_search
from adapters.web_search import tavily as tavily_search
from adapters.web_search.tavily import TIMED_OUT, SearchRequestsForbidden
from application.ports import SearchQuery, WebSearch, WebSearchError
from application.tools.web_search import WebSearchTool
from domain.session import AgentSession
from tests.fakes.engine import make_engine, scripted
from tests.fakes.tavily_server import FakeTavily, overlapping, serve_fake_tavily

pytestmark = pytest.mark.integration


@pytest.fixture
def fake() -> Iterator[FakeTavily]:
    with serve_fake_tavily() as running:
        yield running


@pytest.fixture
async def search(fake: FakeTavily) -> AsyncIterator[TavilySearch]:
    adapter = TavilySearch(fake.api_key, base_url=fake.base_url)
    yield adapter
    await adapter.aclose()


async def failure_of(search: WebSearch, query: SearchQuery) -> str:
    with pytest.raises(WebSearchError) as raised:
        await search.search(query)
    return str(raised.value)


async def test_results_come_ranked_and_mapped(fake: FakeTavily, search: TavilySearch) -> None:
    hits = await search.search(
        SearchQuery("heat pumps cold climate", num_results=3, topic="news", time_range="year")
    )

    assert [h.url for h in hits] == [
        "https://www.coldclimate.example.org/heat-pumps-in-winter",
        "https://www.energy.gov/energysaver/heat-pump-systems",
        "https://www.iea.org/reports/the-future-of-heat-pumps",
    ]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    first = hits[0]
    assert first.title == "Do heat pumps work in cold climates?"
    assert first.content.startswith("Cold-climate heat pumps keep heating at -25 C.")
    assert (first.score, first.published_date) == (1.0, "2023-01-18")
    # What went over the wire: Tavily's request, the key as a bearer token, never keyless.
    (sent,) = fake.searches
    assert sent.headers["authorization"] == f"Bearer {fake.api_key}"
    assert "x-tavily-access-mode" not in sent.headers
    assert sent.body == {
        "query": "heat pumps cold climate",
        "search_depth": "basic",
        "topic": "news",
        "time_range": "year",
        "max_results": 3,
    }


async def test_general_results_carry_no_date_and_no_match_is_no_hit(
    search: TavilySearch,
) -> None:
    hits = await search.search(SearchQuery("solar panels"))
    assert hits[0].url == "https://www.nrel.gov/solar/solar-panel-efficiency"
    assert {h.published_date for h in hits} == {None}  # Tavily dates news results only
    assert await search.search(SearchQuery("zeppelin airship")) == []


async def test_include_domains_keeps_to_those_sites(fake: FakeTavily, search: TavilySearch) -> None:
    hits = await search.search(
        SearchQuery("heat pumps", include_domains=("iea.org", "example.org"))
    )
    assert [h.url for h in hits] == [
        "https://www.iea.org/reports/the-future-of-heat-pumps",
        "https://www.coldclimate.example.org/heat-pumps-in-winter",
        "https://www.consumer.example.org/are-solar-panels-worth-it",
    ]
    assert fake.searches[0].body["include_domains"] == ["iea.org", "example.org"]


async def test_exclude_domains_leaves_those_sites_out(search: TavilySearch) -> None:
    everything = await search.search(SearchQuery("heat pumps"))
    hits = await search.search(
        SearchQuery("heat pumps", exclude_domains=("energy.gov", "coldclimate.example.org"))
    )
    assert "https://www.energy.gov/energysaver/heat-pump-systems" in {h.url for h in everything}
    assert [h.url for h in hits] == [
        h.url for h in everything if "energy.gov" not in h.url and "coldclimate" not in h.url
    ]


async def test_a_refused_key_says_which_key(fake: FakeTavily) -> None:
    search = TavilySearch("tvly-wrong", base_url=fake.base_url)
    message = await failure_of(search, SearchQuery("heat pumps"))
    await search.aclose()
    assert message.startswith("the search key was refused (TAVILY_API_KEY)")
    assert [r.status for r in fake.searches] == [401]


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (429, "rate limited: wait and search less often"),
        (432, "the search plan's usage limit is exceeded"),
        (433, "the pay-as-you-go usage limit is exceeded"),
        (500, "the search service failed (500: Internal server error.); try again later"),
        (400, "the search service refused the query (400: Invalid request.)"),
    ],
)
async def test_tavily_refusals_become_messages_to_act_on(
    fake: FakeTavily, search: TavilySearch, status: int, expected: str
) -> None:
    fake.fail_next(status)
    assert (await failure_of(search, SearchQuery("heat pumps"))).startswith(expected)
    # The refusal was for that one request: the next search goes through.
    assert await search.search(SearchQuery("heat pumps"))


async def test_a_slow_search_times_out_with_advice(fake: FakeTavily) -> None:
    fake.delay = 1.0
    search = TavilySearch(fake.api_key, base_url=fake.base_url, timeout=0.2)
    assert await failure_of(search, SearchQuery("heat pumps")) == TIMED_OUT
    await search.aclose()


@pytest.mark.parametrize("key", [None, "", "   "])
async def test_without_a_key_no_request_is_made(
    fake: FakeTavily, monkeypatch: pytest.MonkeyPatch, key: str | None
) -> None:
    # The Tavily client would take the key from here, or else go keyless: neither happens.
    monkeypatch.setenv("TAVILY_API_KEY", fake.api_key)
    search = build_web_search(key, fake.base_url)
    assert isinstance(search, UnconfiguredSearch)
    message = await failure_of(search, SearchQuery("heat pumps"))
    assert message == "web search is not configured: set TAVILY_API_KEY"
    assert fake.searches == []
    with pytest.raises(ValueError, match="TAVILY_API_KEY"):
        TavilySearch(key or "")


async def test_real_searches_are_refused_while_switched_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tavily_search, "ALLOW_SEARCH_REQUESTS", False)
    search = build_web_search("tvly-real-looking-key", None)
    with pytest.raises(SearchRequestsForbidden, match=re.escape("https://api.tavily.com")):
        await search.search(SearchQuery("heat pumps"))


async def test_searches_at_once_are_answered_at_once(
    fake: FakeTavily, search: TavilySearch
) -> None:
    fake.delay = 0.2
    queries = ["heat pumps", "solar panels", "AI agents market"]
    for query in queries:  # one after another: the fake sees no overlap
        await search.search(SearchQuery(query))
    assert not overlapping(fake.searches)

    answers = await asyncio.gather(*(search.search(SearchQuery(q)) for q in queries))
    assert all(answers)
    at_once = fake.searches[3:]
    assert sorted(r.body["query"] for r in at_once) == sorted(queries)
    assert overlapping(at_once)


async def test_the_tool_answers_markdown_and_keeps_bad_queries_as_failures(
    fake: FakeTavily, search: TavilySearch, tmp_path: Path
) -> None:
    def web_search(tool_id: str, **args: object) -> dict[str, object]:
        return {"name": "web_search", "input": args, "id": tool_id}

    llm = scripted(
        {
            "tool_calls": [
                web_search("t1", query=""),
                web_search("t2", query="   "),
                web_search("t3", query="heat pumps " * 200),  # 2,200 characters
                web_search("t4", query="AI agents", num_results=2, topic="news"),
                web_search("t5", query="heat pumps", topic="weather"),
            ]
        },
        {"text": "done"},
    )
    engine = make_engine(llm, tmp_path, extra_tools=[WebSearchTool(search)])
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "research")
    assert await engine.scheduler.wait(sid) == "completed"

    results = {
        r.tool_use_id: r
        for r in engine.events(sid, "ToolResultRecorded")
        if isinstance(r, AgentSession.ToolResultRecorded)
    }
    empty, blank, too_long, found, bad_topic = (results[f"t{n}"] for n in range(1, 6))
    assert [r.status for r in (empty, blank, too_long, bad_topic)] == ["error"] * 4
    assert found.status == "success"
    assert (
        empty.error
        == blank.error
        == (
            "invalid arguments for web_search: query is empty: say what to search for, "
            "in a few keywords"
        )
    )
    assert too_long.error == (
        "invalid arguments for web_search: Expected `str` of length <= 400 - at `$.query`"
    )
    assert "$.topic" in (bad_topic.error or "")
    assert found.summary.startswith(  # each hit under its number as a source of the session
        "[1] **AI agents market size and forecast 2024-2030**\n"
        "   https://www.marketwatch.example.com/ai-agents-market-size\n"
        "   Published: 2024-09-05\n"
        "   The AI agents market was valued at 5.1 billion USD in 2024"
    )
    assert "\n\n[2] **" in found.summary
    assert [r.body["query"] for r in fake.searches] == ["AI agents"]  # bad ones never sent


async def test_the_tool_without_a_key_is_a_kept_failure(tmp_path: Path) -> None:
    llm = scripted(
        {"tool_calls": [{"name": "web_search", "input": {"query": "x"}, "id": "t1"}]},
        {"text": "done"},
    )
    engine = make_engine(llm, tmp_path, extra_tools=[WebSearchTool(build_web_search(None, None))])
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "research")
    assert await engine.scheduler.wait(sid) == "completed"
    (result,) = engine.events(sid, "ToolResultRecorded")
    assert isinstance(result, AgentSession.ToolResultRecorded)
    assert (result.status, result.error) == (
        "error",
        "web search is not configured: set TAVILY_API_KEY",
    )
