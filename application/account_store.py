"""What the accounts use cases share: typed reads and all-or-nothing saves."""

from __future__ import annotations

from typing import TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError

from application.aggregate_fold import fold_events
from application.sealing_mapper import SealsPersonalData
from domain.errors import Conflict

A = TypeVar("A", bound=Aggregate)


class AccountStore(SealsPersonalData):
    """The accounts application's store: users, organizations and token families."""

    def _get(self, kind: type[A], aggregate_id: UUID, *, copy: bool = True) -> A | None:
        """The aggregate, brought up to date; a copy to change, unless `copy` is False:
        then the cached one itself, only to read (never to change; a concurrent read may
        bring it forward meanwhile). Not copying saves a deep copy per request."""
        try:
            aggregate: object = self.repository.get(
                aggregate_id, deepcopy_from_cache=copy, projector_func=fold_events
            )
        except AggregateNotFoundError:
            return None
        # All kinds share one store; an id of the wrong kind is as good as missing.
        return aggregate if isinstance(aggregate, kind) else None

    def _save(self, *aggregates: Aggregate) -> int:
        """Save together; the last notification id (0 if nothing was pending)."""
        try:
            recordings = self.save(*aggregates)
        except IntegrityError:
            raise Conflict("changed by another request; try again") from None
        return recordings[-1].notification.id if recordings else 0
