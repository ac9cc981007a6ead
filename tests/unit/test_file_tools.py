"""Workspace files: paths that stay inside the workspace, the folder's events, and the
agent's file tools as the engine runs them (the real tools and service, on an
in-memory store and the filesystem blob store)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from uuid import UUID, uuid4

import pytest

from adapters.bootstrap.parts import build_tools
from adapters.config.settings import Settings
from adapters.documents.pdf import ReportLabDocumentRenderer
from application.tools.base import ToolContext
from application.tools.files import MAX_LENGTH, FileToolError, ListFiles, ReadFile
from domain.file_paths import InvalidPath, check_path
from domain.policies import SUMMARY_LIMIT
from domain.session import AgentSession as S
from domain.workspace_files import (
    ByAgent,
    ByUser,
    FileNotFound,
    PathConflict,
    WorkspaceFolder,
    folder_id,
)
from tests.fakes.engine import Engine, make_engine, scripted
from tests.unit.test_replay_and_fork import call

SHA_A, SHA_B = "a" * 64, "b" * 64
ALICE = ByUser(UUID(int=1))


# -- paths ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "normal"),
    [
        ("notes.md", "notes.md"),
        ("  data/sales.csv ", "data/sales.csv"),
        ("./a//b/./c.txt", "a/b/c.txt"),
        (".env", ".env"),
        ("rapport d'été.md", "rapport d'été.md"),
        ("cafe\u0301.txt", "caf\u00e9.txt"),  # NFC: one é, as a Mac's NFD name
        ("a/" * 31 + "f", "a/" * 31 + "f"),
    ],
)
def test_a_relative_path_is_normalized(given: str, normal: str) -> None:
    assert check_path(given) == normal


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("../secret", "'..'"),
        ("a/../../etc/passwd", "'..'"),
        ("..", "'..'"),
        ("/etc/passwd", "absolute"),
        ("C:/Windows/win.ini", "absolute"),
        ("a\\b.txt", "backslash"),
        ("a\x00b.txt", "NUL"),
        ("a\nb.txt", "U+000A"),
        ("report\u202etxt.exe", "U+202E"),  # a right-to-left override
        ("folder/", "folder"),
        (".", "no file"),
        ("a/   /b", "blanks"),
        ("x" * 256, "255 bytes"),
        ("é" * 128, "255 bytes"),  # 256 bytes in UTF-8
        ("a/" * 32 + "f", "32 folders"),
        ("/".join(["d" * 200] * 6), "1024 bytes"),
    ],
)
def test_a_path_outside_the_workspace_or_with_odd_characters_is_refused(
    given: str, said: str
) -> None:
    with pytest.raises(InvalidPath) as refused:
        check_path(given)
    assert said in str(refused.value)
    assert refused.value.http_status == 400 and refused.value.code == "VALIDATION_ERROR"


# -- the folder aggregate -------------------------------------------------------------


def test_a_file_keeps_its_id_across_versions_and_each_event_says_who() -> None:
    workspace = uuid4()
    folder = WorkspaceFolder.create(workspace)
    assert folder.id == folder_id(workspace)
    made = folder.write("data.csv", SHA_A, 3, "text/csv", ALICE)
    assert (made.version, made.created_by, made.updated_by) == (1, ALICE, ALICE)
    agent = ByAgent(uuid4())
    again = folder.write("./data.csv", SHA_B, 4, "text/csv", agent)
    assert (again.file_id, again.version, again.created_by, again.updated_by) == (
        made.file_id, 2, ALICE, agent,
    )  # fmt: skip
    assert folder.write("data.csv", SHA_B, 4, "text/csv", agent) == again  # the same: nothing
    folder.delete(again, ALICE)
    remade = folder.write("data.csv", SHA_A, 3, "text/csv", agent)
    assert remade.file_id != made.file_id and remade.version == 1
    events = folder.collect_events()
    assert [type(e).__name__ for e in events] == [
        "FolderCreated", "FileUploaded", "FileWritten", "FileDeleted", "FileWritten",
    ]  # fmt: skip
    deleted = events[3]
    assert isinstance(deleted, WorkspaceFolder.FileDeleted)
    assert (deleted.user_id, deleted.session_id) == (ALICE.user_id, None)


def test_a_path_is_a_file_or_a_folder_never_both() -> None:
    folder = WorkspaceFolder.create(uuid4())
    folder.write("reports/q1.md", SHA_A, 1, "text/markdown", ALICE)
    with pytest.raises(PathConflict, match="is a folder"):
        folder.write("reports", SHA_A, 1, "text/plain", ALICE)
    with pytest.raises(PathConflict, match="is a file"):
        folder.write("reports/q1.md/x.txt", SHA_A, 1, "text/plain", ALICE)
    with pytest.raises(FileNotFound):
        folder.by_id(uuid4())
    assert [f.path for f in folder.listing()] == ["reports/q1.md"]


# -- the tools, as the engine runs them ------------------------------------------------


def results(engine: Engine, sid: UUID) -> dict[str, S.ToolResultRecorded]:
    return {
        e.tool_use_id: e
        for e in engine.sessions.session_events(sid)
        if isinstance(e, S.ToolResultRecorded)
    }


async def run(engine: Engine, workspace: UUID, **settings: object) -> UUID:
    sid = await engine.new_session(workspace, **settings)
    await engine.scheduler.send_message(sid, "work with the files")
    await engine.scheduler.wait(sid)
    return sid


def error_of(result: S.ToolResultRecorded) -> str:
    assert result.status == "error", result
    return result.error or ""


async def test_the_agent_reads_an_upload_and_writes_lists_and_reads_its_own_file(
    tmp_path: Path,
) -> None:
    csv = "city,sales\nBrest,12\nNantes,30\n"
    engine = make_engine(
        scripted(
            {"tool_calls": [call("read_file", "r1", path="data/sales.csv")]},
            {"tool_calls": [call("write_file", "w1", path="out/summary.md",
                                 content="# Sales\n\nNantes sold most.\n")]},
            {"tool_calls": [call("list_files", "l1"),
                            call("read_file", "r2", path="out/summary.md")]},
            {"text": "Done."},
        ),
        tmp_path,
    )  # fmt: skip
    workspace = uuid4()
    await engine.files.write(workspace, "data/sales.csv", csv.encode(), "text/csv", ALICE)
    sid = await run(engine, workspace)
    found = results(engine, sid)
    assert found["r1"].status == "success", found["r1"]
    assert found["r1"].summary == (
        f"File data/sales.csv (text/csv, {len(csv)} bytes): characters 0-{len(csv)} of "
        f"{len(csv)} (the end of the file)\n\n{csv}"
    )
    assert found["w1"].summary == "wrote out/summary.md (text/markdown, 27 bytes, a new file)"
    listed = found["l1"].summary
    assert listed.splitlines() == [
        "2 files in the workspace:",
        f"- data/sales.csv (text/csv, {len(csv)} bytes, uploaded by the user)",
        "- out/summary.md (text/markdown, 27 bytes, written in this session)",
    ]
    assert found["r2"].summary.endswith("# Sales\n\nNantes sold most.\n")
    written = await engine.files.stat(workspace, "out/summary.md")
    assert written.created_by == ByAgent(sid)  # the log names the session that wrote it
    assert await engine.files.read(workspace, "out/summary.md") == b"# Sales\n\nNantes sold most.\n"


async def test_read_file_shows_a_pdf_as_text_a_long_file_by_parts_and_says_binary(
    tmp_path: Path,
) -> None:
    long = "".join(f"line {i:05d} of a long log\n" for i in range(1000))
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("zeros.bin", b"\0" * (50 * 1024 * 1024))  # 50 MiB in about 50 KB
    pdf = await ReportLabDocumentRenderer().render_pdf("Tides", "# Tides\n\nBrest rises 7 m.")
    engine = make_engine(
        scripted(
            {"tool_calls": [
                call("read_file", "p", path="tides.pdf"),
                call("read_file", "l1", path="app.log"),
                call("read_file", "l2", path="app.log", offset=len(long) - 50),
                call("read_file", "z", path="bomb.zip"),
                call("read_file", "past", path="app.log", offset=len(long)),
                call("read_file", "none", path="missing.txt"),
                call("read_file", "up", path="../../etc/passwd"),
            ]},
            {"text": "Read."},
        ),
        tmp_path,
    )  # fmt: skip
    workspace, alice = uuid4(), ByUser(uuid4())
    for path, data in (
        ("tides.pdf", pdf),
        ("app.log", long.encode()),
        ("bomb.zip", bomb.getvalue()),
    ):
        await engine.files.write(workspace, path, data, None, alice)
    found = results(engine, await run(engine, workspace))

    assert found["p"].status == "success" and "Brest rises 7 m." in found["p"].summary
    assert "--- page 1 ---" in found["p"].summary
    part = found["l1"].summary
    assert part.startswith(
        f"File app.log (text/plain, {len(long):,} bytes): characters 0-{MAX_LENGTH} of "
        f'{len(long)} (next part: read_file {{"path":"app.log","offset":{MAX_LENGTH}}})'
    )
    assert len(part) <= SUMMARY_LIMIT and found["l1"].blob_ref is None  # whole in the context
    assert found["l2"].summary.endswith("line 00999 of a long log\n")
    assert "(the end of the file)" in found["l2"].summary
    assert error_of(found["z"]).startswith(
        "BINARY_FILE: bomb.zip is a binary file (application/zip"
    )
    # Nothing unpacked it: the workspace holds the upload's bytes, and only them.
    assert await engine.files.read(workspace, "bomb.zip") == bomb.getvalue()
    assert [f.path for f in await engine.files.list(workspace)] == [
        "app.log", "bomb.zip", "tides.pdf",
    ]  # fmt: skip
    assert error_of(found["past"]).startswith("OFFSET_PAST_END:")
    assert error_of(found["none"]).startswith("FILE_NOT_FOUND: no file 'missing.txt'")
    assert error_of(found["up"]).startswith("INVALID_PATH: '../../etc/passwd' goes up with '..'")


async def test_bad_writes_are_kept_failures_and_write_nothing(tmp_path: Path) -> None:
    engine = make_engine(
        scripted(
            {"tool_calls": [
                call("write_file", "up", path="../outside.txt", content="x"),
                call("write_file", "nul", path="a\x00b.txt", content="x"),
                call("write_file", "abs", path="/etc/cron.d/job", content="x"),
                call("write_file", "big", path="big.txt", content="x" * 101),
            ]},
            {"tool_calls": [call("write_file", "ok", path="notes", content="a file")]},
            {"tool_calls": [call("write_file", "clash", path="notes/inside.md", content="x")]},
            {"text": "Done."},
        ),
        tmp_path,
    )  # fmt: skip
    engine.files.max_bytes = 100
    blobs = tmp_path / "blobs"
    workspace = uuid4()
    found = results(engine, await run(engine, workspace))
    assert error_of(found["up"]).startswith("INVALID_PATH:")
    assert error_of(found["nul"]) == "INVALID_PATH: a path may not contain NUL characters"
    assert error_of(found["abs"]).startswith("INVALID_PATH: '/etc/cron.d/job' is absolute")
    assert error_of(found["big"]).startswith("FILE_TOO_LARGE: the file has 101 bytes")
    assert error_of(found["clash"]).startswith("PATH_CONFLICT: 'notes' is a file")
    assert [f.path for f in await engine.files.list(workspace)] == ["notes"]
    stored = [p for p in blobs.rglob("*") if p.is_file()]
    assert len(stored) == 1 and stored[0].read_bytes() == b"a file"  # only the good write's


async def test_delete_file_asks_first_and_deletes_once_approved(tmp_path: Path) -> None:
    engine = make_engine(
        scripted(
            {"tool_calls": [call("delete_file", "d1", path="draft.md")]},
            {"tool_calls": [call("delete_file", "d2", path="keep.md")]},
            {"text": "Done."},
        ),
        tmp_path,
        real_delete_file=True,
    )  # fmt: skip
    workspace, alice = uuid4(), ByUser(uuid4())
    for path in ("draft.md", "keep.md"):
        await engine.files.write(workspace, path, path.encode(), None, alice)
    sid = await run(engine, workspace)  # the default policy: risky tools ask
    assert engine.sessions.get_session(sid).status == "waiting"
    assert len(await engine.files.list(workspace)) == 2  # nothing deleted while it waits
    asked = engine.events(sid, "ConfirmationRequested")[0]
    await engine.scheduler.confirm(sid, asked.action_id, True, None, "alice")  # type: ignore[attr-defined]
    assert await engine.scheduler.wait(sid) == "suspended"
    asked = engine.events(sid, "ConfirmationRequested")[1]
    await engine.scheduler.confirm(sid, asked.action_id, False, "keep it", "alice")  # type: ignore[attr-defined]
    assert await engine.scheduler.wait(sid) == "completed"
    found = results(engine, sid)
    assert found["d1"].summary == "deleted draft.md (text/markdown, 8 bytes)"
    assert found["d2"].status == "cancelled"
    assert [f.path for f in await engine.files.list(workspace)] == ["keep.md"]


async def test_without_files_or_a_workspace_the_tools_say_so(tmp_path: Path) -> None:
    unconfigured = {t.name: t for t in build_tools(Settings(data_dir=tmp_path))}
    assert {"list_files", "read_file", "write_file", "delete_file"} <= unconfigured.keys()
    assert unconfigured["delete_file"].risky and not unconfigured["write_file"].risky
    context = ToolContext(uuid4(), "t1", notes=None, workspace_id=uuid4())  # type: ignore[arg-type]
    tool = unconfigured["list_files"]
    with pytest.raises(FileToolError) as refused:
        await tool.run(tool.Args(), context)
    assert refused.value.code == "FILES_NOT_CONFIGURED"
    assert "workspace files are not configured" in str(refused.value)

    engine = make_engine(scripted({"text": "-"}), tmp_path)
    empty = ToolContext(uuid4(), "t1", notes=None, workspace_id=uuid4())  # type: ignore[arg-type]
    listed = await ListFiles(engine.files).run(ListFiles.Args(), empty)
    assert listed.startswith("no files in the workspace yet")
    outside = ToolContext(uuid4(), "t1", notes=None, workspace_id=None)  # type: ignore[arg-type]
    for tool in (ListFiles(engine.files), ReadFile(engine.files)):
        with pytest.raises(FileToolError) as refused:
            args = {"list_files": {}, "read_file": {"path": "a.txt"}}[tool.name]
            await tool.run(tool.Args(**args), outside)
        assert refused.value.code == "NO_WORKSPACE"
