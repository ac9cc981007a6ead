"""Slide decks over the API on real Postgres and NATS, with real LibreOffice: a deck a
run built previews with one PNG per slide, exports a PDF with one page per slide, and
lists its versions; regenerating slide 3 (SSE) makes a new version in which only slide
3 changed, counted in the session's usage, while every earlier version still downloads.
Without LibreOffice the preview answers each slide's text and says why there are no
thumbnails, and PDF export answers 501. Bad requests answer 4xx and write nothing.
"""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from collections.abc import Iterator
from uuid import UUID

import pypdf
import pytest
from litestar.testing import TestClient
from PIL import Image

from adapters.bootstrap import bootstrap
from adapters.config.settings import Settings
from adapters.http.app import create_app
from adapters.llm.scripted import ScriptedLLM
from tests.integration.test_artifacts_api import sign_up
from tests.unit.pptx_package import check_package

pytestmark = pytest.mark.integration
Client = TestClient  # type: ignore[type-arg]
Deck = tuple[Client, dict[str, str], UUID, UUID]  # client, owner's headers, artifact, session
OFFICE = shutil.which("soffice") is not None

SLIDES = [
    {"title": "Cold-climate heat pumps", "layout": "title", "body": "What works"},
    {"title": "How they work", "bullets": ["Move heat", "Do not make it"]},
    {"title": "Efficiency by temperature", "layout": "chart", "notes": "Lab figures",
     "chart": {"type": "line", "categories": ["0", "-15"],
               "series": [{"name": "COP", "values": [3.1, 2.0]}]}},
    {"title": "Thank you", "layout": "closing", "bullets": ["Questions?"]},
]  # fmt: skip
NEW_SLIDE_3 = {"title": "Efficiency, shorter", "bullets": ["COP 2 at -15 °C"]}


def script() -> ScriptedLLM:
    deck = {"title": "Heat pumps", "template": "minimal", "slides": SLIDES}
    create = {"name": "create_deck", "id": "c1", "input": deck}
    return ScriptedLLM.from_turns([
        {"tool_calls": [create], "usage": {"input": 100, "output": 50}},
        {"text": "Your deck is ready.", "usage": {"input": 120, "output": 10}},
        {"tool_calls": [{"name": "write_slide", "input": NEW_SLIDE_3}],
         "usage": {"input": 300, "output": 40, "cache_write": 200}},
    ])  # fmt: skip


def make_client(settings: Settings, database_url: str, nats_url: str) -> Iterator[Deck]:
    system = bootstrap(settings, database_url=database_url, nats_url=nats_url, llm=script())
    app = create_app(system)
    try:
        with TestClient(app) as client:
            alice, workspace = sign_up(client, "alice@example.com")
            made = client.post(
                "/api/v1/sessions/", json={"workspace_id": workspace, "title": "deck"},
                headers=alice,
            )  # fmt: skip
            sid = UUID(made.json()["id"])
            with client.stream(
                "POST", f"/api/v1/chat/{sid}/message", json={"content": "a deck please"},
                headers=alice,
            ) as stream:  # fmt: skip
                artifact = _deck_artifact(stream.iter_lines())
            yield client, alice, artifact, sid
    finally:
        system.close()


def _deck_artifact(lines: Iterator[str]) -> UUID:
    found = None
    for line in lines:
        if line.startswith("data:"):
            data = json.loads(line[5:])
            if data.get("type") == "artifact" and data.get("kind") == "ppt":
                found = UUID(data["artifact_id"])
            if data.get("type") in ("done", "error"):
                assert data["type"] == "done", data
                break
    assert found is not None
    return found


@pytest.fixture
def deck(settings: Settings, database_url: str, nats_url: str) -> Iterator[Deck]:
    yield from make_client(settings, database_url, nats_url)


@pytest.fixture
def deck_without_office(settings: Settings, database_url: str, nats_url: str) -> Iterator[Deck]:
    yield from make_client(
        settings.override(soffice="/nonexistent/soffice"), database_url, nats_url
    )


def regenerate(client: Client, who: dict[str, str], artifact: UUID, **body: object) -> list[dict]:
    events = []
    with client.stream(
        "POST", f"/api/v1/artifacts/{artifact}/regenerate", json=body, headers=who
    ) as stream:
        assert stream.status_code == 200, stream.read()
        kind = None
        for line in stream.iter_lines():
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:"):
                events.append({"event": kind, **json.loads(line[5:])})
    return events


