"""The agent's long-term memory tools: `remember` and `recall`.

They work in the namespaces of the session's owner (`ToolContext.memory`): the
owner's own memory (the default), the workspace's, and the team's shared knowledge
base, which the agent may change only when its owner manages the team's
organization. A memory remembered here names the session and the version of the call
that wrote it. Neither tool is replayed: a replay answers with the recorded results.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from application.bridge import SyncBridge
from application.memories import Memories
from application.memory_access import MemoryAccess
from application.ports import ToolExecutionError
from application.tools.base import AnyTool, Tool, ToolContext
from domain.authors import ByAgent
from domain.memory_values import MAX_TEXT, MemoryCategory, MemoryScope, MemorySource

Kind = Literal["user", "workspace", "team"]


class MemoryUnavailable(ToolExecutionError):
    code = "MEMORY_UNAVAILABLE"


class RememberArgs(msgspec.Struct, forbid_unknown_fields=True):
    text: Annotated[
        str, Meta(min_length=1, max_length=MAX_TEXT, description="One fact or preference.")
    ]
    category: Annotated[
        MemoryCategory,
        Meta(
            description="preference: how the user likes things done; knowledge: a fact "
            "learned; history: something that happened."
        ),
    ]
    namespace: Annotated[
        Kind,
        Meta(
            description="user: the user's own memory; workspace: shared by the workspace; "
            "team: the team's knowledge base (only if the user manages it)."
        ),
    ] = "user"


class Remember(Tool[RememberArgs]):
    name = "remember"
    description = (
        "Keep something for later sessions: a preference of the user, a fact learned, or "
        "something that happened. Remembering the same thing again updates it."
    )
    Args = RememberArgs

    def __init__(
        self, memories: Memories | None, access: MemoryAccess | None, bridge: SyncBridge | None
    ) -> None:
        self.memories, self.access, self.bridge = memories, access, bridge

    async def run(self, args: RememberArgs, context: ToolContext) -> str:
        memories, scope = _ready(self.memories, context)
        namespace = scope.namespace(args.namespace)
        if namespace.kind == "team":
            if self.access is None or self.bridge is None:
                raise MemoryUnavailable("the team's knowledge base is not configured here")
            await self.bridge(self.access.check, scope.owner_id, namespace, write=True)
        source = (
            MemorySource(context.session_id, context.call_version)
            if context.call_version is not None
            else MemorySource()
        )
        done = await memories.remember(
            namespace, args.text, args.category, ByAgent(context.session_id),
            organization_id=scope.organization_id, source=source,
        )  # fmt: skip
        what = "updated the memory that already said this" if done.updated else "remembered"
        return f"{what}: {done.memory.memory_id} ({args.category}, {namespace.kind})"


class RecallArgs(msgspec.Struct, forbid_unknown_fields=True):
    query: Annotated[str, Meta(min_length=1, max_length=2000, description="What to look for.")]
    k: Annotated[int, Meta(ge=1, le=20, description="How many memories at most.")] = 5


class Recall(Tool[RecallArgs]):
    name = "recall"
    description = (
        "Search long-term memory (the user's, the workspace's and the team's) for what "
        "earlier sessions learned: by meaning and by keywords, best first."
    )
    Args = RecallArgs

    def __init__(self, memories: Memories | None) -> None:
        self.memories = memories

    async def run(self, args: RecallArgs, context: ToolContext) -> str:
        memories, scope = _ready(self.memories, context)
        hits = await memories.search(args.query, scope.namespaces, k=args.k)
        if not hits:
            return "nothing remembered matches that"
        lines = [f"{len(hits)} memor{'y' if len(hits) == 1 else 'ies'}, best first:"]
        lines += [
            f"{i}. ({h.category}, {h.namespace.split(':')[0]}) {h.text} [id {h.memory_id}]"
            for i, h in enumerate(hits, 1)
        ]
        return "\n".join(lines)


def _ready(memories: Memories | None, context: ToolContext) -> tuple[Memories, MemoryScope]:
    if memories is None:
        raise MemoryUnavailable("long-term memory is not configured in this engine")
    if context.memory is None:
        raise MemoryUnavailable("this session has no owner whose memory it could use")
    return memories, context.memory


def memory_tools(
    memories: Memories | None,
    access: MemoryAccess | None = None,
    bridge: SyncBridge | None = None,
) -> list[AnyTool]:
    """`remember` and `recall` on `memories` (None: each answers that memory is not configured)."""
    return [Remember(memories, access, bridge), Recall(memories)]
