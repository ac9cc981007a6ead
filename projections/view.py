"""A read model in Postgres that applies each event exactly once.

A view is eventsourcing's tracking recorder plus its own tables: every batch of
events and the view's tracking row are written in one transaction, and an event at
or below the tracked position is skipped (a redelivery).
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import Mapper, StoredEvent
from eventsourcing.postgres import PostgresDatastore, PostgresTrackingRecorder
import psycopg
from psycopg import Cursor
from psycopg.sql import SQL
from psycopg.rows import DictRow

Event = DomainEventProtocol[object]
TRACKING_TABLE = "projection_tracking"


class ProjectionError(RuntimeError):
    """A projection met an event it cannot apply. It stops; it never skips."""

    def __init__(self, projection: str, where: str, cause: BaseException | str) -> None:
        super().__init__(f"projection {projection!r} stopped at {where}: {cause}")
        self.projection = projection
        self.where = where

    @classmethod
    def at(cls, projection: str, notification_id: int, cause: BaseException) -> ProjectionError:
        return cls(projection, f"notification id {notification_id}", f"{type(cause).__name__}: {cause}")


def decode(mapper: Mapper[object], projection: str, notification_id: int, stored: StoredEvent) -> Event:
    """The domain event of a stored event, or a `ProjectionError` naming its id."""
    try:
        return mapper.to_domain_event(stored)
    except Exception as e:  # noqa: BLE001 - any decoding failure stops the projection
        raise ProjectionError.at(projection, notification_id, e) from e


class View(PostgresTrackingRecorder):
    """Base of every read model: its tables, how events change them, and tracking."""

    name: ClassVar[str]
    create_statements: ClassVar[tuple[str, ...]]
    clear_statements: ClassVar[tuple[str, ...]]

    def __init__(self, datastore: PostgresDatastore) -> None:
        super().__init__(datastore, tracking_table_name=TRACKING_TABLE)
        self.sql_create_statements.extend(SQL(s) for s in self.create_statements)  # type: ignore[arg-type]

    @abstractmethod
    def apply_event(self, curs: Cursor[DictRow], event: Event) -> None:
        """Change the view's tables for one event (inside the caller's transaction)."""

    def create_table(self) -> None:
        super().create_table()
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(
                f"INSERT INTO {TRACKING_TABLE} (application_name, notification_id) "  # noqa: S608
                "VALUES (%s, 0) ON CONFLICT DO NOTHING",
                (self.name,),
            )

    def position(self) -> int:
        """The notification id of the last event this view has applied."""
        return self.max_tracking_id(self.name) or 0

    def apply_batch(self, items: Sequence[tuple[int, Event]]) -> int:
        """Apply events newer than the view's position, in one transaction; count them."""
        with self.datastore.transaction(commit=True) as curs:
            position = self.lock_position(curs)
            fresh = [(nid, e) for nid, e in items if nid > position]
            for nid, event in fresh:
                self.apply_one(curs, nid, event)
            if fresh:
                self.set_position(curs, fresh[-1][0])
        return len(fresh)

    def apply_one(self, curs: Cursor[DictRow], notification_id: int, event: Event) -> None:
        try:
            self.apply_event(curs, event)
        except psycopg.OperationalError:
            raise  # the database went away: worth retrying, not the event's fault
        except Exception as e:  # noqa: BLE001 - any other failure stops the projection
            raise ProjectionError.at(self.name, notification_id, e) from e

    def lock_position(self, curs: Cursor[DictRow]) -> int:
        # Row lock: a concurrent runner or a rebuild waits for us, and we for it.
        curs.execute(
            f"SELECT notification_id FROM {TRACKING_TABLE} "  # noqa: S608
            "WHERE application_name = %s FOR UPDATE",
            (self.name,),
        )
        row = curs.fetchone()
        return int(row["notification_id"]) if row else 0

    def set_position(self, curs: Cursor[DictRow], notification_id: int) -> None:
        curs.execute(
            f"UPDATE {TRACKING_TABLE} SET notification_id = %s "  # noqa: S608
            "WHERE application_name = %s",
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
