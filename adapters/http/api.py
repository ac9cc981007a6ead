"""What request handlers work with: the servers' objects and the caller's access."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ParamSpec, TypeVar
from uuid import UUID

from litestar import Request
from litestar.datastructures import State

from adapters.bootstrap import Container, Engine, Services
from adapters.nats.session_feed import SessionFeed
from application.accounts import AccountService, Principal
from domain.account_errors import WorkspaceNotFound
from domain.errors import SessionNotFound
from domain.session import AgentSession
from projections.accounts import AccountsView, WorkspaceDirectory
from projections.confirmations import ConfirmationsView
from projections.sessions import SessionsView
from projections.working_memory import WorkingMemoryView

P = ParamSpec("P")
Caller = Request[Principal, str, State]  # an authenticated request
T = TypeVar("T")

READ_YOUR_WRITES = 5.0  # seconds a handler waits for a read model to show its own write


@dataclass
class Api:
    """The handlers' view of the system (built once, in the app factory)."""

    container: Container
    services: Services
    engine: Engine
    accounts: AccountService
    feed: SessionFeed

    async def call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """A call into the synchronous event store / read models, off the event loop."""
        return await self.container.bridge(fn, *args, **kwargs)

    @property
    def sessions_view(self) -> SessionsView:
        view = self.container.views["sessions"]
        assert isinstance(view, SessionsView)
        return view

    @property
    def memory_view(self) -> WorkingMemoryView:
        view = self.container.views["working_memory"]
        assert isinstance(view, WorkingMemoryView)
        return view

    @property
    def confirmations_view(self) -> ConfirmationsView:
        view = self.container.views["confirmations"]
        assert isinstance(view, ConfirmationsView)
        return view

    @property
    def workspaces(self) -> WorkspaceDirectory:
        view = self.container.views["accounts"]
        assert isinstance(view, AccountsView)
        return WorkspaceDirectory(view, self.accounts)

    async def workspace(
        self, principal: Principal, workspace_id: UUID, *, write: bool = False
    ) -> str:
        """The caller's role in the workspace; NotFound when it has none."""
        return await self.call(
            self.accounts.authorize, principal.user_id, workspace_id, write=write
        )

    async def session(
        self, principal: Principal, session_id: UUID, *, write: bool = False
    ) -> AgentSession:
        """The session, if the caller may see it (or change it); else as if it did not exist."""
        session = await self.call(self.container.sessions.get_session, session_id)
        try:
            await self.workspace(principal, session.workspace_id, write=write)
        except WorkspaceNotFound:
            raise SessionNotFound(session_id) from None
        return session

    async def wait_for(self, notification_id: int, *views: str) -> bool:
        """Read-your-writes: until the named read models have applied the write."""
        ok = True
        for name in views:
            view = self.container.views[name]
            ok &= await self.call(view.wait_for, notification_id, READ_YOUR_WRITES)
        return ok
