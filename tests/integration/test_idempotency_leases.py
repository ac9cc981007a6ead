"""Idempotency-Key leases on real Postgres: a lease belongs to a live process."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from eventsourcing.postgres import PostgresFactory

from adapters.container import Container
from adapters.http.middleware.idempotency_keys import IdempotencyStore, Stored
from tests.waiting import eventually

pytestmark = pytest.mark.integration


@pytest.fixture
def stores(container: Container) -> Iterator[tuple[IdempotencyStore, IdempotencyStore]]:
    """Two processes' stores over one table (each its own lease owner)."""
    factory = container.sessions.factory
    assert isinstance(factory, PostgresFactory)
    first, second = IdempotencyStore(factory.datastore), IdempotencyStore(factory.datastore)
    first.create_table()
    yield first, second
    first.close()
    second.close()


def claim(store: IdempotencyStore, key: str = "k", request: str = "h") -> object:
    return store.claim("user-1", key, "POST", "/api/v1/sessions", request)


def test_a_live_owners_lease_is_in_progress_a_dead_owners_is_taken_over_at_once(
    stores: tuple[IdempotencyStore, IdempotencyStore],
) -> None:
    alive, other = stores
    assert claim(alive) == "new"
    assert claim(other) == "in_progress"  # the holder is alive: the request may still run
    assert claim(other, request="else") == "reused"

    alive.owner.close()  # the holder's process dies: Postgres drops its lock with its connection
    # As soon as its backend has ended (a moment after the socket closed: seen taking
    # longer than the next statement on a loaded machine), never a lease time (300 s).
    eventually(lambda: claim(other) == "claimed", timeout=10, what="the dead owner's lease")
    assert claim(alive) == "in_progress"  # now the other process holds it


def test_a_recorded_answer_outlives_its_owner(
    stores: tuple[IdempotencyStore, IdempotencyStore],
) -> None:
    first, other = stores
    assert claim(first) == "new"
    answer = Stored(201, "application/json", b'{"id": 1}')
    first.complete("user-1", "k", answer)
    first.owner.close()
    assert claim(other) == answer  # a finished request is replayed, never run again


def test_an_owner_whose_connection_was_cut_locks_again(
    stores: tuple[IdempotencyStore, IdempotencyStore], container: Container
) -> None:
    """A Postgres restart (or a cut connection) must not leave the owner without its lock."""
    owner, other = stores
    assert claim(owner) == "new"
    with psycopg.connect(container.database_url, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks "
            "WHERE locktype = 'advisory' AND objsubid = 2 AND objid::bigint = %s",
            (owner.owner.ensure(),),
        )
    assert claim(other) == "claimed"  # the cut owner's lease was abandoned
    owner.owner._checked = 0.0  # noqa: SLF001 - next use checks the connection now
    assert claim(owner, key="k2") == "new"  # and it holds its lock again
    assert claim(other, key="k2") == "in_progress"


def test_a_key_given_back_is_claimed_again_at_once_and_known_as_claimed_before(
    stores: tuple[IdempotencyStore, IdempotencyStore],
) -> None:
    """A request that failed (5xx) gives its key back: the retry, in any process, runs
    at once, and is told the key was claimed before (its first request may have written)."""
    first, other = stores
    assert claim(first) == "new"
    first.release("user-1", "k")
    assert claim(other) == "claimed"  # not "new": the chat handler looks in the log
    assert claim(first) == "in_progress"
    other.release("user-1", "k")
    assert claim(first) == "claimed"
    answer = Stored(200, "text/event-stream", None)
    first.complete("user-1", "k", answer)
    first.release("user-1", "k")  # what the stream's end does not do: a settled key stays
    assert claim(other) == answer
