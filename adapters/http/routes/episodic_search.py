"""Episodic search over HTTP: `GET /api/v1/search?q=&workspace_id=&from=&to=&k=`.

Finds the caller's own past sessions, messages and findings (full text and meaning),
each with a snippet and where to open it (the session and the event's version). Only
the caller's sessions are searched, so another user's or tenant's never appear; a
`workspace_id` the caller may not see answers 404 like every workspace route.

`from` and `to` are ISO 8601 dates or times (UTC when no zone is given; a date alone
as `to` means through the end of that day). Bad parameters answer 400
`VALIDATION_ERROR` naming the parameter: an empty query, `k` outside 1..100, `from`
after `to`.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated
from uuid import UUID

from litestar import Controller, get
from litestar.params import FromQuery, QueryParameter

from adapters.http.deps import ApiDep, Caller
from adapters.http.errors import invalid
from application.memories import MAX_K
from domain.memory_values import MAX_TEXT
from schemas.memories import EpisodeHits

DEFAULT_K = 20


class EpisodicSearchController(Controller):
    path = "/api/v1/search"
    tags = ["memories"]

    @get("/")
    async def search(
        self,
        request: Caller,
        api: ApiDep,
        q: FromQuery[str] = "",
        workspace_id: FromQuery[UUID | None] = None,
        start: Annotated[str | None, QueryParameter(name="from")] = None,
        to: FromQuery[str | None] = None,
        k: FromQuery[int] = DEFAULT_K,
    ) -> EpisodeHits:
        """The caller's past sessions, messages and findings that match `q`, best first,
        in one workspace if given, between `from` and `to` if given."""
        query = _query(q)
        if not 1 <= k <= MAX_K:
            raise invalid("k", f"a whole number from 1 to {MAX_K}")
        first, last = _moment(start, "from", end_of_day=False), _moment(to, "to", end_of_day=True)
        if first is not None and last is not None and first > last:
            raise invalid("from", "`from` is after `to`")
        if workspace_id is not None:
            await api.access.workspace(request.user, workspace_id)
        # Only where the caller (or its key) may still look.
        visible = await api.bridge(api.workspaces.workspaces_of, request.user)
        return await api.episodes.search(
            request.user.user_id, query, workspace_id=workspace_id, start=first, end=last, k=k,
            workspaces=tuple(w.workspace_id for w in visible),
        )  # fmt: skip


def _query(q: str) -> str:
    query = q.replace("\x00", "").strip()
    if not query:
        raise invalid("q", "a search needs a query: give `q`, what to look for")
    if len(query) > MAX_TEXT:
        raise invalid("q", f"the query has {len(query)} characters; the limit is {MAX_TEXT}")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:
        raise invalid("q", "the query is not valid Unicode text") from None
    return query


def _moment(text: str | None, name: str, *, end_of_day: bool) -> datetime | None:
    """An ISO 8601 date or time, in UTC when it names no zone."""
    if text is None or not text.strip():
        return None
    raw = text.strip()
    try:
        if len(raw) == 10:  # a date alone: its start, or (for `to`) its end
            day = date.fromisoformat(raw) + timedelta(days=1 if end_of_day else 0)
            return datetime.combine(day, time(), UTC)
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise invalid(
            name, "not an ISO 8601 date or time (like 2026-01-31 or 2026-01-31T12:00:00Z)"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
