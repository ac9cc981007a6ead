"""Runs as tasks: start on a message, continue after an approval, stop, recover.

At most one task per session in this process (the aggregate allows one active run).
A stop cancels the task, which cancels the model stream or the tool in flight, then
records `RunStopped`. Shutting down cancels tasks without recording anything, so the
runs are still active in the log and `recover()` picks them up on the next start.

With a `RunDispatch` (an API replica beside worker processes) no run is driven here:
a run to start or resume is handed to the workers, and a stop first asks the worker
that holds the run to stop driving it. A dispatch that fails (NATS away) loses
nothing: the run is in the log, and the workers' sweep hands it out again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from uuid import UUID

from application import log_context
from application.bridge import SyncBridge
from application.manual_tools import ManualOutcome, ManualTools
from application.ports import RunDispatch, RunLocks
from application.receipt import Receipt
from application.runner import AgentRunner, RunEnd
from application.sessions import SessionService
from domain.errors import ClaimLost, Conflict
from domain.session import AgentSession
from domain.values import MANUAL_PREFIX, AttachedFile

log = logging.getLogger(__name__)

STOP_GRACE = 1.0  # seconds a cancelled run may take to unwind before the stop is recorded
STOP_TRIES = 3  # a stop meets a write of the run's (a worker claiming it) and goes again
KEEP_GRACE = 5.0  # seconds a shutdown waits for the memories of finished runs


class RunScheduler:
    """Owns the asyncio tasks that drive runs."""

    def __init__(
        self,
        runner: AgentRunner,
        sessions: SessionService,
        bridge: SyncBridge,
        manual: ManualTools | None = None,
        dispatch: RunDispatch | None = None,
        locks: RunLocks | None = None,
    ) -> None:
        self.runner = runner
        self.sessions = sessions
        self.bridge = bridge
        self.manual = manual
        self.dispatch = dispatch
        self.locks = locks  # beside workers: a run a worker drives is not driven here too
        self._tasks: dict[UUID, asyncio.Task[RunEnd]] = {}

    async def send_message(
        self,
        session_id: UUID,
        text: str,
        *,
        attachments: list[str] | None = None,
        idempotency_key: str | None = None,
        files: Sequence[AttachedFile] = (),
        requested_by: UUID | None = None,
        api_key_id: UUID | None = None,
    ) -> Receipt:
        """Append the message, request a run and start it (one command, then a task)."""
        run_id = uuid.uuid4()
        # Driven here: written on the aggregate the session's last run left (no read of
        # the log, from the loop when it can: `LoopWrites`), which the run then takes.
        warm = self.runner.warm if self.dispatch is None else None
        session = warm.lend_session(session_id) if warm is not None else None
        with self.sessions.lending(session) if session else contextlib.nullcontext() as loan:
            receipt = await self.sessions.change_on_loop(
                self.bridge, self.sessions.submit_message,
                session_id, text, run_id, attachments=attachments,
                idempotency_key=idempotency_key, files=files, requested_by=requested_by,
                api_key_id=api_key_id,
            )  # fmt: skip
        if warm is not None:  # its start need not read these back
            kept = session if loan is not None and loan.saved else None
            warm.written(session_id, receipt.events, kept)
        await self._start(session_id, run_id, receipt.version)
        return receipt

    async def confirm(
        self, session_id: UUID, action_id: str, approved: bool, feedback: str | None, by: str
    ) -> Receipt:
        """Answer a pending confirmation; the run goes on once nothing else is pending."""
        return (await self.answer(session_id, action_id, approved, feedback, by)).receipt

    async def answer(
        self, session_id: UUID, action_id: str, approved: bool, feedback: str | None, by: str
    ) -> Answer:
        """`confirm`, and in words what happens next."""
        before = await self.bridge(self.sessions.get_session, session_id)
        tool_use_id = before.pending_confirmations.get(action_id, "")
        receipt = await self.bridge(
            self.sessions.give_confirmation, session_id, action_id, approved, feedback, by
        )
        after = next_action(before, action_id, approved)
        if tool_use_id.startswith(MANUAL_PREFIX) and self.manual is not None:
            # A person's call, not a run's: it has run (or was cancelled) when this answers.
            outcome = await self.manual.resume(session_id, tool_use_id)
            return Answer(receipt, by_hand_done(before, tool_use_id, outcome), outcome)
        session = await self.bridge(self.sessions.get_session, session_id)
        if session.active_run is not None and not session.pending_confirmations:
            await self._start(session_id, session.active_run, receipt.version)
        return Answer(receipt, after)

    async def stop(self, session_id: UUID, reason: str = "stopped by the user") -> Receipt:
        """Cancel the run's task (here, or on the worker that holds it) and record the stop.
        A write of the run's that lands first (a worker claiming it just now) is met by
        stopping again, as the log then says, not by a conflict for the user."""
        for attempt in range(STOP_TRIES):
            await self._halt(session_id)
            try:
                return await self.bridge(self.sessions.stop_active_run, session_id, reason)
            except Conflict:
                if attempt == STOP_TRIES - 1:
                    raise
        raise AssertionError("unreachable")

    async def _halt(self, session_id: UUID) -> None:
        """Cancel the run's task here, or ask the worker that holds it to."""
        task = self._tasks.get(session_id)
        if task is not None:
            task.cancel()
            await asyncio.wait([task], timeout=STOP_GRACE)
        elif self.dispatch is not None:
            session = await self.bridge(self.sessions.get_session, session_id)
            if session.run_worker is not None:
                try:
                    await self.dispatch.stop(session_id, session.run_worker)
                except Exception:  # the stop is recorded anyway: the holder's writes then fail
                    log.warning("could not reach %s to stop its run", session.run_worker)

    def recover(self, active: Iterable[tuple[UUID, UUID]]) -> None:
        """Resume runs left active by a previous process (crash or restart)."""
        for session_id, run_id in active:
            self._spawn(session_id, run_id, recovering=True)

    async def wait(self, session_id: UUID) -> RunEnd | None:
        """Until the session's task ends or suspends (None if there is none)."""
        task = self._tasks.get(session_id)
        return await task if task is not None else None

    def is_running(self, session_id: UUID) -> bool:
        return session_id in self._tasks

    async def close(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.runner.memory is not None:  # what finished runs learned, briefly
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.runner.memory.settled(), KEEP_GRACE)
        if self.runner.mcp is not None:  # the MCP servers it started stop with it
            await self.runner.mcp.aclose()
        if self.locks is not None:
            await self.locks.close()

    async def _start(self, session_id: UUID, run_id: UUID, at_version: int) -> None:
        if self.dispatch is None:
            self._spawn(session_id, run_id)
            return
        try:
            await self.dispatch.dispatch(session_id, run_id, at_version)
        except Exception as e:  # the run is in the log: the workers' sweep hands it out
            log.warning("run %s not dispatched now (%s); the workers' sweep will", run_id, e)

    def _spawn(self, session_id: UUID, run_id: UUID, *, recovering: bool = False) -> None:
        # A task of this session may still be winding down (its run ended or suspended
        # in the log, its lock not yet released): this one goes after it, and then reads
        # from the log whether there is anything to drive.
        current = self._tasks.get(session_id)
        previous = current if current is not None and not current.done() else None
        task = asyncio.create_task(
            self._drive_after(previous, session_id, run_id, recovering), name=f"run {run_id}"
        )
        self._tasks[session_id] = task
        task.add_done_callback(lambda t: self._forget(session_id, t))

    async def _drive_after(
        self,
        previous: asyncio.Task[RunEnd] | None,
        session_id: UUID,
        run_id: UUID,
        recovering: bool,
    ) -> RunEnd:
        if previous is not None:
            try:
                await asyncio.wait([previous])  # its outcome is its own, not this run's
            except asyncio.CancelledError:
                previous.cancel()  # a stop or a shutdown reaches the task it waits for
                raise
        return await self._drive(session_id, run_id, recovering)

    def _forget(self, session_id: UUID, task: asyncio.Task[RunEnd]) -> None:
        if self._tasks.get(session_id) is task:
            del self._tasks[session_id]

    async def _drive(self, session_id: UUID, run_id: UUID, recovering: bool) -> RunEnd:
        with log_context.bound(session_id=session_id, run_id=run_id):
            return await self._lock_and_run(session_id, run_id, recovering)

    async def _lock_and_run(self, session_id: UUID, run_id: UUID, recovering: bool) -> RunEnd:
        locked = False
        if self.locks is not None:
            try:
                locked = await self.locks.try_lock(session_id)
            except Exception as e:  # the database is away: the run meets that by itself
                log.warning("no run lock for %s (%s); driving it without one", run_id, e)
            else:
                if not locked:
                    log.info("run %s is driven by another process", run_id)
                    return "not_active"
        try:
            with self.sessions.hold(session_id, run_id):
                return await self.runner.run(session_id, run_id, recovering=recovering)
        except asyncio.CancelledError:
            raise
        except ClaimLost as e:  # stopped, or taken over: the log says what happened
            log.info("%s", e)
            return "not_active"
        except Exception as e:
            log.exception("run %s of session %s failed", run_id, session_id)
            with contextlib.suppress(Exception):
                await self.bridge(self.sessions.fail_run, session_id, run_id, *internal_failure(e))
            return "failed"
        finally:
            if locked and self.locks is not None:
                await self.locks.unlock(session_id)


