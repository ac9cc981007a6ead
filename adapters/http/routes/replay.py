"""POST /sessions/{id}/replay: the replay check (`tokendance replay`) over HTTP.

The engine runs again on the session's recorded inputs (`application.replay`), on its own
event loop in a worker thread: the replay is CPU from start to end (the engine, then a
comparison of every event) and must not stall the server's loop. It needs `write`, like
fork: it costs the server CPU in proportion to the log, which a read-only viewer should
not be able to spend. A session with an active run is refused (409): its log is still
moving, so a replay of it would compare against a log that is not finished.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from uuid import UUID

from litestar import Controller, post
from litestar.params import FromPath

from adapters.bootstrap import replay_engine
from adapters.http.deps import ApiDep, Caller
from adapters.http.errors import ApiError
from application.replay import ReplayEngine, ReplayReport, replay
from domain.events import SessionEvent
from schemas.api import ReplayDivergence, ReplayOut


class ReplayController(Controller):
    path = "/api/v1/sessions"
    tags = ["sessions"]

    @post("/{session_id:uuid}/replay", status_code=200)
    async def replay_session(
        self, session_id: FromPath[UUID], request: Caller, api: ApiDep
    ) -> ReplayOut:
        """Run the session again on its recorded inputs (no model called, no tool touching
        the world) and compare with its log: `identical`, or the first `divergence`."""
        session = await api.access.session(request.user, session_id, write=True)
        if session.active_run is not None:
            raise ApiError(409, "the session has an active run: replay it once the run ends")
        events = await api.bridge(lambda: list(api.sessions.session_events(session_id)))
        engine = replay_engine(api.scheduler.runner)
        return replay_out(await asyncio.to_thread(run_replay, events, engine))


def run_replay(events: Sequence[SessionEvent], engine: ReplayEngine) -> ReplayReport:
    """The replay on an event loop of its own (called in a worker thread)."""
    return asyncio.run(replay(events, engine=engine))


def replay_out(report: ReplayReport) -> ReplayOut:
    d = report.divergence
    divergence = None if d is None else ReplayDivergence(d.version, d.expected, d.got)
    return ReplayOut(report.identical, report.events, divergence)
