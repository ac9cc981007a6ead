"""What request handlers name as dependencies (`Provide`d by `create_app`), and who calls."""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from litestar import Request
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.params import SkipValidation

from adapters.http.read_your_writes import ViewWaiter
from application.accounts import AccountService, Principal, WorkspaceInfo
from application.bridge import SyncBridge
from application.ports import BlobStore
from application.sessions import SessionService
from domain.account_errors import WorkspaceNotFound
from domain.errors import SessionNotFound
from domain.session import AgentSession
from projections.confirmations import ConfirmationsView
from projections.sessions import SessionsView
from projections.working_memory import WorkingMemoryView

Caller = Request[Principal, str, State]  # an authenticated request
Blobs = NamedDependency[SkipValidation[BlobStore]]  # a Protocol: not validated
KNOWN_SESSIONS = 100_000  # sessions whose workspace a process keeps (forgotten all at once)


@dataclass(frozen=True)
class ReadModels:
    """The read models queries use, and the waiter for read-your-writes."""

    sessions: SessionsView
    memory: WorkingMemoryView
    confirmations: ConfirmationsView
    waiter: ViewWaiter


@dataclass(frozen=True)
class Access:
    """Who may see or change what; another tenant's things answer as if they did not exist."""

    sessions: SessionService
    accounts: AccountService
    bridge: SyncBridge
    # A session's workspace never changes: kept once read, so checking who may see a
    # session does not load its aggregate (only the caller's role is read each time).
    _workspaces: dict[UUID, UUID] = field(default_factory=dict)

    async def authenticate(self, access_token: str) -> Principal:
        return await self.bridge(self.accounts.authenticate, access_token)

    async def workspace(
        self, principal: Principal, workspace_id: UUID, *, write: bool = False
    ) -> str:
        """The caller's role in the workspace; NotFound when it has none."""
        return await self.bridge(
            self.accounts.authorize, principal.user_id, workspace_id, write=write
        )

    async def workspace_info(
        self, principal: Principal, workspace_id: UUID, *, write: bool = False
    ) -> WorkspaceInfo:
        """The workspace with its organization and team, if the caller may see it (or
        change it): NotFound when it may not see it, Forbidden when it may not change it."""
        await self.workspace(principal, workspace_id, write=write)
        return await self.bridge(self.accounts.workspace_of, principal.user_id, workspace_id)

    async def session(
        self, principal: Principal, session_id: UUID, *, write: bool = False
    ) -> AgentSession:
        """The session (from the write side), if the caller may see it (or change it)."""
        session = await self.bridge(self.sessions.get_session, session_id)
        await self._check(principal, session_id, self._keep(session), write)
        return session

    async def session_workspace(
        self, principal: Principal, session_id: UUID, *, write: bool = False
    ) -> UUID:
        """The session's workspace, if the caller may see the session (or change it)."""
        workspace_id = self._workspaces.get(session_id)
        if workspace_id is None:
            workspace_id = self._keep(await self.bridge(self.sessions.get_session, session_id))
        await self._check(principal, session_id, workspace_id, write)
        return workspace_id

    def _keep(self, session: AgentSession) -> UUID:
        if len(self._workspaces) >= KNOWN_SESSIONS:
            self._workspaces.clear()
        self._workspaces[session.id] = session.workspace_id
        return session.workspace_id

    async def _check(
        self, principal: Principal, session_id: UUID, workspace_id: UUID, write: bool
    ) -> None:
        try:
            await self.workspace(principal, workspace_id, write=write)
        except WorkspaceNotFound:
            raise SessionNotFound(session_id) from None


# The dependencies most handlers name, as `create_app` provides them.
AccessDep = NamedDependency[Access]
AccountsDep = NamedDependency[AccountService]
BridgeDep = NamedDependency[SyncBridge]
SessionsDep = NamedDependency[SessionService]
