"""A session's runs, from request to their end (a base of `AgentSession`).

One run is active at a time. It ends completed, failed or stopped, and its end carries
its totals: the tokens its turns used, its last assistant turn and what it made. A run
that fails or is stopped first gives each of its calls without a result an
`interrupted` one, so no call is ever left open by a run's end.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate

from domain.errors import InvalidCommand, RunAlreadyActive
from domain.session_log import State
from domain.session_tools import ToolLog
from domain.values import RunArtifact, SessionStatus


def _run_totals_unknown(state: State) -> None:
    """Runs that ended before events carried their totals: none known."""
    state.setdefault("tokens_used", 0)
    state.setdefault("message_id", None)


def _run_artifacts_unlisted(state: State) -> None:
    """Runs that ended before their end listed the artifacts they made."""
    state.setdefault("artifacts", [])


def _run_ended(session: RunLog, status: SessionStatus) -> None:
    session.active_run, session.run_worker, session.run_requested_by = None, None, None
    session.status = status


class RunLog(ToolLog):
    """The run events, and the commands that record them."""

    class RunRequested(Aggregate.Event):
        run_id: UUID
        # Whose message it was, and the API key it came with (None: a login's; both None
        # for a run requested before runs said so): its calls are billed to the key too,
        # and a member may answer the approvals of their own runs alone.
        requested_by: UUID | None
        api_key_id: UUID | None

        class_version = 2

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state.setdefault("requested_by", None)
            state.setdefault("api_key_id", None)

        def apply(self, aggregate: Any) -> None:
            aggregate.active_run = self.run_id
            aggregate.run_requested_by = self.requested_by
            aggregate.run_tokens, aggregate.run_message_id, aggregate.run_artifacts = 0, None, []

    class RunStarted(Aggregate.Event):
        run_id: UUID
        worker: str

        def apply(self, aggregate: Any) -> None:
            aggregate.status = "running"
            aggregate.run_worker = self.worker

    class RunCompleted(Aggregate.Event):
        run_id: UUID
        reason: str
        tokens_used: int
        message_id: int | None  # the version of the run's last assistant turn
        artifacts: list[RunArtifact]  # what the run made, in order

        class_version = 3
        upcast_v1_v2 = staticmethod(_run_totals_unknown)
        upcast_v2_v3 = staticmethod(_run_artifacts_unlisted)

        def apply(self, aggregate: Any) -> None:
            _run_ended(aggregate, "completed")

    class RunFailed(Aggregate.Event):
        run_id: UUID
        reason: str
        error_code: str
        tokens_used: int
        message_id: int | None
        artifacts: list[RunArtifact]

        class_version = 3
        upcast_v1_v2 = staticmethod(_run_totals_unknown)
        upcast_v2_v3 = staticmethod(_run_artifacts_unlisted)

        def apply(self, aggregate: Any) -> None:
            _run_ended(aggregate, "error")

    class RunStopped(Aggregate.Event):
        run_id: UUID
        reason: str
        tokens_used: int
        message_id: int | None
        artifacts: list[RunArtifact]

        class_version = 3
        upcast_v1_v2 = staticmethod(_run_totals_unknown)
        upcast_v2_v3 = staticmethod(_run_artifacts_unlisted)

        def apply(self, aggregate: Any) -> None:
            _run_ended(aggregate, "stopped")

    def request_run(
        self, run_id: UUID, requested_by: UUID | None = None, api_key_id: UUID | None = None
    ) -> None:
        self._check_open()
        if self.active_run is not None:
            raise RunAlreadyActive(f"run {self.active_run} is still active")
        self.trigger_event(
            self.RunRequested, run_id=run_id, requested_by=requested_by, api_key_id=api_key_id
        )

    def start_run(self, run_id: UUID, worker: str) -> None:
        self._check_run(run_id)
        self.trigger_event(self.RunStarted, run_id=run_id, worker=worker)

    def complete_run(self, run_id: UUID, reason: str = "end_turn") -> None:
        self._check_run(run_id)
        self.trigger_event(self.RunCompleted, **self._totals(run_id, reason))

    def fail_run(self, run_id: UUID, reason: str, error_code: str = "RUN_FAILED") -> None:
        """End the run in failure; its tool calls without a result are marked interrupted
        (a person's own calls, outside any run, stay open)."""
        self._check_run(run_id)
        self._interrupt_calls(f"the run failed before this call finished: {reason}", "failed")
        self.trigger_event(self.RunFailed, **self._totals(run_id, reason), error_code=error_code)

    def stop_run(self, run_id: UUID, reason: str = "stopped by user") -> None:
        self._check_run(run_id)
        self.trigger_event(self.RunStopped, **self._totals(run_id, reason))

    def stop(self, reason: str) -> None:
        """Stop the active run; its tool calls without a result are marked interrupted."""
        if self.active_run is None:
            raise InvalidCommand("no run is active")
        self._interrupt_calls(f"the run was stopped: {reason}", "stopped", manual_too=True)
        self.stop_run(self.active_run, reason)

    def _totals(self, run_id: UUID, reason: str) -> dict[str, object]:
        return dict(
            run_id=run_id, reason=reason, tokens_used=self.run_tokens,
            message_id=self.run_message_id, artifacts=list(self.run_artifacts),
        )  # fmt: skip
