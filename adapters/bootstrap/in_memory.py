"""The stores on the in-memory event store, for the engine alone (unit tests, replay,
benches)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from uuid import UUID

from argon2 import PasswordHasher
from eventsourcing.application import Application
from eventsourcing.persistence import ApplicationRecorder, StoredEvent

from adapters.config.settings import Settings
from application.accounts import THIRTY_DAYS, AccountService
from application.bridge import SyncBridge
from application.ports import BlobStore
from application.sessions import SessionService
from application.workspace_files import WorkspaceFiles

Clock = Callable[[], float]  # seconds since the epoch
IN_MEMORY = {"PERSISTENCE_MODULE": "eventsourcing.popo"}


def in_memory_sessions() -> SessionService:
    """The session service on a new, empty in-memory event store, whose runs write from
    the loop as they do on Postgres."""
    sessions = SessionService(env=IN_MEMORY)
    sessions.loop_recorder = InMemoryLoopRecorder(sessions.recorder)
    return sessions


class InMemoryLoopRecorder:
    """The in-memory recorder behind the loop's port (`AsyncEventRecorder`): it does no
    I/O, so it is called directly."""

    def __init__(self, recorder: ApplicationRecorder) -> None:
        self.recorder = recorder

    async def insert_events(self, stored_events: Sequence[StoredEvent]) -> list[int]:
        return list(self.recorder.insert_events(stored_events) or ())

    async def select_events(
        self,
        originator_id: UUID,
        *,
        gt: int | None = None,
        lte: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> list[StoredEvent]:
        return list(
            self.recorder.select_events(originator_id, gt=gt, lte=lte, desc=desc, limit=limit)
        )


def in_memory_accounts(
    *,
    jwt_secret: str,
    access_ttl: int = 3600,
    refresh_ttl: int = THIRTY_DAYS,
    clock: Clock | None = None,
    hasher: PasswordHasher | None = None,
) -> AccountService:
    """The accounts service on a new, empty in-memory event store."""
    return AccountService(
        env=IN_MEMORY,
        jwt_secret=jwt_secret,
        access_ttl=access_ttl,
        refresh_ttl=refresh_ttl,
        clock=clock or time.time,
        hasher=hasher,
    )


def in_memory_files(blobs: BlobStore, bridge: SyncBridge, settings: Settings) -> WorkspaceFiles:
    """Workspace files on a new, empty in-memory event store (the engine alone)."""
    store = Application[UUID](env=IN_MEMORY)
    return WorkspaceFiles(store, blobs, bridge, max_bytes=settings.max_upload_bytes)
