"""The sealing mapper and the users' keys, on the in-memory store: personal fields are
sealed in the stored bytes and open again, read as erased once the key is destroyed, as
unreadable when another key sits in its place, and events of before stay as they were."""

from __future__ import annotations

import dataclasses
import os
from uuid import UUID, uuid4

import pytest

from adapters.bootstrap.in_memory import in_memory_sessions
from adapters.config.secrets import Sealer
from adapters.personal_keys import InMemoryKeyStore, KeyRow, UserKeys
from application.sessions import SessionService
from domain.errors import UserGone
from domain.personal_data import ERASED, PERSONAL, UNREADABLE
from domain.session import AgentSession as S
from domain.values import AttachedFile

SECRET = "my code name is QZX"


def sealed_sessions(store: InMemoryKeyStore) -> tuple[SessionService, UserKeys]:
    sessions = in_memory_sessions()
    keys = UserKeys(store, Sealer(os.urandom(32)), ttl=0)
    sessions.seal_with(keys)
    return sessions, keys


def message(sessions: SessionService, author: UUID) -> tuple[UUID, S.UserMessageAppended]:
    sid = sessions.start_session(workspace_id=uuid4(), owner_id=author, title="t").session_id
    attached = AttachedFile(uuid4(), "a.txt", "text/plain", 3, f"file says {SECRET}")
    sessions.append_user_message(sid, SECRET, files=[attached])
    (event,) = [e for e in sessions.session_events(sid) if isinstance(e, S.UserMessageAppended)]
    return sid, event


def stored_state(sessions: SessionService, sid: UUID) -> bytes:
    return b"".join(s.state for s in sessions.recorder.select_events(sid))


def test_personal_fields_are_sealed_in_the_store_and_open_on_the_way_back() -> None:
    sessions, _ = sealed_sessions(InMemoryKeyStore())
    author = uuid4()
    sid, event = message(sessions, author)
    assert event.author_id == author
    assert event.text == SECRET and event.files[0].text == f"file says {SECRET}"
    raw = stored_state(sessions, sid)
    assert b"QZX" not in raw
    assert f"sealed:v1:{author}:".encode() in raw


def test_a_destroyed_key_reads_as_erased_and_seals_nothing_more() -> None:
    store = InMemoryKeyStore()
    sessions, keys = sealed_sessions(store)
    author = uuid4()
    sid, _ = message(sessions, author)
    assert keys.destroy(author, None) is True
    assert keys.destroy(author, None) is False  # again: nothing more to destroy
    (event,) = [e for e in sessions.session_events(sid) if isinstance(e, S.UserMessageAppended)]
    assert event.text == ERASED and event.files[0].text == ERASED
    with pytest.raises(UserGone):
        sessions.append_user_message(sid, "more")
    # A fork copies the placeholder, not the text: nothing to seal for the erased user.
    fork = sessions.fork_session(sid, event.originator_version).session_id
    copied = [e for e in sessions.session_events(fork) if isinstance(e, S.UserMessageAppended)]
    assert [e.text for e in copied] == [ERASED]


def test_another_key_in_a_users_place_reads_as_unreadable_field_by_field() -> None:
    store = InMemoryKeyStore()
    sessions, _ = sealed_sessions(store)
    alice, bob = uuid4(), uuid4()
    sid, _ = message(sessions, alice)
    message(sessions, bob)
    store.rows[alice] = store.rows[bob]  # tampered: Bob's key in Alice's row
    (event,) = [e for e in sessions.session_events(sid) if isinstance(e, S.UserMessageAppended)]
    assert event.text == UNREADABLE and event.files[0].text == UNREADABLE
    store.rows[alice] = KeyRow("v2:00000000:garbage")  # not even a sealed key
    (event,) = [e for e in sessions.session_events(sid) if isinstance(e, S.UserMessageAppended)]
    assert event.text == UNREADABLE


def test_without_keys_nothing_is_sealed_and_events_of_before_stay_plain() -> None:
    plain = in_memory_sessions()
    sid, _ = message(plain, uuid4())
    assert b"QZX" in stored_state(plain, sid)
    # The same stored event read by a sealing mapper: it was never sealed, it is as it was.
    sessions, _ = sealed_sessions(InMemoryKeyStore())
    (stored,) = [s for s in plain.recorder.select_events(sid) if b"QZX" in s.state]
    reread = sessions.mapper.to_domain_event(stored)
    assert isinstance(reread, S.UserMessageAppended) and reread.text == SECRET


def test_every_listed_personal_field_is_a_field_of_its_event() -> None:
    for event_class, personal in PERSONAL.items():
        fields = {f.name for f in dataclasses.fields(event_class)}
        assert personal.owner in fields, (event_class, personal.owner)
        for name in personal.fields:
            assert name.partition(".")[0] in fields, (event_class, name)


def test_resealing_wraps_every_key_with_the_new_master_key() -> None:
    store = InMemoryKeyStore()
    old, new = os.urandom(32), os.urandom(32)
    sessions = in_memory_sessions()
    keys = UserKeys(store, Sealer(old), ttl=0)
    sessions.seal_with(keys)
    sid, _ = message(sessions, uuid4())
    keys.master = Sealer(new, old)
    assert keys.reseal() == 1 and keys.reseal() == 0
    keys.master = Sealer(new)
    assert keys.unopenable() == []
    (event,) = [e for e in sessions.session_events(sid) if isinstance(e, S.UserMessageAppended)]
    assert event.text == SECRET
