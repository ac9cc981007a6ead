"""The working-memory read model: each session's task plan, findings and progress.

The documents are rendered once, when an event changes them, so a read is one row.
The row also keeps the fold's state, so the next event is folded into it rather
than into the whole log again.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from uuid import UUID

from psycopg import Cursor
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from domain.events import SessionEvent, as_session_event
from domain.session import AgentSession as S
from domain.working_memory import KEPT_FAILURES, WorkingMemory, WorkingMemoryState, fold
from domain.working_memory_render import render
from projections.pg_arrays import array_of
from projections.view import Event, SessionView

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

    def apply_events(self, curs: Cursor[DictRow], events: Sequence[Event]) -> None:
        """A batch: each session whose documents it changes is read once (all of them in
        one statement), folded through all of its events in the batch, and written
        once. A session whose events change only its open calls (the commonest: calls
        and the results that worked) is edited in place, a write with no read, which a
        pipeline sends without waiting."""
        batch = [as_session_event(e) for e in events]
        folded = {e.originator_id for e in batch if _changes_documents(e)}
        started = {e.originator_id for e in batch if isinstance(e, S.SessionStarted)}
        states = self._load_all(curs, folded - started)
        for event in batch:
            sid = event.originator_id
            if sid not in folded:
                self._edit_open_calls(curs, event)
                continue
            state = WorkingMemoryState() if isinstance(event, S.SessionStarted) else states[sid]
            states[sid] = fold(state, event)
        for sid, state in states.items():
            self._store(curs, sid, state)

    def apply_session_event(self, curs: Cursor[DictRow], event: SessionEvent) -> None:
        self.apply_events(curs, [event])

    def _edit_open_calls(self, curs: Cursor[DictRow], event: SessionEvent) -> None:
        """The state's `open_calls` (kept so that a failure can name its tool)."""
        match event:
            case S.ToolCallRequested(tool_use_id=tool_use_id, tool=tool):
                curs.execute(
                    "UPDATE working_memory_view SET state = jsonb_set(state, "
                    "ARRAY['open_calls', %s::text], to_jsonb(%s::text)) WHERE session_id = %s",
                    (tool_use_id, tool, event.originator_id),
                )
            case S.ToolResultRecorded(tool_use_id=tool_use_id):
                curs.execute(
                    "UPDATE working_memory_view SET state = state #- ARRAY['open_calls', %s::text] "
                    "WHERE session_id = %s",
                    (tool_use_id, event.originator_id),
                )
            case _:
                pass  # no document shows it

    def _load_all(
        self, curs: Cursor[DictRow], session_ids: Collection[UUID]
    ) -> dict[UUID, WorkingMemoryState]:
        if not session_ids:
            return {}
        curs.execute(
            "SELECT session_id, state FROM working_memory_view WHERE session_id = ANY(%s)",
            (array_of("uuid")(session_ids),),
        )
        # Fetched at once: psycopg syncs the batch's pipeline for it, so what the rows say
        # includes every write sent before it in this transaction.
        rows = curs.fetchall()
        found = {r["session_id"]: WorkingMemoryState.from_json(r["state"]) for r in rows}
        missing = set(session_ids) - found.keys()
        if missing:  # a start never applied: stop loudly rather than build half a log
            raise LookupError(f"no working memory for sessions {sorted(map(str, missing))}")
        return found

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


def _changes_documents(event: SessionEvent) -> bool:
    """Whether `event` changes its session's documents, so is folded into its state."""
    match event:
        case S.ToolCallRequested():
            return False  # an open call: named by a later failure, never shown
        case S.ToolResultRecorded(status=status):
            return status in KEPT_FAILURES
        case _:
            empty = WorkingMemoryState()
            return fold(empty, event) is not empty  # the fold gives back what nothing changes
