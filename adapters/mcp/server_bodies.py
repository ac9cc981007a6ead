"""What MCP clients send to TokenDance's tools and get back, as msgspec Structs.

The inputs' JSON Schemas are what `tools/list` shows (inlined, as the model sees the
agent's tools), and the same Structs validate a call's arguments. The outputs reuse the
REST API's bodies where REST has one (a resource has one shape wherever it is returned);
their schemas are the tools' `outputSchema`, so a client can check what it gets.
"""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

import msgspec
from msgspec import Meta

from domain.memory_values import MAX_TEXT
from schemas.api import Text, Title
from schemas.artifacts import ArtifactType
from schemas.sse import Citation

SessionId = Annotated[UUID, Meta(description="A session the caller may see (its id)")]
WorkspaceId = Annotated[
    UUID, Meta(description="The workspace (default: the caller's first, or its API key's)")
]


class StartSessionIn(msgspec.Struct, forbid_unknown_fields=True):
    title: Title = "New session"
    workspace_id: WorkspaceId | None = None


class SendMessageIn(msgspec.Struct, forbid_unknown_fields=True):
    message: Annotated[Text, Meta(description="The task or question for the agent")]
    session_id: Annotated[UUID | None, Meta(description="Go on in this session")] = None
    workspace_id: WorkspaceId | None = None  # where a new session starts


class SessionIn(msgspec.Struct, forbid_unknown_fields=True):
    session_id: SessionId


class SearchMemoriesIn(msgspec.Struct, forbid_unknown_fields=True):
    query: Annotated[str, Meta(min_length=1, max_length=MAX_TEXT)]
    limit: Annotated[int, Meta(ge=1, le=100, description="How many memories at most")] = 5


class SessionStartedOut(msgspec.Struct, kw_only=True):
    session_id: UUID
    workspace_id: UUID
    title: str


class MadeOut(msgspec.Struct, kw_only=True):
    """An artifact a run made, and the MCP resource that reads it."""

    id: UUID
    type: ArtifactType
    name: str
    uri: str


RunStatus = Literal["completed", "failed", "stopped", "waiting_confirmation"]


class RunOut(msgspec.Struct, kw_only=True, omit_defaults=True):
    """How a run that `send_message` started ended, or where it waits for a human."""

    session_id: UUID
    run_id: UUID
    status: RunStatus
    answer: str  # the run's last answer (what it wrote so far, if it did not complete)
    citations: list[Citation] = msgspec.field(default_factory=list)  # the answer's [n]
    artifacts: list[MadeOut] = msgspec.field(default_factory=list)
    error_code: str | None = None  # failed: why, in the API's error codes
    error: str | None = None
    # waiting_confirmation: the action to approve, and how (`approve`: the REST route)
    action_id: str | None = None
    tool: str | None = None
    description: str | None = None
    approve: str | None = None


def output_schema(body: type[msgspec.Struct]) -> dict[str, object]:
    """The Struct's JSON Schema as an object at the root (MCP's rule for an
    `outputSchema`), the types it uses under `$defs`."""
    (ref,), defs = msgspec.json.schema_components(
        [body], schema_hook=_any_json, ref_template="#/$defs/{name}"
    )
    name = str(ref["$ref"]).rsplit("/", 1)[-1]
    root = dict(defs[name])
    root["$defs"] = defs
    return root


def _any_json(kind: type) -> dict[str, object]:
    """`object` fields (free-form metadata) take any JSON value."""
    if kind is object:
        return {"description": "any JSON value"}
    raise NotImplementedError(f"no JSON Schema for {kind!r}")
