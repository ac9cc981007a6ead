"""A session's tool calls and the human approvals they wait on (a base of `AgentSession`).

A call is requested, may wait on a person's answer, and ends with exactly one result;
a run that ends first marks what it left open `interrupted`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eventsourcing.domain import Aggregate

from domain.errors import ConfirmationAnswered, ConfirmationNotFound, InvalidCommand
from domain.session_log import SessionLog, State
from domain.values import MANUAL_PREFIX, TOOL_RESULT_STATUSES, RiskLevel, ToolResultStatus


class ToolLog(SessionLog):
    """The tool-call and approval events, and the commands that record them."""

    class ToolCallRequested(Aggregate.Event):
        tool_use_id: str
        tool: str
        args: dict[str, object]
        risk: RiskLevel

        def apply(self, aggregate: Any) -> None:
            aggregate.open_tool_calls[self.tool_use_id] = self.tool

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

        def apply(self, aggregate: Any) -> None:
            del aggregate.open_tool_calls[self.tool_use_id]
            pending = aggregate.pending_confirmations
            for action_id, waiting_on in list(pending.items()):
                if waiting_on == self.tool_use_id:
                    del pending[action_id]

    class ConfirmationRequested(Aggregate.Event):
        action_id: str
        tool_use_id: str
        tool: str
        args: dict[str, object]
        description: str

        def apply(self, aggregate: Any) -> None:
            aggregate.pending_confirmations[self.action_id] = self.tool_use_id
            if aggregate.active_run is not None:  # a call made by hand keeps no run waiting
                aggregate.status = "waiting"

    class ConfirmationGiven(Aggregate.Event):
        action_id: str
        approved: bool
        feedback: str | None
        by: str

        def apply(self, aggregate: Any) -> None:
            del aggregate.pending_confirmations[self.action_id]
            aggregate.answered_confirmations[self.action_id] = self.approved
            if aggregate.active_run is not None and not aggregate.pending_confirmations:
                aggregate.status = "running"

    def request_tool_call(
        self, tool_use_id: str, tool: str, args: dict[str, object], risk: RiskLevel = "safe"
    ) -> None:
        self._check_open()
        if tool_use_id in self.open_tool_calls:
            raise InvalidCommand(f"tool call {tool_use_id} was already requested")
        self.trigger_event(
            self.ToolCallRequested, tool_use_id=tool_use_id, tool=tool, args=args, risk=risk
        )

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
        self.trigger_event(
            self.ToolResultRecorded, tool_use_id=tool_use_id, status=status, summary=summary,
            blob_ref=blob_ref, error=error, duration_ms=duration_ms, sources=list(sources),
        )  # fmt: skip

    def request_confirmation(
        self, action_id: str, tool_use_id: str, tool: str, args: dict[str, object], description: str
    ) -> None:
        if tool_use_id not in self.open_tool_calls:
            raise InvalidCommand(f"no open tool call {tool_use_id}")
        if action_id in self.pending_confirmations or action_id in self.answered_confirmations:
            raise InvalidCommand(f"confirmation {action_id} was already requested")
        self.trigger_event(
            self.ConfirmationRequested, action_id=action_id, tool_use_id=tool_use_id, tool=tool,
            args=args, description=description,
        )  # fmt: skip

    def give_confirmation(
        self, action_id: str, approved: bool, feedback: str | None = None, by: str = ""
    ) -> None:
        if action_id in self.answered_confirmations:
            raise ConfirmationAnswered(action_id)
        if action_id not in self.pending_confirmations:
            raise ConfirmationNotFound(action_id)
        self.trigger_event(
            self.ConfirmationGiven, action_id=action_id, approved=approved, feedback=feedback,
            by=by,
        )  # fmt: skip

    def _interrupt_calls(self, summary: str, error: str, *, manual_too: bool = False) -> None:
        """Give each open call (a person's own too, with `manual_too`) an interrupted result."""
        for tool_use_id in list(self.open_tool_calls):
            if manual_too or not tool_use_id.startswith(MANUAL_PREFIX):
                self.record_tool_result(tool_use_id, "interrupted", summary, error=error)
