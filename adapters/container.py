"""The write side, the read models and the bridge between them and async code."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresTrackingRecorder

from adapters.config.settings import Settings
from adapters.postgres.async_recorder import AsyncRecorder
from adapters.postgres.loop_pool import LoopPool
from application.accounts import AccountService
from application.bridge import SyncBridge
from application.erasure import Erasure
from application.memories import Memories
from application.memory_access import MemoryAccess
from application.sessions import SessionService
from application.workspace_files import WorkspaceFiles
from projections.accounts import AccountsView
from projections.budgets import BudgetsView
from projections.memories import MemoriesView
from projections.read_models import ReadModels
from projections.usage_queries import UsageQueries
from projections.workspace_files import WorkspaceFilesView

# Fed by the accounts' log (workspace folders live there too).
ACCOUNTS_VIEWS = frozenset(
    {AccountsView.name, BudgetsView.name, WorkspaceFilesView.name, MemoriesView.name}
)


@dataclass
class Container:
    """The write side, the read models and the bridge between them and async code."""

    settings: Settings
    database_url: str
    nats_url: str
    sessions: SessionService
    views: ReadModels
    checkpoints: PostgresTrackingRecorder
    bridge: SyncBridge
    accounts: AccountService
    files: WorkspaceFiles  # on the accounts' store and the blob store
    memories: Memories  # on the accounts' store and the memories read model
    memory_access: MemoryAccess
    erasure: Erasure  # of a user's personal data (crypto-shredding)
    loop_pool: LoopPool | None = None  # connections for the loop (the hot path's statements)
    accounts_log: AsyncRecorder | None = None  # the accounts' log, read on the loop

    @property
    def recorder(self) -> PostgresApplicationRecorder:
        return recorder_of(self.sessions)

    @property
    def accounts_recorder(self) -> PostgresApplicationRecorder:
        return recorder_of(self.accounts)

    def log_of(self, view: str) -> Application[UUID]:
        """The application whose event log feeds the read model named `view`."""
        return self.accounts if view in ACCOUNTS_VIEWS else self.sessions

    @property
    def usage(self) -> UsageQueries:
        """Queries on the usage and budgets read models."""
        return UsageQueries(self.views.usage.datastore)

    async def close_loop_pool(self) -> None:
        """Close the loop's connections, on the loop that used them."""
        if self.loop_pool is not None:
            await self.loop_pool.close()

    def close(self) -> None:
        self.bridge.close()
        self.sessions.close()
        self.accounts.close()


def recorder_of(app: Application[UUID]) -> PostgresApplicationRecorder:
    """The Postgres recorder of `app`'s event log."""
    recorder = app.recorder
    assert isinstance(recorder, PostgresApplicationRecorder)
    return recorder
