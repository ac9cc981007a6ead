"""The audit log's view of an event: its class name and its fields, as stored.

The one place that names event classes by string: the names come from the union of
a session's event classes (they are also their stored topics' last part).
"""

from __future__ import annotations

import dataclasses

from application.audit_chain import ChainVerdict
from domain.events import SESSION_EVENT_CLASSES, SessionEvent
from schemas.api import AuditEvent, AuditVerification

EVENT_NAMES: dict[type[SessionEvent], str] = {c: c.__name__ for c in SESSION_EVENT_CLASSES}
EVENT_CLASSES: dict[str, type[SessionEvent]] = {n: c for c, n in EVENT_NAMES.items()}
HIDDEN = frozenset({"originator_id", "originator_version", "timestamp"})


def audit_event(
    e: SessionEvent, prev_hash: bytes | None = None, hash_: bytes | None = None
) -> AuditEvent:
    """The event as the audit log shows it: version, type name, time, its own fields, and
    its links in the hash chain."""
    fields = {f.name: getattr(e, f.name) for f in dataclasses.fields(e) if f.name not in HIDDEN}
    return AuditEvent(
        e.originator_version, EVENT_NAMES[type(e)], e.timestamp, fields, _hex(prev_hash),
        _hex(hash_),
    )  # fmt: skip


def verification_out(verdict: ChainVerdict) -> AuditVerification:
    return AuditVerification(
        verdict.verified, verdict.events, _hex(verdict.head_hash) or "",
        verdict.first_bad_version, verdict.reason,
    )  # fmt: skip


def _hex(value: bytes | None) -> str | None:
    return None if value is None else value.hex()
