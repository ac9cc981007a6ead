"""The views of one log under one runner: each batch one transaction for all of them,
each view still at its own position, and a view that fails stopping alone."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import Cursor
from psycopg.rows import DictRow

from adapters.container import Container
from domain.session import AgentSession
from projections.rebuild import rebuild
from projections.runner import ProjectionRunner
from projections.view import Event, ProjectionError, View
from tests.fakes.feeds import ListFeed
from tests.integration.test_projections import busy_session

pytestmark = pytest.mark.integration


def session_views(container: Container) -> list[View]:
    return [v for n, v in container.views.items() if container.log_of(n) is container.sessions]


def rows(view: View) -> object:
    return view.all_rows()  # type: ignore[attr-defined]


def runner_of(container: Container, views: list[View], feed: ListFeed) -> ProjectionRunner:
    return ProjectionRunner(
        views, mapper=container.sessions.mapper, feed=feed, bridge=container.bridge
    )


async def test_one_runner_applies_every_batch_to_every_view_of_the_log_once(
    container: Container,
) -> None:
    for i in (1, 3):
        busy_session(container, messages=i)
    log = container.recorder.select_notifications(1, 500)
    views = session_views(container)
    assert len(views) >= 6
    feed = ListFeed([log[:4], log[:4], log[2:9], log[5:], log])  # repeats and overlaps
    await runner_of(container, views, feed).run()

    assert feed.acked == 5
    live = {v.name: rows(v) for v in views if hasattr(v, "all_rows")}
    for view in views:
        assert view.position() == log[-1].id, view.name
        if view.name in live:
            rebuild(view, container.recorder, container.sessions.mapper)
            assert rows(view) == live[view.name], f"{view.name} differs from its rebuild"


async def test_a_view_behind_the_others_catches_up_from_its_own_position(
    container: Container,
) -> None:
    busy_session(container, messages=4)
    log = container.recorder.select_notifications(1, 500)
    sessions, working = container.views["sessions"], container.views["working_memory"]
    half = len(log) // 2
    first = runner_of(container, [sessions], ListFeed([log[:half]]))
    await first.run()

    feed = ListFeed([log])
    both = runner_of(container, [sessions, working], feed)
    await both.run()
    assert feed.asked_after == [0], "the group starts where its furthest-behind view is"
    assert both.progress["sessions"].applied == len(log) - half
    assert both.progress["working_memory"].applied == len(log)

    again = ListFeed([log])
    idle = runner_of(container, [sessions, working], again)
    await idle.run()
    assert again.asked_after == [log[-1].id]
    assert [p.applied for p in idle.progress.values()] == [0, 0]


class NoRenames(View):
    """A view that cannot apply a rename (as a view with a bug would)."""

    name = "no_renames"
    create_statements = ()
    clear_statements = ()

    def apply_event(self, curs: Cursor[DictRow], event: Event) -> None:
        if isinstance(event, AgentSession.SessionRenamed):
            raise ValueError("renames are beyond this view")


async def test_a_view_that_cannot_apply_an_event_stops_alone(container: Container) -> None:
    sid = busy_session(container)
    log = container.recorder.select_notifications(1, 500)
    renamed = [n.id for n in log if n.topic.endswith("SessionRenamed")]
    assert renamed == [log[-1].id]  # the session's last event
    fussy = NoRenames(container.views["sessions"].datastore)
    fussy.create_table()
    sessions = container.views["sessions"]
    feed = ListFeed([log[:5], log[5:]])
    runner = runner_of(container, [sessions, fussy], feed)
    await runner.run()  # one view is left: the run ends with the feed, not in an error

    error = runner.progress["no_renames"].error
    assert isinstance(error, ProjectionError) and "renames are beyond this view" in str(error)
    assert fussy.position() == log[4].id, "the batch before the bad one is kept"
    assert runner.progress["sessions"].error is None
    assert sessions.position() == log[-1].id
    row = sessions.get(sid)
    assert row is not None and row.title == "renamed" and row.message_count == 4
    assert feed.acked == 2, "the views that applied a batch still have it acked"

    alone = runner_of(container, [fussy], ListFeed([log]))
    with pytest.raises(ProjectionError, match="renames are beyond this view"):
        await alone.run()
    assert fussy.position() == log[4].id


async def test_each_view_moved_by_a_batch_announces_its_new_position_at_commit(
    container: Container, database_url: str
) -> None:
    """What the API's read-your-writes waiter listens to: one notification per view
    the batch moved, on the view's channel, with the last id it applied."""
    busy_session(container, messages=2)
    log = container.recorder.select_notifications(1, 500)
    views = session_views(container)
    with psycopg.connect(database_url, autocommit=True) as listener:
        for view in views:
            listener.execute(f'LISTEN "{view.channel}"')
        await runner_of(container, views, ListFeed([log[:3], log])).run()
        heard = [(n.channel, int(n.payload)) for n in listener.notifies(timeout=2.0)]
    last = {channel: position for channel, position in heard}  # the newest per channel
    assert last == {v.channel: log[-1].id for v in views}
    assert (views[0].channel, log[2].id) in heard, "the first batch's position came first"
