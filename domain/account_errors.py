"""Errors of accounts, tenants and tokens, each with a stable code for the HTTP map.

Every 401 derives from `AuthError`, so HTTP maps them in one line. Their messages
say no more than the code: a caller learns nothing about which check failed.
"""

from __future__ import annotations

from uuid import UUID

from domain.errors import Conflict, DomainError, NotFound


class AuthError(DomainError):
    """The caller is not authenticated (HTTP 401)."""

    code = "UNAUTHENTICATED"
    # Read by the HTTP error map (`status_of`); the only statuses not implied by a base.
    http_status = 401


class InvalidCredentials(AuthError):
    code = "INVALID_CREDENTIALS"

    def __init__(self) -> None:
        # One message for an unknown email and a wrong password alike.
        super().__init__("invalid email or password")


class InvalidToken(AuthError):
    code = "INVALID_TOKEN"

    def __init__(self) -> None:
        super().__init__("the token is not valid")


class TokenExpired(AuthError):
    code = "TOKEN_EXPIRED"

    def __init__(self) -> None:
        super().__init__("the token has expired")


class TokenRevoked(AuthError):
    code = "TOKEN_REVOKED"

    def __init__(self) -> None:
        super().__init__("the token has been revoked")


class TokenReused(AuthError):
    """A spent refresh token came back: its whole login has been revoked."""

    code = "TOKEN_REUSED"

    def __init__(self) -> None:
        super().__init__("the refresh token was already used; the login has been revoked")


class EmailTaken(Conflict):
    code = "EMAIL_TAKEN"

    def __init__(self) -> None:
        super().__init__("an account with this email already exists")


class AlreadyMember(Conflict):
    code = "ALREADY_MEMBER"

    def __init__(self, user_id: UUID, group_id: UUID) -> None:
        super().__init__(f"user {user_id} is already a member of {group_id}")


class WorkspaceNotFound(NotFound):
    """No such workspace, or not one the caller may see: the two look the same."""

    def __init__(self, workspace_id: UUID | str) -> None:
        super().__init__(f"workspace {workspace_id} not found")
        self.workspace_id = workspace_id


class OrganizationNotFound(NotFound):
    """No such organization, or the caller is not a member of it."""

    def __init__(self, organization_id: UUID | str) -> None:
        super().__init__(f"organization {organization_id} not found")
        self.organization_id = organization_id


class TeamNotFound(NotFound):
    def __init__(self, team_id: UUID | str) -> None:
        super().__init__(f"team {team_id} not found")
        self.team_id = team_id


class UserNotFound(NotFound):
    def __init__(self) -> None:
        super().__init__("no user with this email")


class Forbidden(DomainError):
    """The caller can see the resource, but its role does not allow the action (403)."""

    code = "FORBIDDEN"
    http_status = 403


class BudgetNotFound(NotFound):
    """No budget on that scope, or a scope the caller may not see: the two look the same."""

    def __init__(self, scope: str, scope_id: UUID | str) -> None:
        super().__init__(f"no {scope} budget for {scope_id}")


class InvitationInvalid(DomainError):
    """An invitation that is spent, expired, or for another email (410 Gone)."""

    code = "INVITATION_INVALID"
    http_status = 410


class InvitationNotFound(NotFound):
    def __init__(self) -> None:
        super().__init__("no such invitation")


class ApiKeyNotFound(NotFound):
    def __init__(self, api_key_id: UUID | str) -> None:
        super().__init__(f"API key {api_key_id} not found")


class WrongPassword(Forbidden):
    """The current password given to change it is not the user's (403)."""

    code = "WRONG_PASSWORD"

    def __init__(self) -> None:
        super().__init__("the current password is not right")
