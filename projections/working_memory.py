"""The working-memory read model: each session's task plan, findings and progress.

The documents are rendered once, when an event changes them, so a read is one row.
The row also keeps the fold's state, so the next event is folded into it rather
than into the whole log again.
"""

from __future__ import annotations

from typing import assert_never
from uuid import UUID

from psycopg import Cursor
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from domain.events import SessionEvent
from domain.session import AgentSession as S
from domain.session_decks import DeckLog as D
from domain.working_memory import KEPT_FAILURES, WorkingMemory, WorkingMemoryState, fold
from domain.working_memory_render import render
from projections.view import SessionView

DOCUMENT_COLUMNS = (
    "task_plan, findings, progress, plan_counts, finding_count, citation_count, "
    "source_count, version, updated_at"
)


class WorkingMemoryView(SessionView):
    """`task_plan.md`, `findings.md` and `progress.md` per session, ready to serve."""

    name = "working_memory"
    create_statements = (
        """CREATE TABLE IF NOT EXISTS working_memory_view (
            session_id uuid PRIMARY KEY,
            state jsonb NOT NULL,
            task_plan text NOT NULL,
            findings text NOT NULL,
            progress text NOT NULL,
            plan_counts jsonb NOT NULL,
            finding_count integer NOT NULL,
            citation_count integer NOT NULL,
            source_count integer NOT NULL,
            version bigint NOT NULL,
            updated_at timestamptz
        )""",
    )
    clear_statements = ("DELETE FROM working_memory_view",)

    def apply_session_event(self, curs: Cursor[DictRow], event: SessionEvent) -> None:
        session_id = event.originator_id
        match event:
            case S.ToolCallRequested(tool_use_id=tool_use_id, tool=tool):
                # The commonest events, and they change no document: the state's
                # `open_calls` (so that a failure can name its tool) is edited in place,
                # a write with no read, which a pipeline sends without waiting.
                curs.execute(
                    "UPDATE working_memory_view SET state = jsonb_set(state, "
                    "ARRAY['open_calls', %s::text], to_jsonb(%s::text)) WHERE session_id = %s",
                    (tool_use_id, tool, session_id),
                )
            case S.ToolResultRecorded(status=status) if status not in KEPT_FAILURES:
                curs.execute(
                    "UPDATE working_memory_view SET state = state #- ARRAY['open_calls', %s::text] "
                    "WHERE session_id = %s",
                    (event.tool_use_id, session_id),
                )
            case S.SessionStarted():
                self._store(curs, session_id, fold(WorkingMemoryState(), event))
            case (
                S.ToolResultRecorded() | S.SessionRenamed() | S.PlanUpdated()
                | S.FindingRecorded() | S.ProgressNoted() | S.StrikeRecorded() | S.RunStarted()
                | S.RunCompleted() | S.RunFailed() | S.RunStopped()
            ):  # fmt: skip
                self._store(curs, session_id, fold(self._load(curs, session_id), event))
            case (
                S.UserMessageAppended() | S.AssistantTurnRecorded() | S.ConfirmationRequested()
                | S.ConfirmationGiven() | S.RebootRequested() | S.ContextCompacted()
                | S.BudgetThresholdReached() | S.SourceRecorded() | S.SkillActivated()
                | S.MemoriesRecalled()
                | S.ArtifactCreated() | D.DeckEvent() | S.RunRequested() | S.SessionCompleted()
                | S.SessionArchived()
            ):  # fmt: skip
                pass  # no document shows these
            case _:
                assert_never(event)

    def _load(self, curs: Cursor[DictRow], session_id: UUID) -> WorkingMemoryState:
        # Fetching at once is what makes a read work inside `apply_batch`'s pipeline:
        # psycopg syncs the pipeline, so the row holds every earlier write of the batch.
        curs.execute("SELECT state FROM working_memory_view WHERE session_id = %s", (session_id,))
        row = curs.fetchone()
        if row is None:
            # The session's start was never applied: stop loudly rather than build
            # documents from half a log.
            raise LookupError(f"no working memory for session {session_id}")
        return WorkingMemoryState.from_json(row["state"])

    def _store(self, curs: Cursor[DictRow], session_id: UUID, state: WorkingMemoryState) -> None:
        memory = render(state)
        curs.execute(
            f"INSERT INTO working_memory_view (session_id, state, {DOCUMENT_COLUMNS}) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (session_id) DO UPDATE SET state = EXCLUDED.state, "
            "task_plan = EXCLUDED.task_plan, findings = EXCLUDED.findings, "
            "progress = EXCLUDED.progress, plan_counts = EXCLUDED.plan_counts, "
            "finding_count = EXCLUDED.finding_count, citation_count = EXCLUDED.citation_count, "
            "source_count = EXCLUDED.source_count, version = EXCLUDED.version, "
            "updated_at = EXCLUDED.updated_at",
            (
                session_id, Jsonb(state.to_json()), memory.task_plan, memory.findings,
                memory.progress, Jsonb(dict(memory.plan_counts)), memory.finding_count,
                memory.citation_count, memory.source_count, memory.version, memory.updated_at,
            ),
        )  # fmt: skip

    # -- queries --------------------------------------------------------------

    def get(self, session_id: UUID) -> WorkingMemory | None:
        """The session's documents, or None if the view has not seen the session."""
        with self.datastore.get_connection() as conn:
            row = conn.execute(
                f"SELECT {DOCUMENT_COLUMNS} FROM working_memory_view WHERE session_id = %s",
                (session_id,),
            ).fetchone()
        return WorkingMemory(**row) if row else None

    def state(self, session_id: UUID) -> WorkingMemoryState | None:
        """The fold's state as stored (to compare with a fold of the log)."""
        with self.datastore.get_connection() as conn:
            row = conn.execute(
                "SELECT state FROM working_memory_view WHERE session_id = %s", (session_id,)
            ).fetchone()
        return WorkingMemoryState.from_json(row["state"]) if row else None

    def all_rows(self) -> list[dict[str, object]]:
        """Every row, ordered (for comparing a rebuilt view with the live one)."""
        with self.datastore.get_connection() as conn:
            return list(
                conn.execute("SELECT * FROM working_memory_view ORDER BY session_id").fetchall()
            )
