"""One step of the loop as one write: the events a step produces, applied together.

A model turn and the tool calls it requests, or a tool result and what comes with it,
were each several commands (each its own transaction). Here they are what one command
applies to the session before one save: the same events, in the same order, as the
single commands recorded one after another.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import assert_never
from uuid import UUID

from application.tools.base import source_marker
from domain.budgets import ThresholdCrossing
from domain.conversation import ModelTurn
from domain.session import AgentSession
from domain.values import (
    Citation,
    CitedSource,
    ModelCallCost,
    PlanItem,
    RiskLevel,
    SourceSeen,
    ToolResultStatus,
)

# The notification id of a model call counted before it is recorded (with its turn):
# no read model has applied it yet.
UNRECORDED = sys.maxsize


@dataclass(frozen=True)
class CallRequest:
    """A tool call recorded as requested (`ToolCallRequested`)."""

    tool_use_id: str
    tool: str
    args: dict[str, object]
    risk: RiskLevel = "safe"


@dataclass(frozen=True)
class ConfirmationAsk:
    """A human approval asked for a call (`ConfirmationRequested`)."""

    action_id: str
    tool_use_id: str
    tool: str
    args: dict[str, object]
    description: str


@dataclass(frozen=True)
class CallsStep:
    """Tool calls requested together, and the approval the last of them waits for."""

    calls: Sequence[CallRequest] = ()
    confirmation: ConfirmationAsk | None = None

    def apply(self, s: AgentSession) -> None:
        for c in self.calls:
            s.request_tool_call(c.tool_use_id, c.tool, c.args, c.risk)
        if (ask := self.confirmation) is not None:
            s.request_confirmation(
                ask.action_id, ask.tool_use_id, ask.tool, ask.args, ask.description
            )


@dataclass(frozen=True)
class TurnStep:
    """A finished model turn, the budget thresholds its cost crossed, its first calls,
    and, for a turn that asks for no tool, the end of its run (`ends_run`: why)."""

    run_id: UUID
    turn: ModelTurn
    latency_ms: int
    cost: ModelCallCost
    citations: Sequence[CitedSource] = ()
    unknown_markers: Sequence[int] = ()
    crossings: Sequence[ThresholdCrossing] = ()
    calls: CallsStep = CallsStep()
    ends_run: str | None = None

    def apply(self, s: AgentSession) -> None:
        s.record_assistant_turn(
            self.run_id, self.turn, self.latency_ms, self.cost, self.citations,
            self.unknown_markers,
        )  # fmt: skip
        for c in self.crossings:
            s.note_budget_threshold(
                c.scope, c.scope_id, c.period, c.threshold, c.spent_usd, c.limit_usd,
                c.spent_tokens, c.limit_tokens,
            )  # fmt: skip
        self.calls.apply(s)
        if self.ends_run is not None:
            s.complete_run(self.run_id, self.ends_run)


@dataclass(frozen=True)
class PlanNote:
    items: list[PlanItem]


@dataclass(frozen=True)
class FindingNote:
    text: str
    citations: list[Citation]


@dataclass(frozen=True)
class ProgressNote:
    text: str


Note = PlanNote | FindingNote | ProgressNote  # what a built-in tool writes while it runs


@dataclass(frozen=True)
class Strike:
    tool: str
    signature: str
    count: int


@dataclass(frozen=True)
class ResultStep:
    """A tool call's result with what comes with it: the notes its tool wrote while it
    ran, the pages it saw (numbered first, the summary citing them by number), and the
    strike its failure completes."""

    tool_use_id: str
    status: ToolResultStatus
    summary: str
    blob_ref: str | None = None
    error: str | None = None
    duration_ms: int = 0
    notes: Sequence[Note] = ()
    seen: Sequence[SourceSeen] = ()
    strike: Strike | None = None

    def apply(self, s: AgentSession) -> None:
        for note in self.notes:
            _write(s, note)
        summary, shown = self.summary, list[int]()
        if self.seen:
            s.record_sources(self.tool_use_id, list(self.seen))
            numbers = s.source_numbers
            shown = list(dict.fromkeys(numbers[page.url] for page in self.seen))
            for index, page in enumerate(self.seen):
                summary = summary.replace(source_marker(index), f"[{numbers[page.url]}]")
        s.record_tool_result(
            self.tool_use_id, self.status, summary, blob_ref=self.blob_ref, error=self.error,
            duration_ms=self.duration_ms, sources=shown,
        )  # fmt: skip
        if (k := self.strike) is not None:
            s.record_strike(k.tool, k.signature, k.count)


def _write(s: AgentSession, note: Note) -> None:
    match note:
        case PlanNote(items=items):
            s.update_plan(items)
        case FindingNote(text=text, citations=citations):
            s.record_finding(text, citations)
        case ProgressNote(text=text):
            s.note_progress(text)
        case _:
            assert_never(note)
