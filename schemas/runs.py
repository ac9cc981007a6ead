"""The run work queue's message: which run of which session a worker should drive."""

from __future__ import annotations

from uuid import UUID

import msgspec


class RunRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Drive `run_id` of `session_id` (asked when the session was at `at_version`).

    `recovering`: the run was left by a worker that is gone (handed out again by the
    sweep), so a tool call started and not finished was interrupted, not to be re-run.
    """

    session_id: UUID
    run_id: UUID
    at_version: int
    recovering: bool = False

    @property
    def message_id(self) -> str:
        """The `Nats-Msg-Id`: the same request published twice is stored once."""
        return f"{self.run_id}:{self.at_version}"
