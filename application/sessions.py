"""Use cases on agent sessions: each one gets the session, calls it, saves it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, ProcessingEvent
from eventsourcing.persistence import IntegrityError, JSONTranscoder, StoredEvent
from eventsourcing.utils import EnvType

from application.aggregate_fold import fold_events
from application.loop_writes import LoopWrites, NeedsThread, Staged, staged, staging
from application.receipt import Receipt
from application.run_commands import RunCommands
from application.sealing_mapper import SealsPersonalData
from application.session_loans import RunHold, SessionLoans, held_run, note_saved, take_loan
from application.transcodings import register_value_objects
from domain.errors import Conflict, SessionNotFound
from domain.events import SessionEvent, as_session_event
from domain.fork import fork
from domain.session import AgentSession
from domain.values import AttachedFile, SessionSettings


class SessionService(RunCommands, SessionLoans, LoopWrites, SealsPersonalData):
    """The agent sessions application (the write side): a session's own commands here,
    those its runs write in `RunCommands`, on sessions lent by `SessionLoans`, written
    from the loop by `LoopWrites`."""

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
        author_id: UUID | None = None,
    ) -> Receipt:
        return self._change(
            session_id,
            lambda s: s.append_user_message(text, attachments, idempotency_key, files, author_id),
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
        requested_by: UUID | None = None,
        api_key_id: UUID | None = None,
    ) -> Receipt:
        """Append a user message and request a run for it, together or not at all."""

        def submit(s: AgentSession) -> None:
            s.append_user_message(text, attachments, idempotency_key, files, requested_by)
            s.request_run(run_id, requested_by, api_key_id)

        return self._change(session_id, submit)

    def stop_active_run(self, session_id: UUID, reason: str) -> Receipt:
        return self._change(session_id, lambda s: s.stop(reason))

    def fork_session(self, session_id: UUID, at_version: int) -> Receipt:
        """A new session holding this one's log up to `at_version`, referring to it."""
        parent = self.get_session(session_id)
        history = [e for e in self.session_events(session_id) if e.originator_version <= at_version]
        return self._save(fork(parent, history, at_version))

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
            session: AgentSession = self.repository.get(
                session_id, version=version, projector_func=fold_events
            )
        except AggregateNotFoundError:
            raise SessionNotFound(session_id) from None
        return session

    def session_events(
        self, session_id: UUID, *, after: int = 0, limit: int | None = None
    ) -> Iterator[SessionEvent]:
        """The session's stored events with version greater than `after`, in order."""
        stored = self.events.get(session_id, gt=after or None, limit=limit)
        return iter([as_session_event(e) for e in stored])

    def decoded(self, stored: StoredEvent) -> object:
        return self.mapper.to_domain_event(stored, in_memory=True)

    # -- plumbing ---------------------------------------------------------------

    def _change(
        self,
        session_id: UUID,
        command: Callable[[AgentSession], None],
        expected_version: int | None = None,
    ) -> Receipt:
        hold = held_run(session_id)
        lent = hold.take() if hold is not None else take_loan(session_id)
        if lent is not None:
            # What the run last wrote, which another writer may have passed since: what
            # it refuses, or a write another writer's version beats, is judged again on
            # the log. A write that lands was on the newest version (versions are unique).
            try:
                self._command(lent, command, expected_version, hold)
            except Exception:
                pass
            else:
                try:
                    return self._save(lent, hold)
                except Conflict:
                    pass
        if staging() is not None:  # on the loop: the log is read on the bridge's thread
            raise NeedsThread
        session = self.get_session(session_id)
        self._command(session, command, expected_version, hold)
        return self._save(session, hold)

    def _command(
        self,
        session: AgentSession,
        command: Callable[[AgentSession], None],
        expected_version: int | None,
        hold: RunHold | None,
    ) -> None:
        if expected_version is not None and session.version != expected_version:
            raise Conflict(
                f"session {session.id} is at version {session.version}, not {expected_version}"
            )
        if self.before_change is not None:
            self.before_change(session)
        if hold is not None:
            hold.check(session)
        command(session)

    def _save(self, session: AgentSession, hold: RunHold | None = None) -> Receipt:
        stage = staging()
        if stage is not None:
            self._stage(stage, session, hold)
        try:
            recordings = self.save(session)
        except IntegrityError:
            # Another writer stored this version first (the cache only ever hands
            # out copies, so nothing needs undoing).
            raise Conflict(f"session {session.id} was changed by another command") from None
        events = [r.domain_event for r in recordings]
        return self._saved(session, hold, events, recordings[-1].notification.id)

    def _stage(self, stage: Staged, session: AgentSession, hold: RunHold | None) -> None:
        """Map the session's new events for the loop to store (`LoopWrites`), and end the
        command; `NeedsThread` if mapping one would read a key from the database."""
        processing: ProcessingEvent[UUID] = ProcessingEvent()
        processing.collect_events(session)
        if not all(self.mapper.in_memory(e) for e in processing.events):
            raise NeedsThread
        stage.processing = processing
        stage.stored = [self.mapper.to_stored_event(e) for e in processing.events]
        events = list(processing.events)
        stage.finish = lambda ids: self._saved(session, hold, events, ids[-1])
        staged(stage)

    def _saved(
        self, session: AgentSession, hold: RunHold | None, events: Sequence[object], last_id: int
    ) -> Receipt:
        """The receipt of a save stored (the run's hold keeps the session for its next)."""
        note_saved(session, hold)
        written = tuple(as_session_event(e) for e in events)
        return Receipt(session.id, session.version, last_id, written)

    def snapshot_due(self, processing: ProcessingEvent[UUID]) -> bool:
        every = self.snapshotting_intervals.get(AgentSession)
        return (
            every is not None
            and self.snapshots is not None
            and any(e.originator_version % every == 0 for e in processing.events)
        )

    def keep_snapshots(self, processing: ProcessingEvent[UUID]) -> None:
        self._take_snapshots(processing)  # the library's own, as its `save` calls it
