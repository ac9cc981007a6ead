"""What the accounts use cases share: typed reads and all-or-nothing saves.

A read only to look (`copy=False`: who may do what, is a login live) brings the cached
aggregate up to date with a read of the log, one statement each: five for a chat message
(its token family, its user twice, its organization twice). Within a check that
read the log's head first (`as_of`), an aggregate already brought up to date at that
same head is taken as it is: notification ids follow commit order (the insert holds the
table lock), so an unchanged head means nothing was written since, in any process. A
save in the check forgets the head: what it reads next is read from the log. A head is
used for a second at most (a run the request started reads as of it at its start).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, LRUCache
from eventsourcing.domain import Aggregate, DomainEventProtocol, MutableOrImmutableAggregate
from eventsourcing.persistence import IntegrityError, Recording

from application.aggregate_fold import fold_events
from application.sealing_mapper import SealsPersonalData
from domain.errors import Conflict

A = TypeVar("A", bound=Aggregate)

FRESH_MAXSIZE = 10_000  # aggregates remembered with the head they were brought up to


AS_OF_TTL = 1.0  # seconds a head read is used for: a longer request, or the run it
# started, reads the log again (so a run never works on accounts older than that)


@dataclass
class LogHead:
    """The accounts log's head as read at the start of a check; None once the check
    wrote to the log (shared by the threads the check's calls run on)."""

    id: int | None
    read_at: float = field(default_factory=lambda: time.monotonic())


_AS_OF: ContextVar[LogHead | None] = ContextVar("tokendance_accounts_as_of", default=None)


def read_as_of() -> int | None:
    """The head the current check reads at, if any (and it has written nothing)."""
    at = _AS_OF.get()
    if at is None or time.monotonic() - at.read_at > AS_OF_TTL:
        return None
    return at.id


@contextmanager
def as_of(head: int) -> Iterator[None]:
    """Reads to look within this block may take aggregates brought up to date at `head`
    as they are (see the module's docstring); `head` must have been read from the log."""
    token = _AS_OF.set(LogHead(head))
    try:
        yield
    finally:
        _AS_OF.reset(token)


def set_as_of(head: int) -> None:
    """`as_of` for the rest of the current context (a request, from its authentication)."""
    _AS_OF.set(LogHead(head))


class AccountStore(SealsPersonalData):
    """The accounts application's store: users, organizations and token families."""

    _fresh: LRUCache[UUID, tuple[int, Aggregate | None]] | None = None

    def _get(self, kind: type[A], aggregate_id: UUID, *, copy: bool = True) -> A | None:
        """The aggregate, brought up to date; a copy to change, unless `copy` is False:
        then the cached one itself, only to read (never to change; a concurrent read may
        bring it forward meanwhile). Not copying saves a deep copy per request."""
        head = None if copy else read_as_of()
        fresh = self._fresh
        if head is not None:
            if fresh is None:
                fresh = self._fresh = LRUCache(maxsize=FRESH_MAXSIZE)
            try:
                at, known = fresh.get(aggregate_id)
            except KeyError:
                pass
            else:
                if at == head:
                    return known if isinstance(known, kind) else None
        aggregate: Aggregate | None
        try:
            aggregate = self.repository.get(
                aggregate_id, deepcopy_from_cache=copy, projector_func=fold_events
            )
        except AggregateNotFoundError:
            aggregate = None
        if head is not None and fresh is not None:
            fresh.put(aggregate_id, (head, aggregate))
        # All kinds share one store; an id of the wrong kind is as good as missing.
        return aggregate if isinstance(aggregate, kind) else None

    def save(
        self,
        *objs: MutableOrImmutableAggregate[UUID] | DomainEventProtocol[UUID] | None,
        **kwargs: Any,
    ) -> list[Recording[UUID]]:
        at = _AS_OF.get()
        if at is not None:
            at.id = None  # what this check reads next, it reads from the log
        return super().save(*objs, **kwargs)

    def _save(self, *aggregates: Aggregate) -> int:
        """Save together; the last notification id (0 if nothing was pending)."""
        try:
            recordings = self.save(*aggregates)
        except IntegrityError:
            raise Conflict("changed by another request; try again") from None
        return recordings[-1].notification.id if recordings else 0
