"""Invitations: a team's offer of a role to an email not yet registered.

The token is shown once, to the inviter; only its hash is kept and the invitation's
id is derived from it, so accepting is one read by id. An invitation is single-use
and expires.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.account_errors import InvitationInvalid
from domain.account_values import normalize_email, secret_digest
from domain.roles import Role, check_role

TOKEN_PREFIX = "tdi_"
# Fixed forever: invitation ids are derived from it.
INVITATION_NAMESPACE = UUID("7a41c3d2-2b8e-4c59-9f06-1e5d8b3a6c70")


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


class Invitation(Aggregate):
    """An offer to join a team with a role, to whoever registers with the email."""

    class InvitationSent(Aggregate.Created):
        token_digest: str
        organization_id: UUID
        team_id: UUID
        email: str
        role: Role
        invited_by: UUID
        expires_at: datetime

    class InvitationAccepted(Aggregate.Event):
        user_id: UUID

    @staticmethod
    def id_for(token: str) -> UUID:
        return uuid5(INVITATION_NAMESPACE, secret_digest(token))

    @staticmethod
    def create_id(token_digest: str) -> UUID:
        return uuid5(INVITATION_NAMESPACE, token_digest)

    @event(InvitationSent)
    def __init__(
        self,
        token_digest: str,
        organization_id: UUID,
        team_id: UUID,
        email: str,
        role: Role,
        invited_by: UUID,
        expires_at: datetime,
    ) -> None:
        self.organization_id = organization_id
        self.team_id = team_id
        self.email = email
        self.role: Role = role
        self.invited_by = invited_by
        self.expires_at = expires_at
        self.accepted_by: UUID | None = None

    @classmethod
    def send(
        cls,
        token: str,
        organization_id: UUID,
        team_id: UUID,
        email: str,
        role: str,
        invited_by: UUID,
        expires_at: datetime,
    ) -> Invitation:
        return cls(
            secret_digest(token),
            organization_id,
            team_id,
            normalize_email(email),
            check_role(role),
            invited_by,
            expires_at,
        )

    def accept(self, user_id: UUID, email: str, now: datetime) -> None:
        """Spend the invitation for the user registered with its email."""
        if self.accepted_by is not None:
            raise InvitationInvalid("this invitation has already been used")
        if self.expires_at <= now:
            raise InvitationInvalid("this invitation has expired; ask for a new one")
        if normalize_email(email) != self.email:
            raise InvitationInvalid("this invitation was sent to another email")
        self._accepted(user_id)

    @event(InvitationAccepted)
    def _accepted(self, user_id: UUID) -> None:
        self.accepted_by = user_id


InvitationEvent = Invitation.InvitationSent | Invitation.InvitationAccepted
INVITATION_EVENT_CLASSES: tuple[type[InvitationEvent], ...] = InvitationEvent.__args__
