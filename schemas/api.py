"""HTTP bodies: what clients send and receive. New fields always get defaults."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

import msgspec
from msgspec import Meta

from schemas.artifacts import ArtifactOut
from schemas.sse import Citation, JsonValue

# Some visible character, and no NUL (Postgres text cannot hold it).
VISIBLE = r"^[^\x00]*\S[^\x00]*$"
Title = Annotated[str, Meta(min_length=1, max_length=500, pattern=VISIBLE)]
Text = Annotated[str, Meta(min_length=1)]
Name = Annotated[str, Meta(min_length=1, max_length=200, pattern=VISIBLE)]
Email = Annotated[str, Meta(min_length=3, max_length=254, pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")]
Password = Annotated[str, Meta(min_length=8, max_length=1024)]


class Error(msgspec.Struct):
    """Every 4xx and 5xx body."""

    detail: str
    error_code: str
    timestamp: str


# -- auth ---------------------------------------------------------------------


class RegisterBody(msgspec.Struct, forbid_unknown_fields=True):
    email: Email
    password: Password
    name: Name


class RegisterOut(msgspec.Struct):
    user_id: UUID
    email: str
    name: str
    organization_id: UUID
    workspace_id: UUID


class LoginBody(msgspec.Struct, forbid_unknown_fields=True):
    email: Email
    password: Annotated[str, Meta(min_length=1, max_length=1024)]


class RefreshBody(msgspec.Struct, forbid_unknown_fields=True):
    refresh_token: Annotated[str, Meta(min_length=1, max_length=4096)]


class TokenOut(msgspec.Struct):
    access_token: str
    token_type: str
    expires_in: int
    refresh_token: str


class WorkspaceBody(msgspec.Struct, forbid_unknown_fields=True):
    name: Name
    organization_id: UUID | None = None
    team_id: UUID | None = None


class WorkspaceOut(msgspec.Struct, kw_only=True):
    id: UUID
    name: str
    organization_id: UUID
    team_id: UUID
    role: str  # the caller's
    created_at: datetime
    session_count: int = 0  # its sessions, archived ones left out
    settings: SessionSettings | None = None  # the defaults of its new sessions


class WorkspacePage(msgspec.Struct):
    """The caller's workspaces: organizations in joining order, then creation order."""

    items: list[WorkspaceOut]


# -- sessions -------------------------------------------------------------------

Status = Literal["created", "running", "waiting", "completed", "error", "stopped"]
ConfirmationPolicy = Literal["always", "risky", "never"]


