"""`create_doc` writes the report as an artifact, with a Sources section made from the
session's own sources: the cited ones, in order of first citation, with the session's
numbers; a marker with no source is flagged, never linked. PDF reports parse with pypdf.
"""

from __future__ import annotations

import io
from pathlib import Path
from uuid import UUID

import msgspec
import pypdf

from adapters.blobs.filesystem import FilesystemBlobStore
from adapters.documents.pdf import ReportLabDocumentRenderer
from adapters.http.streams.sse import payloads
from application.tools.base import AnyTool, Tool, ToolContext, ToolOutput
from application.tools.create_doc import NO_SOURCE, CreateDoc, slug
from domain.session import AgentSession as S
from domain.values import RunArtifact, SourceSeen, artifact_id_of
from schemas import sse
from tests.fakes.engine import Engine, make_engine, scripted
from tests.unit.test_replay_and_fork import call, replay_of

PAGES = [
    SourceSeen("https://a.example/one", "One", "first"),
    SourceSeen("https://b.example/two", "Two", "second"),
    SourceSeen("https://c.example/three", "Three", "third"),
]
REPORT = "Laptops are light [3]. Batteries last [1], and again [3]. Nobody knows [7]."


async def report_session(tmp_path: Path, doc_format: str) -> tuple[Engine, UUID]:
    turns = scripted(
        {"tool_calls": [call("create_doc", "d1", title="Light Laptops", content=REPORT,
                             format=doc_format)]},
        {"text": "Done."},
    )  # fmt: skip
    engine = make_engine(turns, tmp_path, extra_tools=[CreateDoc(ReportLabDocumentRenderer())])
    sid = await engine.new_session(confirmation="never")
    await engine.bridge(engine.sessions.record_sources, sid, "toolu_x", PAGES)
    await engine.scheduler.send_message(sid, "go")
    assert await engine.scheduler.wait(sid) == "completed"
    return engine, sid


def created(engine: Engine, sid: UUID) -> S.ArtifactCreated:
    (artifact,) = engine.events(sid, "ArtifactCreated")
    assert isinstance(artifact, S.ArtifactCreated)
    return artifact


def answer(engine: Engine, sid: UUID, tool_use_id: str = "d1") -> str:
    (result,) = [
        e for e in engine.events(sid, "ToolResultRecorded")
        if isinstance(e, S.ToolResultRecorded) and e.tool_use_id == tool_use_id
    ]  # fmt: skip
    assert isinstance(result, S.ToolResultRecorded) and result.status == "success", result
    return result.summary


async def test_the_sources_section_lists_cited_sources_in_first_citation_order(
    tmp_path: Path,
) -> None:
    engine, sid = await report_session(tmp_path, "markdown")
    artifact = created(engine, sid)
    assert (artifact.kind, artifact.name) == ("report", "light-laptops.md")
    assert artifact.media_type == "text/markdown; charset=utf-8"
    text = (await FilesystemBlobStore(tmp_path / "blobs").get(artifact.blob_ref)).decode()
    assert artifact.size == len(text.encode())
    assert text.startswith("# Light Laptops\n\n" + REPORT)
    sources = text.split("## Sources", 1)[1]
    lines = [line for line in sources.splitlines() if line]
    assert lines == [
        "[3] Three - https://c.example/three",
        "[1] One - https://a.example/one",
        NO_SOURCE,
        "[7]",
    ]
    assert "https://b.example/two" not in text, "an uncited source is not listed"

    said = answer(engine, sid)
    artifact_id = artifact_id_of(sid, artifact.originator_version)
    assert f"artifact {artifact_id}" in said and "light-laptops.md" in said
    assert "[3] Three - https://c.example/three" in said
    assert "Unknown markers [7]" in said


