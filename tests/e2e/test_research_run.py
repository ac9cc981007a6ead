"""A research run end to end: a real `tokendance serve`, the scripted research model
(`adapters/llm/scripts/research.yaml`), the fake Tavily with its pages on 127.0.0.1.

Every citation the user is shown (in the report, in the streamed answer, on the stored
message) points at a page a `web_search` or `read_url` of the session actually returned;
sources are numbered in order of first sighting, and the report's Sources section lists
them in order of first citation.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from adapters.commands.demo import research_script
from adapters.web_search.local_web import CORPUS
from tests.e2e.client import SseEvent, is_event, read_sse, settled, sign_up
from tests.e2e.conftest import StartServer
from tests.fakes.tavily_server import FakeTavily, serve_fake_tavily

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

QUESTION = "Research whether heat pumps work in cold climates"
MARKER = re.compile(r"\[(\d+)\]")
CITATION_KEYS = {"index", "url", "title", "domain", "snippet"}
SEARCH_TOOLS = {"search": "web_search", "read": "read_url"}


@pytest.fixture
def fake() -> Iterator[FakeTavily]:
    # The demo's own corpus, so that the script's reads are pages its searches return.
    with serve_fake_tavily(link_pages=True, corpus_path=CORPUS) as running:
        yield running


def cited(text: str) -> list[int]:
    """The `[n]` markers of a text, in order of first use, each once."""
    return list(dict.fromkeys(int(n) for n in MARKER.findall(text)))


def citation_indices(event: SseEvent) -> list[object]:
    citations = event.data.get("citations") or []
    assert isinstance(citations, list), event.data
    return [c["index"] for c in citations]


def login(server: httpx.Client) -> tuple[dict[str, object], httpx.Client]:
    account = sign_up(server, f"researcher-{uuid.uuid4().hex[:6]}@example.com")
    http = httpx.Client(
        base_url=str(server.base_url),
        headers={"Authorization": f"Bearer {account['access_token']}"},
        timeout=30,
    )
    return account, http


def turns(events: list[SseEvent]) -> list[tuple[list[SseEvent], dict[str, object]]]:
    """Each stored assistant message with the live `content` events streamed before it."""
    found: list[tuple[list[SseEvent], dict[str, object]]] = []
    live: list[SseEvent] = []
    for e in events:
        if e.event == "content" and e.id is None:
            live.append(e)
        elif e.event == "message" and e.data["role"] == "assistant":
            found.append((live, e.data))
            live = []
    return found


def sources_returned(log: list[SseEvent]) -> dict[int, dict[str, object]]:
    """The session's sources by number, each checked against the log: numbered in order
    of first sighting, and seen by a successful `web_search` or `read_url` whose result
    names its URL."""
    calls = {e.data["id"]: e.data for e in log if e.event == "tool_call"}
    results = {e.data["id"]: e.data for e in log if e.event == "tool_result"}
    sources: dict[int, dict[str, object]] = {}
    by_url: dict[object, int] = {}
    for e in (e for e in log if e.event == "source"):
        s = e.data
        number = by_url.setdefault(s["url"], len(by_url) + 1)
        assert s["number"] == number, f"source {s['url']} numbered {s['number']}, not {number}"
        call, result = calls[s["tool_call_id"]], results[s["tool_call_id"]]
        assert call["name"] == SEARCH_TOOLS[str(s["via"])], (call, s)
        assert result["status"] == "success" and str(s["url"]) in str(result["result"]), result
        sources.setdefault(number, s)
    return sources


def test_every_citation_of_a_research_run_points_at_a_page_it_retrieved(
    start_server: StartServer, fake: FakeTavily, data_root: Path
) -> None:
    script = research_script(fake.base_url, data_root / f"research-{uuid.uuid4().hex[:8]}")
    server = start_server(
        script,
        extra_env=fake.server_env(),
    )
    account, http = login(server.client())
    created = http.post(
        "/api/v1/sessions/", json={"workspace_id": account["workspace_id"], "title": QUESTION}
    )
    assert created.status_code == 201, created.text
    sid = created.json()["id"]

    chat = read_sse(
        http, "POST", f"/api/v1/chat/{sid}/message", json={"content": QUESTION}, timeout=90
    )
    assert chat.status == 200, chat.body
    assert [e.data["status"] for e in chat.of("done")] == ["completed"], chat.of("error")
    log = read_sse(
        http, "GET", f"/api/v1/sessions/{sid}/stream", headers={"Last-Event-ID": "0"},
        until=is_event("done", "error"),
    ).events  # fmt: skip
    assert [e.data["skill"] for e in log if e.event == "skill_activated"] == ["deep-research"]

    # Sources: numbered as first seen, each one a page the searches or reads returned.
    sources = sources_returned(log)
    assert sorted(sources) == list(range(1, 8))
    answered = {r["url"] for s in fake.searches for r in fake.results(s.body)}
    assert {s["url"] for s in sources.values()} <= answered
    assert len(fake.searches) == 3
    read = [e.data for e in log if e.event == "source" and e.data["via"] == "read"]
    assert [s["number"] for s in read] == [1, 2]
    for s in sources.values():
        assert fake.document_at(urlsplit(str(s["url"])).path) is not None, s

    # The report downloads; each [n] is a source, listed in order of first citation.
    settled(http)
    artifacts = http.get(f"/api/v1/sessions/{sid}/artifacts")
    assert artifacts.status_code == 200, artifacts.text
    (artifact,) = artifacts.json()["items"]
    assert (artifact["type"], artifact["name"]) == (
        "report",
        "do-heat-pumps-work-in-cold-climates.md",
    )
    download = http.get(artifact["download_url"])
    assert download.status_code == 200, download.text
    assert download.headers["content-type"].startswith("text/markdown")
    report = download.text
    body, _, listing = report.partition("\n## Sources\n")
    assert listing, report
    assert cited(body) == [1, 2, 3, 4, 5, 6, 7]
    lines = re.findall(r"^\[(\d+)\] (.+) - (\S+)$", listing, re.MULTILINE)
    assert [(int(n), title, url) for n, title, url in lines] == [
        (n, sources[n]["title"], sources[n]["url"]) for n in cited(body)
    ]
    assert "without a retrieved source" not in report

    # The answer, as streamed and as stored: every [n] is a source, with its citation.
    streamed = turns(chat.events)
    final_live, final = streamed[-1]
    assert "".join(str(e.data["content"]) for e in final_live) == final["content"]
    assert cited(str(final["content"])) == [1, 2, 6, 7]
    for live, message in streamed:
        numbers = cited(str(message["content"]))
        assert set(numbers) <= set(sources), message["content"]
        if numbers:  # the last content event of the turn carries its citations
            assert citation_indices(live[-1]) == numbers, live[-1].data

    messages = http.get(f"/api/v1/sessions/{sid}/messages")
    assert messages.status_code == 200, messages.text
    stored = [m for m in messages.json()["items"] if m["role"] == "assistant"][-1]
    assert stored["content"] == final["content"]
    citations = stored.get("citations")
    assert isinstance(citations, list), f"the stored answer carries no citations: {stored}"
    assert [c["index"] for c in citations] == [1, 2, 6, 7]
    for c in citations:
        assert c.keys() >= CITATION_KEYS, c
        source = sources[c["index"]]
        assert (c["url"], c["title"]) == (source["url"], source["title"])
        assert c["domain"] == urlsplit(str(source["url"])).hostname == "127.0.0.1"
        assert isinstance(c["snippet"], str) and c["snippet"], c
    assert final_live[-1].data.get("citations") == citations
