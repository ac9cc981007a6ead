"""What goes over NATS besides the live deltas (`schemas/live.py`): the subjects of a
stream, and the envelope of a stored event the relay publishes.

A stored event's message body is its stored state exactly as Postgres holds it; its
headers (`StoredEventHeaders`) carry the topic, the originator and the notification
id. The same id is the `Nats-Msg-Id`, so JetStream drops an event published twice.
"""

from __future__ import annotations

from uuid import UUID

import msgspec

MSG_ID = "Nats-Msg-Id"  # JetStream's de-duplication id
EXPECTED_LAST_MSG_ID = "Nats-Expected-Last-Msg-Id"  # the publish lands right after it
EXPECTED_LAST_SEQUENCE = "Nats-Expected-Last-Sequence"


class Subjects(msgspec.Struct, frozen=True):
    """The subjects of the stream `stream`: each session's stored events and live deltas."""

    stream: str

    @property
    def prefix(self) -> str:
        return self.stream.lower()

    def events(self, session_id: UUID | str) -> str:
        """The session's stored events (the stream's subjects)."""
        return f"{self.prefix}.events.{session_id}"

    @property
    def all_events(self) -> str:
        return f"{self.prefix}.events.>"

    def live(self, session_id: UUID | str) -> str:
        """The session's live deltas (core NATS: never stored)."""
        return f"{self.prefix}.live.{session_id}"

    def of_session(self, session_id: UUID | str) -> str:
        """Both of the session's subjects, in one subscription."""
        return f"{self.prefix}.*.{session_id}"


class StoredEventHeaders(msgspec.Struct, frozen=True):
    """The headers of a stored event's message."""

    notification_id: int = msgspec.field(name="Td-Notification-Id")
    topic: str = msgspec.field(name="Td-Topic")
    originator_id: UUID = msgspec.field(name="Td-Originator-Id")
    originator_version: int = msgspec.field(name="Td-Originator-Version")

    def headers(self, previous: int) -> dict[str, str]:
        """As NATS headers, to land only right after the notification id `previous`
        (0: only as the stream's first message)."""
        found: dict[str, object] = msgspec.to_builtins(self)
        headers = {name: str(value) for name, value in found.items()}
        headers[MSG_ID] = str(self.notification_id)
        if previous:
            headers[EXPECTED_LAST_MSG_ID] = str(previous)
        else:
            headers[EXPECTED_LAST_SEQUENCE] = "0"
        return headers

    @classmethod
    def of(cls, headers: dict[str, str]) -> StoredEventHeaders:
        """From a message's headers (`msgspec.ValidationError` when one is missing or
        not what it should be)."""
        return msgspec.convert(headers, cls, strict=False)
