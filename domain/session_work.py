"""What the agent works out and makes in a session (a base of `AgentSession`): its plan,
findings and progress notes, the pages it saw (numbered sources) and its artifacts."""

from __future__ import annotations

from typing import Any

from eventsourcing.domain import Aggregate

from domain.errors import InvalidCommand
from domain.session_log import SessionLog, State
from domain.values import (
    ArtifactKind,
    Citation,
    PlanItem,
    RunArtifact,
    SourceSeen,
    SourceVia,
    artifact_id_of,
)


class WorkLog(SessionLog):
    """The working-memory and artifact events, and the commands that record them."""

    class PlanUpdated(Aggregate.Event):
        items: list[PlanItem]

        class_version = 2

        @staticmethod
        def upcast_v1_v2(state: State) -> None:
            state["items"] = [PlanItem.of(i) for i in state["items"]]

    class FindingRecorded(Aggregate.Event):
        text: str
        citations: list[Citation]

        class_version = 2

        @staticmethod
        def upcast_v1_v2(state: State) -> None:
            state["citations"] = [Citation.of(c) for c in state["citations"]]

    class ProgressNoted(Aggregate.Event):
        text: str

    class SourceRecorded(Aggregate.Event):
        """A page the agent saw (a search result, a page it read), by its stable number."""

        number: int
        url: str
        title: str
        snippet: str
        blob_ref: str | None  # the page's full text, once it was read
        via: SourceVia
        tool_use_id: str

        def apply(self, aggregate: Any) -> None:
            aggregate.source_numbers[self.url] = self.number

    class ArtifactCreated(Aggregate.Event):
        kind: ArtifactKind
        name: str
        blob_ref: str
        size: int
        sha256: str
        media_type: str
        tool_use_id: str | None  # the tool call that made it (None: stored before v2)

        class_version = 2

        @staticmethod
        def upcast_v1_v2(state: State) -> None:
            state.setdefault("tool_use_id", None)

        def apply(self, aggregate: Any) -> None:
            if aggregate.active_run is not None:  # what the run made, listed at its end
                made = artifact_id_of(self.originator_id, self.originator_version)
                aggregate.run_artifacts.append(RunArtifact(made, self.kind, self.name))

    def update_plan(self, items: list[PlanItem]) -> None:
        self._check_open()
        self.trigger_event(self.PlanUpdated, items=[PlanItem.of(i.to_json()) for i in items])

    def record_finding(self, text: str, citations: list[Citation]) -> None:
        self._check_open()
        if not text.strip():
            raise InvalidCommand("a finding needs text")
        checked = [Citation.of(c.to_json()) for c in citations]
        self.trigger_event(self.FindingRecorded, text=text.strip(), citations=checked)

    def note_progress(self, text: str) -> None:
        self._check_open()
        if not text.strip():
            raise InvalidCommand("a progress note needs text")
        self.trigger_event(self.ProgressNoted, text=text.strip())

    def record_artifact(
        self,
        kind: ArtifactKind,
        name: str,
        blob_ref: str,
        size: int,
        sha256: str,
        media_type: str,
        tool_use_id: str | None = None,
    ) -> None:
        self._check_open()
        if not name.strip():
            raise InvalidCommand("an artifact needs a name")
        self.trigger_event(
            self.ArtifactCreated, kind=kind, name=name.strip(), blob_ref=blob_ref, size=size,
            sha256=sha256, media_type=media_type, tool_use_id=tool_use_id,
        )  # fmt: skip

    def record_sources(self, tool_use_id: str, seen: list[SourceSeen]) -> None:
        """Number each page a tool call saw: a new URL gets the next number; a page read
        again (now with its text) keeps its number; a URL seen again otherwise is not
        recorded twice."""
        self._check_open()
        for page in seen:
            known = self.source_numbers.get(page.url)
            if known is not None and (page.via != "read" or page.blob_ref is None):
                continue
            self.trigger_event(
                self.SourceRecorded, number=known or len(self.source_numbers) + 1, url=page.url,
                title=page.title, snippet=page.snippet, blob_ref=page.blob_ref, via=page.via,
                tool_use_id=tool_use_id,
            )  # fmt: skip
