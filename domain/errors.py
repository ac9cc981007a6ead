"""Domain errors: each has a stable code that the HTTP layer maps to a status."""

from __future__ import annotations

from uuid import UUID


class DomainError(Exception):
    """Base of every error a user can cause by what they ask for."""

    code = "DOMAIN_ERROR"


class NotFound(DomainError):
    code = "NOT_FOUND"


class SessionNotFound(NotFound):
    def __init__(self, session_id: UUID | str) -> None:
        super().__init__(f"session {session_id} not found")
        self.session_id = session_id


class UserGone(DomainError):
    """Personal content of an erased user: its key is destroyed, nothing more is kept."""

    code = "USER_ERASED"
    http_status = 410


class Conflict(DomainError):
    """The session changed since the caller read it (or another writer won the race)."""

    code = "CONFLICT"


class RunAlreadyActive(Conflict):
    code = "RUN_ALREADY_ACTIVE"


class ClaimLost(Conflict):
    """A run's writer no longer holds the run: it ended, or another worker claimed it."""

    code = "RUN_CLAIM_LOST"


class InvalidCommand(DomainError):
    """The command is well formed but not allowed in the session's current state."""

    code = "INVALID_COMMAND"


class InvalidValue(InvalidCommand):
    """A value no state could make right (an expiry in the past, an oversized object): 400."""

    code = "VALIDATION_ERROR"
    http_status = 400


class SessionClosed(InvalidCommand):
    code = "SESSION_ARCHIVED"

    def __init__(self, session_id: UUID) -> None:
        super().__init__(f"session {session_id} is archived")


class MessageTooLarge(DomainError):
    code = "MESSAGE_TOO_LARGE"

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"message is {size} bytes; the limit is {limit} bytes")
        self.size = size
        self.limit = limit


class ConfirmationNotFound(NotFound):
    code = "CONFIRMATION_NOT_FOUND"

    def __init__(self, action_id: str) -> None:
        super().__init__(f"no pending confirmation {action_id}")


class ConfirmationAnswered(InvalidCommand):
    code = "CONFIRMATION_ALREADY_ANSWERED"

    def __init__(self, action_id: str) -> None:
        super().__init__(f"confirmation {action_id} was already answered")
