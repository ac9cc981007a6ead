"""What the agent loop needs to know about a session's log, folded one event at a time.

The loop asks the same questions at every step (does this call have a result? how
many turns has this run had? how often has this tool failed this way?); answering
them from indexes kept up to date makes a step cost the same at step 1000 as at step 1.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import assert_never
from uuid import UUID

from domain.budgets import BillingScope
from domain.events import SessionEvent
from domain.memory_values import MemoryScope
from domain.policies import error_signature
from domain.session import AgentSession as S
from domain.session_decks import DeckLog as D
from domain.sources import NumberedSource, add_source
from domain.stored_blocks import ToolUseContent, blocks_tool_uses
from domain.values import SessionSettings


@dataclass
class Ledger:
    """Indexes over one session's events; `apply` each event once, in order."""

    settings: SessionSettings = field(default_factory=SessionSettings)
    started: S.SessionStarted | None = None
    workspace_id: UUID | None = None  # the session's workspace, once its start is applied
    owner_id: UUID | None = None
    tools_by_use: dict[str, str] = field(default_factory=dict)
    requested: dict[str, S.ToolCallRequested] = field(default_factory=dict)
    results: dict[str, S.ToolResultRecorded] = field(default_factory=dict)
    confirmations: dict[str, S.ConfirmationRequested] = field(default_factory=dict)  # by use
    answers: dict[str, S.ConfirmationGiven] = field(default_factory=dict)  # by action id
    active_run: UUID | None = None  # requested and not yet ended, as the aggregate says
    started_runs: set[UUID] = field(default_factory=set)
    turns_by_run: dict[UUID, int] = field(default_factory=dict)
    last_turn_by_run: dict[UUID, S.AssistantTurnRecorded] = field(default_factory=dict)
    last_turn_version: int = 0
    tokens_used: int = 0
    stalled_turns: int = 0
    failures: dict[tuple[str, str], int] = field(default_factory=dict)
    skill: S.SkillActivated | None = None  # the skill active now, if any
    # A run's model since a fallback took over from the one it started with.
    fallback_models: dict[UUID, str] = field(default_factory=dict)
    mcp_toolset: S.McpToolsetChanged | None = None  # the MCP tools offered now
    source_numbers: dict[str, int] = field(default_factory=dict)  # url -> its number
    sources: dict[int, NumberedSource] = field(default_factory=dict)  # by number
    _done: frozenset[str] = frozenset()

    @classmethod
    def of(cls, events: Iterable[SessionEvent]) -> Ledger:
        ledger = cls()
        for e in events:
            ledger.apply(e)
        return ledger

    def apply(self, e: SessionEvent) -> None:
        match e:
            case S.SessionStarted(settings=settings, workspace_id=workspace, owner_id=owner):
                self.settings, self.workspace_id, self.owner_id = settings, workspace, owner
                self.started = e
            case S.RunRequested(run_id=run_id):
                self.active_run = run_id
            case S.RunStarted(run_id=run_id):
                self.started_runs.add(run_id)
            case S.RunCompleted() | S.RunFailed() | S.RunStopped():
                self.active_run = None
            case S.AssistantTurnRecorded():
                self._turn(e)
            case S.ToolCallRequested(tool_use_id=tool_use_id, tool=tool):
                self.tools_by_use[tool_use_id] = tool
                self.requested[tool_use_id] = e
            case S.ToolResultRecorded():
                self._result(e)
            case S.StrikeRecorded(tool=tool, error_signature=signature):
                self.failures[(tool, signature)] = 0
            case S.ConfirmationRequested(tool_use_id=tool_use_id):
                self.confirmations[tool_use_id] = e
            case S.ConfirmationGiven(action_id=action_id):
                self.answers[action_id] = e
            case S.PlanUpdated(items=items):
                done = frozenset(i.title for i in items if i.status == "done")
                if done - self._done:
                    self.stalled_turns = 0  # the plan moved forward
                self._done = done
            case S.RebootRequested() | S.UserMessageAppended():
                self.stalled_turns = 0  # a reboot, or news from the user: counted afresh
            case S.SkillActivated():
                self.skill = e
            case S.ModelFallbackUsed(run_id=run_id, to_model=to_model):
                self.fallback_models[run_id] = to_model
            case S.McpToolsetChanged():
                self.mcp_toolset = e
            case S.SourceRecorded(url=url, number=number):
                self.source_numbers[url] = number
                add_source(self.sources, e)
            case (
                S.FindingRecorded() | S.ProgressNoted() | S.MemoriesRecalled()
                | S.ContextCompacted() | S.BudgetThresholdReached()
                | S.ArtifactCreated() | D.DeckEvent()
                | S.SessionRenamed()
                | S.SessionCompleted() | S.SessionArchived()
            ):  # fmt: skip
                pass  # nothing the loop asks about
            case _:
                assert_never(e)

    @property
    def memory_scope(self) -> MemoryScope | None:
        """Whose memories the session's agent uses, once its start is applied."""
        return None if self.started is None else memory_scope(self.started)

    @property
    def billing(self) -> BillingScope | None:
        """Whose budgets cover the session's spend, once its start is applied."""
        start = self.started
        if start is None:
            return None
        return BillingScope(
            start.organization_id, start.team_id, start.workspace_id, start.owner_id
        )

    def live(self) -> Ledger:
        """The same answers for every call still in question (those of each run's last
        turn, and any without a result), without the settled calls of older turns."""
        keep = {
            u["id"] for t in self.last_turn_by_run.values() for u in blocks_tool_uses(t.content)
        }
        keep |= self.requested.keys() - self.results.keys()
        asked = {k: v for k, v in self.confirmations.items() if k in keep}
        actions = {c.action_id for c in asked.values()}
        return replace(
            self,
            tools_by_use={k: v for k, v in self.tools_by_use.items() if k in keep},
            requested={k: v for k, v in self.requested.items() if k in keep},
            results={k: v for k, v in self.results.items() if k in keep},
            confirmations=asked,
            answers={k: v for k, v in self.answers.items() if k in actions},
        )

    @property
    def done_steps(self) -> frozenset[str]:
        """The plan's steps marked done in its newest update."""
        return self._done

    def restore_done(self, done: frozenset[str]) -> None:
        self._done = done

    def failures_of(self, tool: str, error: str) -> int:
        """Failures of `tool` with this error's signature since its last strike."""
        return self.failures.get((tool, error_signature(error)), 0)

    def tool_uses_of_last_turn(self, run_id: UUID) -> list[ToolUseContent]:
        turn = self.last_turn_by_run.get(run_id)
        return [] if turn is None else blocks_tool_uses(turn.content)

    def _turn(self, e: S.AssistantTurnRecorded) -> None:
        self.turns_by_run[e.run_id] = self.turns_by_run.get(e.run_id, 0) + 1
        self.last_turn_by_run[e.run_id] = e
        self.last_turn_version = e.originator_version
        self.tokens_used += e.tokens
        self.stalled_turns += 1

    def _result(self, e: S.ToolResultRecorded) -> None:
        self.results[e.tool_use_id] = e
        if e.status == "error":
            tool = self.tools_by_use.get(e.tool_use_id, "")
            key = (tool, error_signature(e.error or ""))
            self.failures[key] = self.failures.get(key, 0) + 1


def memory_scope(start: S.SessionStarted) -> MemoryScope:
    """Whose memories a session's agent uses: as its start says."""
    return MemoryScope(start.owner_id, start.workspace_id, start.organization_id, start.team_id)
