"""Use cases on agent sessions: each one gets the session, calls it, saves it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import IntegrityError, JSONTranscoder
from eventsourcing.utils import EnvType

from application.steps import CallsStep, ResultStep, TurnStep
from application.transcodings import register_value_objects
from domain.budgets import ThresholdCrossing
from domain.conversation import ModelTurn
from domain.errors import ClaimLost, Conflict, SessionNotFound
from domain.events import SessionEvent, as_session_event
from domain.fork import fork
from domain.session import AgentSession
from domain.values import (
    ArtifactKind,
    AttachedFile,
    Citation,
    CitedSource,
    ModelCallCost,
    PlanItem,
    RecalledMemory,
    RiskLevel,
    SessionSettings,
    SkillActivation,
    SkillSpec,
    SourceSeen,
    ToolResultStatus,
)


@dataclass(frozen=True)
class Receipt:
    """What a command wrote: the events, the new version and the last notification id."""

    session_id: UUID
    version: int
    notification_id: int
    events: tuple[SessionEvent, ...] = ()


@dataclass
class _Hold:
    """A run this process drives, and who holds it (see `SessionService.hold`)."""

    session_id: UUID
    run_id: UUID
    worker: str | None

    def check(self, session: AgentSession) -> None:
        if session.active_run != self.run_id:
            raise ClaimLost(f"run {self.run_id} of session {session.id} is no longer active")
        if session.run_worker not in (None, self.worker) and self.worker is not None:
            raise ClaimLost(
                f"run {self.run_id} of session {session.id} was claimed by "
                f"{session.run_worker}, not {self.worker}"
            )


# The run whose task this is, if any: set by `SessionService.hold` in the task that drives
# the run, and seen by what that task calls (`SyncBridge` carries it into the thread).
_HOLD: ContextVar[_Hold | None] = ContextVar("tokendance_run_hold", default=None)


class SessionService(Application[UUID]):
    """The agent sessions application (the write side)."""

    name = "tokendance"
    snapshotting_intervals = {AgentSession: 200}
    env = {
        "AGGREGATE_CACHE_MAXSIZE": "1000",
        "COMPRESSOR_TOPIC": "",
    }

    def __init__(self, env: EnvType | None = None) -> None:
        super().__init__(env)
        # Replay applies the inputs a run met midway (a takeover's claim) through this.
        self.before_change: Callable[[AgentSession], None] | None = None

    def register_transcodings(self, transcoder: JSONTranscoder) -> None:
        super().register_transcodings(transcoder)
        register_value_objects(transcoder)

    # -- commands -------------------------------------------------------------

    def start_session(
        self,
        *,
        workspace_id: UUID,
        owner_id: UUID,
        title: str,
        task_type: str = "general",
        model: str = "",
        settings: SessionSettings | None = None,
        organization_id: UUID | None = None,
        team_id: UUID | None = None,
    ) -> Receipt:
        session = AgentSession.start(
            workspace_id=workspace_id,
            owner_id=owner_id,
            title=title,
            task_type=task_type,
            model=model,
            settings=settings,
            organization_id=organization_id,
            team_id=team_id,
        )
        return self._save(session)

    def append_user_message(
        self,
        session_id: UUID,
        text: str,
        *,
        attachments: list[str] | None = None,
        idempotency_key: str | None = None,
        expected_version: int | None = None,
        files: Sequence[AttachedFile] = (),
    ) -> Receipt:
        return self._change(
            session_id,
            lambda s: s.append_user_message(text, attachments, idempotency_key, files),
            expected_version,
        )

    def submit_message(
        self,
        session_id: UUID,
        text: str,
        run_id: UUID,
        *,
        attachments: list[str] | None = None,
        idempotency_key: str | None = None,
        files: Sequence[AttachedFile] = (),
    ) -> Receipt:
        """Append a user message and request a run for it, together or not at all."""

        def submit(s: AgentSession) -> None:
            s.append_user_message(text, attachments, idempotency_key, files)
            s.request_run(run_id)

        return self._change(session_id, submit)

    def stop_active_run(self, session_id: UUID, reason: str) -> Receipt:
        return self._change(session_id, lambda s: s.stop(reason))

    def record_assistant_turn(
        self,
        session_id: UUID,
        run_id: UUID,
        turn: ModelTurn,
        latency_ms: int,
        cost: ModelCallCost | None = None,
        citations: Sequence[CitedSource] = (),
        unknown_markers: Sequence[int] = (),
    ) -> Receipt:
        """Record a finished turn with what it cost (default: unpriced) and what it cites."""
        cost = cost or ModelCallCost()
        return self._change(
            session_id,
            lambda s: s.record_assistant_turn(
                run_id, turn, latency_ms, cost, citations, unknown_markers
            ),
        )

    def request_tool_call(
        self,
        session_id: UUID,
        tool_use_id: str,
        tool: str,
        args: dict[str, object],
        risk: RiskLevel = "safe",
    ) -> Receipt:
        return self._change(
            session_id, lambda s: s.request_tool_call(tool_use_id, tool, args, risk)
        )

    def record_tool_result(
        self,
        session_id: UUID,
        tool_use_id: str,
        status: ToolResultStatus,
        summary: str,
        *,
        blob_ref: str | None = None,
        error: str | None = None,
        duration_ms: int = 0,
        sources: Sequence[int] = (),
    ) -> Receipt:
        return self._change(
            session_id,
            lambda s: s.record_tool_result(
                tool_use_id,
                status,
                summary,
                blob_ref=blob_ref,
                error=error,
                duration_ms=duration_ms,
                sources=sources,
            ),
        )

    def update_plan(self, session_id: UUID, items: list[PlanItem]) -> Receipt:
        return self._change(session_id, lambda s: s.update_plan(items))

    def request_run(self, session_id: UUID, run_id: UUID) -> Receipt:
        return self._change(session_id, lambda s: s.request_run(run_id))

    def start_run(self, session_id: UUID, run_id: UUID, worker: str) -> Receipt:
        return self._change(session_id, lambda s: s.start_run(run_id, worker))

    def complete_run(self, session_id: UUID, run_id: UUID, reason: str = "end_turn") -> Receipt:
        return self._change(session_id, lambda s: s.complete_run(run_id, reason))

    def fail_run(
        self, session_id: UUID, run_id: UUID, reason: str, error_code: str = "RUN_FAILED"
    ) -> Receipt:
        return self._change(session_id, lambda s: s.fail_run(run_id, reason, error_code))

    def stop_run(self, session_id: UUID, run_id: UUID, reason: str = "stopped by user") -> Receipt:
        return self._change(session_id, lambda s: s.stop_run(run_id, reason))

    def request_confirmation(
        self,
        session_id: UUID,
        action_id: str,
        tool_use_id: str,
        tool: str,
        args: dict[str, object],
        description: str,
    ) -> Receipt:
        return self._change(
            session_id,
            lambda s: s.request_confirmation(action_id, tool_use_id, tool, args, description),
        )

    def give_confirmation(
        self,
        session_id: UUID,
        action_id: str,
        approved: bool,
        feedback: str | None = None,
        by: str = "",
    ) -> Receipt:
        return self._change(
            session_id, lambda s: s.give_confirmation(action_id, approved, feedback, by)
        )

    def record_finding(self, session_id: UUID, text: str, citations: list[Citation]) -> Receipt:
        return self._change(session_id, lambda s: s.record_finding(text, citations))

    def note_progress(self, session_id: UUID, text: str) -> Receipt:
        return self._change(session_id, lambda s: s.note_progress(text))

    def record_strike(self, session_id: UUID, tool: str, signature: str, count: int) -> Receipt:
        return self._change(session_id, lambda s: s.record_strike(tool, signature, count))

    def request_reboot(
        self, session_id: UUID, questions: list[str], iterations_without_progress: int
    ) -> Receipt:
        return self._change(
            session_id, lambda s: s.request_reboot(questions, iterations_without_progress)
        )

    def record_compaction(
        self,
        session_id: UUID,
        summary: str,
        through_version: int,
        tokens_before: int,
        tokens_after: int,
        call: ModelTurn | None = None,
        cost: ModelCallCost | None = None,
    ) -> Receipt:
        """Record a summary and the model call (`call`) that wrote it (None: no call)."""
        cost = cost or ModelCallCost()
        return self._change(
            session_id,
            lambda s: s.record_compaction(
                summary, through_version, tokens_before, tokens_after, call, cost
            ),
        )

    def note_budget_threshold(self, session_id: UUID, crossing: ThresholdCrossing) -> Receipt:
        """Tell the session's stream that one of its calls crossed a budget threshold."""
        c = crossing
        return self._change(
            session_id,
            lambda s: s.note_budget_threshold(
                c.scope, c.scope_id, c.period, c.threshold, c.spent_usd, c.limit_usd,
                c.spent_tokens, c.limit_tokens,
            ),
        )  # fmt: skip

    def fork_session(self, session_id: UUID, at_version: int) -> Receipt:
        """A new session holding this one's log up to `at_version`, referring to it."""
        parent = self.get_session(session_id)
        history = [e for e in self.session_events(session_id) if e.originator_version <= at_version]
        return self._save(fork(parent, history, at_version))

    def record_artifact(
        self,
        session_id: UUID,
        kind: ArtifactKind,
        name: str,
        blob_ref: str,
        *,
        size: int,
        sha256: str,
        media_type: str,
        tool_use_id: str | None = None,
    ) -> Receipt:
        return self._change(
            session_id,
            lambda s: s.record_artifact(
                kind, name, blob_ref, size, sha256, media_type, tool_use_id
            ),
        )

    def activate_skill(
        self, session_id: UUID, skill: SkillSpec, score: float, by: SkillActivation
    ) -> Receipt:
        """A skill takes over the session (its instructions join the conversation)."""
        return self._change(session_id, lambda s: s.activate_skill(skill, score, by))

    def recall_memories(
        self, session_id: UUID, run_id: UUID, query: str, memories: list[RecalledMemory]
    ) -> Receipt:
        """Memories recalled at a run's start join the conversation."""
        return self._change(session_id, lambda s: s.recall_memories(run_id, query, memories))

    def record_sources(self, session_id: UUID, tool_use_id: str, seen: list[SourceSeen]) -> Receipt:
        """Number the pages a tool call saw (see `AgentSession.record_sources`)."""
        return self._change(session_id, lambda s: s.record_sources(tool_use_id, seen))

    def change_deck(
        self,
        session_id: UUID,
        command: Callable[[AgentSession], None],
        expected_version: int | None = None,
    ) -> Receipt:
        """A deck's change (`application.decks`), saved in one write; `Conflict` if the
        session moved past `expected_version` (the deck it changed may be stale)."""
        return self._change(session_id, command, expected_version)

    def copy_deck_change(self, session_id: UUID, e: AgentSession.SlideRewritten) -> Receipt:
        """A user's slide regeneration recorded again as it was (a replay's input)."""
        return self._change(session_id, lambda s: s.repeat(e))

    def record_turn_and_calls(self, session_id: UUID, step: TurnStep) -> Receipt:
        """A model turn, the thresholds its cost crossed, the calls it requests (or the
        end of its run): one save."""
        return self._change(session_id, step.apply)

    def request_calls(self, session_id: UUID, step: CallsStep) -> Receipt:
        """Tool calls requested, and the approval the last one waits for: one save."""
        return self._change(session_id, step.apply)

    def record_result_and_effects(self, session_id: UUID, step: ResultStep) -> Receipt:
        """A tool result with its notes, sources and strike: one save."""
        return self._change(session_id, step.apply)

    def rename_session(
        self, session_id: UUID, title: str, *, expected_version: int | None = None
    ) -> Receipt:
        return self._change(session_id, lambda s: s.rename(title), expected_version)

    def complete_session(self, session_id: UUID) -> Receipt:
        return self._change(session_id, lambda s: s.complete())

    def archive_session(self, session_id: UUID) -> Receipt:
        return self._change(session_id, lambda s: s.archive())

    # -- queries on the log ---------------------------------------------------

    def get_session(self, session_id: UUID, version: int | None = None) -> AgentSession:
        try:
            return self.repository.get(session_id, version=version)
        except AggregateNotFoundError:
            raise SessionNotFound(session_id) from None

    def session_events(
        self, session_id: UUID, *, after: int = 0, limit: int | None = None
    ) -> Iterator[SessionEvent]:
        """The session's stored events with version greater than `after`, in order."""
        stored = self.events.get(session_id, gt=after or None, limit=limit)
        return iter([as_session_event(e) for e in stored])

    # -- plumbing ---------------------------------------------------------------

    @contextmanager
    def hold(self, session_id: UUID, run_id: UUID, worker: str | None = None) -> Iterator[None]:
        """While the calling task drives `run_id`, refuse the writes it makes to the
        session (itself, or through what it calls: tasks it starts, the bridge's threads)
        once the run has ended or another worker has claimed it (`ClaimLost`). Other
        commands this process handles meanwhile are the aggregate's alone to judge.

        `worker` is who holds the run; unknown (a run started or resumed in this
        process), it is the run's worker at this process's first write.
        """
        token = _HOLD.set(_Hold(session_id, run_id, worker))
        try:
            yield
        finally:
            _HOLD.reset(token)

    def _change(
        self,
        session_id: UUID,
        command: Callable[[AgentSession], None],
        expected_version: int | None = None,
    ) -> Receipt:
        session = self.get_session(session_id)
        if expected_version is not None and session.version != expected_version:
            raise Conflict(
                f"session {session_id} is at version {session.version}, not {expected_version}"
            )
        if self.before_change is not None:
            self.before_change(session)
        hold = _HOLD.get()
        if hold is not None and hold.session_id != session_id:
            hold = None  # the run's task writing to another session: not fenced by this run
        if hold is not None:
            hold.check(session)
        command(session)
        if hold is not None and hold.worker is None:
            hold.worker = session.run_worker
        return self._save(session)

    def _save(self, session: AgentSession) -> Receipt:
        try:
            recordings = self.save(session)
        except IntegrityError:
            # Another writer stored this version first (the cache only ever hands
            # out copies, so nothing needs undoing).
            raise Conflict(f"session {session.id} was changed by another command") from None
        events = tuple(as_session_event(r.domain_event) for r in recordings)
        return Receipt(session.id, session.version, recordings[-1].notification.id, events)
