"""What the agent loop needs to know about a session's log, folded one event at a time.

The loop asks the same questions at every step (does this call have a result? how
many turns has this run had? how often has this tool failed this way?); answering
them from indexes kept up to date makes a step cost the same at step 1000 as at step 1.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from uuid import UUID

from eventsourcing.domain import AggregateEvent

from domain.policies import error_signature


@dataclass
class Ledger:
    """Indexes over one session's events; `apply` each event once, in order."""

    settings: dict[str, object] = field(default_factory=dict)
    tools_by_use: dict[str, str] = field(default_factory=dict)
    requested: dict[str, AggregateEvent] = field(default_factory=dict)
    results: dict[str, AggregateEvent] = field(default_factory=dict)
    confirmations: dict[str, AggregateEvent] = field(default_factory=dict)  # by tool use
    answers: dict[str, AggregateEvent] = field(default_factory=dict)  # by action id
    started_runs: set[UUID] = field(default_factory=set)
    turns_by_run: dict[UUID, int] = field(default_factory=dict)
    last_turn_by_run: dict[UUID, AggregateEvent] = field(default_factory=dict)
    last_turn_version: int = 0
    tokens_used: int = 0
    stalled_turns: int = 0
    failures: dict[tuple[str, str], int] = field(default_factory=dict)
    _done: frozenset[str] = frozenset()

    @classmethod
    def of(cls, events: Iterable[AggregateEvent]) -> Ledger:
        ledger = cls()
        for e in events:
            ledger.apply(e)
        return ledger

    def apply(self, e: AggregateEvent) -> None:
        handler = getattr(self, f"_on_{type(e).__name__}", None)
        if handler is not None:
            handler(e.__dict__, e)

    def failures_of(self, tool: str, error: str) -> int:
        """Failures of `tool` with this error's signature since its last strike."""
        return self.failures.get((tool, error_signature(error)), 0)

    def tool_uses_of_last_turn(self, run_id: UUID) -> list[dict[str, object]]:
        turn = self.last_turn_by_run.get(run_id)
        if turn is None:
            return []
        return [b for b in turn.__dict__["content"] if b["type"] == "tool_use"]

    # -- one handler per event type that matters --------------------------------

    def _on_SessionStarted(self, d: dict[str, object], e: AggregateEvent) -> None:
        settings = d.get("settings")
        self.settings = dict(settings) if isinstance(settings, dict) else {}

    def _on_RunStarted(self, d: dict[str, object], e: AggregateEvent) -> None:
        self.started_runs.add(d["run_id"])  # type: ignore[arg-type]

    def _on_AssistantTurnRecorded(self, d: dict[str, object], e: AggregateEvent) -> None:
        run_id: UUID = d["run_id"]  # type: ignore[assignment]
        self.turns_by_run[run_id] = self.turns_by_run.get(run_id, 0) + 1
        self.last_turn_by_run[run_id] = e
        self.last_turn_version = e.originator_version
        self.tokens_used += sum(
            int(d[k])  # type: ignore[call-overload]
            for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
        )
        self.stalled_turns += 1

    def _on_ToolCallRequested(self, d: dict[str, object], e: AggregateEvent) -> None:
        tool_use_id = str(d["tool_use_id"])
        self.tools_by_use[tool_use_id] = str(d["tool"])
        self.requested[tool_use_id] = e

    def _on_ToolResultRecorded(self, d: dict[str, object], e: AggregateEvent) -> None:
        tool_use_id = str(d["tool_use_id"])
        self.results[tool_use_id] = e
        if d["status"] == "error":
            key = (self.tools_by_use.get(tool_use_id, ""), error_signature(str(d["error"] or "")))
            self.failures[key] = self.failures.get(key, 0) + 1

    def _on_StrikeRecorded(self, d: dict[str, object], e: AggregateEvent) -> None:
        self.failures[(str(d["tool"]), str(d["error_signature"]))] = 0

    def _on_ConfirmationRequested(self, d: dict[str, object], e: AggregateEvent) -> None:
        self.confirmations[str(d["tool_use_id"])] = e

    def _on_ConfirmationGiven(self, d: dict[str, object], e: AggregateEvent) -> None:
        self.answers[str(d["action_id"])] = e

    def _on_PlanUpdated(self, d: dict[str, object], e: AggregateEvent) -> None:
        items: list[dict[str, str]] = d["items"]  # type: ignore[assignment]
        done = frozenset(i["title"] for i in items if i.get("status") == "done")
        if done - self._done:
            self.stalled_turns = 0  # the plan moved forward
        self._done = done

    def _on_RebootRequested(self, d: dict[str, object], e: AggregateEvent) -> None:
        self.stalled_turns = 0
