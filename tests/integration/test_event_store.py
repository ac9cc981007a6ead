"""The event store on real Postgres: versions, conflicts, the table-lock path."""

from __future__ import annotations

import threading
from uuid import uuid4

import pytest

from adapters.container import Container
from domain.errors import Conflict, SessionNotFound

pytestmark = pytest.mark.integration


def test_the_store_uses_the_table_lock_path_not_db_functions(container: Container) -> None:
    assert container.sessions.env.get("POSTGRES_ENABLE_DB_FUNCTIONS") == "no"
    assert container.recorder.datastore.enable_db_functions is False


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
