"""The hash chain per aggregate, written by the insert itself, on real Postgres.

Each stored event's `hash` is SHA-256 over its `prev_hash`, topic, version and state
(`application/audit_chain.py`). Here: the rows the insert writes are recomputed with
hashlib; a byte changed with SQL, a deleted row, a fork, snapshots, the accounts'
aggregates, the backfill of old rows (the routes: tests/integration/test_audit_api.py).
"""

from __future__ import annotations

import hashlib
import threading
from uuid import UUID, uuid4

import psycopg
import pytest

from adapters.container import Container
from adapters.postgres.hash_chain import PostgresHashChain
from application.audit_chain import GENESIS, ChainVerdict, audit

pytestmark = pytest.mark.integration


def rows(
    database_url: str, table: str, originator_id: UUID
) -> list[tuple[int, str, bytes, bytes | None, bytes | None]]:
    with psycopg.connect(database_url) as conn:
        return [
            (
                int(v),
                str(t),
                bytes(s),
                None if p is None else bytes(p),
                None if h is None else bytes(h),
            )
            for v, t, s, p, h in conn.execute(
                f"SELECT originator_version, topic, state, prev_hash, hash FROM {table} "
                "WHERE originator_id = %s ORDER BY originator_version",
                (originator_id,),
            )
        ]


def sql(database_url: str, statement: str, *params: object) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(statement, params)  # type: ignore[arg-type]


def session_with(container: Container, messages: int) -> UUID:
    app = container.sessions
    sid = app.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="chain").session_id
    for i in range(messages):
        app.append_user_message(sid, f"message {i}")
    return sid


def verdict(container: Container, sid: UUID) -> ChainVerdict:
    found = audit(PostgresHashChain(container.recorder), sid)
    assert found is not None
    return found


def test_each_insert_writes_the_hash_of_prev_topic_version_and_state(
    container: Container, database_url: str
) -> None:
    sid = session_with(container, 4)
    stored = rows(database_url, "tokendance_events", sid)
    assert [r[0] for r in stored] == [1, 2, 3, 4, 5]
    prev = GENESIS
    for version, topic, state, prev_hash, hash_ in stored:
        assert prev_hash == prev, version
        want = hashlib.sha256(prev + topic.encode() + version.to_bytes(8, "big") + state).digest()
        assert hash_ == want, version
        prev = hash_
    assert b'"timestamp"' in stored[0][2], "the event's time is inside the hashed state"
    clean = verdict(container, sid)
    assert clean.verified and clean.events == 5 and clean.head_hash == prev


def test_several_events_of_one_save_chain_in_order(container: Container, database_url: str) -> None:
    sid = session_with(container, 0)
    run_id = uuid4()
    container.sessions.submit_message(sid, "two events in one insert", run_id)
    stored = rows(database_url, "tokendance_events", sid)
    assert len(stored) == 3 and stored[2][3] == stored[1][4]
    assert verdict(container, sid).verified


def test_one_changed_byte_of_a_stored_state_is_named(
    container: Container, database_url: str
) -> None:
    sid = session_with(container, 5)
    sql(
        database_url,
        "UPDATE tokendance_events SET state = overlay(state placing 'X'::bytea from 3 for 1) "
        "WHERE originator_id = %s AND originator_version = 4",
        sid,
    )
    found = verdict(container, sid)
    assert not found.verified and found.first_bad_version == 4 and found.events == 6


def test_a_deleted_event_is_named_as_a_gap(container: Container, database_url: str) -> None:
    sid = session_with(container, 5)
    sql(
        database_url,
        "DELETE FROM tokendance_events WHERE originator_id = %s AND originator_version = 3",
        sid,
    )
    found = verdict(container, sid)
    assert not found.verified and found.first_bad_version == 3
    assert "missing" in (found.reason or "")


def test_the_chain_survives_snapshots(container: Container, database_url: str) -> None:
    """Snapshots (every 200 versions) are not in the chain, and the chain goes on past them."""
    sid = session_with(container, 230)
    assert container.sessions.snapshots is not None
    assert [s.originator_version for s in container.sessions.snapshots.get(sid)] == [200]
    container.sessions.append_user_message(sid, "after the snapshot")  # read from it
    found = verdict(container, sid)
    assert found.verified and found.events == 232
    stored = rows(database_url, "tokendance_events", sid)
    assert stored[-1][3] == stored[-2][4]


