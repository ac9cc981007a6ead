"""`GET /sessions/{id}/messages` lists a user message's uploads (blob refs), so a page
reopened later still shows what was attached; a message without any lists none."""

from __future__ import annotations

from uuid import uuid4

from adapters.bootstrap.in_memory import in_memory_sessions
from adapters.http.reads.session_messages import messages_of


def test_a_user_message_lists_its_attachments() -> None:
    sessions = in_memory_sessions()
    sid = sessions.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="t").session_id
    sessions.append_user_message(sid, "read these", attachments=["a" * 64, "b" * 64])
    sessions.append_user_message(sid, "and now nothing")
    listed = messages_of(sessions.get_session(sid), list(sessions.session_events(sid)))
    assert [(m.content, m.attachments) for m in listed] == [
        ("read these", ["a" * 64, "b" * 64]),
        ("and now nothing", None),
    ]
