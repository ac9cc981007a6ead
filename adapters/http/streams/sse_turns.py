"""A session's conversation as the SSE contract's payloads (`schemas.sse`): a user's
message, and a model turn with its thinking's end, the sources its text cites (as the
frontend's `Citation`, by the source's number) and a notice for markers no source has."""

from __future__ import annotations

from datetime import datetime
from typing import TypeAlias, assert_never
from urllib.parse import urlsplit

from domain.session import AgentSession as S
from domain.sources import cited_numbers
from domain.stored_blocks import (
    StoredBlock,
    blocks_have_thinking,
    blocks_thinking,
    blocks_tool_uses,
    model_citations,
)
from domain.values import Citation, CitedSource
from schemas import sse

Turn: TypeAlias = S.UserMessageAppended | S.AssistantTurnRecorded


def turn_payloads(e: Turn) -> list[sse.SsePayload]:
    v, at = e.originator_version, e.timestamp
    match e:
        case S.UserMessageAppended(text=text, attachments=attachments):
            return [
                sse.Message(
                    version=v,
                    timestamp=at,
                    id=str(v),
                    role="user",
                    content=text,
                    attachments=list(attachments),
                    files=[
                        sse.AttachedFile(f.file_id, f.path, f.media_type, f.size) for f in e.files
                    ]
                    or None,
                )
            ]
        case S.AssistantTurnRecorded(content=blocks):
            thinking = blocks_thinking(blocks)
            usage = sse.Usage(
                e.input_tokens, e.output_tokens, e.cache_read_tokens, e.cache_write_tokens
            )
            calls = [sse.ToolUse(b["id"], b["name"], b["input"]) for b in blocks_tool_uses(blocks)]
            cited = cited_sources(e.citations)
            unknown = e.unknown_markers
            turn = sse.Message(
                version=v,
                timestamp=at,
                id=str(v),
                role="assistant",
                content=marked_text(blocks, e.citations),
                thinking=thinking or None,
                tool_calls=calls,
                run_id=e.run_id,
                stop_reason=e.stop_reason,
                model=e.model,
                usage=usage,
                citations=cited or None,
                unresolved_citations=list(unknown) or None,
            )
            thought = blocks_have_thinking(blocks)  # redacted thinking too: its start was sent
            out: list[sse.SsePayload] = [sse.Thinking(content="", status="end")] if thought else []
            if cited:
                out.append(sse.Content(content="", citations=cited))
            out.append(turn)
            if unknown:
                out.append(_unresolved(v, at, unknown, len(cited)))
            return out
        case _:
            assert_never(e)


def citations_of(citations: list[Citation]) -> list[sse.Citation]:
    """Citations numbered from 1, with the domain of their url."""
    return [
        sse.Citation(
            index=n,
            url=c.url,
            title=c.title,
            domain=urlsplit(c.url).hostname or "",
            snippet="",
            blob_ref=c.blob_ref or None,
        )
        for n, c in enumerate(citations, start=1)
    ]


def _unresolved(version: int, at: datetime, markers: list[int], cited: int) -> sse.Notice:
    listed = ", ".join(f"[{n}]" for n in markers)
    return sse.Notice(
        version=version,
        timestamp=at,
        kind="citation",
        markers=list(markers),
        message=f"The answer cites {listed}, which no source of this session has: "
        f"shown as text, not as a link ({cited} cited source(s) resolved).",
    )


def cited_sources(cited: list[CitedSource]) -> list[sse.Citation]:
    """A turn's citations as the frontend's `Citation`: `index` is the source's number."""
    return [
        sse.Citation(
            index=c.number,
            url=c.url,
            title=c.title,
            domain=urlsplit(c.url).hostname or "",
            snippet=c.snippet,
        )
        for c in cited
    ]


def marked_text(blocks: list[StoredBlock], cited: list[CitedSource]) -> str:
    """A turn's text with `[n]` after each block the model cited sources for by itself
    (its own citations carry no markers in the text), unless the block has them."""
    numbers = {c.url: c.number for c in cited}
    parts: list[str] = []
    for block in blocks:
        if block["type"] != "text":
            continue
        text = block["text"]
        cited_here = (numbers.get(c.source) for c in model_citations(block))
        marks = dict.fromkeys(n for n in cited_here if n is not None)
        for n in cited_numbers(text):
            marks.pop(n, None)
        parts.append(text + "".join(f"[{n}]" for n in marks))
    return "".join(parts)
