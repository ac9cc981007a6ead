"""The `AgentSession` aggregate: one agent session, whose events are its context.

Each event carries only what is new (one message, one turn, one tool result); the
aggregate keeps just enough state to enforce the rules below, never a copy of the
conversation.
"""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from eventsourcing.domain import Aggregate, AggregateEvent, event

from domain.conversation import ModelTurn, TextBlock, ThinkingBlock
from domain.errors import (
    ConfirmationAnswered,
    ConfirmationNotFound,
    InvalidCommand,
    MessageTooLarge,
    RunAlreadyActive,
    SessionClosed,
)

MAX_MESSAGE_BYTES = 1024 * 1024
MAX_TITLE_CHARS = 500

SessionStatus = Literal["created", "running", "waiting", "completed", "error", "stopped"]
ToolResultStatus = Literal["success", "error", "cancelled", "interrupted"]
RiskLevel = Literal["safe", "risky"]
PlanItemStatus = Literal["pending", "in_progress", "done", "skipped"]

TOOL_RESULT_STATUSES: tuple[ToolResultStatus, ...] = (
    "success",
    "error",
    "cancelled",
    "interrupted",
)
PLAN_ITEM_STATUSES: tuple[PlanItemStatus, ...] = ("pending", "in_progress", "done", "skipped")


def check_message_size(text: str) -> None:
    size = len(text.encode("utf-8"))
    if size > MAX_MESSAGE_BYTES:
        raise MessageTooLarge(size, MAX_MESSAGE_BYTES)


def check_title(title: str) -> str:
    title = title.strip()
    if not title or len(title) > MAX_TITLE_CHARS:
        raise InvalidCommand(f"title must be 1 to {MAX_TITLE_CHARS} characters")
    return title


def turn_blocks(turn: ModelTurn) -> list[dict[str, object]]:
    """A turn's content blocks as plain data, in order (signatures kept for replay)."""
    blocks: list[dict[str, object]] = []
    for block in turn.content:
        if isinstance(block, TextBlock):
            blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingBlock):
            blocks.append(
                {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
            )
        else:
            blocks.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
            )
    return blocks


def _payload(old: AggregateEvent) -> dict[str, object]:
    skip = {"originator_id", "originator_version", "timestamp"}
    return {k: v for k, v in old.__dict__.items() if k not in skip}


