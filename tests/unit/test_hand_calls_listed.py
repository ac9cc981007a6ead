"""A tool call made by hand (`POST /mcp/tools/{name}/execute`, ids `manual_...`) is in
the conversation `GET /sessions/{id}/messages` lists, where it was made, as the user's,
with how it ended: the web app shows it after a reload as it did live."""

from __future__ import annotations

from pathlib import Path

from adapters.http.reads.session_messages import messages_of
from tests.fakes.engine import make_engine, scripted


async def test_calls_made_by_hand_are_listed_as_the_user_s_with_their_outcome(
    tmp_path: Path,
) -> None:
    engine = make_engine(scripted({"text": "hello"}, {"text": "again"}), tmp_path)
    manual = engine.scheduler.manual
    assert manual is not None
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "hi")
    await engine.scheduler.wait(sid)
    noted = await manual.execute(sid, "note_progress", {"text": "by hand"})
    asked = await manual.execute(sid, "delete_file", {"path": "/tmp/x"})
    assert asked.action_id is not None
    await engine.scheduler.confirm(sid, asked.action_id, False, "no", "alice")
    await engine.scheduler.send_message(sid, "more")
    await engine.scheduler.wait(sid)

    sessions = engine.sessions
    listed = messages_of(sessions.get_session(sid), list(sessions.session_events(sid)))
    shown = [
        (m.role, m.content, [(c.id, c.name, c.args, c.status) for c in m.tool_calls])
        for m in listed
    ]
    assert shown == [
        ("user", "hi", []),
        ("assistant", "hello", []),
        ("user", "", [(noted.tool_use_id, "note_progress", {"text": "by hand"}, "success")]),
        ("user", "", [(asked.tool_use_id, "delete_file", {"path": "/tmp/x"}, "cancelled")]),
        ("user", "more", []),
        ("assistant", "again", []),
    ]
    versions = [m.version for m in listed]
    assert versions == sorted(versions) and [m.id for m in listed] == [str(v) for v in versions]