def test_a_fork_starts_its_chain_from_the_parents_hash_at_the_fork_version(
    container: Container, database_url: str
) -> None:
    parent = session_with(container, 6)
    at = rows(database_url, "tokendance_events", parent)[3]  # version 4
    child = container.sessions.fork_session(parent, 4).session_id
    forked = rows(database_url, "tokendance_events", child)
    assert forked[0][0] == 1 and forked[0][3] == at[4], "cites the parent's hash at version 4"
    assert forked[0][3] != GENESIS
    container.sessions.append_user_message(child, "the fork goes on")
    assert verdict(container, child).verified
    assert verdict(container, parent).verified
    # The fork's first event cites the parent's version 4: changing that breaks the fork.
    sql(
        database_url,
        "UPDATE tokendance_events SET hash = sha256('x'::bytea) "
        "WHERE originator_id = %s AND originator_version = 4",
        parent,
    )
    assert verdict(container, child).first_bad_version == 1
    assert verdict(container, parent).first_bad_version == 4


def test_a_title_with_a_nul_still_chains_and_so_does_its_fork(
    container: Container, database_url: str
) -> None:
    """A session's start is parsed at insert (is it a fork?): an escaped U+0000 in its
    JSON, which Postgres's jsonb refuses, must not fail the insert."""
    app = container.sessions
    parent = app.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="a\x00b").session_id
    app.append_user_message(parent, "one\x00two")
    child = app.fork_session(parent, 2).session_id
    assert (
        rows(database_url, "tokendance_events", child)[0][3]
        == rows(database_url, "tokendance_events", parent)[1][4]
    )
    assert verdict(container, parent).verified and verdict(container, child).verified


def test_the_accounts_aggregates_chain_too(container: Container, database_url: str) -> None:
    container.accounts.register("chain@example.com", "correct horse battery", "n")
    with psycopg.connect(database_url) as conn:
        ids = [r[0] for r in conn.execute("SELECT DISTINCT originator_id FROM accounts_events")]
        unhashed = conn.execute(
            "SELECT count(*) FROM accounts_events WHERE hash IS NULL"
        ).fetchone()
    assert ids and unhashed == (0,)
    chain = PostgresHashChain(container.accounts_recorder)
    for originator_id in ids:
        found = audit(chain, originator_id)
        assert found is not None and found.verified, found


def test_backfill_chains_old_rows_and_is_idempotent(
    container: Container, database_url: str
) -> None:
    parent = session_with(container, 4)
    child = container.sessions.fork_session(parent, 3).session_id
    other = session_with(container, 2)
    before = {s: rows(database_url, "tokendance_events", s) for s in (parent, child, other)}
    # Rows written before the chain existed: no hashes at all.
    sql(database_url, "UPDATE tokendance_events SET prev_hash = NULL, hash = NULL")
    # An event appended to an unhashed session stays unhashed until the backfill.
    container.sessions.append_user_message(other, "written before the backfill")
    assert rows(database_url, "tokendance_events", other)[-1][4] is None
    assert not verdict(container, parent).verified
    chain = PostgresHashChain(container.recorder)
    assert chain.backfill(batch=2) == 5 + 3 + 4  # every row, two candidates a call
    for s in (parent, child, other):
        assert verdict(container, s).verified, s
        after = rows(database_url, "tokendance_events", s)
        assert after[: len(before[s])] == before[s], "the same hashes the inserts wrote"
    assert chain.backfill() == 0, "idempotent: nothing left to chain"
    container.sessions.append_user_message(other, "after the backfill")
    assert verdict(container, other).verified


def test_backfill_is_safe_with_concurrent_inserts(container: Container, database_url: str) -> None:
    sids = [session_with(container, 3) for _ in range(4)]
    sql(database_url, "UPDATE tokendance_events SET prev_hash = NULL, hash = NULL")
    chain = PostgresHashChain(container.recorder)
    stop = threading.Event()

    def write() -> None:
        i = 0
        while not stop.is_set():
            container.sessions.append_user_message(sids[i % 4], f"during {i}")
            i += 1

    writer = threading.Thread(target=write)
    writer.start()
    try:
        for _ in range(3):
            chain.backfill(batch=3)
    finally:
        stop.set()
        writer.join()
    chain.backfill()
    for s in sids:
        assert verdict(container, s).verified, s
