"""Use cases on a team's people: add or invite, accept, change a role, remove.

A registered user is added at once; an unknown email gets an invitation whose token
the inviter passes on. Every change is an event on the organization (and on the user
who joins it), so who could see what, and when, is part of the log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID

from application.tenants import Membership, Tenants, check_may_grant
from domain.account_errors import AlreadyMember, InvitationNotFound
from domain.accounts import Organization, User, normalize_email
from domain.errors import InvalidCommand
from domain.invitations import Invitation, new_token
from domain.roles import Actor, actor_of, check_role, require

DEFAULT_INVITATION_TTL = 7 * 24 * 3600


@dataclass(frozen=True)
class InvitationSent:
    """An invitation just made: its token is shown this once."""

    invitation_id: UUID
    email: str
    role: str
    expires_at: datetime
    token: str
    notification_id: int


class TeamMembers(Tenants):
    """Who is in a team, with which role."""

    _clock: Callable[[], float]
    invitation_ttl: int = DEFAULT_INVITATION_TTL

    def add_team_member(
        self, who: UUID | Actor, team_id: UUID, email: str, role: str
    ) -> Membership | InvitationSent:
        """Add a registered user now, or invite an email nobody registered yet."""
        actor = actor_of(who)
        checked, email = check_role(role), normalize_email(email)
        organization, actor_role = self.team_of(actor, team_id)
        check_may_grant(actor_role, checked)
        user = self._get(User, User.id_for(email))
        if user is None:
            return self._invite(actor.user_id, organization, team_id, email, checked)
        if user.id in organization.team_roles(team_id):
            raise AlreadyMember(user.id, team_id)
        return self._join(organization, team_id, user, checked)

    def accept_invitation(self, user_id: UUID, token: str) -> Membership:
        """The invited user joins the team with the invitation's role (once)."""
        invitation = self._get(Invitation, Invitation.id_for(token))
        user = self._get(User, user_id)
        if invitation is None or user is None:
            raise InvitationNotFound()
        invitation.accept(user.id, user.email, self._now())
        organization = self._get(Organization, invitation.organization_id)
        if organization is None or invitation.team_id not in organization.teams:
            raise InvitationNotFound()  # the team is gone
        if user.id in organization.team_roles(invitation.team_id):
            raise AlreadyMember(user.id, invitation.team_id)
        return self._join(organization, invitation.team_id, user, invitation.role, invitation)

    def change_team_member_role(
        self, who: UUID | Actor, team_id: UUID, user_id: UUID, role: str
    ) -> Membership:
        checked = check_role(role)
        organization, actor_role = self.team_of(actor_of(who), team_id)
        current = organization.team_members.get(team_id, {}).get(user_id)
        check_may_grant(actor_role, checked)
        if current is not None:
            check_may_grant(actor_role, current)  # taking ownership away is an owner's call
        organization.change_team_member_role(team_id, user_id, checked)
        return Membership(organization.id, user_id, checked, self._save(organization))

    def remove_team_member(self, who: UUID | Actor, team_id: UUID, user_id: UUID) -> int:
        """Remove a member (a member may also leave); the notification id of the removal."""
        actor = actor_of(who)
        organization, actor_role = self.team_of(actor, team_id)
        current = organization.team_members.get(team_id, {}).get(user_id)
        if user_id != actor.user_id:
            require(actor_role, "manage_members", "removing a team member")
            if current == "owner":
                require(actor_role, "grant_owner", "removing an owner")
        organization.remove_team_member(team_id, user_id)
        return self._save(organization)

    def delete_team(self, who: UUID | Actor, team_id: UUID) -> int:
        """Delete the team (its owners only); the notification id of the deletion."""
        organization, role = self.team_of(actor_of(who), team_id)
        require(role, "delete_team", "deleting a team")
        organization.delete_team(team_id)
        return self._save(organization)

    # -- helpers ------------------------------------------------------------------------

    def _invite(
        self, by: UUID, organization: Organization, team_id: UUID, email: str, role: str
    ) -> InvitationSent:
        token = new_token()
        expires_at = self._now() + timedelta(seconds=self.invitation_ttl)
        invitation = Invitation.send(token, organization.id, team_id, email, role, by, expires_at)
        notification_id = self._save(invitation)
        return InvitationSent(invitation.id, email, role, expires_at, token, notification_id)

    def _join(
        self,
        organization: Organization,
        team_id: UUID,
        user: User,
        role: str,
        invitation: Invitation | None = None,
    ) -> Membership:
        checked = check_role(role)
        organization.add_team_member(team_id, user.id, checked)
        if organization.id not in user.organization_ids:
            user.join_organization(organization.id, checked)
        spent = (invitation,) if invitation is not None else ()
        notification_id = self._save(organization, user, *spent)
        return Membership(
            organization.id, user.id, checked, notification_id, organization.modified_on
        )

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), UTC)


def check_invitation_ttl(seconds: int) -> int:
    if seconds <= 0:
        raise InvalidCommand("the invitation lifetime must be a positive number of seconds")
    return seconds
