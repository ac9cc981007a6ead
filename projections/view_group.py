"""The views of one log, kept together: one transaction per batch for all of them.

Each view still has its own tracking row, so each skips what it has applied and can
be rebuilt on its own; the group only shares the work of a batch: its events are
decoded and cleaned once, every view's position is locked by one statement and moved
by one, and one commit makes the batch visible in every view at once.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import psycopg
from psycopg import Cursor
from psycopg.rows import DictRow

from projections.pg_arrays import array_of
from projections.view import TRACKING_TABLE, Event, View, storable


class GroupWriteFailed(RuntimeError):
    """A view's write failed inside the group's transaction; nothing of it committed.

    Which view failed is not known (the writes are pipelined): apply the batch to
    each view on its own (`View.apply_batch`) to find out.
    """


class ViewGroup:
    """Applies batches to several views of one log in one transaction."""

    def __init__(self, views: Sequence[View]) -> None:
        if not views:
            raise ValueError("a view group needs at least one view")
        self.views = {v.name: v for v in views}
        self.datastore = views[0].datastore

    def positions(self) -> dict[str, int]:
        """The notification id each view has applied up to."""
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(
                f"SELECT application_name, notification_id FROM {TRACKING_TABLE} "
                "WHERE application_name = ANY(%s)",
                (list(self.views),),
            )
            found = {r["application_name"]: int(r["notification_id"]) for r in curs.fetchall()}
        return {name: found.get(name, 0) for name in self.views}

    def apply_batch(
        self, items: Sequence[tuple[int, Event]], names: Collection[str]
    ) -> dict[str, int]:
        """Apply to each view in `names` the events newer than its position, in one
        transaction; how many each applied. `GroupWriteFailed` if a write failed."""
        wanted = sorted(names)  # one lock order for every runner and rebuild
        with self.datastore.get_connection() as conn, conn.transaction(), conn.cursor() as curs:
            # The commit waits for fsync, as a single view's does (`View.apply_batch`).
            curs.execute(
                f"SELECT application_name, notification_id FROM {TRACKING_TABLE} "
                "WHERE application_name = ANY(%s) ORDER BY application_name FOR UPDATE",
                (wanted,),
            )
            positions = {r["application_name"]: int(r["notification_id"]) for r in curs}
            first = min((positions.get(n, 0) for n in wanted), default=0)
            cleaned = [(nid, storable(e)) for nid, e in items if nid > first]
            counts = dict.fromkeys(wanted, 0)
            moved: dict[str, int] = {}
            try:
                with conn.pipeline():
                    for name in wanted:
                        position = positions.get(name, 0)
                        fresh = [(nid, event) for nid, event in cleaned if nid > position]
                        if fresh:
                            self.views[name].apply_events(curs, [e for _, e in fresh])
                            counts[name], moved[name] = len(fresh), fresh[-1][0]
                    if moved:
                        self._move(curs, moved)
            except psycopg.OperationalError:
                raise  # the database went away: worth retrying, not an event's fault
            except Exception as e:
                raise GroupWriteFailed(f"{type(e).__name__}: {e}") from e
        return counts

    def _move(self, curs: Cursor[DictRow], moved: dict[str, int]) -> None:
        """Move the views' positions and tell their waiters, in one statement (the
        notifications are delivered at commit: waiters need not poll)."""
        names = list(moved)
        curs.execute(
            f"WITH moved AS (UPDATE {TRACKING_TABLE} AS t SET notification_id = m.id "
            "FROM unnest(%s::text[], %s::bigint[], %s::text[]) AS m(name, id, channel) "
            "WHERE t.application_name = m.name RETURNING m.channel, m.id) "
            "SELECT pg_notify(channel, id::text) FROM moved",
            (
                array_of("text")(names),
                array_of("int8")(moved.values()),
                array_of("text")(self.views[n].channel for n in names),
            ),
        )
