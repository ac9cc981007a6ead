"""The event store on real Postgres: versions, conflicts, the table-lock path."""

from __future__ import annotations

import itertools
import threading
from uuid import uuid4

import psycopg
import pytest
from eventsourcing.postgres import PostgresApplicationRecorder

from adapters.container import Container
from domain.errors import Conflict, SessionNotFound

pytestmark = pytest.mark.integration


def test_the_store_uses_the_table_lock_path_not_db_functions(container: Container) -> None:
    assert container.sessions.env.get("POSTGRES_ENABLE_DB_FUNCTIONS") == "no"
    assert container.recorder.datastore.enable_db_functions is False


def test_an_insert_waits_for_a_writer_holding_the_table_so_ids_follow_commit_order(
    container: Container, database_url: str
) -> None:
    """A reader tailing ids never passes over one that commits late: a writer that has
    drawn an id holds the table until it commits, and the next writer waits for it."""
    app = container.sessions
    sid = app.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="order").session_id
    before = container.recorder.max_notification_id() or 0
    done: list[int] = []
    with psycopg.connect(database_url) as slow:  # a writer in another process, mid-commit
        # The recorder's own insert, in a transaction that has not committed yet.
        row = slow.execute(
            "SELECT * FROM tokendance_append_tokendance_events(ARRAY[%s]::uuid[], ARRAY[1], "
            "ARRAY['domain.session:AgentSession.SessionRenamed'], ARRAY['{}'::bytea])",
            (uuid4(),),
        ).fetchone()
        assert row is not None
        slow_id = int(row[0])
        writer = threading.Thread(
            target=lambda: done.append(app.append_user_message(sid, "later").notification_id)
        )
        writer.start()
        writer.join(0.5)
        assert writer.is_alive() and not done, "the insert waits for the table lock"
        tail = container.recorder.select_notifications(before + 1, 10)
        assert [n.id for n in tail] == [], "nothing committed yet is visible"
        slow.commit()
    writer.join(10)
    assert done and done[0] > slow_id, "the later commit has the later id"
    ids = [n.id for n in container.recorder.select_notifications(before + 1, 10)]
    assert ids == [slow_id, done[0]]


def test_concurrent_appenders_get_exactly_one_success_per_version(container: Container) -> None:
    app = container.sessions
    sid = app.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="race").session_id
    writers, rounds = 8, 10
    successes: list[int] = []
    conflicts: list[int] = []
    lock = threading.Lock()

    def append(worker: int) -> None:
        for i in range(rounds):
            barrier.wait()
            try:
                receipt = app.append_user_message(sid, f"{worker}-{i}")
            except Conflict:
                with lock:
                    conflicts.append(worker)
            else:
                with lock:
                    successes.append(receipt.version)

    barrier = threading.Barrier(writers)
    threads = [threading.Thread(target=append, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert len(successes) == len(set(successes)), "two writers got the same version"
    assert conflicts, "no race happened: the test proved nothing"
    assert len(successes) + len(conflicts) == writers * rounds
    stored = list(app.session_events(sid))
    assert len(stored) == 1 + len(successes)
    assert [e.originator_version for e in stored] == list(range(1, len(stored) + 1))


def test_unknown_session_is_not_found_on_postgres(container: Container) -> None:
    with pytest.raises(SessionNotFound):
        container.sessions.rename_session(uuid4(), "nope")


def test_append_cost_does_not_grow_with_the_log(container: Container) -> None:
    # Not a timing test: it checks that a command reads a constant number of events
    # (snapshot + cache), which is what keeps step 1000 as cheap as step 1.
    app = container.sessions
    sid = app.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="long").session_id
    for i in range(450):
        app.append_user_message(sid, f"step {i}")
    assert app.snapshots is not None
    snapshots = list(app.snapshots.get(sid))
    assert [s.originator_version for s in snapshots] == [200, 400]
    assert app.repository.cache is not None


def test_every_shape_of_read_answers_as_the_librarys_own(container: Container) -> None:
    """The recorder keeps each read's statement composed; every combination of bounds,
    order and limit reads what the library's own recorder reads."""
    app = container.sessions
    sid = app.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="shapes").session_id
    for i in range(9):
        app.append_user_message(sid, f"message {i}")
    ours = container.recorder
    library = PostgresApplicationRecorder(ours.datastore, events_table_name=ours.events_table_name)
    shapes = 0
    for gt, lte, desc, limit in itertools.product((None, 3), (None, 8), (False, True), (None, 4)):
        for _ in range(2):  # composed the first time, kept the second
            got = ours.select_events(sid, gt=gt, lte=lte, desc=desc, limit=limit)
            want = library.select_events(sid, gt=gt, lte=lte, desc=desc, limit=limit)
            assert got == want and got, (gt, lte, desc, limit)
        shapes += 1
    assert shapes == 16
