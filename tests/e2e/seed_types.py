"""The seeds' client types, transcribed from seed 002 (section 3.1's JSON, 3.2's
WebSocket messages, section 5's TypeScript) and seed 001, and nothing else: what
`test_seed_client_contract.py` decodes every answer with. A field the seed marks
optional (`?`) is optional here, every other one required with the seed's type; where
the backend deliberately differs, the line says so (that module's docstring lists it)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

# -- seed 002 section 5 (types/message.ts, session.ts, artifact.ts, sse.ts) -----------


class Citation(msgspec.Struct):
    index: int
    url: str
    title: str
    domain: str
    snippet: str


class ToolCall(msgspec.Struct):
    id: str
    name: str
    args: dict[str, Any]
    status: Literal["pending", "running", "success", "error", "cancelled"]
    result: Any = None  # result?: any
    error: str | None = None  # error?: string


class Message(msgspec.Struct):
    id: str
    session_id: str
    role: Literal["user", "assistant", "system", "tool"]
    content: str
    created_at: str
    thinking: str | None = None
    tool_calls: list[ToolCall] | None = None
    citations: list[Citation] | None = None


# Seed 001's statuses, and the log's own (`waiting`, `stopped`): see the module's notes.
SessionStatus = Literal["created", "running", "waiting", "completed", "error", "stopped"]


class Session(msgspec.Struct):
    id: str
    workspace_id: str
    title: str
    status: SessionStatus
    created_at: str
    updated_at: str
    skill_id: str | None = None


class Artifact(msgspec.Struct):
    id: str
    session_id: str
    type: Literal["ppt", "document", "report", "code", "file"]  # + `file`: see notes
    name: str
    download_url: str
    metadata: dict[str, Any]
    created_at: str
    preview_url: str | None = None


# -- seed 002 section 3.1 (the JSON of each answer) ----------------------------------


class SessionCreated(msgspec.Struct):
    id: str
    workspace_id: str
    title: str
    status: SessionStatus
    created_at: str


class SessionPage(msgspec.Struct):
    items: list[Session]
    total: int
    limit: int
    next_cursor: str | None  # instead of `offset`: see notes


class SessionDetail(msgspec.Struct):
    id: str
    title: str
    status: SessionStatus
    skill_id: str
    messages: list[Message]
    artifacts: list[Artifact]
    created_at: str


class MessagePage(msgspec.Struct):
    items: list[Message]


class ArtifactPage(msgspec.Struct):
    items: list[Artifact]


class Page(msgspec.Struct):
    index: int
    thumbnail_url: str | None  # null without LibreOffice: see notes
    content: str


class DeckPreview(msgspec.Struct):
    type: Literal["ppt"]
    pages: list[Page]


class Workspace(msgspec.Struct):
    id: str
    name: str
    session_count: int
    created_at: str


class WorkspacePage(msgspec.Struct):
    items: list[Workspace]


class File(msgspec.Struct):
    id: str
    name: str
    size: int
    type: str
    created_at: str


class FilePage(msgspec.Struct):
    items: list[File]


class Uploaded(msgspec.Struct):
    id: str
    name: str
    url: str


class ConfirmOut(msgspec.Struct):
    status: str
    next_action: str


# -- seed 002 section 5, types/sse.ts: each event's `data` --------------------------


class ThinkingData(msgspec.Struct):
    content: str
    status: Literal["start", "end"] | None = None


class ToolCallData(msgspec.Struct):
    id: str
    name: str
    status: Literal["pending", "running"]
    args: dict[str, Any] | None = None


class ToolResultData(msgspec.Struct):
    id: str
    status: Literal["success", "error", "cancelled"]
    result: str | None = None
    error: str | None = None


class ContentData(msgspec.Struct):
    content: str
    citations: list[Citation] | None = None


class ConfirmRequiredData(msgspec.Struct):
    action_id: str
    tool: str
    args: dict[str, Any]
    description: str


class DoneData(msgspec.Struct):
    status: Literal["completed", "stopped", "max_iterations_reached"]
    message_id: str
    tokens_used: int


# -- seed 002 section 3.2, the WebSocket (`WS /api/v1/ws?token=`) ---------------------


class SessionUpdateData(msgspec.Struct):
    status: SessionStatus


class SessionUpdate(msgspec.Struct, tag="session_update"):
    session_id: str
    data: SessionUpdateData


class NotificationData(msgspec.Struct):
    title: str
    message: str
    artifact_id: str | None = None


class Notification(msgspec.Struct, tag="notification"):
    data: NotificationData


class Pong(msgspec.Struct, tag="pong"):
    pass


class Other(msgspec.Struct):
    """A message of a type the seed does not name (`subscribed`): a client skips it."""

    type: str


PushMessage = SessionUpdate | Notification | Pong
PUSH_TYPES = {"session_update", "notification", "pong"}


SSE_TYPES: dict[str, type[msgspec.Struct]] = {
    "thinking": ThinkingData,
    "tool_call": ToolCallData,
    "tool_result": ToolResultData,
    "content": ContentData,
    "confirm_required": ConfirmRequiredData,
    "done": DoneData,
}
