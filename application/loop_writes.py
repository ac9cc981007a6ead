"""A session command written from the event loop: decided on the loop, stored by one
awaited insert, with no thread in between.

A command (`SessionService._change`) gets the session, applies the change and saves it.
On the loop (`LoopWrites.change_on_loop`) it runs as it is, with a stage set: the save
then maps the new events (the same mapper, so the same stored bytes) and hands them
back instead of writing them, and the caller awaits `AsyncEventRecorder.insert_events`.
Only what needs no I/O is done so: a session lent by the run's previous write (the hot
path: a run writes on the session its last write left), and personal fields whose
owner's key is in memory. Anything else (the log to read, a key to load, a version
another writer took first) goes through the bridge's thread as before, where the
command is judged again on the log: the outcome is the one the thread path gives.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol
from uuid import UUID

from eventsourcing.application import ProcessingEvent
from eventsourcing.persistence import IntegrityError, PersistenceError, StoredEvent

from application.bridge import SyncBridge
from application.receipt import Receipt
from domain.events import SessionEvent, as_session_event


class AsyncEventRecorder(Protocol):
    """The event store's writes and reads on the loop (`adapters.postgres.async_recorder`)."""

    async def insert_events(self, stored_events: Sequence[StoredEvent]) -> list[int]:
        """Store the events in one transaction; their notification ids. The library's
        `IntegrityError` if a version is taken."""
        ...

    async def select_events(
        self,
        originator_id: UUID,
        *,
        gt: int | None = None,
        lte: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> list[StoredEvent]: ...


class StoreBusy(PersistenceError):
    """No connection of a pool came free in time: nothing was sent. Not an
    `OperationalError`, so the library's recorders do not retry it (ten waits for a pool
    that stays busy): a request answers 503 with `Retry-After` at once, a run's write on
    the loop goes through the store's threads."""


class NeedsThread(Exception):  # noqa: N818 - a signal, not an error
    """The staged command needs I/O (the log, a key): run it through the bridge."""


@dataclass
class Staged:
    """What a staged save would have written, and how to finish it once stored."""

    processing: ProcessingEvent[UUID] | None = None  # the events, and their aggregate
    stored: list[StoredEvent] = field(default_factory=list)
    # Given the notification ids, the receipt (and the hold updated, as `_save` does).
    finish: Callable[[list[int]], Receipt] | None = None


class _Saved(BaseException):  # noqa: N818 - unwinds the command once its save is staged
    pass


_STAGE: ContextVar[Staged | None] = ContextVar("tokendance_staged_write", default=None)


def staging() -> Staged | None:
    """The stage of the command running now, if it runs on the loop."""
    return _STAGE.get()


def staged(stage: Staged) -> None:
    """End the command here: its save is staged (called by the save)."""
    raise _Saved


class LoopWrites:
    """`change_on_loop` and `events_after_on_loop`, mixed into `SessionService`."""

    loop_recorder: AsyncEventRecorder | None = None  # set by the bootstrap

    async def change_on_loop(
        self, bridge: SyncBridge, command: Callable[..., Receipt], *args: object, **kwargs: object
    ) -> Receipt:
        """`command(*args, **kwargs)`, written from the loop when it needs no I/O, else
        through `bridge`; the same receipt either way."""
        recorder = self.loop_recorder
        if recorder is None:
            return await bridge(command, *args, **kwargs)
        stage = Staged()
        token = _STAGE.set(stage)
        try:
            command(*args, **kwargs)
        except (_Saved, NeedsThread):
            pass
        finally:
            _STAGE.reset(token)  # before the bridge copies this context
        if stage.finish is None or stage.processing is None:  # not staged: on the thread
            return await bridge(command, *args, **kwargs)
        try:
            ids = await recorder.insert_events(stage.stored)
        except IntegrityError:  # another writer took the version: judged on the log
            return await bridge(command, *args, **kwargs)
        except StoreBusy:  # nothing was sent: the store's own pool, through a thread
            return await bridge(command, *args, **kwargs)
        receipt = stage.finish(ids)
        if self.snapshot_due(stage.processing):  # the aggregate's snapshot, now and then
            await bridge(self.keep_snapshots, stage.processing)
        return receipt

    async def events_after_on_loop(
        self, bridge: SyncBridge, session_id: UUID, after: int
    ) -> list[SessionEvent]:
        """The session's stored events after version `after`, read from the loop and
        decoded here when every personal key they need is in memory; else through
        `bridge` (a busy pool too). The same events either way."""
        recorder = self.loop_recorder
        if recorder is not None:
            try:
                stored = await recorder.select_events(session_id, gt=after or None)
                return [as_session_event(self.decoded(s)) for s in stored]
            except (StoreBusy, NeedsThread):
                pass
        return await bridge(lambda: list(self.session_events(session_id, after=after)))

    def decoded(self, stored: StoredEvent) -> object:
        """`stored` as its domain event, or `NeedsThread` if that needs the database."""
        raise NotImplementedError  # `SessionService`

    def session_events(
        self, session_id: UUID, *, after: int = 0, limit: int | None = None
    ) -> Iterator[SessionEvent]:
        raise NotImplementedError  # `SessionService`

    def snapshot_due(self, processing: ProcessingEvent[UUID]) -> bool:
        raise NotImplementedError  # `SessionService`

    def keep_snapshots(self, processing: ProcessingEvent[UUID]) -> None:
        raise NotImplementedError  # `SessionService`