class SessionSettings(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    confirmation: ConfirmationPolicy = "risky"
    allowed_tools: list[Annotated[str, Meta(min_length=1, max_length=100)]] | None = None
    max_iterations: Annotated[int, Meta(ge=1, le=500)] | None = None
    token_budget: Annotated[int, Meta(ge=1)] | None = None
    model: Annotated[str, Meta(min_length=1, max_length=200)] | None = None
    # Extended thinking per model turn, in tokens: 0 (off), or 1024 or more and below the
    # server's output limit of a turn; None: the server's `TOKENDANCE_THINKING_BUDGET`.
    thinking_budget: Annotated[int, Meta(ge=0, le=1_000_000)] | None = None


class SessionCreate(msgspec.Struct, forbid_unknown_fields=True):
    workspace_id: UUID
    title: Title = "New session"
    task_type: Annotated[str, Meta(min_length=1, max_length=50)] = "general"
    settings: SessionSettings | None = None


class SessionPatch(msgspec.Struct, forbid_unknown_fields=True):
    title: Title | None = None
    status: Literal["completed"] | None = None


class Tokens(msgspec.Struct):
    input: int
    output: int
    cache_read: int
    cache_write: int


class SessionOut(msgspec.Struct):
    id: UUID
    workspace_id: UUID
    title: str
    status: str
    task_type: str
    created_at: datetime
    updated_at: datetime
    version: int
    message_count: int = 0
    tool_call_count: int = 0
    failure_count: int = 0
    tokens: Tokens | None = None
    active_run_id: UUID | None = None
    archived: bool = False  # deleted (`DELETE /sessions/{id}`): out of the lists, log kept
    # With `include_details=true`: the active skill (None: none), the last messages
    # (`messages_limit`), the artifacts, and the rest of the session's own settings.
    skill_id: str | None = None
    messages: list[MessageOut] | None = None
    artifacts: list[ArtifactOut] | None = None
    details: SessionDetails | None = None


class SessionDetails(msgspec.Struct):
    owner_id: UUID
    model: str
    settings: dict[str, object]
    parent_id: UUID | None
    parent_version: int | None
    pending_confirmations: list[str]


class SessionPage(msgspec.Struct):
    """Sessions, latest activity first; `next_cursor` gives the next page (None: none)."""

    items: list[SessionOut]
    total: int
    limit: int
    next_cursor: str | None


ToolCallStatus = Literal["pending", "running", "success", "error", "cancelled"]


class ToolCallOut(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A tool call of an assistant message, and how it ended (`status`): `pending` while
    it waits (for its turn or an approval), `running` while its run performs it."""

    id: str
    name: str
    args: dict[str, JsonValue]
    status: ToolCallStatus
    result: str | None = None  # what the model read back (a summary for long outputs)
    error: str | None = None
    duration_ms: int | None = None


class MessageOut(msgspec.Struct, kw_only=True):
    """A message; its `id` is what a run's SSE `done.message_id` names."""

    id: str
    session_id: UUID
    version: int  # the session version of its event (the SSE id)
    role: Literal["user", "assistant"]
    content: str
    created_at: datetime
    tool_calls: list[ToolCallOut] = msgspec.field(default_factory=list)
    citations: list[Citation] = msgspec.field(default_factory=list)  # `index` = `[n]`
    thinking: str | None = None
    unresolved_citations: list[int] | None = None  # `[n]` naming no source: not links
    attachments: list[str] | None = None  # a user message's session uploads (blob refs)


class MessagePage(msgspec.Struct):
    """Messages, oldest first: the last `limit` before `cursor`; `next_cursor` gives the
    page before this one (None: this page starts the conversation)."""

    items: list[MessageOut]
    total: int
    next_cursor: str | None


class ForkBody(msgspec.Struct, forbid_unknown_fields=True):
    at_version: Annotated[int, Meta(ge=1)]


# -- chat -----------------------------------------------------------------------


class FileAttachment(msgspec.Struct, tag="file", tag_field="type", forbid_unknown_fields=True):
    """A file of the session's workspace: the agent gets its text with the message."""

    file_id: UUID


class ChatMessage(msgspec.Struct, forbid_unknown_fields=True):
    content: Annotated[str, Meta(min_length=1)]
    # A blob ref of a file uploaded to the session, or `{type: "file", file_id}`.
    attachments: Annotated[
        list[Annotated[str, Meta(max_length=200)] | FileAttachment], Meta(max_length=20)
    ] = msgspec.field(default_factory=list)


class ConfirmBody(msgspec.Struct, forbid_unknown_fields=True):
    action_id: Annotated[str, Meta(min_length=1, max_length=100)]
    confirmed: bool
    feedback: Annotated[str, Meta(max_length=10_000)] | None = None


class HitlConfirmBody(msgspec.Struct, forbid_unknown_fields=True):
    approved: bool
    user_feedback: Annotated[str, Meta(max_length=10_000)] | None = None


class ConfirmOut(msgspec.Struct):
    """An answered confirmation; `next_action` says in words what happens next."""

    request_id: str
    approved: bool
    user_feedback: str | None
    responded_at: datetime
    session_id: UUID
    status: Literal["confirmed", "rejected"]
    next_action: str
    # A call made by hand (`POST /mcp/tools/{name}/execute`) has run, or was cancelled,
    # when this answers: its outcome, as that route answers it unasked.
    tool_result: ToolExecuteOut | None = None


class StopOut(msgspec.Struct):
    session_id: UUID
    status: str
    version: int


class Document(msgspec.Struct):
    content: str
    metadata: dict[str, object]


class WorkingMemoryOut(msgspec.Struct):
    session_id: UUID
    task_plan: Document
    findings: Document
    progress: Document


HitlStatus = Literal["pending", "approved", "rejected", "expired"]


class HitlRequestOut(msgspec.Struct):
    request_id: str
    session_id: UUID
    operation: str
    description: str
    context: dict[str, object]
    created_at: datetime
    status: HitlStatus = "pending"
    user_feedback: str | None = None
    responded_at: datetime | None = None


# -- audit --------------------------------------------------------------------


class AuditEvent(msgspec.Struct):
    version: int
    type: str
    timestamp: datetime
    payload: dict[str, object]
    # The hash chain (hex): the previous event's hash (for version 1 32 zero bytes, or the
    # parent's hash at the fork version) and SHA-256(prev_hash || topic || version as 8
    # bytes big-endian || state); null on an event stored before the chain and not
    # backfilled yet.
    prev_hash: str | None = None
    hash: str | None = None


class AuditPage(msgspec.Struct):
    items: list[AuditEvent]
    next_cursor: str | None
    limit: int


class AuditVerification(msgspec.Struct, omit_defaults=True):
    """A session's hash chain recomputed from the stored events: `verified`, or the first
    version that is missing, unhashed or does not hash to its stored bytes, and why."""

    verified: bool
    events: int
    head_hash: str  # hex; what `tokendance audit anchor` prints for external timestamping
    first_bad_version: int | None = None
    reason: str | None = None


class ReplayDivergence(msgspec.Struct):
    """Where the replay first differs: the stored event and what the engine produced."""

    version: int
    expected: str
    got: str


class ReplayOut(msgspec.Struct):
    """The replay check: the engine run again on the recorded inputs, against the log."""

    identical: bool
    events: int
    divergence: ReplayDivergence | None


# -- tools ----------------------------------------------------------------------


class ToolOut(msgspec.Struct):
    name: str
    description: str
    risky: bool


class ToolSchemaOut(msgspec.Struct):
    name: str
    description: str
    input_schema: dict[str, object]
    risky: bool


class ToolExecuteBody(msgspec.Struct, forbid_unknown_fields=True):
    session_id: UUID
    args: dict[str, object] = msgspec.field(default_factory=dict)


class ToolExecuteOut(msgspec.Struct):
    tool_call_id: str
    status: str
    # The tool's output: text, or an object for tools whose output is JSON (code_execute:
    # stdout, stderr, exit_code, duration_ms, files).
    result: str | dict[str, JsonValue] | None = None
    error: str | None = None
    action_id: str | None = None