class AgentSession(Aggregate):
    """One agent session in a workspace."""

    @event("SessionStarted")
    def __init__(
        self,
        workspace_id: UUID,
        owner_id: UUID,
        title: str,
        task_type: str = "general",
        model: str = "",
        settings: dict[str, object] | None = None,
        parent_id: UUID | None = None,
        parent_version: int | None = None,
    ) -> None:
        self.workspace_id = workspace_id
        self.owner_id = owner_id
        self.title = title
        self.task_type = task_type
        self.model = model
        self.settings = settings or {}
        self.status: SessionStatus = "created"
        self.archived = False
        self.parent_id = parent_id
        self.parent_version = parent_version
        self.active_run: UUID | None = None
        self.open_tool_calls: dict[str, str] = {}
        # action id -> tool use id, for confirmations asked and not yet answered
        self.pending_confirmations: dict[str, str] = {}
        # action id -> approved (a dict, not a set: snapshots are stored as JSON)
        self.answered_confirmations: dict[str, bool] = {}

    @classmethod
    def start(
        cls,
        *,
        workspace_id: UUID,
        owner_id: UUID,
        title: str,
        task_type: str = "general",
        model: str = "",
        settings: dict[str, object] | None = None,
    ) -> AgentSession:
        return cls(workspace_id, owner_id, check_title(title), task_type, model, settings)

    @classmethod
    def fork(
        cls, parent: AgentSession, history: list[AggregateEvent], at_version: int
    ) -> AgentSession:
        """A new session holding `parent`'s log up to `at_version`, at the same versions.

        A run still open at that point is stopped and its unanswered tool calls get an
        `interrupted` result, so the fork starts idle and can run again at once.
        """
        if not 1 <= at_version <= parent.version:
            raise InvalidCommand(f"cannot fork at version {at_version} (1..{parent.version})")
        child = cls(
            parent.workspace_id,
            parent.owner_id,
            parent.title,
            parent.task_type,
            parent.model,
            dict(parent.settings),
            parent_id=parent.id,
            parent_version=at_version,
        )
        for old in history:
            if 1 < old.originator_version <= at_version:
                child.trigger_event(type(old), **_payload(old))
        if child.active_run is not None:
            child.stop(f"forked at version {at_version}")
        return child

    # -- messages and turns -------------------------------------------------

    def append_user_message(
        self,
        text: str,
        attachments: list[str] | None = None,
        idempotency_key: str | None = None,
    ) -> None:
        self._check_open()
        check_message_size(text)
        self._user_message_appended(text, list(attachments or []), idempotency_key)

    @event("UserMessageAppended")
    def _user_message_appended(
        self, text: str, attachments: list[str], idempotency_key: str | None
    ) -> None:
        pass

    def record_assistant_turn(self, run_id: UUID, turn: ModelTurn, latency_ms: int) -> None:
        self._check_run(run_id)
        self._assistant_turn_recorded(
            run_id=run_id,
            content=turn_blocks(turn),
            stop_reason=turn.stop_reason,
            model=turn.model,
            input_tokens=turn.usage.input_tokens,
            output_tokens=turn.usage.output_tokens,
            cache_read_tokens=turn.usage.cache_read_tokens,
            cache_write_tokens=turn.usage.cache_write_tokens,
            latency_ms=latency_ms,
        )

    @event("AssistantTurnRecorded")
    def _assistant_turn_recorded(
        self,
        run_id: UUID,
        content: list[dict[str, object]],
        stop_reason: str,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cache_read_tokens: int,
        cache_write_tokens: int,
        latency_ms: int,
    ) -> None:
        pass

    # -- tools ----------------------------------------------------------------

    def request_tool_call(
        self, tool_use_id: str, tool: str, args: dict[str, object], risk: RiskLevel = "safe"
    ) -> None:
        self._check_open()
        if tool_use_id in self.open_tool_calls:
            raise InvalidCommand(f"tool call {tool_use_id} was already requested")
        self._tool_call_requested(tool_use_id, tool, args, risk)

    @event("ToolCallRequested")
    def _tool_call_requested(
        self, tool_use_id: str, tool: str, args: dict[str, object], risk: str
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
    ) -> None:
        if tool_use_id not in self.open_tool_calls:
            raise InvalidCommand(f"no open tool call {tool_use_id}")
        if status not in TOOL_RESULT_STATUSES:
            raise InvalidCommand(f"unknown tool result status {status!r}")
        self._tool_result_recorded(tool_use_id, status, summary, blob_ref, error, duration_ms)

    @event("ToolResultRecorded")
    def _tool_result_recorded(
        self,
        tool_use_id: str,
        status: str,
        summary: str,
        blob_ref: str | None,
        error: str | None,
        duration_ms: int,
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

    @event("ConfirmationRequested")
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

    @event("ConfirmationGiven")
    def _confirmation_given(
        self, action_id: str, approved: bool, feedback: str | None, by: str
    ) -> None:
        del self.pending_confirmations[action_id]
        self.answered_confirmations[action_id] = approved
        if self.active_run is not None and not self.pending_confirmations:
            self.status = "running"

    # -- working memory and the agent's own guard rails ------------------------

    def record_finding(self, text: str, citations: list[dict[str, str]]) -> None:
        self._check_open()
        if not text.strip():
            raise InvalidCommand("a finding needs text")
        for citation in citations:
            if not str(citation.get("url", "")).strip():
                raise InvalidCommand("every citation needs a url")
        self._finding_recorded(text.strip(), [dict(c) for c in citations])

    @event("FindingRecorded")
    def _finding_recorded(self, text: str, citations: list[dict[str, str]]) -> None:
        pass

    def note_progress(self, text: str) -> None:
        self._check_open()
        if not text.strip():
            raise InvalidCommand("a progress note needs text")
        self._progress_noted(text.strip())

    @event("ProgressNoted")
    def _progress_noted(self, text: str) -> None:
        pass

    def record_strike(self, tool: str, error_signature: str, count: int) -> None:
        self._strike_recorded(tool, error_signature, count)

    @event("StrikeRecorded")
    def _strike_recorded(self, tool: str, error_signature: str, count: int) -> None:
        pass

    def request_reboot(self, questions: list[str], iterations_without_progress: int) -> None:
        self._reboot_requested(list(questions), iterations_without_progress)

    @event("RebootRequested")
    def _reboot_requested(self, questions: list[str], iterations_without_progress: int) -> None:
        pass

    def record_compaction(
        self, summary: str, through_version: int, tokens_before: int, tokens_after: int
    ) -> None:
        if not 1 <= through_version <= self.version:
            raise InvalidCommand(f"cannot compact through version {through_version}")
        self._context_compacted(summary, through_version, tokens_before, tokens_after)

    @event("ContextCompacted")
    def _context_compacted(
        self, summary: str, through_version: int, tokens_before: int, tokens_after: int
    ) -> None:
        pass

    def update_plan(self, items: list[dict[str, str]]) -> None:
        self._check_open()
        for item in items:
            if not str(item.get("title", "")).strip():
                raise InvalidCommand("every plan item needs a title")
            if item.get("status", "pending") not in PLAN_ITEM_STATUSES:
                raise InvalidCommand(f"unknown plan item status {item.get('status')!r}")
        cleaned = [
            {"title": str(i["title"]).strip(), "status": i.get("status", "pending")} for i in items
        ]
        self._plan_updated(cleaned)

    @event("PlanUpdated")
    def _plan_updated(self, items: list[dict[str, str]]) -> None:
        pass

    # -- runs -----------------------------------------------------------------

    def request_run(self, run_id: UUID) -> None:
        self._check_open()
        if self.active_run is not None:
            raise RunAlreadyActive(f"run {self.active_run} is still active")
        self._run_requested(run_id)

    @event("RunRequested")
    def _run_requested(self, run_id: UUID) -> None:
        self.active_run = run_id

    def start_run(self, run_id: UUID, worker: str) -> None:
        self._check_run(run_id)
        self._run_started(run_id, worker)

    @event("RunStarted")
    def _run_started(self, run_id: UUID, worker: str) -> None:
        self.status = "running"

    def complete_run(self, run_id: UUID, reason: str = "end_turn") -> None:
        self._check_run(run_id)
        self._run_completed(run_id, reason)

    @event("RunCompleted")
    def _run_completed(self, run_id: UUID, reason: str) -> None:
        self.active_run = None
        self.status = "completed"

    def fail_run(self, run_id: UUID, reason: str, error_code: str = "RUN_FAILED") -> None:
        self._check_run(run_id)
        self._run_failed(run_id, reason, error_code)

    @event("RunFailed")
    def _run_failed(self, run_id: UUID, reason: str, error_code: str) -> None:
        self.active_run = None
        self.status = "error"

    def stop_run(self, run_id: UUID, reason: str = "stopped by user") -> None:
        self._check_run(run_id)
        self._run_stopped(run_id, reason)

    @event("RunStopped")
    def _run_stopped(self, run_id: UUID, reason: str) -> None:
        self.active_run = None
        self.status = "stopped"

    def stop(self, reason: str) -> None:
        """Stop the active run; its tool calls without a result are marked interrupted."""
        if self.active_run is None:
            raise InvalidCommand("no run is active")
        for tool_use_id in list(self.open_tool_calls):
            self.record_tool_result(
                tool_use_id, "interrupted", f"the run was stopped: {reason}", error="stopped"
            )
        self.stop_run(self.active_run, reason)

    # -- session --------------------------------------------------------------

    def rename(self, title: str) -> None:
        self._check_open()
        self._renamed(check_title(title))

    @event("SessionRenamed")
    def _renamed(self, title: str) -> None:
        self.title = title

    def complete(self, reason: str = "marked complete by the user") -> None:
        """The user says the task is done; a run still going is stopped first."""
        self._check_open()
        if self.active_run is not None:
            self.stop(reason)
        self._completed(reason)

    @event("SessionCompleted")
    def _completed(self, reason: str) -> None:
        self.status = "completed"

    def archive(self) -> None:
        self._check_open()
        self._archived()

    @event("SessionArchived")
    def _archived(self) -> None:
        self.archived = True

    # -- rules ----------------------------------------------------------------

    def _check_open(self) -> None:
        if self.archived:
            raise SessionClosed(self.id)

    def _check_run(self, run_id: UUID) -> None:
        if self.active_run != run_id:
            raise InvalidCommand(f"run {run_id} is not the session's active run")
