"""Attached workspace files become text in the conversation when the message is sent:
the request the model gets carries it (head and tail when long, the whole kept in the
blob store), and a replay sees the same."""

from __future__ import annotations

import io
from pathlib import Path
from uuid import uuid4

import pytest
from reportlab.pdfgen import canvas

from application.attachments import UnsupportedAttachment, attach
from domain.authors import ByUser
from domain.conversation import message_text
from domain.workspace_files import FileNotFound
from tests.fakes.engine import make_engine, scripted
from tests.unit.test_replay_and_fork import replay_of


def a_pdf(text: str) -> bytes:
    out = io.BytesIO()
    page = canvas.Canvas(out)
    page.drawString(72, 720, text)
    page.save()
    return out.getvalue()


async def test_attached_files_are_text_in_the_request_and_a_long_one_is_kept_whole(
    tmp_path: Path,
) -> None:
    llm = scripted({"text": "42."})
    engine = make_engine(llm, tmp_path)
    workspace, alice = uuid4(), ByUser(uuid4())
    csv = await engine.files.write(
        workspace, "sales.csv", b"month,amount\n1,10\n2,32\n", None, alice
    )
    pdf = await engine.files.write(workspace, "brief.pdf", a_pdf("Tides at Brest."), None, alice)
    log = "\n".join(f"line {n}: all quiet" for n in range(2000)).encode()
    long = await engine.files.write(workspace, "run.log", log, None, alice)
    blobs = engine.runner.tool_calls.blobs
    files = await attach(engine.files, blobs, workspace, [csv.file_id, pdf.file_id, long.file_id])

    sid = await engine.new_session(workspace)
    await engine.scheduler.send_message(sid, "Sum the sales.", files=files)
    assert await engine.scheduler.wait(sid) == "completed"

    sent = message_text(llm.requests[0].messages[0])
    assert "Sum the sales." in sent
    assert "[Attached file sales.csv (text/csv, 23 bytes)]\nmonth,amount\n1,10\n2,32" in sent
    assert "[Attached file brief.pdf (application/pdf" in sent and "Tides at Brest." in sent
    kept = files[2].text_blob_ref
    assert kept is not None and f"whole text: blob {kept}" in sent
    assert "characters omitted" in sent and "line 1999: all quiet" in sent
    assert (await blobs.get(kept)).decode() == log.decode()

    report = await replay_of(engine, sid)
    assert report.identical, report.divergence


async def test_a_file_with_no_text_or_of_another_workspace_is_refused(tmp_path: Path) -> None:
    engine = make_engine(scripted(), tmp_path)
    workspace, alice = uuid4(), ByUser(uuid4())
    png = await engine.files.write(
        workspace, "logo.png", b"\x89PNG\r\n\x1a\n" + bytes(64), None, alice
    )
    broken = await engine.files.write(workspace, "bad.pdf", b"%PDF-1.4 not really", None, alice)
    blobs = engine.runner.tool_calls.blobs
    for refused, said in ((png, "logo.png cannot be attached"), (broken, "bad.pdf cannot be")):
        with pytest.raises(UnsupportedAttachment, match=said):
            await attach(engine.files, blobs, workspace, [refused.file_id])
    with pytest.raises(FileNotFound):
        await attach(engine.files, blobs, uuid4(), [png.file_id])