@dataclass(frozen=True)
class Answer:
    """A confirmation given: its receipt, and what the session does next, in words."""

    receipt: Receipt
    next_action: str
    by_hand: ManualOutcome | None = None  # the call made by hand it answered, once done


def next_action(before: AgentSession, action_id: str, approved: bool) -> str:
    """What answering `action_id` makes happen, said for people (`before`: the session)."""
    tool_use_id = before.pending_confirmations.get(action_id, "")
    tool = before.open_tool_calls.get(tool_use_id, "the tool")
    if tool_use_id.startswith(MANUAL_PREFIX):
        if approved:
            return f"{tool} runs now, as the call made by hand; no run goes on"
        return f"the call of {tool} made by hand is cancelled; nothing runs"
    others = len(before.pending_confirmations) - 1
    if others > 0:
        verdict = "will run" if approved else "is cancelled"
        return f"{tool} {verdict}; the run waits for {others} more confirmation(s)"
    if approved:
        return f"the run goes on: {tool} runs, then the agent takes its next step"
    return (
        f"the run goes on without {tool}: the refusal is kept in its context "
        "and the agent takes its next step"
    )


def by_hand_done(before: AgentSession, tool_use_id: str, outcome: ManualOutcome) -> str:
    """What became of a call made by hand once its confirmation was answered."""
    tool = before.open_tool_calls.get(tool_use_id, "the tool")
    if outcome.status == "cancelled":
        return f"the call of {tool} made by hand is cancelled; nothing runs"
    return (
        f"{tool} ran, as the call made by hand ({outcome.status}): its result is in "
        f"`tool_result` and in the session's events as {tool_use_id}; no run goes on"
    )


def internal_failure(error: Exception) -> tuple[str, str]:
    """The reason and code a run fails with when the engine itself broke."""
    return f"internal error: {type(error).__name__}: {error}", "INTERNAL_ERROR"
