"""`read_source`: more of a page already read, from the blob store, as the engine runs it.

The tools are the real ones (`read_url`, `web_search`, `read_source` as bootstrap builds
it) over the real filesystem blob store; only the web is in memory.
"""

from __future__ import annotations

import json
from pathlib import Path
from uuid import UUID

from adapters.blobs.filesystem import FilesystemBlobStore
from adapters.bootstrap.parts import build_tools
from adapters.config.settings import Settings
from application.ports import Page, SearchHit, SearchQuery
from application.tools.base import AnyTool
from application.tools.read_source import MAX_LENGTH
from application.tools.read_url import ReadUrl
from application.tools.web_search import WebSearchTool
from domain.policies import SUMMARY_LIMIT
from domain.session import AgentSession as S
from tests.fakes.engine import DeleteFile, Engine, FlakySearch, make_engine, scripted
from tests.unit.test_replay_and_fork import call, replay_of

LONG_URL = "https://tides.example/almanac"
TITLE = "Tide almanac of Brittany"
# 150 numbered paragraphs, about 14,000 characters: far more than the context keeps.
BODY = "\n\n".join(
    f"Paragraph {i:03d}: the tide at station {i} rises {i % 7 + 2} metres at spring tide."
    for i in range(150)
)


class Web:
    """Three search results and their pages, in memory (fakes of the two ports)."""

    PAGES = {
        "https://a.example/1": ("Heat pumps", "Heat pumps move heat."),
        "https://b.example/2": ("Cold climates", "They work at -20 C."),
        "https://c.example/3": ("Costs", "They cost 10k."),
        LONG_URL: (TITLE, BODY),
    }

    async def search(self, query: SearchQuery) -> list[SearchHit]:
        return [SearchHit(u, t, text) for u, (t, text) in list(self.PAGES.items())[:3]]

    async def read(self, url: str) -> Page:
        title, text = self.PAGES[url]
        return Page(url, title, text, "text/html", len(text))


def stored_text(url: str) -> str:
    """What read_url keeps of a page of `Web`: its output, before numbering."""
    title, text = Web.PAGES[url]
    return f"# {title}\nSource {{{{source:0}}}}: {url} (text/html, {len(text)} bytes)\n\n{text}"


def engine_of(tmp_path: Path, *turns: dict[str, object]) -> Engine:
    return make_engine(scripted(*turns), tmp_path, extra_tools=web_tools(Web()))


def web_tools(web: Web) -> list[AnyTool]:
    return [WebSearchTool(web), ReadUrl(web)]


def results(engine: Engine, sid: UUID) -> dict[str, S.ToolResultRecorded]:
    return {
        e.tool_use_id: e
        for e in engine.sessions.session_events(sid)
        if isinstance(e, S.ToolResultRecorded)
    }


async def completed_run(
    engine: Engine, message: str
) -> tuple[UUID, dict[str, S.ToolResultRecorded]]:
    """A new session's run on `message`, completed, and its tool results by id."""
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, message)
    assert await engine.scheduler.wait(sid) == "completed"
    return sid, results(engine, sid)


def next_part(number: int, offset: int) -> str:
    return f"next part: read_source {json.dumps({'source': number, 'offset': offset})}"


