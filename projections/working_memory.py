"""The working-memory read model: each session's task plan, findings and progress.

The plan and the findings are rendered once, when an event changes them, so a read
is one row. The row also keeps the fold's state, so the next event is folded into it
rather than into the whole log again. The progress log, which grows by two lines a
run for as long as the session lives, is kept as a row per line
(`working_memory_progress`), written once, and rendered when read: a message costs
the lines it adds, not the whole log again (the row keeps only their count).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from uuid import UUID

from psycopg import Cursor
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from domain.events import SessionEvent, as_session_event
from domain.session import AgentSession as S
from domain.working_memory import (
    KEPT_FAILURES,
    LogEntry,
    WorkingMemory,
    WorkingMemoryState,
    fold,
)
from domain.working_memory_render import render, render_progress
from projections.pg_arrays import array_of
from projections.view import Event, SessionView

DOCUMENT_COLUMNS = (
    "task_plan, findings, plan_counts, finding_count, citation_count, "
    "source_count, version, updated_at"
)
PROGRESS_COUNT = "progress_count"  # in the stored state: the lines in the progress table


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
        # Rendered when read now (from working_memory_progress), not on every change.
        "ALTER TABLE working_memory_view DROP COLUMN IF EXISTS progress",
        """CREATE TABLE IF NOT EXISTS working_memory_progress (
            session_id uuid NOT NULL,
            seq integer NOT NULL,
            at text NOT NULL,
            text text NOT NULL,
            PRIMARY KEY (session_id, seq)
        )""",
    )
    clear_statements = ("DELETE FROM working_memory_view", "DELETE FROM working_memory_progress")

    def apply_events(self, curs: Cursor[DictRow], events: Sequence[Event]) -> None:
        """A batch: each session whose documents it changes is read once (all of them in
        one statement), folded through all of its events in the batch, and written
        once. A session whose events change only its open calls (the commonest: calls
        and the results that worked) is edited in place, a write with no read, which a
        pipeline sends without waiting."""
        batch = [as_session_event(e) for e in events]
        folded = {e.originator_id for e in batch if _changes_documents(e)}
        started = {e.originator_id for e in batch if isinstance(e, S.SessionStarted)}
        loaded = self._load_all(curs, folded - started)
        states = {sid: state for sid, (state, _) in loaded.items()}
        lines = {sid: count for sid, (_, count) in loaded.items()}
        for event in batch:
            sid = event.originator_id
            if sid not in folded:
                self._edit_open_calls(curs, event)
                continue
            if isinstance(event, S.SessionStarted):
                states[sid], lines[sid] = WorkingMemoryState(), 0
            states[sid] = fold(states[sid], event)
        for sid, state in states.items():
            self._store(curs, sid, state, lines[sid])

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
    ) -> dict[UUID, tuple[WorkingMemoryState, int]]:
        """Each session's state with no progress lines (but a row written before the
        lines had a table of their own: all of them, to be moved there), and how many
        lines the table holds."""
        if not session_ids:
            return {}
        curs.execute(
            "SELECT session_id, state FROM working_memory_view WHERE session_id = ANY(%s)",
            (array_of("uuid")(session_ids),),
        )
        # Fetched at once: psycopg syncs the batch's pipeline for it, so what the rows say
        # includes every write sent before it in this transaction.
        rows = curs.fetchall()
        found = {
            r["session_id"]: (
                WorkingMemoryState.from_json(r["state"]),
                int(r["state"].get(PROGRESS_COUNT, 0)),
            )
            for r in rows
        }
        missing = set(session_ids) - found.keys()
        if missing:  # a start never applied: stop loudly rather than build half a log
            raise LookupError(f"no working memory for sessions {sorted(map(str, missing))}")
        return found

    def _store(
        self, curs: Cursor[DictRow], session_id: UUID, state: WorkingMemoryState, lines: int
    ) -> None:
        """The session's row and, in the same statement, its new progress lines
        (`state.progress`: those the batch added) after the `lines` the table holds."""
        memory = render(replace(state, progress=()))
        stored = {**state.to_json(), "progress": [], PROGRESS_COUNT: lines + len(state.progress)}
        curs.execute(
            "WITH added AS (INSERT INTO working_memory_progress (session_id, seq, at, text) "
            "SELECT %(sid)s, s, a, t FROM unnest(%(seqs)s::int[], %(ats)s::text[], "
            "%(texts)s::text[]) AS x(s, a, t) ON CONFLICT DO NOTHING) "
            f"INSERT INTO working_memory_view (session_id, state, {DOCUMENT_COLUMNS}) "
            "VALUES (%(sid)s, %(state)s, %(task_plan)s, %(findings)s, %(plan_counts)s, "
            "%(finding_count)s, %(citation_count)s, %(source_count)s, %(version)s, "
            "%(updated_at)s) "
            "ON CONFLICT (session_id) DO UPDATE SET state = EXCLUDED.state, "
            "task_plan = EXCLUDED.task_plan, findings = EXCLUDED.findings, "
            "plan_counts = EXCLUDED.plan_counts, "
            "finding_count = EXCLUDED.finding_count, citation_count = EXCLUDED.citation_count, "
            "source_count = EXCLUDED.source_count, version = EXCLUDED.version, "
            "updated_at = EXCLUDED.updated_at",
            {
                "sid": session_id,
                "seqs": array_of("int4")(range(lines, lines + len(state.progress))),
                "ats": array_of("text")(e.at for e in state.progress),
                "texts": array_of("text")(e.text for e in state.progress),
                "state": Jsonb(stored),
                "task_plan": memory.task_plan,
                "findings": memory.findings,
                "plan_counts": Jsonb(dict(memory.plan_counts)),
                "finding_count": memory.finding_count,
                "citation_count": memory.citation_count,
                "source_count": memory.source_count,
                "version": memory.version,
                "updated_at": memory.updated_at,
            },
        )

    # -- queries --------------------------------------------------------------

    def get(self, session_id: UUID) -> WorkingMemory | None:
        """The session's documents, or None if the view has not seen the session."""
        with self.datastore.transaction(commit=False) as curs:  # the row and its lines as one
            curs.execute(
                f"SELECT {DOCUMENT_COLUMNS}, state->'progress' AS unmoved "
                "FROM working_memory_view WHERE session_id = %s",
                (session_id,),
            )
            row = curs.fetchone()
            if row is None:
                return None
            # Lines a row written before their table holds, until its session next changes.
            unmoved = tuple(LogEntry(e["at"], e["text"]) for e in row.pop("unmoved") or ())
            lines = (*_progress(curs, session_id), *unmoved)
        return WorkingMemory(progress=render_progress(WorkingMemoryState(progress=lines)), **row)

    def state(self, session_id: UUID) -> WorkingMemoryState | None:
        """The fold's state as stored (to compare with a fold of the log)."""
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(
                "SELECT state FROM working_memory_view WHERE session_id = %s", (session_id,)
            )
            row = curs.fetchone()
            if row is None:
                return None
            stored = WorkingMemoryState.from_json(row["state"])
            return replace(stored, progress=(*_progress(curs, session_id), *stored.progress))

    def all_rows(self) -> list[dict[str, object]]:
        """Every row and line, ordered (for comparing a rebuilt view with the live one)."""
        with self.datastore.get_connection() as conn:
            rows = conn.execute("SELECT * FROM working_memory_view ORDER BY session_id")
            lines = conn.execute("SELECT * FROM working_memory_progress ORDER BY session_id, seq")
            return [*rows.fetchall(), *lines.fetchall()]


def _progress(curs: Cursor[DictRow], session_id: UUID) -> tuple[LogEntry, ...]:
    curs.execute(
        "SELECT at, text FROM working_memory_progress WHERE session_id = %s ORDER BY seq",
        (session_id,),
    )
    return tuple(LogEntry(r["at"], r["text"]) for r in curs.fetchall())


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
