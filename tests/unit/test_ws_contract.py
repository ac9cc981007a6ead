"""The push channel's contract: the exported schema is current, and every session event
pushes only messages that fit it; a session's pushes tell each run end, question,
artifact and budget alert, and follow its status as the sessions read model does."""

from __future__ import annotations

import json
from dataclasses import replace
from itertools import pairwise
from uuid import uuid4

import jsonschema_rs

from adapters.http.streams.ws_messages import SessionState, push_messages
from schemas import ws
from schemas.export import WS_SCHEMA, ws_schema_text
from tests.unit.sse_check import one_of_each


def test_the_exported_ws_schema_file_is_current() -> None:
    assert WS_SCHEMA.read_text() == ws_schema_text(), "run `python -m schemas.export`"


def test_every_event_pushes_messages_that_fit_the_schema() -> None:
    validator = jsonschema_rs.validator_for(json.loads(WS_SCHEMA.read_text()))
    events = one_of_each()
    state = SessionState(events[0].originator_id, "created", 0, "t")
    kinds: set[str] = set()
    for event in events:
        state, messages = push_messages(replace(state, version=event.originator_version - 1), event)
        for message in messages:
            data = ws.encode(message)
            assert ws.decode_server(data) == message
            validator.validate(json.loads(data))
            if isinstance(message, ws.Notification):
                kinds.add(message.kind)
                assert message.session_id == event.originator_id
                assert message.version == event.originator_version
    assert {"run_completed", "approval_required", "artifact_ready", "budget_alert"} <= kinds


def test_status_follows_runs_questions_and_answers_and_the_title_renames() -> None:
    events = one_of_each()
    state = SessionState(uuid4(), "created", 0, "t")
    seen: list[tuple[str, str]] = []
    for event in events:
        state, messages = push_messages(replace(state, version=event.originator_version - 1), event)
        seen += [(m.status, m.title) for m in messages if isinstance(m, ws.SessionUpdate)]
        assert state.version == event.originator_version
    statuses = [status for status, _ in seen]
    assert "running" in statuses and "waiting" in statuses
    assert statuses.index("waiting") < len(statuses) - 1  # answered: not waiting at the end
    assert all(a != b for a, b in pairwise(seen)), "only changes are pushed"


def test_client_messages_decode_and_unknown_types_are_told_apart() -> None:
    sid = uuid4()
    assert ws.decode_client(f'{{"type":"subscribe","session_ids":["{sid}"]}}') == ws.Subscribe(
        session_ids=[sid]
    )
    assert ws.message_type(b'{"type":"shout"}') == "shout"
    assert "shout" not in ws.CLIENT_TYPES
