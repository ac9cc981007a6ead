"""Stored events and live deltas as Server-Sent Events, in the product's event types.

A stored event is one SSE message whose `id` is the session version, so a client
resumes with `Last-Event-ID`. Live deltas (and the thinking that precedes a stored
turn) carry no id: they are previews, not part of the record.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
from eventsourcing.domain import AggregateEvent
from litestar.response import ServerSentEventMessage

from domain.conversation import TextDelta, ThinkingDelta

Data = dict[str, object]


def _done(status: str) -> Callable[[Data], tuple[str, Data]]:
    return lambda d: ("done", {"status": status, "reason": d["reason"], "run_id": d["run_id"]})


def _tool_result(d: Data) -> tuple[str, Data]:
    return "tool_result", {
        "id": d["tool_use_id"],
        "status": d["status"],
        "success": d["status"] == "success",
        "result": d["summary"],
        "error": d["error"],
        "blob_ref": d["blob_ref"],
        "duration_ms": d["duration_ms"],
    }


def _turn(d: Data) -> tuple[str, Data]:
    content: list[dict[str, object]] = d["content"]  # type: ignore[assignment]
    return "content", {
        "text": "".join(str(b["text"]) for b in content if b["type"] == "text"),
        "tool_calls": [
            {"id": b["id"], "name": b["name"], "args": b["input"]}
            for b in content
            if b["type"] == "tool_use"
        ],
        "stop_reason": d["stop_reason"],
        "model": d["model"],
        "usage": {
            k: d[k]
            for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
        },
    }


# event type -> (SSE type, payload). Payloads carry what the event carries, named for clients.
_MAPPING: dict[str, Callable[[Data], tuple[str, Data]]] = {
    "SessionStarted": lambda d: ("session", {"change": "started", "title": d["title"]}),
    "SessionRenamed": lambda d: ("session", {"change": "renamed", "title": d["title"]}),
    "SessionArchived": lambda d: ("session", {"change": "archived"}),
    "SessionCompleted": lambda d: ("session", {"change": "completed", "reason": d["reason"]}),
    "UserMessageAppended": lambda d: (
        "message",
        {"role": "user", "content": d["text"], "attachments": d["attachments"]},
    ),
    "RunRequested": lambda d: ("run", {"status": "requested", "run_id": d["run_id"]}),
    "RunStarted": lambda d: (
        "run",
        {"status": "started", "run_id": d["run_id"], "worker": d["worker"]},
    ),
    "AssistantTurnRecorded": _turn,
    "ToolCallRequested": lambda d: (
        "tool_call",
        {
            "id": d["tool_use_id"],
            "name": d["tool"],
            "tool": d["tool"],
            "args": d["args"],
            "risk": d["risk"],
            "status": "pending",
        },
    ),
    "ConfirmationRequested": lambda d: (
        "confirm_required",
        {
            "action_id": d["action_id"],
            "tool": d["tool"],
            "args": d["args"],
            "description": d["description"],
            "tool_call_id": d["tool_use_id"],
        },
    ),
    "ConfirmationGiven": lambda d: (
        "confirmed",
        {"action_id": d["action_id"], "approved": d["approved"], "feedback": d["feedback"]},
    ),
    "ToolResultRecorded": _tool_result,
    "PlanUpdated": lambda d: ("plan", {"items": d["items"]}),
    "FindingRecorded": lambda d: ("finding", {"text": d["text"], "citations": d["citations"]}),
    "ProgressNoted": lambda d: ("progress", {"text": d["text"]}),
    "StrikeRecorded": lambda d: (
        "notice",
        {
            "kind": "strike",
            "tool": d["tool"],
            "error_signature": d["error_signature"],
            "count": d["count"],
        },
    ),
    "RebootRequested": lambda d: ("notice", {"kind": "reboot", "questions": d["questions"]}),
    "ContextCompacted": lambda d: (
        "notice",
        {
            "kind": "compaction",
            "through_version": d["through_version"],
            "tokens_before": d["tokens_before"],
            "tokens_after": d["tokens_after"],
        },
    ),
    "RunCompleted": _done("completed"),
    "RunStopped": _done("stopped"),
    "RunFailed": lambda d: (
        "error",
        {"detail": d["reason"], "error_code": d["error_code"], "run_id": d["run_id"]},
    ),
}

TERMINAL = {"RunCompleted", "RunStopped", "RunFailed"}


def event_type_of(e: AggregateEvent) -> str:
    return type(e).__name__


def stored_messages(e: AggregateEvent) -> list[ServerSentEventMessage]:
    """The SSE message of a stored event (preceded by its thinking, for a turn)."""
    d = e.__dict__
    kind = type(e).__name__
    sse_type, payload = _MAPPING.get(kind, lambda _: ("event", {}))(d)
    payload = {
        **payload,
        "type": kind,
        "version": e.originator_version,
        "timestamp": e.timestamp.isoformat(),
    }
    messages = []
    if kind == "AssistantTurnRecorded":
        thinking = "".join(str(b["thinking"]) for b in d["content"] if b["type"] == "thinking")
        if thinking:
            messages.append(_message("thinking", {"content": thinking, "final": True}))
    messages.append(_message(sse_type, payload, e.originator_version))
    return messages


def live_message(delta: TextDelta | ThinkingDelta) -> ServerSentEventMessage:
    if isinstance(delta, ThinkingDelta):
        return _message("thinking", {"content": delta.thinking, "delta": True})
    return _message("content", {"text": delta.text, "delta": True})


def _message(event: str, data: Data, version: int | None = None) -> ServerSentEventMessage:
    return ServerSentEventMessage(data=msgspec.json.encode(data).decode(), event=event, id=version)
