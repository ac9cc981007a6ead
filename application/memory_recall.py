"""What a run recalls from long-term memory at its start, and what the agent learns
without being asked to.

At a run's start the user's message is the query: the best memories of the session
owner's namespaces (their own, the workspace's, the team's) join the conversation as
a block at that point, recorded as `MemoriesRecalled` so a replay sees the same block
without searching (`RecordedRecall`). Only memories that share words with the message
or come close enough in meaning are recalled: a search always ranks something first.

At its end, and for the user's message at its start, what the run taught is kept
(`application.auto_memory`): at once, and again by the keeper that follows the log if
the process died first.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from typing import Protocol
from uuid import UUID

from application.auto_memory import AutoMemory, remembered_request
from application.memories import MAX_QUERY, Memories
from application.run_state import RunState
from application.sessions import SessionService
from domain.events import SessionEvent
from domain.memory_values import MemoryScope
from domain.session import AgentSession as S
from domain.values import RecalledMemory

log = logging.getLogger(__name__)

RECALL_K = 5
MIN_SIMILARITY = 0.4  # a hit found only by its vector must come at least this close


class Recall(Protocol):
    """The memories to add at a run's start."""

    async def at_run_start(
        self, scope: MemoryScope, run_id: UUID, message: str
    ) -> list[RecalledMemory]: ...


class MemoryRecall:
    """Recalls from the memory index."""

    def __init__(
        self, memories: Memories, *, k: int = RECALL_K, min_similarity: float = MIN_SIMILARITY
    ) -> None:
        self.memories = memories
        self.k = k
        self.min_similarity = min_similarity

    async def at_run_start(
        self, scope: MemoryScope, run_id: UUID, message: str
    ) -> list[RecalledMemory]:
        if not message.strip():
            return []
        query = message[:MAX_QUERY]  # a 1 MiB message is no better a query than its start
        hits = await self.memories.search(query, scope.namespaces, k=self.k)
        return [
            RecalledMemory(
                h.memory_id,
                h.namespace,
                h.category,
                h.text,
                round(h.score, 6),
                h.source_session_id,
                h.source_version,
            )
            for h in hits
            if h.similarity is None
            or h.similarity >= self.min_similarity
            or _shares_words(h.text, query)
        ]


class RecordedRecall:
    """A replay's recall: what the recorded run recalled, found by its run id."""

    def __init__(self, stored: Sequence[object]) -> None:
        self._by_run = {e.run_id: e.memories for e in stored if isinstance(e, S.MemoriesRecalled)}

    async def at_run_start(
        self, scope: MemoryScope, run_id: UUID, message: str
    ) -> list[RecalledMemory]:
        return list(self._by_run.get(run_id, []))


def _shares_words(text: str, message: str) -> bool:
    words = {w for w in re.findall(r"\w{4,}", message.casefold())}
    return any(w in words for w in re.findall(r"\w{4,}", text.casefold()))


class RunMemory:
    """Long-term memory around a run: recall at its start; keep what it taught (the user's
    "remember that ...", its findings with sources) in the background."""

    def __init__(self, recall: Recall | None, auto: AutoMemory | None) -> None:
        self.recall = recall
        self.auto = auto
        self._keeping: set[asyncio.Task[None]] = set()

    async def at_start(self, state: RunState, sessions: SessionService) -> None:
        """Memories for the user's message join the conversation (recorded, so a replay
        sees the same); a "remember that ..." in it is kept as the user's preference, in
        the background (the model's first call never waits for an embedding)."""
        scope = state.ledger.memory_scope
        asked = await state.last_user_event()
        if scope is None or asked is None or not asked.text.strip():
            return
        if self.recall is not None:
            try:
                memories = await self.recall.at_run_start(scope, state.run_id, asked.text)
            except Exception:  # the run goes on without them; nothing is recorded
                log.warning("recall at the start of run %s failed", state.run_id, exc_info=True)
                memories = []
            if memories:
                await state.record(
                    sessions.recall_memories, state.session_id, state.run_id,
                    asked.text[:MAX_QUERY], memories,
                )  # fmt: skip
        if self.auto is not None and remembered_request(asked.text) is not None:
            self._keep_later(self.auto, scope, state, [asked])

    async def at_end(self, state: RunState) -> None:
        """Findings this run recorded with sources become the workspace's knowledge: in
        the background, so the session's next run never waits for them."""
        scope, auto = state.ledger.memory_scope, self.auto
        if auto is None or scope is None:
            return
        findings = [e for e in await state.this_run() if isinstance(e, S.FindingRecorded)]
        if not findings:
            return
        self._keep_later(auto, scope, state, findings)

    def _keep_later(
        self, auto: AutoMemory, scope: MemoryScope, state: RunState, events: Sequence[SessionEvent]
    ) -> None:
        keep = self._learn(auto, scope, state.session_id, events)
        task = asyncio.create_task(keep, name=f"memories of run {state.run_id}")
        self._keeping.add(task)
        task.add_done_callback(self._keeping.discard)

    @staticmethod
    async def _learn(
        auto: AutoMemory, scope: MemoryScope, session_id: UUID, events: Sequence[SessionEvent]
    ) -> None:
        for e in events:
            try:
                await auto.learn(scope, session_id, e)
            except Exception:  # the run must not fail for its memory: the keeper keeps it
                log.warning(
                    "could not keep a memory of version %d of session %s yet",
                    e.originator_version, session_id, exc_info=True,
                )  # fmt: skip

    async def settled(self) -> None:
        """Until what finished runs learned is kept (tests; a clean shutdown)."""
        while self._keeping:
            await asyncio.wait(list(self._keeping))