async def test_a_pdf_report_has_the_title_text_and_sources(tmp_path: Path) -> None:
    engine, sid = await report_session(tmp_path, "pdf")
    artifact = created(engine, sid)
    assert (artifact.name, artifact.media_type) == ("light-laptops.pdf", "application/pdf")
    data = await FilesystemBlobStore(tmp_path / "blobs").get(artifact.blob_ref)
    reader = pypdf.PdfReader(io.BytesIO(data))
    text = "\n".join(page.extract_text() for page in reader.pages)
    assert reader.metadata is not None and reader.metadata.title == "Light Laptops"
    assert "Light Laptops" in text and "Laptops are light [3]." in text
    assert "[3] Three - https://c.example/three" in text
    assert "[1] One - https://a.example/one" in text
    links = [
        annotation.get_object()["/A"]["/URI"]
        for page in reader.pages
        for annotation in page.get("/Annots") or []
    ]
    assert links == ["https://c.example/three", "https://a.example/one"], "[7] is no link"


class NoArgs(msgspec.Struct, forbid_unknown_fields=True):
    pass


class Pages(Tool[NoArgs]):
    """A search that always sees the same three pages."""

    name = "pages"
    description = "See three pages."
    Args = NoArgs

    async def run(self, args: NoArgs, context: ToolContext) -> ToolOutput:
        return ToolOutput("three pages", tuple(PAGES))


async def test_a_replayed_report_is_the_same_event_and_blob(tmp_path: Path) -> None:
    turns = scripted(
        {"tool_calls": [call("pages", "p1")]},
        {"tool_calls": [call("create_doc", "d1", title="Light Laptops", content=REPORT,
                             format="pdf")]},
        {"text": "Done."},
    )  # fmt: skip
    tools: list[AnyTool] = [Pages(), CreateDoc(ReportLabDocumentRenderer())]
    engine = make_engine(turns, tmp_path, extra_tools=tools)
    sid = await engine.new_session(confirmation="never")
    await engine.scheduler.send_message(sid, "go")
    assert await engine.scheduler.wait(sid) == "completed"
    assert "[3] Three - https://c.example/three" in answer(engine, sid, "d1")

    report = await replay_of(engine, sid, tools=[Pages(), CreateDoc(ReportLabDocumentRenderer())])
    assert report.identical, report.divergence


async def test_a_pdf_shows_mixed_scripts_headings_lists_and_tables() -> None:
    markdown = (
        "# 笔记本电脑 Report\n\nPlain **bold** and `code` with a [link](https://x.example/a).\n\n"
        "- first\n- second\n\n1. one\n2. two\n\n| a | b |\n|---|---|\n| 1 | 二 |\n\n"
        "```\nindented    code\n```\n\n한국어 text and emoji 😀 and a control \x01 char.\n"
    )
    data = await ReportLabDocumentRenderer().render_pdf("笔记本电脑", markdown)
    text = "\n".join(p.extract_text() for p in pypdf.PdfReader(io.BytesIO(data)).pages)
    for expected in ("笔记本电脑 Report", "bold", "code", "link", "first", "two", "二", "한국어"):
        assert expected in text
    assert data == await ReportLabDocumentRenderer().render_pdf("笔记本电脑", markdown)


def test_file_names_come_from_the_title() -> None:
    assert slug("Light Laptops: 2026 edition!") == "light-laptops-2026-edition"
    assert slug("笔记本 电脑") == "笔记本-电脑"
    assert slug("???") == "report"


async def test_the_runs_end_lists_the_artifacts_it_made_and_a_fork_lists_its_own(
    tmp_path: Path,
) -> None:
    engine, sid = await report_session(tmp_path, "markdown")
    artifact = created(engine, sid)
    (end,) = engine.events(sid, "RunCompleted")
    assert isinstance(end, S.RunCompleted)
    made = RunArtifact(artifact_id_of(sid, artifact.originator_version), "report", artifact.name)
    assert end.artifacts == [made]
    (done,) = payloads(end)
    assert isinstance(done, sse.Done)
    assert done.artifacts == [sse.RunArtifact(made.artifact_id, "report", "light-laptops.md")]

    child = await engine.bridge(engine.sessions.fork_session, sid, end.originator_version)
    copied = list(engine.sessions.session_events(child.session_id))
    (child_end,) = [e for e in copied if isinstance(e, S.RunCompleted)]
    assert child_end.artifacts == [
        RunArtifact(artifact_id_of(child.session_id, artifact.originator_version), "report",
                    artifact.name)
    ]  # fmt: skip
