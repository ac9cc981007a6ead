"""What request handlers use (`Api`, the one dependency `create_app` provides), and who calls."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

from litestar import Request
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.params import SkipValidation

from adapters.http.read_your_writes import ViewWaiter
from application.accounts import AccountService, Principal, WorkspaceInfo
from application.bridge import SyncBridge
from application.erasure import Erasure
from application.sessions import SessionService
from domain.account_errors import AuthError, WorkspaceNotFound
from domain.errors import NotFound, SessionNotFound
from domain.roles import require
from domain.session import AgentSession
from projections.read_models import ReadModels

if TYPE_CHECKING:  # `Api`'s field types only (the handlers' modules import this one)
    from adapters.http.artifact_lookup import ArtifactLookup
    from adapters.http.cursors import Cursors
    from adapters.http.deck_pages import DeckPages
    from adapters.http.episodic_search import Episodes
    from adapters.http.login_limits import LoginLimits
    from adapters.http.memories import MemoryApi
    from adapters.http.metrics import Metrics
    from adapters.http.ops import Probes
    from adapters.http.uploads import SessionUploads
    from adapters.http.usage import Billing
    from adapters.http.workspace_files import FileListing
    from adapters.nats.session_feed import SessionFeed
    from adapters.postgres.api_key_uses import ApiKeyUses
    from adapters.postgres.hash_chain import PostgresHashChain
    from adapters.slides.previews import SlidePreviews
    from application.manual_tools import ManualTools
    from application.ports import BlobStore
    from application.runs import RunScheduler
    from application.skills.service import Skills
    from application.slide_regeneration import SlideRegenerator
    from application.tools.registry import ToolRegistry
    from application.workspace_files import WorkspaceFiles
    from projections.accounts import WorkspaceDirectory

Caller = Request[Principal, str, State]  # an authenticated request
HEAD_TTL = 1.0  # seconds the accounts log's head is taken as known
KNOWN_SESSIONS = 100_000  # sessions whose workspace a process keeps (forgotten all at once)


@dataclass(frozen=True)
class Access:
    """Who may see or change what; another tenant's things answer as if they did not exist."""

    sessions: SessionService
    accounts: AccountService
    bridge: SyncBridge
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
            head = await self.bridge(self.accounts.recorder.max_notification_id)
            self._head[:] = [now, float(head or 0)]
        return int(self._head[1])

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

    async def still_sees(self, principal: Principal, session_id: UUID) -> bool:
        """Whether the caller's login or key is still live and may still see the session
        (asked again and again while its stream is open)."""
        try:
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


@dataclass(frozen=True)
class Api:
    """Everything the request handlers use, provided as one dependency (`api: ApiDep`).

    Each of these is a constant built once by `create_app`. Litestar resolves a handler's
    dependencies level by level and runs a level with two or more in an anyio task group,
    one task each, on every request (litestar-org/litestar#4563): a chat message that
    named its eight constants one by one paid about 0.8 ms of CPU to look them up. One
    dependency is looked up with no task group, so no route handler names more than one
    (tests/integration/test_http_dependencies.py).
    """

    sessions: SessionService
    accounts: AccountService
    bridge: SyncBridge
    views: ReadModels  # as the API role, scoped to the caller (`tenant_reads.py`)
    waiter: ViewWaiter  # read-your-writes: until a read model has applied a write
    access: Access
    feed: SessionFeed
    scheduler: RunScheduler
    manual: ManualTools
    tools: ToolRegistry
    skills: Skills
    blobs: BlobStore
    workspace_files: WorkspaceFiles
    probes: Probes
    workspaces: WorkspaceDirectory
    billing: Billing
    artifacts: ArtifactLookup
    previews: SlidePreviews
    regenerator: SlideRegenerator
    decks: DeckPages
    file_listing: FileListing  # the workspace files read model
    episodes: Episodes  # episodic search
    memory: MemoryApi  # long-term memory
    key_uses: ApiKeyUses  # how often each API key was used
    cursors: Cursors  # the lists' page cursors
    chain: PostgresHashChain  # the sessions log's hash chain (the audit routes)
    erasure: Erasure  # of a user's personal data
    login_limits: LoginLimits  # failed logins, per account and address
    uploads: SessionUploads  # which blobs each session may cite
    metrics: Metrics  # this process's registry (`/metrics`)
    approval_wait: float  # seconds a chat stream waits across an approval
    mcp_operator_file: Path | None = None  # TOKENDANCE_MCP_SERVERS
    mcp_probe_timeout: float = 10.0  # seconds a server has to answer its registration


ApiDep = NamedDependency[SkipValidation[Api]]  # provided as is: nothing to validate


def api_of(state: State) -> Api:
    """The app's `Api`, for what runs outside the handlers' dependencies (middleware):
    `create_app` keeps it in the app's state, and nothing else."""
    api = state.api
    assert isinstance(api, Api)
    return api
