"""The episodes read model: what a user said, was answered and found, searchable later.

Every session title, user message, assistant answer and finding is one row, keyed by
its session and version, so a hit links straight to that point of the session. Rows are
found by their words (a generated `tsvector`, 'simple' config: no language's stemming
or stop words, since sessions mix languages) and by their meaning (vectors of every
model being written, through `EmbeddingModels`, so one re-embed covers this table).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, assert_never
from uuid import UUID, uuid5

from eventsourcing.postgres import PostgresDatastore
from psycopg import Cursor
from psycopg.rows import DictRow
from psycopg.sql import SQL, Composed

from domain.events import SessionEvent, as_session_event
from domain.session import AgentSession as S
from domain.session_decks import DeckLog as D
from domain.stored_blocks import blocks_text
from projections.episode_queries import EpisodeScope, by_meaning, fused, graph_ef
from projections.memory_vectors import EmbeddingModels, VectorTable, vector_literal
from projections.pg_arrays import array_of
from projections.view import Event, SessionView

EpisodeKind = Literal["session", "message", "answer", "finding"]  # the episodes.kind check


@dataclass(frozen=True)
class EpisodeHit:
    """A found episode: where it is (session and version), what it is, and why it was found."""

    session_id: UUID
    version: int
    kind: EpisodeKind
    snippet: str  # the matched words in **bold**, or the text's start if found by meaning
    score: float  # reciprocal rank fusion of the word and meaning ranks (higher is better)


# Every episode has a vector of each model being written; the copies of owner,
# workspace and time let a search filter the vectors without a join.
EPISODE_VECTORS = VectorTable(
    name="episode_vectors", source="episodes", key="item_id", text="text", view="episodes",
    extra=("owner_id", "workspace_id", "created_at"),
)  # fmt: skip
VECTOR_STATEMENTS = (
    """CREATE TABLE IF NOT EXISTS episode_vectors (
        item_id uuid NOT NULL,
        model text NOT NULL,
        embedding vector NOT NULL,
        owner_id uuid NOT NULL,
        workspace_id uuid NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (item_id, model)
    )""",
    "CREATE INDEX IF NOT EXISTS episode_vectors_by_owner ON episode_vectors (owner_id, model)",
)
# Words past this many characters are not indexed: a tsvector holds at most 1 MB, which
# a message of 1 MiB of distinct words exceeds (the view would stop on it).
INDEXED_CHARS = 150_000


def item_id_of(session_id: UUID, version: int) -> UUID:
    """An episode's id: one per session event, the same in every rebuild."""
    return uuid5(session_id, str(version))


