"""Slide decks over HTTP: a version's pages (text and thumbnails), PDF export, and
regenerating one slide (SSE).

A deck's page text comes from the deck's data in the session's log (the version
asked for); thumbnails and the PDF come from LibreOffice (`adapters/slides/previews`).
Without LibreOffice a preview still lists every page's text, with `thumbnail_url`
null and an `X-Preview-Thumbnails: unavailable; reason="..."` header, and a PDF
export answers 501 saying what to install.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated
from uuid import UUID

import msgspec
from litestar import Controller, Response, get, post
from litestar.params import FromPath, JSONBody, QueryParameter
from litestar.response import ServerSentEvent, ServerSentEventMessage

from adapters.http.contract.openapi import SseOperation
from adapters.http.deps import ApiDep, Caller
from adapters.http.errors import ApiError
from adapters.http.streams.sse import payloads
from adapters.http.streams.streaming import message, sse_response
from adapters.slides.office import ConversionFailed, OfficeUnavailable
from application.ports import LLMError
from application.slide_regeneration import SlideRegenerator
from domain.budgets import BudgetExceeded
from domain.errors import DomainError
from domain.session_decks import DeckLog as D
from projections.artifacts import ArtifactRow
from schemas.artifacts import (
    RegenerateBody,
    RegenerationDone,
    RegenerationFailed,
)


class DeckController(Controller):
    path = "/api/v1/artifacts"
    tags = ["artifacts"]

    @get("/{artifact_id:uuid}/pages/{page:int}/thumbnail", media_type="image/png")
    async def thumbnail(
        self,
        artifact_id: FromPath[UUID],
        page: FromPath[int],
        request: Caller,
        api: ApiDep,
        version: Annotated[int | None, QueryParameter(ge=1)] = None,
    ) -> Response[bytes]:
        """A PNG of one slide (from 1) of the deck's latest version, or of `version`."""
        row = await api.artifacts.find(request, artifact_id)
        found = await api.artifacts.version(row, version)
        if row.kind != "ppt":
            raise ApiError(400, "only slide decks have page thumbnails", "NOT_A_DECK")
        try:
            png = await api.previews.thumbnail(found.blob_ref, page)
        except OfficeUnavailable as e:
            reason = f"thumbnails are unavailable: {e.reason}"
            raise ApiError(501, reason, "PREVIEW_UNAVAILABLE") from e
        except ConversionFailed as e:
            reason = f"LibreOffice could not convert the deck: {e}"
            raise ApiError(502, reason, "PREVIEW_FAILED") from e
        if png is None:
            raise ApiError(404, f"the deck has no page {page}", "PAGE_NOT_FOUND")
        # A version never changes: its thumbnails can be kept.
        headers = {"Cache-Control": "private, max-age=86400, immutable"}
        return Response(png, media_type="image/png", headers=headers)

    @post("/{artifact_id:uuid}/regenerate", status_code=200, operation_class=SseOperation)
    async def regenerate(
        self,
        artifact_id: FromPath[UUID],
        data: JSONBody[RegenerateBody],
        request: Caller,
        api: ApiDep,
    ) -> ServerSentEvent:
        """Rewrite one slide of a deck from `instructions` with one model call (SSE): the
        stream ends with `done {status: "completed", artifact_id, version, page_index}`
        once the new version is recorded (every other slide unchanged), or with `error`
        (nothing recorded). A page out of range answers 422 before any stream."""
        row = await api.artifacts.find(request, artifact_id)
        if row.kind != "ppt":
            raise ApiError(400, "only slide decks regenerate a page", "NOT_A_DECK")
        await api.access.session_workspace(request.user, row.session_id, write=True)
        deck = await api.regenerator.check(row.session_id, artifact_id)
        if not 1 <= data.page_index <= len(deck.slides):
            raise ApiError(
                422, f"page_index {data.page_index} is out of range: the deck has "
                f"{len(deck.slides)} pages (1-{len(deck.slides)})", "PAGE_OUT_OF_RANGE",
            )  # fmt: skip
        return sse_response(_regeneration(api.regenerator, row, data))


async def _regeneration(
    regenerator: SlideRegenerator, row: ArtifactRow, data: RegenerateBody
) -> AsyncIterator[ServerSentEventMessage]:
    try:
        made = await regenerator.regenerate(
            row.session_id, row.artifact_id, data.page_index, data.instructions
        )
    except (DomainError, LLMError, BudgetExceeded) as e:
        failed = RegenerationFailed(detail=str(e), error_code=e.code, artifact_id=row.artifact_id)
        yield ServerSentEventMessage(data=msgspec.json.encode(failed).decode(), event="error")
        return
    for event in made.receipt.events:
        if isinstance(event, D.DeckEvent):
            for payload in payloads(event):
                yield message(payload)
    done = RegenerationDone(
        artifact_id=row.artifact_id, version=made.deck.version, page_index=data.page_index
    )
    yield ServerSentEventMessage(data=msgspec.json.encode(done).decode(), event="done")
