"""The WebSocket push channel's contract (`WS /api/v1/ws`): one Struct per message type,
a tagged union on `type` for each direction, exported as JSON Schema beside the SSE one.

A client authenticates (`token` or `access_token` query parameter, or `auth` as its first
message),
subscribes to sessions, and is told when one changes (`session_update`: status, version,
title) or when something worth a notice happens in it (`notification`: a run ended, an
approval waits, an artifact is ready, a budget crossed a threshold). Live chunks are not
pushed here: a client reads them from the session's SSE stream. New fields always get
defaults.
"""

from __future__ import annotations

from typing import Literal, TypeAlias
from uuid import UUID

import msgspec

SessionStatus = Literal["created", "running", "waiting", "completed", "error", "stopped"]
NotificationKind = Literal[
    "run_completed", "run_failed", "run_stopped", "approval_required", "artifact_ready",
    "budget_alert",
]  # fmt: skip


class WsMessage(msgspec.Struct, tag_field="type", kw_only=True, omit_defaults=True, frozen=True):
    """Base of every WebSocket message; the tag is its `type`."""


# -- from the client --------------------------------------------------------------


class Auth(WsMessage, tag="auth", frozen=True):
    """The first message, when the socket was opened without `access_token`."""

    token: str  # an access token or an API key (`tdk_...`)


class Sessions(WsMessage, frozen=True):
    """Sessions by id: `session_ids`, or one `session_id` (seed 002's form), or both."""

    session_ids: list[UUID] = msgspec.field(default_factory=list)
    session_id: UUID | None = None

    @property
    def wanted(self) -> list[UUID]:
        one = [] if self.session_id is None else [self.session_id]
        return [*self.session_ids, *one]


class Subscribe(Sessions, tag="subscribe", frozen=True):
    pass


class Unsubscribe(Sessions, tag="unsubscribe", frozen=True):
    pass


class Ping(WsMessage, tag="ping", frozen=True):
    """Answered by `pong`."""


ClientMessage: TypeAlias = Auth | Subscribe | Unsubscribe | Ping
CLIENT_TYPES = frozenset(("auth", "subscribe", "unsubscribe", "ping"))


class Envelope(msgspec.Struct, frozen=True):
    """Any client message, read for its `type` alone (to tell an unknown type apart)."""

    type: str


# -- from the server --------------------------------------------------------------


class SessionData(msgspec.Struct, frozen=True):
    status: SessionStatus
    version: int
    title: str


class SessionUpdate(WsMessage, tag="session_update", frozen=True):
    """A subscribed session as it is now: sent on subscribing, then on each change of its
    status or title. `version` is its newest event's (the SSE id to resume from). `data`
    says it again as seed 002 has it (`{status, ...}`)."""

    session_id: UUID
    status: SessionStatus
    version: int
    title: str
    data: SessionData


class NotificationData(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True):
    """A notification as seed 002 has it: `{title, message, artifact_id?}`."""

    title: str
    message: str
    artifact_id: UUID | None = None
    session_id: UUID | None = None


class Notification(WsMessage, tag="notification", frozen=True):
    """Something a user would want to hear of in a subscribed session."""

    kind: NotificationKind
    title: str  # a headline for it ("Artifact ready")
    message: str
    data: NotificationData
    session_id: UUID | None = None
    artifact_id: UUID | None = None  # artifact_ready
    action_id: str | None = None  # approval_required: what to answer (POST /hitl/{id}/confirm)
    run_id: UUID | None = None  # run_*
    version: int | None = None  # the session version of the event it tells of


class Error(WsMessage, tag="error", frozen=True):
    """A message that could not be served; the socket stays open unless it closes with a
    reason (abuse, authentication)."""

    detail: str
    error_code: str
    session_id: UUID | None = None  # the session it concerns, if one


class Pong(WsMessage, tag="pong", frozen=True):
    pass


class Subscribed(WsMessage, tag="subscribed", frozen=True):
    """The acknowledgement of `subscribe`: every session the socket follows now."""

    session_ids: list[UUID]


class Unsubscribed(WsMessage, tag="unsubscribed", frozen=True):
    """The acknowledgement of `unsubscribe` (or a lost right): the sessions left."""

    session_ids: list[UUID]


ServerMessage: TypeAlias = (
    SessionUpdate | Notification | Error | Pong | Subscribed | Unsubscribed
)  # fmt: skip

_encoder = msgspec.json.Encoder()
_client_decoder: msgspec.json.Decoder[ClientMessage] = msgspec.json.Decoder(ClientMessage)
_server_decoder: msgspec.json.Decoder[ServerMessage] = msgspec.json.Decoder(ServerMessage)
_envelope_decoder = msgspec.json.Decoder(Envelope)


def encode(message: ServerMessage | ClientMessage) -> bytes:
    return _encoder.encode(message)


def decode_client(data: bytes | str) -> ClientMessage:
    """A client's message; `msgspec.DecodeError` (or its `ValidationError`) when it is not."""
    return _client_decoder.decode(data)


def message_type(data: bytes | str) -> str:
    """The `type` a client's message says it is; `msgspec.DecodeError` when it has none."""
    return _envelope_decoder.decode(data).type


def decode_server(data: bytes | str) -> ServerMessage:
    return _server_decoder.decode(data)


def json_schema() -> dict[str, object]:
    """Both directions as JSON Schema: `ClientMessage` and `ServerMessage` in `$defs`,
    each a discriminated union on `type`; the document accepts either."""
    (client, server), defs = msgspec.json.schema_components(
        [ClientMessage, ServerMessage], ref_template="#/$defs/{name}"
    )
    defs = {**defs, "ClientMessage": client, "ServerMessage": server}
    return {
        "title": "TokenDance WebSocket messages",
        "anyOf": [{"$ref": "#/$defs/ClientMessage"}, {"$ref": "#/$defs/ServerMessage"}],
        "$defs": defs,
    }
