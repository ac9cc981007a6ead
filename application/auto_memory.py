"""What the agent learns without being asked, kept so that a crash never loses it.

Two kinds of session event teach something (`AutoMemory.learn`): a user's "remember
that ..." becomes their preference, and a finding recorded with its sources becomes
knowledge of the session's workspace. Each memory names the session event it came
from, and a namespace refuses an event it already learned from (`AlreadyLearned`), so
learning from the same event again changes nothing: not a memory kept since, nor one a
user edited or forgot.

That makes two ways of keeping safe together. A run keeps what it taught at once
(`RunMemory`, in the background). The `MemoryKeeper` follows the session
log behind it and keeps whatever the run did not get to: the process died after the
event committed, the embedder or Postgres was away. It moves its checkpoint only past
events it kept, so it never skips one.
"""

from __future__ import annotations

import asyncio
import logging
import re
from uuid import UUID

from eventsourcing.persistence import ApplicationRecorder, Notification, Tracking, TrackingRecorder
from eventsourcing.utils import get_topic

from application.bridge import SyncBridge
from application.memories import Memories
from application.sessions import SessionService
from domain.authors import ByAgent
from domain.errors import DomainError
from domain.events import SessionEvent, as_session_event
from domain.ledger import memory_scope
from domain.memory_values import MAX_TEXT, MemoryScope, MemorySource, Namespace
from domain.session import AgentSession as S

log = logging.getLogger(__name__)

# "remember that ...", "please remember: ...", "记住 ..." at the start of a message.
_REMEMBER = re.compile(
    r"^\s*(?:please\s+)?remember(?:\s+that|\s*:)\s*(?P<en>.+)$"
    r"|^\s*(?:请)?记住[:\uff1a,\uff0c]?\s*(?P<zh>.+)$",
    re.IGNORECASE | re.DOTALL,
)
# The events that can teach something, by their stored topic.
TEACHING = (S.UserMessageAppended, S.FindingRecorded)
MAX_SCOPES = 10_000  # sessions whose memory scope the keeper keeps at hand


def remembered_request(message: str) -> str | None:
    """What a user asked to be remembered ("remember that I prefer tables"), if they did."""
    found = _REMEMBER.match(message)
    if found is None:
        return None
    text = (found.group("en") or found.group("zh") or "").strip()
    return text[:MAX_TEXT] if text else None


class AutoMemory:
    """Memories the agent keeps without a `remember` call."""

    def __init__(self, memories: Memories) -> None:
        self.memories = memories

    async def learn(self, scope: MemoryScope, session_id: UUID, event: SessionEvent) -> None:
        """Keep what `event` taught, if it taught anything and was not learned from yet.

        Input that cannot be a memory (too long, say) is let go: the session keeps it.
        A failure to reach the store or the embedder is raised."""
        version = event.originator_version
        match event:
            case S.UserMessageAppended(text=message):
                text = remembered_request(message)
                if text is not None:
                    owner = Namespace("user", scope.owner_id)
                    await self._keep(owner, None, text, "preference", session_id, version)
            case S.FindingRecorded(text=text, citations=citations) if citations:
                workspace = Namespace("workspace", scope.workspace_id)
                organization_id = scope.organization_id
                await self._keep(workspace, organization_id, text, "knowledge", session_id, version)
            case _:
                pass  # teaches nothing

    async def _keep(
        self,
        namespace: Namespace,
        organization_id: UUID | None,
        text: str,
        category: str,
        session_id: UUID,
        version: int,
    ) -> None:
        source = MemorySource(session_id, version)
        if await self.memories.learned(namespace, source):
            return  # the usual case for the keeper: the run kept it (spares an embedding)
        try:
            await self.memories.remember(
                namespace, text, category, ByAgent(session_id),
                organization_id=organization_id, source=source,
            )  # fmt: skip
        except DomainError:
            return  # learned meanwhile, or not a memory: the session keeps it anyway


class MemoryKeeper:
    """Follows the session log and keeps what each teaching event taught (`AutoMemory`).

    A pass reads the teaching events between its checkpoint and the log's end (commit
    order is notification id order: the recorder locks its table to insert), keeps
    each, and moves the checkpoint. An event it could not keep stops the pass there,
    and the next pass starts with it. Run one keeper per database (`Services` elects
    one among processes); two at once would only do the same work twice.
    """

    NAME = "memory-keeper"

    def __init__(
        self,
        sessions: SessionService,
        checkpoints: TrackingRecorder,
        auto: AutoMemory,
        bridge: SyncBridge,
        *,
        interval: float = 2.0,
        batch_size: int = 200,
    ) -> None:
        recorder = sessions.recorder
        assert isinstance(recorder, ApplicationRecorder)
        self.log: ApplicationRecorder = recorder
        self.sessions = sessions
        self.checkpoints = checkpoints
        self.auto = auto
        self.bridge = bridge
        self.interval = interval
        self.batch_size = batch_size
        self.topics = [get_topic(cls) for cls in TEACHING]
        self.error: str | None = None  # why the last pass stopped, if it did
        self._scopes: dict[UUID, MemoryScope] = {}

    async def run(self) -> None:
        """Pass after pass until cancelled, surviving Postgres and the embedder being away."""
        while True:
            try:
                await self.catch_up()
                self.error = None
            except Exception as e:
                self.error = f"{type(e).__name__}: {e}"
                log.warning("the memory keeper will try again", exc_info=True)
            await asyncio.sleep(self.interval)

    async def catch_up(self) -> int:
        """One pass to the log's end as it is now; how many teaching events it read."""
        saved = position = await self.bridge(self.checkpoints.max_tracking_id, self.NAME) or 0
        end = await self.bridge(self.log.max_notification_id) or 0
        read = 0
        while position < end:
            batch = await self.bridge(
                self.log.select_notifications, position + 1, self.batch_size, end, self.topics
            )
            try:
                for notification in batch:
                    await self._learn(notification)
                    position = notification.id
                    read += 1
                if len(batch) < self.batch_size:
                    position = end  # nothing else teaches up to the end
            finally:
                if position > saved:
                    tracking = Tracking(self.NAME, position)
                    await self.bridge(self.checkpoints.insert_tracking, tracking)
                    saved = position
        return read

    async def _learn(self, notification: Notification) -> None:
        event = as_session_event(self.sessions.mapper.to_domain_event(notification))
        session_id = event.originator_id
        if isinstance(event, S.UserMessageAppended) and remembered_request(event.text) is None:
            return  # most messages: no need to look the session up
        scope = await self._scope(session_id)
        await self.auto.learn(scope, session_id, event)

    async def _scope(self, session_id: UUID) -> MemoryScope:
        found = self._scopes.get(session_id)
        if found is None:
            started = await self.bridge(self._first_event, session_id)
            assert isinstance(started, S.SessionStarted), started
            found = memory_scope(started)
            if len(self._scopes) >= MAX_SCOPES:
                self._scopes.clear()
            self._scopes[session_id] = found
        return found

    def _first_event(self, session_id: UUID) -> SessionEvent:
        return next(self.sessions.session_events(session_id, limit=1))
