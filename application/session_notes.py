"""What built-in tools write to their session, bound to the run that calls them: each
note is a command recorded through the run, so it lands in the log and the context."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from application.ports import BlobStore
from application.receipt import Receipt
from application.run_state import RunState
from domain.events import SessionEvent
from domain.session import AgentSession
from domain.sources import NumberedSource
from domain.values import ArtifactKind, ArtifactRef, Citation, PlanItem, SkillSpec, artifact_id_of


class SessionNotesOfRun:
    """`SessionNotes` bound to a run: what built-in tools write lands in the log."""

    def __init__(self, state: RunState, blobs: BlobStore, tool_use_id: str | None = None) -> None:
        self._state = state
        self._blobs = blobs
        self._tool_use_id = tool_use_id  # the call these notes are for

    async def update_plan(self, items: list[PlanItem]) -> None:
        s = self._state
        await s.record(s.sessions.update_plan, s.session_id, items)

    async def record_finding(self, text: str, citations: list[Citation]) -> None:
        s = self._state
        await s.record(s.sessions.record_finding, s.session_id, text, citations)

    async def note_progress(self, text: str) -> None:
        s = self._state
        await s.record(s.sessions.note_progress, s.session_id, text)

    async def active_skill(self) -> str | None:
        skill = self._state.ledger.skill
        return skill.name if skill else None

    async def activate_skill(self, skill: SkillSpec) -> None:
        s = self._state
        await s.record(s.sessions.activate_skill, s.session_id, skill, 1.0, "tool")

    async def sources(self) -> dict[int, NumberedSource]:
        return dict(self._state.ledger.sources)

    async def stored_text(self, blob_ref: str) -> bytes:
        return await self._blobs.get(blob_ref)

    async def keep(self, data: bytes, media_type: str) -> str:
        return await self._blobs.put(data, content_type=media_type)

    async def create_artifact(
        self, kind: ArtifactKind, name: str, data: bytes, media_type: str
    ) -> ArtifactRef:
        s = self._state
        blob_ref = await self._blobs.put(data, content_type=media_type)
        sha256 = hashlib.sha256(data).hexdigest()
        receipt = await s.record(
            s.sessions.record_artifact, s.session_id, kind, name, blob_ref,
            size=len(data), sha256=sha256, media_type=media_type, tool_use_id=self._tool_use_id,
        )  # fmt: skip
        return ArtifactRef(
            artifact_id_of(s.session_id, receipt.version), blob_ref, len(data), sha256
        )

    async def session_log(self) -> Sequence[SessionEvent]:
        return await self._state.full_log()

    async def change_deck(self, command: Callable[[AgentSession], None]) -> Receipt:
        s = self._state
        return await s.record(s.sessions.change_deck, s.session_id, command, s.version)
