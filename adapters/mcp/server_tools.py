"""TokenDance's MCP tools that read or start sessions, through the services the REST
routes use and with their checks: `start_session` (as `POST /sessions`),
`get_working_memory` (`GET /chat/{id}/working-memory`), `list_artifacts`
(`GET /sessions/{id}/artifacts`) and `search_memories` (`POST /memories/search`)."""

from __future__ import annotations

from uuid import UUID

from adapters.http.deps import Api
from adapters.http.routes.artifacts import MAX_PAGE, artifact_page
from adapters.http.routes.chat import memory_out
from adapters.mcp.server_bodies import (
    SearchMemoriesIn,
    SessionIn,
    SessionStartedOut,
    StartSessionIn,
)
from adapters.mcp.server_call import Answer, Call
from adapters.mcp.server_uris import artifact_uri
from application.ports import MemoryHit
from application.tokens import Principal
from domain.errors import NotFound
from domain.memory_values import check_category
from domain.roles import allows
from domain.working_memory import fold_all
from domain.working_memory_render import render
from projections.working_memory import WorkingMemoryView
from schemas.memories import MemoryHitOut, MemoryHits, MemorySourceOut


async def start_session(call: Call, body: StartSessionIn) -> Answer:
    started = await start(call, body.title, body.workspace_id)
    text = f"Session {started.session_id} started in workspace {started.workspace_id}."
    return Answer(text, started)


async def start(call: Call, title: str, workspace_id: UUID | None) -> SessionStartedOut:
    """A new session of the caller's in a workspace they may write in (the REST route's
    checks); its settings are the workspace's."""
    api, user = call.api, call.user
    workspace = workspace_id or await _default_workspace(api, user)
    info = await api.access.workspace_info(user, workspace, write=True)
    receipt = await api.bridge(
        api.sessions.start_session, workspace_id=workspace,
        organization_id=info.organization_id, team_id=info.team_id, owner_id=user.user_id,
        title=title, model=info.settings.model or "", settings=info.settings,
    )  # fmt: skip
    return SessionStartedOut(session_id=receipt.session_id, workspace_id=workspace, title=title)


async def _default_workspace(api: Api, user: Principal) -> UUID:
    """The caller's first workspace they may write in (an API key's own, if it has
    one), else their first (whose check then says which role it lacks)."""
    mine = await api.bridge(api.workspaces.workspaces_of, user)
    if not mine:
        raise NotFound("the caller has no workspace: create one (POST /api/v1/workspaces)")
    writable = [w for w in mine if allows(w.role, "write")]
    return (writable or mine)[0].workspace_id


async def get_working_memory(call: Call, body: SessionIn) -> Answer:
    api, sid = call.api, body.session_id
    await api.access.session_workspace(call.user, sid)
    # As the REST route: the view once it has what the log held, else the log itself.
    fresh = await api.waiter.caught_up(WorkingMemoryView.name)
    memory = await api.bridge(api.views.working_memory.get, sid) if fresh else None
    if memory is None:
        events = await api.bridge(lambda: list(api.sessions.session_events(sid)))
        memory = render(fold_all(events))
    out = memory_out(sid, memory)
    parts = (out.task_plan.content, out.findings.content, out.progress.content)
    return Answer("\n\n".join(p.strip() for p in parts if p.strip()) or "(empty)", out)


async def list_artifacts(call: Call, body: SessionIn) -> Answer:
    api, sid = call.api, body.session_id
    workspace = await api.access.session_workspace(call.user, sid)
    page = await artifact_page(api, [workspace], sid, None, None, MAX_PAGE)
    lines = [
        f"- {a.name} ({a.type}, {a.media_type}, {a.size} bytes): {artifact_uri(sid, a.id)}"
        for a in page.items
    ]
    if page.next_cursor is not None:
        lines.append(f"(the first {MAX_PAGE}; GET /api/v1/sessions/{sid}/artifacts has all)")
    return Answer("\n".join(lines) or "The session has no artifacts yet.", page)


async def search_memories(call: Call, body: SearchMemoriesIn) -> Answer:
    api = call.api
    namespaces = await api.memory.readable(call.user, None)
    query = body.query.replace("\x00", "")  # Postgres text holds no NUL
    hits = await api.memory.memories.search(query, namespaces, k=body.limit)
    out = MemoryHits(items=[_hit_out(h) for h in hits])
    lines = [f"- [{h.category}] {h.text} (score {h.score:.3f})" for h in out.items]
    return Answer("\n".join(lines) or "No memory matches.", out)


def _hit_out(hit: MemoryHit) -> MemoryHitOut:
    """As `POST /memories/search` answers it."""
    return MemoryHitOut(
        id=hit.memory_id, text=hit.text, category=check_category(hit.category),
        namespace=hit.namespace, score=hit.score,
        source=MemorySourceOut(
            session_id=hit.source_session_id, version=hit.source_version,
            document=hit.source_document,
        ),
    )  # fmt: skip