class EpisodesView(SessionView):
    """A user's past sessions, messages, answers and findings, by words and by meaning."""

    name = "episodes"
    create_statements = (
        """CREATE TABLE IF NOT EXISTS episode_sessions (
            session_id uuid PRIMARY KEY,
            owner_id uuid NOT NULL,
            workspace_id uuid NOT NULL,
            organization_id uuid,
            title text NOT NULL
        )""",
        f"""CREATE TABLE IF NOT EXISTS episodes (
            item_id uuid PRIMARY KEY,
            session_id uuid NOT NULL,
            version bigint NOT NULL,
            kind text NOT NULL CHECK (kind IN ('session', 'message', 'answer', 'finding')),
            owner_id uuid NOT NULL,
            workspace_id uuid NOT NULL,
            text text NOT NULL,
            created_at timestamptz NOT NULL,
            tsv tsvector GENERATED ALWAYS AS
                (to_tsvector('simple', left(text, {INDEXED_CHARS}))) STORED
        )""",
        "CREATE INDEX IF NOT EXISTS episodes_by_words ON episodes USING gin (tsv)",
        "CREATE INDEX IF NOT EXISTS episodes_by_owner ON episodes (owner_id, created_at)",
    )
    # The models' tables are shared with the other vector views: never cleared here.
    clear_statements = (
        "DELETE FROM episode_vectors", "DELETE FROM episodes", "DELETE FROM episode_sessions",
    )  # fmt: skip

    def __init__(self, datastore: PostgresDatastore, models: EmbeddingModels) -> None:
        super().__init__(datastore)
        self.models = models
        # After the view's own tables: the vectors table needs the extension these create.
        statements = (*models.create_statements, *VECTOR_STATEMENTS)
        self.sql_create_statements.extend(Composed([SQL(s)]) for s in statements)

    def create_table(self) -> None:
        super().create_table()
        # The ready model's index; a model brought in later gets its own from `reembed`.
        with self.datastore.transaction(commit=True) as curs:
            ready = self.models.active(curs)
            EPISODE_VECTORS.ensure_index(curs, ready.model, ready.dimension)

    def apply_events(self, curs: Cursor[DictRow], events: Sequence[Event]) -> None:
        """The batch's episodes, then their vectors together: one look in the embedding
        cache, one call of each model for the texts it has not seen, one insert."""
        new: list[tuple[UUID, str]] = []  # (item id, text) of each episode added
        for event in events:
            self._apply(curs, as_session_event(event), new)
        self._embed(curs, new)

    def apply_session_event(self, curs: Cursor[DictRow], event: SessionEvent) -> None:
        self.apply_events(curs, [event])

    def _apply(
        self, curs: Cursor[DictRow], event: SessionEvent, new: list[tuple[UUID, str]]
    ) -> None:
        match event:
            case S.SessionStarted(title=title):
                curs.execute(
                    "INSERT INTO episode_sessions (session_id, owner_id, workspace_id, "
                    "organization_id, title) VALUES (%s, %s, %s, %s, %s)",
                    (event.originator_id, event.owner_id, event.workspace_id,
                     event.organization_id, title),
                )  # fmt: skip
                self._add(curs, event, "session", title, new)
            case S.SessionRenamed(title=title):
                # The session is found by the name it has now, linked to its renaming.
                curs.execute(
                    "UPDATE episode_sessions SET title = %s WHERE session_id = %s",
                    (title, event.originator_id),
                )
                self._drop_title(curs, event.originator_id)
                self._add(curs, event, "session", title, new)
            case S.UserMessageAppended(text=text):
                self._add(curs, event, "message", text, new)
            case S.AssistantTurnRecorded(content=content):
                text = blocks_text(content)
                if text.strip():  # a turn of tool calls only says nothing to find
                    self._add(curs, event, "answer", text, new)
            case S.FindingRecorded(text=text):
                self._add(curs, event, "finding", text, new)
            case (
                S.ToolCallRequested() | S.ToolResultRecorded() | S.ConfirmationRequested()
                | S.ConfirmationGiven() | S.PlanUpdated() | S.ProgressNoted()
                | S.StrikeRecorded() | S.RebootRequested() | S.ContextCompacted()
                | S.BudgetThresholdReached() | S.SourceRecorded() | S.SkillActivated()
                | S.MemoriesRecalled() | S.ArtifactCreated() | D.DeckEvent()
                | S.RunRequested() | S.RunStarted() | S.RunCompleted() | S.RunFailed()
                | S.RunStopped() | S.SessionCompleted() | S.SessionArchived()
                | S.ModelFallbackUsed() | S.McpToolsetChanged()
            ):  # fmt: skip
                pass  # not something a user looks back for
            case _:
                assert_never(event)

    def _add(
        self,
        curs: Cursor[DictRow],
        event: SessionEvent,
        kind: EpisodeKind,
        text: str,
        new: list[tuple[UUID, str]],
    ) -> None:
        # Owner and workspace come from the session's row by subselect, not a read:
        # no round trip inside the batch's pipeline, and a session whose start was
        # never applied fails the NOT NULL (the view stops) instead of losing the row.
        session_id, version = event.originator_id, event.originator_version
        item_id = item_id_of(session_id, version)
        curs.execute(
            "INSERT INTO episodes (item_id, session_id, version, kind, owner_id, workspace_id, "
            "text, created_at) VALUES (%s, %s, %s, %s, "
            "(SELECT owner_id FROM episode_sessions WHERE session_id = %s), "
            "(SELECT workspace_id FROM episode_sessions WHERE session_id = %s), %s, %s)",
            (item_id, session_id, version, kind, session_id, session_id, text, event.timestamp),
        )
        new.append((item_id, text))

    def _embed(self, curs: Cursor[DictRow], new: list[tuple[UUID, str]]) -> None:
        # An episode dropped later in the batch (a title renamed) finds no row: no vector.
        if not new:
            return
        ids, texts = array_of("uuid")(i for i, _ in new), [t for _, t in new]
        for embedder in self.models.to_write(curs):
            vectors = self.models.vectors(curs, embedder, texts)
            curs.execute(
                "INSERT INTO episode_vectors (item_id, model, embedding, owner_id, workspace_id, "
                "created_at) SELECT e.item_id, %s, v.embedding::vector, e.owner_id, "
                "e.workspace_id, e.created_at FROM unnest(%s::uuid[], %s::text[]) "
                "AS v(item_id, embedding) JOIN episodes e USING (item_id)",
                (embedder.model, ids, array_of("text")(vector_literal(v) for v in vectors)),
            )

    def _drop_title(self, curs: Cursor[DictRow], session_id: UUID) -> None:
        # The title's row is locked first: a re-embed writing a vector for it waits
        # until we are done (then finds no row), or we wait for its vector and see it.
        titles = "SELECT item_id FROM episodes WHERE session_id = %s AND kind = 'session'"
        curs.execute(f"{titles} FOR UPDATE", (session_id,))
        curs.execute(f"DELETE FROM episode_vectors WHERE item_id IN ({titles})", (session_id,))
        curs.execute(
            "DELETE FROM episodes WHERE session_id = %s AND kind = 'session'", (session_id,)
        )

    # -- queries --------------------------------------------------------------

    def search(
        self,
        owner_id: UUID,
        query: str,
        *,
        workspace_id: UUID | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
        k: int = 20,
        workspaces: tuple[UUID, ...] | None = None,
    ) -> list[EpisodeHit]:
        """The owner's best `k` episodes for `query`, created in [start, end) if given.

        Only `owner_id`'s own sessions are searched, whatever else matches. A blank
        query finds nothing.
        """
        if not query.strip() or k <= 0:
            return []
        scope = EpisodeScope(owner_id, workspace_id, start, end, workspaces)
        candidates = max(4 * k, 50)
        # One snapshot: the ready model and its vectors are of the same moment, even if
        # a re-embed flips models meanwhile. The query's vector is not cached: the cache
        # is for texts a rebuild embeds again, not for every query ever asked.
        with self.datastore.get_connection() as conn, conn.transaction(), conn.cursor() as curs:
            curs.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            embedder = self.models.active(curs)
            vector = embedder.embed_query(query)
            ef = graph_ef(curs, owner_id, embedder.model, candidates)
            meaning = by_meaning(scope, embedder.model, embedder.dimension,
                                 vector_literal(vector), candidates, ef)  # fmt: skip
            sql, params = fused(scope, query, k, candidates, meaning)
            curs.execute(sql, params, prepare=False)
            return [EpisodeHit(**row) for row in curs.fetchall()]

    def all_rows(self) -> list[dict[str, object]]:
        """Every row of every table, ordered (for comparing a rebuilt view with the live one)."""
        with self.datastore.get_connection() as conn:
            sessions = conn.execute("SELECT * FROM episode_sessions ORDER BY session_id")
            rows = [{"table": "episode_sessions", **r} for r in sessions.fetchall()]
            episodes = conn.execute("SELECT * FROM episodes ORDER BY item_id")
            rows += [{"table": "episodes", **r} for r in episodes.fetchall()]
            vectors = conn.execute(
                "SELECT item_id, model, embedding::text AS embedding, owner_id, workspace_id, "
                "created_at FROM episode_vectors ORDER BY item_id, model"
            )
            rows += [{"table": "episode_vectors", **r} for r in vectors.fetchall()]
        return rows
