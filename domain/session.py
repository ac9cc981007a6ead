"""The `AgentSession` aggregate: one agent session, whose events are its context.

Each event carries only what is new (one message, one turn, one tool result); the
aggregate keeps just enough state to enforce its rules, never a copy of the
conversation. Events are nested classes with typed fields; their names (and so their
stored topics, `domain.session:AgentSession.<Name>`) never change. An event whose
fields changed has a `class_version` and an `upcast_*` that brings older stored
events up to date, so every event ever stored still loads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from decimal import Decimal
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.conversation import CacheTtl, ModelTurn, Usage
from domain.errors import (
    ConfirmationAnswered,
    ConfirmationNotFound,
    InvalidCommand,
    RunAlreadyActive,
    SessionClosed,
)
from domain.session_decks import DeckLog
from domain.value_state import ValueState
from domain.values import (
    MANUAL_PREFIX,
    TOOL_RESULT_STATUSES,
    ArtifactKind,
    AttachedFile,
    BudgetScope,
    Citation,
    CitedSource,
    ModelCallCost,
    PlanItem,
    RecalledMemory,
    RiskLevel,
    RunArtifact,
    SessionSettings,
    SessionStatus,
    SkillActivation,
    SkillSpec,
    SourceSeen,
    SourceVia,
    StoredBlock,
    ToolResultStatus,
    artifact_id_of,
    check_message_size,
    check_title,
    turn_blocks,
)

State = dict[str, Any]  # a stored event's or snapshot's decoded state, for upcasting


def _unpriced_call(state: State) -> None:
    """Model calls recorded before calls carried their cost: unpriced, never dropped."""
    state.setdefault("cache_ttl", "5m")
    state.setdefault("cost_usd", Decimal(0))
    state.setdefault("price_version", "")
    state.setdefault("priced", False)


def _run_totals_unknown(state: State) -> None:
    """Runs that ended before events carried their totals: none known."""
    state.setdefault("tokens_used", 0)
    state.setdefault("message_id", None)


def _run_artifacts_unlisted(state: State) -> None:
    """Runs that ended before their end listed the artifacts they made."""
    state.setdefault("artifacts", [])


class AgentSession(ValueState, DeckLog):
    """One agent session in a workspace (its slide decks' events are in `DeckLog`)."""

    # v2: typed settings; a run's tokens and last message. v3: its organization and team.
    # v4: the numbers of its sources. v5: the active run's artifacts. v6: who holds the run
    class_version = 6

    @staticmethod
    def upcast_v1_v2(state: State) -> None:
        state["settings"] = SessionSettings.of(state.get("settings"))
        state.setdefault("run_tokens", 0)
        state.setdefault("run_message_id", None)

    @staticmethod
    def upcast_v2_v3(state: State) -> None:
        state.setdefault("organization_id", None)
        state.setdefault("team_id", None)

    @staticmethod
    def upcast_v3_v4(state: State) -> None:
        state.setdefault("source_numbers", {})

    @staticmethod
    def upcast_v4_v5(state: State) -> None:
        state.setdefault("run_artifacts", [])

    @staticmethod
    def upcast_v5_v6(state: State) -> None:
        state.setdefault("run_worker", None)

    # -- events ----------------------------------------------------------------

    class SessionStarted(Aggregate.Created):
        workspace_id: UUID
        owner_id: UUID
        title: str
        task_type: str
        model: str
        settings: SessionSettings
        parent_id: UUID | None
        parent_version: int | None
        # Whom the session's spend is billed to (None: started before sessions said so).
        organization_id: UUID | None
        team_id: UUID | None

        class_version = 3

        @staticmethod
        def upcast_v1_v2(state: State) -> None:
            state["settings"] = SessionSettings.of(state.get("settings"))

        @staticmethod
        def upcast_v2_v3(state: State) -> None:
            state.setdefault("organization_id", None)
            state.setdefault("team_id", None)

    class UserMessageAppended(Aggregate.Event):
        text: str
        attachments: list[str]  # blob refs of files uploaded to the session
        idempotency_key: str | None
        files: list[AttachedFile]  # workspace files it attaches, with their text

        class_version = 2

        @staticmethod
        def upcast_v1_v2(state: State) -> None:
            state.setdefault("files", [])

    class AssistantTurnRecorded(Aggregate.Event):
        run_id: UUID
        content: list[StoredBlock]
        stop_reason: str
        model: str
        input_tokens: int
        output_tokens: int
        cache_read_tokens: int
        cache_write_tokens: int
        latency_ms: int
        cache_ttl: CacheTtl  # the prompt-cache lifetime the call asked for
        # What the call cost when recorded, by the price table of `price_version`.
        cost_usd: Decimal
        price_version: str
        priced: bool  # False: no price matched the model (cost_usd is 0)
        # The session's sources its text cites, by first citation (its `[n]` markers and
        # the model's own citations), and the markers it wrote that name no source.
        citations: list[CitedSource]
        unknown_markers: list[int]

        class_version = 3
        upcast_v1_v2 = staticmethod(_unpriced_call)

        @staticmethod
        def upcast_v2_v3(state: State) -> None:
            state.setdefault("citations", [])
            state.setdefault("unknown_markers", [])

        @property
        def tokens(self) -> int:
            """Input (cache reads and writes included) plus output tokens."""
            return (
                self.input_tokens
                + self.output_tokens
                + self.cache_read_tokens
                + self.cache_write_tokens
            )

    class ToolCallRequested(Aggregate.Event):
        tool_use_id: str
        tool: str
        args: dict[str, object]
        risk: RiskLevel

    class ToolResultRecorded(Aggregate.Event):
        tool_use_id: str
        status: ToolResultStatus
        summary: str
        blob_ref: str | None
        error: str | None
        duration_ms: int
        sources: list[int]  # the numbers of the pages the result shows, in its order

        class_version = 2

        @staticmethod
        def upcast_v1_v2(state: State) -> None:
            state.setdefault("sources", [])

    class ConfirmationRequested(Aggregate.Event):
        action_id: str
        tool_use_id: str
        tool: str
        args: dict[str, object]
        description: str

    class ConfirmationGiven(Aggregate.Event):
        action_id: str
        approved: bool
        feedback: str | None
        by: str

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

    class StrikeRecorded(Aggregate.Event):
        tool: str
        error_signature: str
        count: int

    class RebootRequested(Aggregate.Event):
        questions: list[str]
        iterations_without_progress: int

    class ContextCompacted(Aggregate.Event):
        summary: str
        through_version: int
        tokens_before: int
        tokens_after: int
        # The model call that wrote the summary ("" and zeros: recorded before v2).
        model: str
        input_tokens: int
        output_tokens: int
        cache_read_tokens: int
        cache_write_tokens: int
        cache_ttl: CacheTtl
        cost_usd: Decimal
        price_version: str
        priced: bool

        class_version = 2

        @staticmethod
        def upcast_v1_v2(state: State) -> None:
            state.update(model="", input_tokens=0, output_tokens=0, cache_read_tokens=0)
            state.update(cache_write_tokens=0, cache_ttl="5m", cost_usd=Decimal(0))
            state.update(price_version="", priced=True)

    class BudgetThresholdReached(Aggregate.Event):
        """A call of this session took a budget's spend this month past a threshold."""

        scope: BudgetScope
        scope_id: UUID
        period: str  # the month, YYYY-MM (UTC)
        threshold: int  # percent of the limit
        spent_usd: Decimal
        limit_usd: Decimal | None
        spent_tokens: int
        limit_tokens: int | None

    class SourceRecorded(Aggregate.Event):
        """A page the agent saw (a search result, a page it read), by its stable number."""

        number: int
        url: str
        title: str
        snippet: str
        blob_ref: str | None  # the page's full text, once it was read
        via: SourceVia
        tool_use_id: str

    class SkillActivated(Aggregate.Event):
        """A skill took over the session's way of working: its instructions (Level 2)
        join the conversation here, and its limits apply from here on."""

        name: str
        skill_version: str
        score: float
        by: SkillActivation  # "keyword" | "embedding" (the matcher) | "tool" (the model)
        instructions: str
        instructions_sha256: str
        allowed_tools: list[str] | None
        max_iterations: int | None
        timeout: int | None  # seconds from activation

    class MemoriesRecalled(Aggregate.Event):
        """Long-term memories recalled for the user's message at a run's start: they join
        the conversation here (never the system prompt, so the cached prefix stays)."""

        run_id: UUID
        query: str
        memories: list[RecalledMemory]

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

    class RunRequested(Aggregate.Event):
        run_id: UUID

    class RunStarted(Aggregate.Event):
        run_id: UUID
        worker: str

    class RunCompleted(Aggregate.Event):
        run_id: UUID
        reason: str
        tokens_used: int
        message_id: int | None  # the version of the run's last assistant turn
        artifacts: list[RunArtifact]  # what the run made, in order

        class_version = 3
        upcast_v1_v2 = staticmethod(_run_totals_unknown)
        upcast_v2_v3 = staticmethod(_run_artifacts_unlisted)

    class RunFailed(Aggregate.Event):
        run_id: UUID
        reason: str
        error_code: str
        tokens_used: int
        message_id: int | None
        artifacts: list[RunArtifact]

        class_version = 3
        upcast_v1_v2 = staticmethod(_run_totals_unknown)
        upcast_v2_v3 = staticmethod(_run_artifacts_unlisted)

    class RunStopped(Aggregate.Event):
        run_id: UUID
        reason: str
        tokens_used: int
        message_id: int | None
        artifacts: list[RunArtifact]

        class_version = 3
        upcast_v1_v2 = staticmethod(_run_totals_unknown)
        upcast_v2_v3 = staticmethod(_run_artifacts_unlisted)

    class SessionRenamed(Aggregate.Event):
        title: str

    class SessionCompleted(Aggregate.Event):
        reason: str

    class SessionArchived(Aggregate.Event):
        pass

    # -- creation ----------------------------------------------------------------

    @event(SessionStarted)
    def __init__(
        self,
        workspace_id: UUID,
        owner_id: UUID,
        title: str,
        task_type: str,
        model: str,
        settings: SessionSettings,
        parent_id: UUID | None,
        parent_version: int | None,
        organization_id: UUID | None,
        team_id: UUID | None,
    ) -> None:
        self.workspace_id = workspace_id
        self.organization_id = organization_id
        self.team_id = team_id
        self.owner_id = owner_id
        self.title = title
        self.task_type = task_type
        self.model = model
        self.settings = settings
        self.status: SessionStatus = "created"
        self.archived = False
        self.parent_id = parent_id
        self.parent_version = parent_version
        self.active_run: UUID | None = None
        self.run_worker: str | None = None  # who holds the active run: its latest RunStarted
        self.run_tokens = 0  # tokens the active run's turns used so far
        self.run_message_id: int | None = None  # the active run's last assistant turn
        self.run_artifacts: list[RunArtifact] = []  # what the active run made
        self.open_tool_calls: dict[str, str] = {}
        # action id -> tool use id, for confirmations asked and not yet answered
        self.pending_confirmations: dict[str, str] = {}
        # action id -> approved (a dict, not a set: snapshots are stored as JSON)
        self.answered_confirmations: dict[str, bool] = {}
        self.source_numbers: dict[str, int] = {}  # url -> its number, from 1

    @classmethod
    def start(
        cls,
        *,
        workspace_id: UUID,
        owner_id: UUID,
        title: str,
        task_type: str = "general",
        model: str = "",
        settings: SessionSettings | None = None,
        organization_id: UUID | None = None,
        team_id: UUID | None = None,
    ) -> AgentSession:
        return cls(
            workspace_id,
            owner_id,
            check_title(title),
            task_type,
            model,
            settings or SessionSettings(),
            None,
            None,
            organization_id,
            team_id,
        )

    # -- messages and turns -------------------------------------------------

    def append_user_message(
        self,
        text: str,
        attachments: list[str] | None = None,
        idempotency_key: str | None = None,
        files: Sequence[AttachedFile] = (),
    ) -> None:
        self._check_open()
        check_message_size(text)
        self._user_message_appended(text, list(attachments or []), idempotency_key, list(files))

    @event(UserMessageAppended)
    def _user_message_appended(
        self,
        text: str,
        attachments: list[str],
        idempotency_key: str | None,
        files: list[AttachedFile],
    ) -> None:
        pass

    def record_assistant_turn(
        self,
        run_id: UUID,
        turn: ModelTurn,
        latency_ms: int,
        cost: ModelCallCost,
        citations: Sequence[CitedSource] = (),
        unknown_markers: Sequence[int] = (),
    ) -> None:
        self._check_run(run_id)
        usage = turn.usage
        self._assistant_turn_recorded(
            run_id, turn_blocks(turn), turn.stop_reason, turn.model, usage.input_tokens,
            usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens, latency_ms,
            cost.cache_ttl, cost.usd, cost.price_version, cost.priced, list(citations),
            list(unknown_markers),
        )  # fmt: skip

    @event(AssistantTurnRecorded)
    def _assistant_turn_recorded(
        self,
        run_id: UUID,
        content: list[StoredBlock],
        stop_reason: str,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cache_read_tokens: int,
        cache_write_tokens: int,
        latency_ms: int,
        cache_ttl: CacheTtl,
        cost_usd: Decimal,
        price_version: str,
        priced: bool,
        citations: list[CitedSource],
        unknown_markers: list[int],
    ) -> None:
        if run_id == self.active_run:
            self.run_tokens += input_tokens + output_tokens + cache_read_tokens + cache_write_tokens
            self.run_message_id = self.version + 1  # apply() runs before the version moves

    # -- tools ----------------------------------------------------------------

    def request_tool_call(
        self, tool_use_id: str, tool: str, args: dict[str, object], risk: RiskLevel = "safe"
    ) -> None:
        self._check_open()
        if tool_use_id in self.open_tool_calls:
            raise InvalidCommand(f"tool call {tool_use_id} was already requested")
        self._tool_call_requested(tool_use_id, tool, args, risk)

    @event(ToolCallRequested)
    def _tool_call_requested(
        self, tool_use_id: str, tool: str, args: dict[str, object], risk: RiskLevel
    ) -> None:
        self.open_tool_calls[tool_use_id] = tool

    def record_tool_result(
        self,
        tool_use_id: str,
        status: ToolResultStatus,
        summary: str,
        *,
        blob_ref: str | None = None,
        error: str | None = None,
        duration_ms: int = 0,
        sources: Sequence[int] = (),
    ) -> None:
        if tool_use_id not in self.open_tool_calls:
            raise InvalidCommand(f"no open tool call {tool_use_id}")
        if status not in TOOL_RESULT_STATUSES:
            raise InvalidCommand(f"unknown tool result status {status!r}")
        unknown = [n for n in sources if not 1 <= n <= len(self.source_numbers)]
        if unknown:
            raise InvalidCommand(f"tool result shows sources {unknown} the session never saw")
        self._tool_result_recorded(
            tool_use_id, status, summary, blob_ref, error, duration_ms, list(sources)
        )

    @event(ToolResultRecorded)
    def _tool_result_recorded(
        self,
        tool_use_id: str,
        status: ToolResultStatus,
        summary: str,
        blob_ref: str | None,
        error: str | None,
        duration_ms: int,
        sources: list[int],
    ) -> None:
        del self.open_tool_calls[tool_use_id]
        for action_id, waiting_on in list(self.pending_confirmations.items()):
            if waiting_on == tool_use_id:
                del self.pending_confirmations[action_id]

    # -- human approval -----------------------------------------------------------

    def request_confirmation(
        self, action_id: str, tool_use_id: str, tool: str, args: dict[str, object], description: str
    ) -> None:
        if tool_use_id not in self.open_tool_calls:
            raise InvalidCommand(f"no open tool call {tool_use_id}")
        if action_id in self.pending_confirmations or action_id in self.answered_confirmations:
            raise InvalidCommand(f"confirmation {action_id} was already requested")
        self._confirmation_requested(action_id, tool_use_id, tool, args, description)

    @event(ConfirmationRequested)
    def _confirmation_requested(
        self, action_id: str, tool_use_id: str, tool: str, args: dict[str, object], description: str
    ) -> None:
        self.pending_confirmations[action_id] = tool_use_id
        self.status = "waiting"

    def give_confirmation(
        self, action_id: str, approved: bool, feedback: str | None = None, by: str = ""
    ) -> None:
        if action_id in self.answered_confirmations:
            raise ConfirmationAnswered(action_id)
        if action_id not in self.pending_confirmations:
            raise ConfirmationNotFound(action_id)
        self._confirmation_given(action_id, approved, feedback, by)

    @event(ConfirmationGiven)
    def _confirmation_given(
        self, action_id: str, approved: bool, feedback: str | None, by: str
    ) -> None:
        del self.pending_confirmations[action_id]
        self.answered_confirmations[action_id] = approved
        if self.active_run is not None and not self.pending_confirmations:
            self.status = "running"

    # -- working memory, artifacts and the agent's own guard rails -----------------

    def update_plan(self, items: list[PlanItem]) -> None:
        self._check_open()
        self._plan_updated([PlanItem.of(i.to_json()) for i in items])  # checked, trimmed

    @event(PlanUpdated)
    def _plan_updated(self, items: list[PlanItem]) -> None:
        pass

    def record_finding(self, text: str, citations: list[Citation]) -> None:
        self._check_open()
        if not text.strip():
            raise InvalidCommand("a finding needs text")
        self._finding_recorded(text.strip(), [Citation.of(c.to_json()) for c in citations])

    @event(FindingRecorded)
    def _finding_recorded(self, text: str, citations: list[Citation]) -> None:
        pass

    def note_progress(self, text: str) -> None:
        self._check_open()
        if not text.strip():
            raise InvalidCommand("a progress note needs text")
        self._progress_noted(text.strip())

    @event(ProgressNoted)
    def _progress_noted(self, text: str) -> None:
        pass

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
        self._artifact_created(kind, name.strip(), blob_ref, size, sha256, media_type, tool_use_id)

    @event(ArtifactCreated)
    def _artifact_created(
        self,
        kind: ArtifactKind,
        name: str,
        blob_ref: str,
        size: int,
        sha256: str,
        media_type: str,
        tool_use_id: str | None,
    ) -> None:
        if self.active_run is not None:  # apply() runs before the version moves
            self.run_artifacts.append(
                RunArtifact(artifact_id_of(self.id, self.version + 1), kind, name)
            )

    def record_sources(self, tool_use_id: str, seen: list[SourceSeen]) -> None:
        """Number each page a tool call saw: a new URL gets the next number; a page read
        again (now with its text) keeps its number; a URL seen again otherwise is not
        recorded twice."""
        self._check_open()
        for page in seen:
            known = self.source_numbers.get(page.url)
            if known is not None and (page.via != "read" or page.blob_ref is None):
                continue
            number = known or len(self.source_numbers) + 1
            self._source_recorded(
                number, page.url, page.title, page.snippet, page.blob_ref, page.via, tool_use_id
            )

    @event(SourceRecorded)
    def _source_recorded(
        self,
        number: int,
        url: str,
        title: str,
        snippet: str,
        blob_ref: str | None,
        via: SourceVia,
        tool_use_id: str,
    ) -> None:
        self.source_numbers[url] = number

    def activate_skill(self, skill: SkillSpec, score: float, by: SkillActivation) -> None:
        self._check_open()
        self._skill_activated(
            skill.name, skill.version, score, by, skill.instructions,
            hashlib.sha256(skill.instructions.encode()).hexdigest(),
            None if skill.allowed_tools is None else list(skill.allowed_tools),
            skill.max_iterations, skill.timeout,
        )  # fmt: skip

    def recall_memories(self, run_id: UUID, query: str, memories: list[RecalledMemory]) -> None:
        self._check_open()
        self._memories_recalled(run_id, query, memories)

    @event(MemoriesRecalled)
    def _memories_recalled(self, run_id: UUID, query: str, memories: list[RecalledMemory]) -> None:
        pass

    @event(SkillActivated)
    def _skill_activated(
        self,
        name: str,
        skill_version: str,
        score: float,
        by: SkillActivation,
        instructions: str,
        instructions_sha256: str,
        allowed_tools: list[str] | None,
        max_iterations: int | None,
        timeout: int | None,
    ) -> None:
        pass

    @event(StrikeRecorded)
    def record_strike(self, tool: str, error_signature: str, count: int) -> None:
        pass

    @event(RebootRequested)
    def request_reboot(self, questions: list[str], iterations_without_progress: int) -> None:
        pass

    def record_compaction(
        self,
        summary: str,
        through_version: int,
        tokens_before: int,
        tokens_after: int,
        call: ModelTurn | None,
        cost: ModelCallCost,
    ) -> None:
        """Record a summary, and the model call that wrote it (`call`; None: none did)."""
        if not 1 <= through_version <= self.version:
            raise InvalidCommand(f"cannot compact through version {through_version}")
        call = call or ModelTurn((), "end_turn", Usage(), "")
        usage = call.usage
        self._context_compacted(
            summary, through_version, tokens_before, tokens_after, call.model, usage.input_tokens,
            usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens,
            cost.cache_ttl, cost.usd, cost.price_version, cost.priced,
        )  # fmt: skip

    @event(ContextCompacted)
    def _context_compacted(
        self,
        summary: str,
        through_version: int,
        tokens_before: int,
        tokens_after: int,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cache_read_tokens: int,
        cache_write_tokens: int,
        cache_ttl: CacheTtl,
        cost_usd: Decimal,
        price_version: str,
        priced: bool,
    ) -> None:
        pass

    @event(BudgetThresholdReached)
    def note_budget_threshold(
        self,
        scope: BudgetScope,
        scope_id: UUID,
        period: str,
        threshold: int,
        spent_usd: Decimal,
        limit_usd: Decimal | None,
        spent_tokens: int,
        limit_tokens: int | None,
    ) -> None:
        pass

    # -- runs -----------------------------------------------------------------

    def request_run(self, run_id: UUID) -> None:
        self._check_open()
        if self.active_run is not None:
            raise RunAlreadyActive(f"run {self.active_run} is still active")
        self._run_requested(run_id)

    @event(RunRequested)
    def _run_requested(self, run_id: UUID) -> None:
        self.active_run = run_id
        self.run_tokens, self.run_message_id, self.run_artifacts = 0, None, []

    def start_run(self, run_id: UUID, worker: str) -> None:
        self._check_run(run_id)
        self._run_started(run_id, worker)

    @event(RunStarted)
    def _run_started(self, run_id: UUID, worker: str) -> None:
        self.status = "running"
        self.run_worker = worker

    def complete_run(self, run_id: UUID, reason: str = "end_turn") -> None:
        self._check_run(run_id)
        self._run_completed(
            run_id, reason, self.run_tokens, self.run_message_id, list(self.run_artifacts)
        )

    @event(RunCompleted)
    def _run_completed(
        self,
        run_id: UUID,
        reason: str,
        tokens_used: int,
        message_id: int | None,
        artifacts: list[RunArtifact],
    ) -> None:
        self.active_run, self.run_worker = None, None
        self.status = "completed"

    def fail_run(self, run_id: UUID, reason: str, error_code: str = "RUN_FAILED") -> None:
        """End the run in failure; its tool calls without a result are marked interrupted
        (a person's own calls, outside any run, stay open)."""
        self._check_run(run_id)
        self._interrupt_calls(f"the run failed before this call finished: {reason}", "failed")
        self._run_failed(
            run_id, reason, error_code, self.run_tokens, self.run_message_id,
            list(self.run_artifacts),
        )  # fmt: skip

    @event(RunFailed)
    def _run_failed(
        self,
        run_id: UUID,
        reason: str,
        error_code: str,
        tokens_used: int,
        message_id: int | None,
        artifacts: list[RunArtifact],
    ) -> None:
        self.active_run, self.run_worker = None, None
        self.status = "error"

    def stop_run(self, run_id: UUID, reason: str = "stopped by user") -> None:
        self._check_run(run_id)
        self._run_stopped(
            run_id, reason, self.run_tokens, self.run_message_id, list(self.run_artifacts)
        )

    @event(RunStopped)
    def _run_stopped(
        self,
        run_id: UUID,
        reason: str,
        tokens_used: int,
        message_id: int | None,
        artifacts: list[RunArtifact],
    ) -> None:
        self.active_run, self.run_worker = None, None
        self.status = "stopped"

    def stop(self, reason: str) -> None:
        """Stop the active run; its tool calls without a result are marked interrupted."""
        if self.active_run is None:
            raise InvalidCommand("no run is active")
        self._interrupt_calls(f"the run was stopped: {reason}", "stopped", manual_too=True)
        self.stop_run(self.active_run, reason)

    def _interrupt_calls(self, summary: str, error: str, *, manual_too: bool = False) -> None:
        for tool_use_id in list(self.open_tool_calls):
            if manual_too or not tool_use_id.startswith(MANUAL_PREFIX):
                self.record_tool_result(tool_use_id, "interrupted", summary, error=error)

    # -- session --------------------------------------------------------------

    def rename(self, title: str) -> None:
        self._check_open()
        self._renamed(check_title(title))

    @event(SessionRenamed)
    def _renamed(self, title: str) -> None:
        self.title = title

    def complete(self, reason: str = "marked complete by the user") -> None:
        """The user says the task is done; a run still going is stopped first."""
        self._check_open()
        if self.active_run is not None:
            self.stop(reason)
        self._completed(reason)

    @event(SessionCompleted)
    def _completed(self, reason: str) -> None:
        self.status = "completed"

    def archive(self) -> None:
        self._check_open()
        self._archived()

    @event(SessionArchived)
    def _archived(self) -> None:
        self.archived = True

    # -- rules ----------------------------------------------------------------

    def _check_open(self) -> None:
        if self.archived:
            raise SessionClosed(self.id)

    def _check_run(self, run_id: UUID) -> None:
        if self.active_run != run_id:
            raise InvalidCommand(f"run {run_id} is not the session's active run")