@pytest.mark.skipif(not OFFICE, reason="LibreOffice (soffice) is not installed")
def test_a_deck_previews_exports_and_regenerates_one_slide(
    deck: Deck,
) -> None:
    client, alice, artifact, sid = deck
    preview = client.get(f"/api/v1/artifacts/{artifact}/preview", headers=alice)
    assert preview.status_code == 200, preview.text
    body = preview.json()
    assert body["type"] == "ppt" and body["version"] == 1
    assert [p["index"] for p in body["pages"]] == [1, 2, 3, 4]
    assert "Efficiency by temperature" in body["pages"][2]["content"]
    for page in body["pages"]:
        png = client.get(page["thumbnail_url"], headers=alice)
        assert png.status_code == 200 and png.headers["content-type"] == "image/png"
        assert Image.open(io.BytesIO(png.content)).width == 640
    pdf = client.get(f"/api/v1/artifacts/{artifact}/download?format=pdf", headers=alice)
    assert pdf.status_code == 200, pdf.text
    assert len(pypdf.PdfReader(io.BytesIO(pdf.content)).pages) == 4

    events = regenerate(client, alice, artifact, page_index=3, instructions="shorter")
    assert events[-1]["event"] == "done", events
    assert events[-1] == {
        "event": "done", "status": "completed", "artifact_id": str(artifact), "version": 2,
        "page_index": 3,
    }  # fmt: skip
    assert any(e["event"] == "artifact" and e["artifact_version"] == 2 for e in events)

    versions = client.get(f"/api/v1/artifacts/{artifact}/versions", headers=alice).json()
    assert [(v["version"], v["change"], v["page_index"]) for v in versions["items"]] == [
        (1, "created", None), (2, "slide_rewritten", 3)
    ]  # fmt: skip
    first = client.get(f"/api/v1/artifacts/{artifact}/download?version=1", headers=alice)
    latest = client.get(f"/api/v1/artifacts/{artifact}/download", headers=alice)
    assert first.status_code == latest.status_code == 200
    check_package(first.content)
    check_package(latest.content)
    old, new = _slides(first.content), _slides(latest.content)
    assert {n for n in old if old[n] != new[n]} == {"ppt/slides/slide3.xml"}
    page3 = client.get(f"/api/v1/artifacts/{artifact}/preview", headers=alice).json()["pages"][2]
    assert "Efficiency, shorter" in page3["content"]
    meta = client.get(f"/api/v1/artifacts/{artifact}", headers=alice).json()
    assert meta["latest_version"] == 2
    # The regeneration's model call counts in the session's usage (300 of 520 input).
    usage = client.get(f"/api/v1/sessions/{sid}/usage", headers=alice)
    assert usage.status_code == 200, usage.text
    assert usage.json()["totals"]["input_tokens"] == 520


def _slides(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {n: z.read(n) for n in z.namelist() if n.startswith("ppt/slides/slide")}


def test_without_libreoffice_a_preview_has_text_and_says_why(
    deck_without_office: Deck,
) -> None:
    client, alice, artifact, _ = deck_without_office
    preview = client.get(f"/api/v1/artifacts/{artifact}/preview", headers=alice)
    assert preview.status_code == 200, preview.text
    assert preview.headers["x-preview-thumbnails"].startswith("unavailable")
    assert "/nonexistent/soffice" in preview.headers["x-preview-thumbnails"]
    pages = preview.json()["pages"]
    assert [p["thumbnail_url"] for p in pages] == [None] * 4
    assert pages[0]["content"].startswith("Cold-climate heat pumps")
    pdf = client.get(f"/api/v1/artifacts/{artifact}/download?format=pdf", headers=alice)
    assert pdf.status_code == 501 and pdf.json()["error_code"] == "PDF_UNAVAILABLE"
    assert pdf.json()["detail"] and pdf.json()["timestamp"]


def test_bad_requests_answer_4xx_and_write_nothing(
    deck_without_office: Deck,
) -> None:
    client, alice, artifact, _ = deck_without_office
    url = f"/api/v1/artifacts/{artifact}"
    out_of_range = client.post(
        f"{url}/regenerate", json={"page_index": 9, "instructions": "x"}, headers=alice
    )
    assert out_of_range.status_code == 422, out_of_range.text
    assert out_of_range.json()["error_code"] == "PAGE_OUT_OF_RANGE"
    zero = client.post(
        f"{url}/regenerate", json={"page_index": 0, "instructions": "x"}, headers=alice
    )
    assert zero.status_code == 400, zero.text
    empty = client.post(
        f"{url}/regenerate", json={"page_index": 1, "instructions": ""}, headers=alice
    )
    assert empty.status_code == 400, empty.text
    assert client.get(f"{url}/download?version=7", headers=alice).status_code == 404
    assert client.get(f"{url}/download?format=docx", headers=alice).status_code == 400
    bob, _ = sign_up(client, "bob@example.com")
    for response in (
        client.get(f"{url}/preview", headers=bob),
        client.get(f"{url}/versions", headers=bob),
        client.post(f"{url}/regenerate", json={"page_index": 1, "instructions": "x"}, headers=bob),
    ):
        assert response.status_code == 404, response.text
    versions = client.get(f"{url}/versions", headers=alice).json()["items"]
    assert len(versions) == 1  # nothing was written
