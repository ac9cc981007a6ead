"""The audit log's view of an event: its class name and its fields, as stored.

The one place that names event classes by string: the names come from the union of
a session's event classes (they are also their stored topics' last part).
"""

from __future__ import annotations

import dataclasses

from domain.events import SESSION_EVENT_CLASSES, SessionEvent
from schemas.api import AuditEvent

EVENT_NAMES: dict[type[SessionEvent], str] = {c: c.__name__ for c in SESSION_EVENT_CLASSES}
EVENT_CLASSES: dict[str, type[SessionEvent]] = {n: c for c, n in EVENT_NAMES.items()}
HIDDEN = frozenset({"originator_id", "originator_version", "timestamp"})


def audit_event(e: SessionEvent) -> AuditEvent:
    """The event as the audit log shows it: version, type name, time, and its own fields."""
    fields = {f.name: getattr(e, f.name) for f in dataclasses.fields(e) if f.name not in HIDDEN}
    return AuditEvent(e.originator_version, EVENT_NAMES[type(e)], e.timestamp, fields)
