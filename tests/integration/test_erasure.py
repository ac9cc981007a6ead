"""Erasure by crypto-shredding on the whole system (real Postgres, NATS, blob store): a
user who chatted, attached a file, remembered and named itself is erased, and no byte
of its marker is left in any table, blob or NATS stream; the events stay, their chain
verifies, the session replays to the same decisions; another user is untouched.
Erasing twice, an unknown user, a tampered key table, a wrong master key."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from uuid import UUID

import nats
import psycopg
import pytest
from litestar.testing import TestClient
from psycopg import sql

from adapters.bootstrap import bootstrap
from adapters.commands.demo import replay_events
from adapters.config.settings import Settings
from adapters.http.app import create_app
from adapters.llm.scripted import ScriptedLLM
from adapters.postgres.hash_chain import PostgresHashChain
from adapters.system import System
from application.audit_chain import audit
from domain.errors import NotFound
from domain.personal_data import ERASED, UNREADABLE
from domain.session import AgentSession as S
from projections.rebuild import rebuild
from tests.integration.conftest import BySession
from tests.integration.test_artifacts_api import sign_up
from tests.waiting import eventually

pytestmark = pytest.mark.integration
Client = TestClient  # type: ignore[type-arg]

MARK = "QZXMARK"  # in everything Alice writes; nothing else says it
OTHER = "BOBMARK"


def chat(client: Client, who: dict[str, str], sid: UUID, text: str, **more: object) -> None:
    body = {"content": text, **more}
    with client.stream("POST", f"/api/v1/chat/{sid}/message", json=body, headers=who) as stream:
        for line in stream.iter_lines():
            if line.startswith("data:") and json.loads(line[5:]).get("type") in ("done", "error"):
                assert json.loads(line[5:])["type"] == "done", line
                return
    raise AssertionError("the stream ended without a done")


def session(client: Client, who: dict[str, str], workspace: str, llm: BySession) -> UUID:
    made = client.post("/api/v1/sessions/", json={"workspace_id": workspace, "title": "t"},
                       headers=who)  # fmt: skip
    assert made.status_code == 201, made.text
    sid = UUID(made.json()["id"])
    # The answer never repeats what it was told: the marker is the user's alone.
    llm.scripts[str(sid)] = ScriptedLLM.from_turns([{"text": "Noted."}, {"text": "Noted."}])
    return sid


def tables_holding(database_url: str, marker: str) -> list[str]:
    """Every `table.column` of the database whose raw value contains the marker."""
    found = []
    with psycopg.connect(database_url, autocommit=True) as conn:
        columns = conn.execute(
            "SELECT table_schema, table_name, column_name, data_type "
            "FROM information_schema.columns c JOIN information_schema.tables t "
            "USING (table_schema, table_name) WHERE t.table_type = 'BASE TABLE' "
            "AND table_schema NOT IN ('pg_catalog', 'information_schema')"
        ).fetchall()
        for schema, table, column, kind in columns:
            name = sql.Identifier(schema, table)
            col = sql.Identifier(column)
            if kind == "bytea":
                test = sql.SQL("position(convert_to(%s, 'UTF8') in {}) > 0").format(col)
            else:
                test = sql.SQL("{}::text LIKE '%%' || %s || '%%'").format(col)
            query = sql.SQL("SELECT count(*) FROM {} WHERE ").format(name) + test
            row = conn.execute(query, (marker,)).fetchone()
            if row and row[0]:
                found.append(f"{table}.{column}")
    return found


def files_holding(root: Path, marker: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and marker.encode() in p.read_bytes()]


async def stream_messages_holding(nats_url: str, prefix: str, marker: str) -> int:
    """How many messages of the system's JetStream streams (the events', the runs')
    contain the marker."""
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        count, seen = 0, 0
        for info in await js.streams_info():
            if not info.config.name.startswith(prefix):
                continue  # another test's
            seen += 1
            for seq in range(info.state.first_seq, info.state.last_seq + 1):
                try:
                    msg = await js.get_msg(info.config.name, seq)
                except nats.js.errors.NotFoundError:
                    continue
                count += marker.encode() in (msg.data or b"")
        assert seen == 2, "the events' and the runs' streams"
        return count
    finally:
        await nc.close()


def test_an_erased_user_leaves_no_byte_of_its_content_and_the_log_still_stands(
    running: tuple[Client, System, BySession], database_url: str, nats_url: str,
    settings: Settings,
) -> None:  # fmt: skip
    client, system, llm = running
    alice, workspace = sign_up(client, "alice@example.com")
    bob, bobs_workspace = sign_up(client, "bob@example.com")
    me = client.get("/api/v1/auth/me", headers=alice).json()["id"]
    assert client.patch("/api/v1/auth/me", json={"name": f"Alice {MARK}"},
                        headers=alice).status_code == 200  # fmt: skip

    sid = session(client, alice, workspace, llm)
    note = {"file": ("notes.txt", f"secret {MARK} notes".encode())}
    upload = client.post(f"/api/v1/sessions/{sid}/attachments", headers=alice, files=note)
    assert upload.status_code == 201, upload.text
    blob_ref = upload.json()["blob_ref"]
    chat(client, alice, sid, f"My code name is {MARK}", attachments=[blob_ref])
    chat(client, alice, sid, f"Remember that I prefer {MARK} tea")
    memory = {"text": f"{MARK} is my locker code", "category": "knowledge"}
    made = client.post("/api/v1/memories", json=memory, headers=alice)
    assert made.status_code == 201, made.text
    theirs = session(client, bob, bobs_workspace, llm)
    chat(client, bob, theirs, f"My code name is {OTHER}")

    def searched(who: dict[str, str], words: str) -> list[object]:
        answer = client.get("/api/v1/search", params={"q": words}, headers=who)
        return list(answer.json()["items"])

    eventually(lambda: searched(alice, MARK) and searched(bob, OTHER), what="the episodes applied")
    assert tables_holding(database_url, MARK), "the marker is in the read models before"
    assert files_holding(settings.data_dir, MARK), "the attachment's blob, before"
    events_before = list(system.container.sessions.session_events(sid))
    assert asyncio.run(system.engine.blobs.exists(blob_ref))

    erased = client.delete("/api/v1/auth/me", headers=alice)
    assert erased.status_code == 204, erased.text

    assert tables_holding(database_url, MARK) == []
    for name, view in system.container.views.items():  # read models rebuilt: still nothing
        log = system.container.log_of(name)
        rebuild(view, log.recorder, log.mapper)
    assert tables_holding(database_url, MARK) == []
    assert client.get("/api/v1/memories", headers=bob).json()["items"] == []
    assert files_holding(settings.data_dir, MARK) == []
    assert asyncio.run(stream_messages_holding(nats_url, settings.nats_stream, MARK)) == 0
    assert not asyncio.run(system.engine.blobs.exists(blob_ref))

    # The events stay, as many as before, their personal fields erased; the chain holds.
    events = list(system.container.sessions.session_events(sid))
    assert [type(e) for e in events] == [type(e) for e in events_before]
    texts = [e.text for e in events if isinstance(e, S.UserMessageAppended)]
    assert texts == [ERASED, ERASED]
    verdict = audit(PostgresHashChain(system.container.recorder), sid)
    assert verdict is not None and verdict.verified
    replayed = asyncio.run(replay_events(system.engine, events))
    assert replayed.identical, replayed.divergence

    # Alice is gone: no login, no token; Bob is untouched.
    credentials = {"email": "alice@example.com", "password": "correct horse battery"}
    login = client.post("/api/v1/auth/login", json=credentials)
    assert login.status_code == 401
    assert client.get("/api/v1/auth/me", headers=alice).status_code == 401
    assert searched(bob, OTHER)
    (bobs,) = [e for e in system.container.sessions.session_events(theirs)
               if isinstance(e, S.UserMessageAppended)]  # fmt: skip
    assert bobs.text == f"My code name is {OTHER}"
    assert tables_holding(database_url, OTHER), "Bob's read models keep his words"

    again = asyncio.run(system.container.erasure.erase(UUID(me), None))
    assert again.already
    with pytest.raises(NotFound):
        asyncio.run(system.container.erasure.erase(UUID(int=7), None))


def test_a_tampered_key_reads_as_unreadable_field_by_field_never_a_500(
    running: tuple[Client, System, BySession], database_url: str
) -> None:
    client, system, llm = running
    bob, workspace = sign_up(client, "bob@example.com")
    sid = session(client, bob, workspace, llm)
    chat(client, bob, sid, f"My code name is {OTHER}")
    carol, _ = sign_up(client, "carol@example.com")
    with psycopg.connect(database_url, autocommit=True) as conn:
        bob_id = client.get("/api/v1/auth/me", headers=bob).json()["id"]
        carol_id = client.get("/api/v1/auth/me", headers=carol).json()["id"]
        conn.execute(
            "UPDATE tokendance_user_keys SET wrapped = "
            "(SELECT wrapped FROM tokendance_user_keys WHERE user_id = %s) WHERE user_id = %s",
            (carol_id, bob_id),
        )
    time.sleep(2.1)  # the keys' cache forgets
    (message,) = [e for e in system.container.sessions.session_events(sid)
                  if isinstance(e, S.UserMessageAppended)]  # fmt: skip
    assert message.text == UNREADABLE
    listed = client.get(f"/api/v1/sessions/{sid}/events", headers=bob)
    assert listed.status_code == 200, listed.text
    assert UNREADABLE in listed.text and OTHER not in listed.text


def test_a_wrong_master_key_at_start_is_refused_naming_the_variable(
    settings: Settings, database_url: str, nats_url: str
) -> None:
    system = bootstrap(settings, database_url=database_url, nats_url=nats_url, llm=BySession())
    try:
        with TestClient(create_app(system)) as client:
            sign_up(client, "dora@example.com")
    finally:
        system.close()
    other = Settings(
        nats_stream=settings.nats_stream, db_pool_size=2, data_dir=settings.data_dir,
        master_key="A" * 43 + "=",
    )  # fmt: skip
    with pytest.raises(SystemExit, match="TOKENDANCE_MASTER_KEY"):
        bootstrap(other, database_url=database_url, nats_url=nats_url, llm=BySession())
