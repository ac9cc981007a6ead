"""Long-term memory over HTTP: remember, list, read, change, forget and search.

Who may use which namespace is `MemoryAccess`'s answer: a user's own namespace is
theirs alone, a workspace's is its organization's (its writers change it), a team's
shared base is read by the organization's members and changed by its owners and
admins. A namespace the caller may not see is 404 `NAMESPACE_NOT_FOUND`; a memory
in one is 404 `MEMORY_NOT_FOUND`, exactly like an id nobody has, so ids of another
tenant reveal nothing. Seen but not writable: 403.

A memory by id is found through the memories read model (`locate`: which namespace
holds it), then read from or changed in that namespace itself. Commands answer after
the read model has what they wrote (`Memories`), so the next search finds it. Expired
memories are left out of lists and searches; by id one is still there (to renew or
forget) until it is forgotten.

`POST /memories` answers 201 with a new memory, or 200 with `deduplicated: true` when
the text was already remembered (the same text, or close in meaning) and that memory
was updated instead.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

from litestar import Controller, Response, delete, get, patch, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath, FromQuery, JSONBody, QueryParameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED, HTTP_204_NO_CONTENT

from adapters.http.deps import ApiDep, Caller
from adapters.http.reads.cursors import latest_first
from application.ports import MemoryHit
from domain.authors import Author, ByAgent, ByUser
from domain.memory_values import (
    MAX_TEXT,
    InvalidMemory,
    Memory,
    MemorySource,
    Namespace,
    check_category,
)
from projections.memories import MemoriesView, MemoryRow
from schemas.memories import (
    MemoryAuthor,
    MemoryCreate,
    MemoryHitOut,
    MemoryHits,
    MemoryOut,
    MemoryPage,
    MemoryPatch,
    MemorySearch,
    MemorySourceOut,
)

MAX_PAGE = 200


class MemoryController(Controller):
    path = "/api/v1/memories"
    tags = ["memories"]

    @post(
        "/",
        status_code=HTTP_201_CREATED,
        responses={
            HTTP_200_OK: ResponseSpec(
                MemoryOut,
                description="Already remembered: that memory, updated",
                generate_examples=False,  # random ones would change the document each time
            )
        },
    )
    async def remember(
        self, data: JSONBody[MemoryCreate], request: Caller, api: ApiDep
    ) -> Response[MemoryOut]:
        """Remember something (default namespace: the caller's own). 201 with the new
        memory; 200 with `deduplicated: true` when an existing one was updated."""
        user_id = request.user.user_id
        namespace = (
            Namespace("user", user_id)
            if data.namespace is None
            else Namespace.parse(data.namespace)
        )
        grant = await api.memory.grant(request.user, namespace, write=True)
        done = await api.memory.memories.remember(
            namespace,
            data.text,
            data.category,
            ByUser(user_id),
            organization_id=grant.organization_id,
            source=_document(data.source_document),
            expires_at=data.expires_at,
        )
        out = _memory_out(done.memory, deduplicated=done.updated)
        return Response(out, status_code=HTTP_200_OK if done.updated else HTTP_201_CREATED)

    @get("/")
    async def list_memories(
        self,
        request: Caller,
        api: ApiDep,
        namespace: FromQuery[str | None] = None,
        category: FromQuery[str | None] = None,
        limit: Annotated[int, QueryParameter(ge=1, le=MAX_PAGE)] = 50,
        cursor: Annotated[str | None, QueryParameter(max_length=500)] = None,
    ) -> MemoryPage:
        """The memories of `namespace` (default: every namespace the caller may read),
        of one `category` if given, newest first, with how many there are in all."""
        position = latest_first(api.cursors.read("memories", cursor))
        namespaces = await api.memory.readable(request.user, namespace)
        wanted = check_category(category) if category is not None else None
        await api.memory.waiter.caught_up(MemoriesView.name)
        rows, total = await api.memory.bridge(
            api.memory.view.listing,
            [str(n) for n in namespaces],
            category=wanted,
            limit=limit + 1,
            after=position,
        )
        taken, next_cursor = api.cursors.cut(
            "memories", rows, limit, lambda r: (r.created_at.isoformat(), str(r.memory_id))
        )
        return MemoryPage(items=[_row_out(r) for r in taken], total=total, next_cursor=next_cursor)

    @get("/{memory_id:uuid}")
    async def read(self, memory_id: FromPath[UUID], request: Caller, api: ApiDep) -> MemoryOut:
        """The memory as it is now."""
        namespace = await api.memory.locate(request.user, memory_id, write=False)
        return _memory_out(await api.memory.memories.get(namespace, memory_id))

    @patch("/{memory_id:uuid}")
    async def update(
        self,
        memory_id: FromPath[UUID],
        data: JSONBody[MemoryPatch],
        request: Caller,
        api: ApiDep,
    ) -> MemoryOut:
        """Change the fields given (`expires_at: null` clears the expiry)."""
        user_id = request.user.user_id
        namespace = await api.memory.locate(request.user, memory_id, write=True)
        memory = await api.memory.memories.update(
            namespace,
            memory_id,
            ByUser(user_id),
            text=data.text,
            category=data.category,
            expires_at=data.expires_at if isinstance(data.expires_at, datetime) else None,
            clear_expiry=data.expires_at is None,
        )
        return _memory_out(memory)

    @delete("/{memory_id:uuid}", status_code=HTTP_204_NO_CONTENT)
    async def forget(self, memory_id: FromPath[UUID], request: Caller, api: ApiDep) -> None:
        """Forget the memory: gone from every search once this answers (its events stay)."""
        user_id = request.user.user_id
        namespace = await api.memory.locate(request.user, memory_id, write=True)
        await api.memory.memories.forget(namespace, memory_id, ByUser(user_id))

    @post("/search", status_code=HTTP_200_OK)
    async def search(
        self, data: JSONBody[MemorySearch], request: Caller, api: ApiDep
    ) -> MemoryHits:
        """The best `k` unexpired memories for `query` (by meaning and by keywords), in
        `namespace` or every namespace the caller may read, of `category` if given."""
        namespaces = await api.memory.readable(request.user, data.namespace)
        hits = await api.memory.memories.search(
            _query(data.query),
            namespaces,
            k=data.k,
            categories=None if data.category is None else [data.category],
        )
        return MemoryHits(items=[_hit_out(h) for h in hits])


def _query(query: str) -> str:
    """The query as Postgres can hold it (no NUL), and no longer than a memory."""
    if len(query) > MAX_TEXT:
        raise InvalidMemory(
            "query", f"the query has {len(query)} characters; the limit is {MAX_TEXT}"
        )
    return query.replace("\x00", "")


def _document(document: str | None) -> MemorySource:
    """The source of a memory the API is told: a document, or nothing."""
    if document is None or not document.strip():
        return MemorySource()
    if any(ord(c) < 32 for c in document):
        raise InvalidMemory(
            "source_document", "a document source is a path or URL, with no control characters"
        )
    return MemorySource(document=document.strip())


def _author(by: Author) -> MemoryAuthor:
    match by:
        case ByUser(user_id=user_id):
            return MemoryAuthor(kind="user", id=user_id)
        case ByAgent(session_id=session_id):
            return MemoryAuthor(kind="agent", id=session_id)


def _memory_out(memory: Memory, *, deduplicated: bool = False) -> MemoryOut:
    s = memory.source
    return MemoryOut(
        id=memory.memory_id,
        text=memory.text,
        category=memory.category,
        namespace=str(memory.namespace),
        source=MemorySourceOut(session_id=s.session_id, version=s.version, document=s.document),
        expires_at=memory.expires_at,
        created_at=memory.created_at,
        updated_at=memory.updated_at,
        created_by=_author(memory.created_by),
        updated_by=_author(memory.updated_by),
        revision=memory.revision,
        deduplicated=deduplicated,
    )


def _row_out(row: MemoryRow) -> MemoryOut:
    return MemoryOut(
        id=row.memory_id,
        text=row.text,
        category=check_category(row.category),
        namespace=row.namespace,
        source=_source(row.source_session_id, row.source_version, row.source_document),
        expires_at=row.expires_at,
        created_at=row.created_at,
        updated_at=row.updated_at,
        created_by=MemoryAuthor(kind=row.created_by_kind, id=row.created_by),
        updated_by=MemoryAuthor(kind=row.updated_by_kind, id=row.updated_by),
        revision=row.revision,
    )


def _hit_out(hit: MemoryHit) -> MemoryHitOut:
    return MemoryHitOut(
        id=hit.memory_id,
        text=hit.text,
        category=check_category(hit.category),
        namespace=hit.namespace,
        score=hit.score,
        source=_source(hit.source_session_id, hit.source_version, hit.source_document),
    )


def _source(session_id: UUID | None, version: int | None, document: str | None) -> MemorySourceOut:
    return MemorySourceOut(session_id=session_id, version=version, document=document)