async def test_a_long_page_read_with_read_url_is_read_on_with_read_source(
    tmp_path: Path,
) -> None:
    stored = stored_text(LONG_URL)
    total = len(stored)
    engine = engine_of(
        tmp_path,
        {"tool_calls": [call("read_url", "r1", url=LONG_URL)]},
        {"tool_calls": [call("read_source", "s0", source=1, length=200),
                        call("read_source", "s1", source=1, offset=3000)]},
        {"tool_calls": [call("read_source", "s2", source=1, offset=total - 100, length=500)]},
        {"text": "Station 80 rises 5 metres [1]."},
    )  # fmt: skip
    sid, found = await completed_run(engine, "how high are the tides?")
    assert "characters omitted" in found["r1"].summary  # the context got head and tail
    assert "Paragraph 080" not in found["r1"].summary
    head = f"Source [1]: {TITLE}\n{LONG_URL}\n"
    # The page's start, its source marker numbered as everywhere else.
    assert found["s0"].summary == (
        f"{head}Characters 0-200 of {total} ({next_part(1, 200)})\n\n"
        + stored[:200].replace("{{source:0}}", "[1]")
    )
    assert f"Source [1]: {LONG_URL} (text/html" in found["s0"].summary
    # A middle part, whole: the default length fits what the context keeps of an output.
    end = 3000 + MAX_LENGTH
    assert found["s1"].summary == (
        f"{head}Characters 3000-{end} of {total} ({next_part(1, end)})\n\n" + stored[3000:end]
    )
    assert "Paragraph 080" in found["s1"].summary
    assert found["s1"].blob_ref is None and len(found["s1"].summary) <= SUMMARY_LIMIT
    # The last part says it is the end.
    assert found["s2"].summary == (
        f"{head}Characters {total - 100}-{total} of {total} (the end of the page)\n\n"
        + stored[-100:]
    )
    last = "Paragraph 149: the tide at station 149 rises 4 metres at spring tide."
    assert found["s2"].summary.endswith(last)
    # Reading a source again records no new source.
    sources = [e for e in engine.sessions.session_events(sid) if isinstance(e, S.SourceRecorded)]
    assert [(s.number, s.via, s.tool_use_id) for s in sources] == [(1, "read", "r1")]

    web = Web()
    fresh = [*build_tools(Settings()), DeleteFile(), FlakySearch(), *web_tools(web)]
    report = await replay_of(engine, sid, tools=list({t.name: t for t in fresh}.values()))
    assert report.identical, report.divergence


async def test_what_read_source_cannot_read_is_a_kept_failure_saying_what_to_do(
    tmp_path: Path,
) -> None:
    b = "https://b.example/2"
    engine = engine_of(
        tmp_path,
        {"tool_calls": [call("read_source", "e0", source=1)]},
        {"tool_calls": [call("web_search", "w1", query="heat pumps")]},
        {"tool_calls": [call("read_url", "r1", url=b)]},
        {"tool_calls": [
            call("read_source", "e1", source=7),
            call("read_source", "e2", source=1),
            call("read_source", "e3", source=2, offset=1_000_000),
            call("read_source", "e4", source=0),
            call("read_source", "e5", source=2, length=MAX_LENGTH + 1),
        ]},
        {"text": "Source 2 says they work at -20 C [2]."},
        {"tool_calls": [call("read_source", "e6", source=2)]},
        {"text": "The page is gone from the store."},
    )  # fmt: skip
    sid, found = await completed_run(engine, "do heat pumps work in the cold?")
    assert found["e0"].error == (
        "UNKNOWN_SOURCE: the session has no sources yet: find pages with web_search, "
        "read one with read_url"
    )
    assert found["e1"].error == (
        "UNKNOWN_SOURCE: there is no source [7]: the sources are 1-3; "
        "read in full (readable here): 2"
    )
    assert found["e2"].error == (
        "SOURCE_NOT_READ: source [1] (https://a.example/1) was only seen in search results: "
        "its snippet is all there is ('Heat pumps move heat.'). Read the page with read_url "
        "first; it keeps its number."
    )
    total = len(stored_text(b))
    assert found["e3"].error == (
        f"OFFSET_PAST_END: offset 1000000 is past the end of source [2], which has {total} "
        f"characters: read from an offset below {total}"
    )
    assert found["e4"].error == (
        "invalid arguments for read_source: Expected `int` >= 1 - at `$.source`"
    )
    assert found["e5"].error == (
        f"invalid arguments for read_source: Expected `int` <= {MAX_LENGTH} - at `$.length`"
    )
    assert all(found[f"e{n}"].status == "error" for n in range(6))

    # The stored page goes missing (a blob store emptied by hand): the model is told
    # to read the page again, and the run goes on.
    (read,) = [e for e in engine.sessions.session_events(sid)
               if isinstance(e, S.SourceRecorded) and e.via == "read"]  # fmt: skip
    assert read.blob_ref is not None
    FilesystemBlobStore(tmp_path / "blobs").path_of(read.blob_ref).unlink()
    await engine.scheduler.send_message(sid, "read source 2 again")
    assert await engine.scheduler.wait(sid) == "completed"
    assert results(engine, sid)["e6"].error == (
        f"SOURCE_TEXT_MISSING: the stored text of source [2] is missing from the blob store "
        f"(blob {read.blob_ref}): read {b} again with read_url"
    )
