"""The stored events' envelope on NATS (`schemas.nats`): headers out and back, and a
message without them refused by name."""

from __future__ import annotations

from uuid import uuid4

import msgspec
import pytest

from schemas.nats import StoredEventHeaders, Subjects


def test_headers_round_trip_and_name_their_predecessor() -> None:
    envelope = StoredEventHeaders(7, "domain.session:AgentSession.Renamed", uuid4(), 3)
    headers = envelope.headers(6)
    assert all(isinstance(v, str) for v in headers.values())  # NATS headers are text
    assert headers["Nats-Msg-Id"] == "7" and headers["Nats-Expected-Last-Msg-Id"] == "6"
    assert StoredEventHeaders.of(headers) == envelope
    first = envelope.headers(0)
    assert first["Nats-Expected-Last-Sequence"] == "0" and "Nats-Expected-Last-Msg-Id" not in first


def test_a_missing_or_bad_header_is_named() -> None:
    headers = StoredEventHeaders(7, "t", uuid4(), 3).headers(6)
    del headers["Td-Topic"]
    with pytest.raises(msgspec.ValidationError, match="Td-Topic"):
        StoredEventHeaders.of(headers)
    headers = StoredEventHeaders(7, "t", uuid4(), 3).headers(6)
    headers["Td-Originator-Version"] = "three"
    with pytest.raises(msgspec.ValidationError, match="Td-Originator-Version"):
        StoredEventHeaders.of(headers)


def test_subjects_of_a_stream() -> None:
    s = Subjects("TOKENDANCE")
    assert s.events("x") == "tokendance.events.x" and s.live("x") == "tokendance.live.x"
    assert s.all_events == "tokendance.events.>" and s.of_session("x") == "tokendance.*.x"
