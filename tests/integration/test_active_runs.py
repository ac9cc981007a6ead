"""Startup recovery reads the active runs from the event store itself."""

from __future__ import annotations

from uuid import UUID, uuid4

import pytest

from adapters.container import Container
from adapters.postgres.active_runs import active_runs
from application.sessions import SessionService

pytestmark = pytest.mark.integration


def start(app: SessionService) -> UUID:
    return app.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="t").session_id


def test_the_runs_found_active_are_those_the_sessions_say_are_active(
    container: Container,
) -> None:
    app = container.sessions
    expected: set[tuple[UUID, UUID]] = set()
    idle = start(app)  # never ran
    requested, started, waiting = start(app), start(app), start(app)
    for sid in (requested, started, waiting):
        run = uuid4()
        app.submit_message(sid, "go", run)
        expected.add((sid, run))
    app.start_run(started, next(r for s, r in expected if s == started), "w1")
    for ended, finish in (("completed", app.complete_run), ("failed", app.fail_run)):
        sid, run = start(app), uuid4()
        app.submit_message(sid, ended, run)
        app.start_run(sid, run, "w1")
        finish(sid, run, ended)
    stopped = start(app)
    app.submit_message(stopped, "stop me", uuid4())
    app.stop_active_run(stopped, "stopped by user")
    again = start(app)  # a run ended, then another one began
    first, second = uuid4(), uuid4()
    app.submit_message(again, "one", first)
    app.complete_run(again, first)
    app.submit_message(again, "two", second)
    expected.add((again, second))

    found = active_runs(container.recorder, app.mapper)

    assert set(found) == expected
    assert len(found) == len(expected)  # each once
    for sid, run in found:
        assert app.get_session(sid).active_run == run
    assert app.get_session(idle).active_run is None
