"""A read model in Postgres that applies each event exactly once.

A view is eventsourcing's tracking recorder plus its own tables: every batch of
events and the view's tracking row are written in one transaction, and an event at
or below the tracked position is skipped (a redelivery).
"""

from __future__ import annotations

import dataclasses
import time
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar
from uuid import UUID

import psycopg
from eventsourcing.domain import AggregateEvent
from eventsourcing.persistence import Mapper, StoredEvent
from eventsourcing.postgres import PostgresDatastore, PostgresTrackingRecorder
from psycopg import Cursor
from psycopg.rows import DictRow
from psycopg.sql import SQL, Composed

from domain.events import SessionEvent, as_session_event

Event = AggregateEvent  # what a view is handed: a decoded event of any aggregate
TRACKING_TABLE = "projection_tracking"


class ProjectionError(RuntimeError):
    """A projection met an event it cannot apply. It stops; it never skips."""

    def __init__(self, projection: str, where: str, cause: BaseException | str) -> None:
        super().__init__(f"projection {projection!r} stopped at {where}: {cause}")
        self.projection = projection
        self.where = where

    @classmethod
    def at(cls, projection: str, notification_id: int, cause: BaseException) -> ProjectionError:
        return cls(
            projection, f"notification id {notification_id}", f"{type(cause).__name__}: {cause}"
        )


def decode(
    mapper: Mapper[UUID], projection: str, notification_id: int, stored: StoredEvent
) -> Event:
    """The domain event of a stored event, or a `ProjectionError` naming its id."""
    try:
        return domain_event(mapper, stored)
    except Exception as e:
        raise ProjectionError.at(projection, notification_id, e) from e


def domain_event(mapper: Mapper[UUID], stored: StoredEvent) -> Event:
    """The aggregate event a stored event holds (a `TypeError` if it holds another thing)."""
    event = mapper.to_domain_event(stored)
    if not isinstance(event, AggregateEvent):
        raise TypeError(f"not an event: {event!r}")
    return event


def _without_nul(value: object) -> object:
    """`value` with NUL characters replaced (the same object when there are none)."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    if isinstance(value, dict):
        cleaned = {_without_nul(k): _without_nul(v) for k, v in value.items()}
        same = all(a is b for a, b in zip(cleaned.items(), value.items(), strict=True))
        return value if same else cleaned
    if isinstance(value, list):
        items = [_without_nul(v) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def storable(event: Event) -> Event:
    """The event as a read model can store it.

    Postgres text and jsonb cannot hold NUL, which a tool's output or a title may
    contain; the log keeps the original, the read model shows U+FFFD instead of dying.
    """
    changes: dict[str, Any] = {}  # field name -> its cleaned value
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        cleaned = _without_nul(value)
        if cleaned is not value:
            changes[f.name] = cleaned
    return dataclasses.replace(event, **changes) if changes else event


class View(PostgresTrackingRecorder):
    """Base of every read model: its tables, how events change them, and tracking."""

    name: ClassVar[str]
    create_statements: ClassVar[tuple[str, ...]]
    clear_statements: ClassVar[tuple[str, ...]]

    def __init__(self, datastore: PostgresDatastore) -> None:
        super().__init__(datastore, tracking_table_name=TRACKING_TABLE)
        self.sql_create_statements.extend(Composed([SQL(s)]) for s in self.create_statements)

    @abstractmethod
    def apply_event(self, curs: Cursor[DictRow], event: Event) -> None:
        """Change the view's tables for one event (inside the caller's transaction)."""

    def apply_events(self, curs: Cursor[DictRow], events: Sequence[Event]) -> None:
        """Change the view's tables for a batch of events, in order: what they share, a
        view may do once for the batch (the episodes' embeddings)."""
        for event in events:
            self.apply_event(curs, event)

    def create_table(self) -> None:
        super().create_table()
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(
                f"INSERT INTO {TRACKING_TABLE} (application_name, notification_id) "
                "VALUES (%s, 0) ON CONFLICT DO NOTHING",
                (self.name,),
            )

    @property
    def channel(self) -> str:
        """The NOTIFY channel that carries the view's new position after each commit."""
        return f"view_{self.name}"

    def position(self) -> int:
        """The notification id of the last event this view has applied."""
        return self.max_tracking_id(self.name) or 0

    def apply_batch(self, items: Sequence[tuple[int, Event]]) -> int:
        """Apply events newer than the view's position, in one transaction; count them."""
        with self.datastore.get_connection() as conn, conn.transaction(), conn.cursor() as curs:
            # The commit waits for fsync: the runner acks NATS after it, and a runner
            # that outlives a Postgres crash goes on from its own position, so a commit
            # lost in the crash would never be applied again (a fault test saw rows go).
            position = self.lock_position(curs)
            fresh = [(nid, e) for nid, e in items if nid > position]
            if fresh:
                self._write_pipelined(conn, curs, fresh)
        return len(fresh)

    def _write_pipelined(
        self,
        conn: psycopg.Connection[DictRow],
        curs: Cursor[DictRow],
        fresh: Sequence[tuple[int, Event]],
    ) -> None:
        # One round trip for all the writes, not one per statement; a failure then
        # shows at the sync, so it names the batch (a rebuild names the very event).
        try:
            with conn.pipeline():
                self.apply_events(curs, [storable(event) for _, event in fresh])
                self.set_position(curs, fresh[-1][0])
                # Delivered at commit: waiters for a position need not poll.
                curs.execute("SELECT pg_notify(%s, %s)", (self.channel, str(fresh[-1][0])))
        except psycopg.OperationalError:
            raise
        except Exception as e:
            where = f"notification ids {fresh[0][0]}..{fresh[-1][0]}"
            raise ProjectionError(self.name, where, f"{type(e).__name__}: {e}") from e

    def apply_one(self, curs: Cursor[DictRow], notification_id: int, event: Event) -> None:
        try:
            self.apply_event(curs, storable(event))
        except psycopg.OperationalError:
            raise  # the database went away: worth retrying, not the event's fault
        except Exception as e:
            raise ProjectionError.at(self.name, notification_id, e) from e

    def lock_position(self, curs: Cursor[DictRow]) -> int:
        # Row lock: a concurrent runner or a rebuild waits for us, and we for it.
        curs.execute(
            f"SELECT notification_id FROM {TRACKING_TABLE} WHERE application_name = %s FOR UPDATE",
            (self.name,),
        )
        row = curs.fetchone()
        return int(row["notification_id"]) if row else 0

    def set_position(self, curs: Cursor[DictRow], notification_id: int) -> None:
        curs.execute(
            f"UPDATE {TRACKING_TABLE} SET notification_id = %s WHERE application_name = %s",
            (notification_id, self.name),
        )

    def clear(self, curs: Cursor[DictRow]) -> None:
        for statement in self.clear_statements:
            curs.execute(statement)
        self.set_position(curs, 0)

    def wait_for(self, notification_id: int, timeout: float) -> bool:
        """Block until the view has applied `notification_id` (read-your-writes)."""
        deadline = time.monotonic() + timeout
        interval = 0.002
        while self.position() < notification_id:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            time.sleep(min(interval, remaining))
            interval = min(interval * 2, 0.05)
        return True


class SessionView(View):
    """A view of session events only: each one is matched against `SessionEvent`."""

    def apply_event(self, curs: Cursor[DictRow], event: Event) -> None:
        self.apply_session_event(curs, as_session_event(event))

    @abstractmethod
    def apply_session_event(self, curs: Cursor[DictRow], event: SessionEvent) -> None:
        """Change the view's tables for one session event."""
