"""Sessions lent to the commands that write on them, so a write need not read the log:
the run this task drives (`hold`: its writes are fenced by the run, and each starts from
the session the previous one left) and the next message outside a run (`lending`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from threading import Lock
from uuid import UUID

from domain.errors import ClaimLost
from domain.session import AgentSession


@dataclass
class RunHold:
    """A run this process drives, and who holds it (see `SessionService.hold`)."""

    session_id: UUID
    run_id: UUID
    worker: str | None
    # The session as the run's last write left it (or as `lend` gave it), which its next
    # write starts from instead of reading the log; one write at a time takes it.
    lent: AgentSession | None = None
    _lock: Lock = field(default_factory=Lock)

    def take(self) -> AgentSession | None:
        with self._lock:
            lent, self.lent = self.lent, None
        return lent

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
_HOLD: ContextVar[RunHold | None] = ContextVar("tokendance_run_hold", default=None)


@dataclass
class Lent:
    """A session lent to the next command on it outside a run (`SessionService.lending`)."""

    session: AgentSession | None
    saved: bool = False  # the command's write landed on it: it is the session as stored
    taken: AgentSession | None = None  # what the command took

    def take(self, session_id: UUID) -> AgentSession | None:
        session = self.session
        if session is None or session.id != session_id:
            return None
        self.session, self.taken = None, session
        return session


_LENT: ContextVar[Lent | None] = ContextVar("tokendance_lent_session", default=None)


def held_run(session_id: UUID) -> RunHold | None:
    """The run this task drives on the session, if any (a run's task writing to another
    session is not fenced by that run)."""
    hold = _HOLD.get()
    return hold if hold is not None and hold.session_id == session_id else None


def take_loan(session_id: UUID) -> AgentSession | None:
    """The session lent to the next command on it outside a run (`lending`), if any."""
    loan = _LENT.get()
    return loan.take(session_id) if loan is not None else None


def note_saved(session: AgentSession, hold: RunHold | None) -> None:
    """`session` was stored: the run's next write starts from it; a loan says it landed."""
    if hold is not None:
        if hold.worker is None:
            hold.worker = session.run_worker
        hold.lent = session
    loan = _LENT.get()
    if loan is not None and loan.taken is session:
        loan.saved = True


class SessionLoans:
    """`hold`, `lend`, `lending` and `take_back`, mixed into `SessionService`."""

    @contextmanager
    def hold(self, session_id: UUID, run_id: UUID, worker: str | None = None) -> Iterator[None]:
        """While the calling task drives `run_id`, refuse the writes it makes to the
        session (itself, or through what it calls: tasks it starts, the bridge's threads)
        once the run has ended or another worker has claimed it (`ClaimLost`). Other
        commands this process handles meanwhile are the aggregate's alone to judge.

        `worker` is who holds the run; unknown (a run started or resumed in this
        process), it is the run's worker at this process's first write.
        """
        token = _HOLD.set(RunHold(session_id, run_id, worker))
        try:
            yield
        finally:
            _HOLD.reset(token)

    def lend(self, session: AgentSession) -> None:
        """Let the run this task drives write on `session`, which the caller no longer
        touches, instead of reading the log at its next write (see `_change`)."""
        hold = _HOLD.get()
        if hold is not None and hold.session_id == session.id:
            hold.lent = session

    @contextmanager
    def lending(self, session: AgentSession) -> Iterator[Lent]:
        """The next command on the session in this block writes on `session` (which the
        caller no longer touches) instead of reading the log: the session's next message,
        on the aggregate its last run left. `saved` says whether it did."""
        lent = Lent(session)
        token = _LENT.set(lent)
        try:
            yield lent
        finally:
            _LENT.reset(token)

    def take_back(self, session_id: UUID) -> AgentSession | None:
        """The session as the run this task drives last wrote it, if it was lent one."""
        hold = _HOLD.get()
        return hold.take() if hold is not None and hold.session_id == session_id else None
