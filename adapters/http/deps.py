"""What request handlers use: `Api`, the one dependency `create_app` provides, and
`Caller`, an authenticated request. Nothing here imports a handler's module."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.params import SkipValidation

from adapters.http.access import Access, Caller
from adapters.http.middleware.login_limits import LoginLimits
from adapters.http.middleware.metrics import Metrics
from adapters.http.reads.artifact_lookup import ArtifactLookup
from adapters.http.reads.billing import Billing
from adapters.http.reads.cursors import Cursors
from adapters.http.reads.deck_versions import DeckPages
from adapters.http.reads.episodes import Episodes
from adapters.http.reads.file_listing import FileListing
from adapters.http.reads.memory_api import MemoryApi
from adapters.http.reads.probes import Probes
from adapters.http.reads.read_your_writes import ViewWaiter
from adapters.nats.session_feed import SessionFeed
from adapters.postgres.api_key_uses import ApiKeyUses
from adapters.postgres.hash_chain import PostgresHashChain
from adapters.postgres.session_uploads import SessionUploads
from adapters.slides.previews import SlidePreviews
from application.accounts import AccountService
from application.bridge import SyncBridge
from application.erasure import Erasure
from application.manual_tools import ManualTools
from application.ports import BlobStore
from application.runs import RunScheduler
from application.sessions import SessionService
from application.skills.service import Skills
from application.slide_regeneration import SlideRegenerator
from application.tools.registry import ToolRegistry
from application.workspace_files import WorkspaceFiles
from projections.accounts import WorkspaceDirectory
from projections.read_models import ReadModels


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


__all__ = ["Access", "Api", "ApiDep", "Caller", "api_of"]
