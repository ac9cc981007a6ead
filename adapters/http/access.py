"""Who may see or change what (`Access`), for the handlers and the streams: another
tenant's sessions and workspaces answer as if they did not exist."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from uuid import UUID

from litestar import Request
from litestar.datastructures import State

from application.account_store import as_of
from application.accounts import AccountService, Principal, WorkspaceInfo
from application.bridge import SyncBridge
from application.loop_writes import StoreBusy
from application.sessions import SessionService
from domain.account_errors import AuthError, WorkspaceNotFound
from domain.errors import NotFound, SessionNotFound
from domain.roles import require
from domain.session import AgentSession

Caller = Request[Principal, str, State]  # an authenticated request
HEAD_TTL = 1.0  # seconds the accounts log's head is taken as known
KNOWN_SESSIONS = 100_000  # sessions whose workspace a process keeps (forgotten all at once)


@dataclass(frozen=True)
class Access:
    """Who may see or change what; another tenant's things answer as if they did not exist."""

    sessions: SessionService
    accounts: AccountService
    bridge: SyncBridge
    # The accounts log's head, read on the loop (`AsyncRecorder.max_notification_id`);
    # without it, through the bridge.
    read_head: Callable[[], Awaitable[int | None]] | None = None
    # A session's workspace never changes: kept once read, so checking who may see a
    # session does not load its aggregate (only the caller's role is read each time).
    _workspaces: dict[UUID, UUID] = field(default_factory=dict)
    # The accounts log's head as last read, and when (monotonic seconds).
    _head: list[float] = field(default_factory=lambda: [-HEAD_TTL, -1.0])

    async def accounts_head(self) -> int:
        """The accounts log's head, read at most once every `HEAD_TTL` seconds by this
        process: what the open streams look at before they check anything again."""
        now = time.monotonic()
        if now - self._head[0] >= HEAD_TTL:
            self._head[:] = [now, float(await self.log_head())]
        return int(self._head[1])

    async def log_head(self) -> int:
        """The accounts log's head, read now: a request's checks read as of it
        (`application.account_store.as_of`)."""
        head: int | None = None
        if self.read_head is not None:
            try:
                head = await self.read_head()
            except StoreBusy:  # the loop's pool is busy (nothing sent): the store's own
                head = await self.bridge(self.accounts.recorder.max_notification_id)
        else:
            head = await self.bridge(self.accounts.recorder.max_notification_id)
        return head or 0

    async def authenticate(self, access_token: str) -> Principal:
        return await self.bridge(self.accounts.authenticate, access_token)

    async def workspace(
        self, principal: Principal, workspace_id: UUID, *, write: bool = False
    ) -> str:
        """The caller's role in the workspace (an API key's capped): NotFound when it has
        none, Forbidden when it may not change it and `write` (`domain.roles.POLICY`)."""
        return await self.bridge(self.accounts.authorize, principal, workspace_id, write=write)

    async def workspace_info(
        self, principal: Principal, workspace_id: UUID, *, write: bool = False
    ) -> WorkspaceInfo:
        """The workspace with its organization, team and settings, if the caller may see
        it (or change it): NotFound when it may not see it, Forbidden when it may not
        change it."""
        info = await self.bridge(self.accounts.workspace_of, principal, workspace_id)
        require(info.role, "write" if write else "read", f"changing workspace {workspace_id}")
        return info

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

    async def approver(self, principal: Principal, session_id: UUID) -> None:
        """May the caller answer the session's pending approvals: a member those of the
        runs its own messages started (or of no run), an admin or owner any."""
        session = await self.session(principal, session_id, write=True)
        asker = session.run_requested_by
        if asker is not None and asker != principal.user_id:
            role = await self.bridge(self.accounts.authorize, principal, session.workspace_id)
            require(role, "approve_others", "answering another member's run")

    async def still_sees(self, principal: Principal, session_id: UUID, head: int) -> bool:
        """Whether the caller's login or key is still live and may still see the session
        as of the accounts log's `head` (asked again and again while its stream is open)."""
        try:
            with as_of(head):
                await self.bridge(self.accounts.check_live, principal)
                await self.session_workspace(principal, session_id)
        except (NotFound, AuthError):
            return False
        return True

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
