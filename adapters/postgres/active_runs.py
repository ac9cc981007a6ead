"""Which runs are still active, read from the event store itself (not a read model).

Startup recovery must not trust a view that may be behind the log: a run that
ended just before a crash would be resumed twice, one that started just before it
missed. A session's run is active when its newest run event is a request or a start.
"""

from __future__ import annotations

from uuid import UUID

from eventsourcing.persistence import Mapper, StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder
from eventsourcing.utils import get_topic
from psycopg import sql

from domain.session import AgentSession as S

_RUN_EVENTS = (S.RunRequested, S.RunStarted, S.RunCompleted, S.RunFailed, S.RunStopped)
_OPEN = (S.RunRequested, S.RunStarted)


def active_runs(
    recorder: PostgresApplicationRecorder, mapper: Mapper[UUID]
) -> list[tuple[UUID, UUID]]:
    """(session, run) for every run whose session log shows no end for it."""
    query = sql.SQL(
        "SELECT DISTINCT ON (originator_id) originator_id, originator_version, topic, state "
        "FROM {table} WHERE topic = ANY(%s) "
        "ORDER BY originator_id, originator_version DESC"
    ).format(table=sql.Identifier(recorder.events_table_name))
    topics = [get_topic(cls) for cls in _RUN_EVENTS]
    with recorder.datastore.get_connection() as conn:
        rows = conn.execute(query, (topics,)).fetchall()
    found: list[tuple[UUID, UUID]] = []
    for row in rows:
        stored = StoredEvent(
            originator_id=row["originator_id"],
            originator_version=row["originator_version"],
            topic=row["topic"],
            state=bytes(row["state"]),
        )
        event = mapper.to_domain_event(stored)
        if isinstance(event, _OPEN):
            found.append((event.originator_id, event.run_id))
    return found
