"""The union of a session's event classes: what every consumer matches on.

A consumer's `match` ends in `assert_never`, so an event class added here and
forgotten by a consumer is a type error, not a silent gap.
"""

from __future__ import annotations

from typing import TypeAlias

from domain.session import AgentSession

S = AgentSession

SessionEvent: TypeAlias = (
    S.SessionStarted
    | S.UserMessageAppended
    | S.AssistantTurnRecorded
    | S.ToolCallRequested
    | S.ToolResultRecorded
    | S.ConfirmationRequested
    | S.ConfirmationGiven
    | S.PlanUpdated
    | S.FindingRecorded
    | S.ProgressNoted
    | S.StrikeRecorded
    | S.RebootRequested
    | S.ContextCompacted
    | S.BudgetThresholdReached
    | S.SourceRecorded
    | S.SkillActivated
    | S.MemoriesRecalled
    | S.ModelFallbackUsed
    | S.McpToolsetChanged
    | S.ArtifactCreated
    | S.DeckCreated
    | S.SlideAdded
    | S.SlideRewritten
    | S.SlideRemoved
    | S.SlidesReordered
    | S.TemplateChanged
    | S.RunRequested
    | S.RunStarted
    | S.RunCompleted
    | S.RunFailed
    | S.RunStopped
    | S.SessionRenamed
    | S.SessionCompleted
    | S.SessionArchived
)

SESSION_EVENT_CLASSES: tuple[type[SessionEvent], ...] = SessionEvent.__args__

RunEnded: TypeAlias = S.RunCompleted | S.RunFailed | S.RunStopped


def as_session_event(e: object) -> SessionEvent:
    """A stored event of a session, checked: anything else is a bug in the caller."""
    if not isinstance(e, SESSION_EVENT_CLASSES):
        raise TypeError(f"not a session event: {type(e).__qualname__}")
    return e
