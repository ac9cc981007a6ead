"""`tokendance teams ...`: an operator's view of teams and their members.

An operator acts for a team's organization owner (or, to make a team, for the owner
named), through the same use cases and checks as the API, so every change is the
same event a client's request would have written.
"""

from __future__ import annotations

import argparse
from uuid import UUID

from application.accounts import AccountService
from application.team_members import InvitationSent
from domain.account_errors import TeamNotFound, UserNotFound
from domain.accounts import Organization, User, normalize_email
from domain.errors import DomainError
from projections.accounts import AccountsView

VIEW_WAIT = 10.0  # seconds to wait for the accounts read model to catch up


def run_teams(accounts: AccountService, view: AccountsView, args: argparse.Namespace) -> str:
    """What the `teams` action prints; a `DomainError` says what went wrong."""
    match args.action:
        case "list":
            user = _user(accounts, args.user)
            rows = [
                f"{t.team_id}  {t.name}  role={t.role}  members={t.member_count}"
                for t in accounts.teams_of(user)
            ]
            return "\n".join(rows) or "no teams"
        case "create":
            team = accounts.create_team(_user(accounts, args.owner), args.name)
            return f"{team.team_id}  {team.name}  organization={team.organization_id}"
        case "members":
            _owner_of(accounts, view, args.team_id)
            rows = [
                f"{m.user_id}  {m.email}  {m.name}  {m.role}  joined {m.joined_at:%Y-%m-%d}"
                for m in view.team_members(args.team_id)
            ]
            return "\n".join(rows) or "no members"
        case "add":
            done = accounts.add_team_member(
                _owner_of(accounts, view, args.team_id), args.team_id, args.email, args.role
            )
            if isinstance(done, InvitationSent):
                return (
                    f"invited {done.email} as {done.role} until {done.expires_at:%Y-%m-%d %H:%M}"
                    f" UTC; pass on this token (shown once): {done.token}"
                )
            return f"added {args.email} as {done.role}"
        case "set-role":
            accounts.change_team_member_role(
                _owner_of(accounts, view, args.team_id), args.team_id,
                _user(accounts, args.email), args.role,
            )  # fmt: skip
            return f"{args.email} is now {args.role}"
        case "remove":
            accounts.remove_team_member(
                _owner_of(accounts, view, args.team_id), args.team_id, _user(accounts, args.email)
            )
            return f"removed {args.email}"
    raise DomainError(f"unknown teams action {args.action!r}")


def _user(accounts: AccountService, email: str) -> UUID:
    user: object = accounts.repository.get(User.id_for(normalize_email(email)))
    if not isinstance(user, User):
        raise UserNotFound()
    return user.id


def _owner_of(accounts: AccountService, view: AccountsView, team_id: UUID) -> UUID:
    """The owner of the organization that holds the team (from the read model's index,
    once it has what the log holds: a team made a moment ago is found)."""
    view.wait_for(accounts.recorder.max_notification_id() or 0, VIEW_WAIT)
    organization_id = view.organization_of_team(team_id)
    if organization_id is None:
        raise TeamNotFound(team_id)
    organization: object = accounts.repository.get(organization_id)
    assert isinstance(organization, Organization)
    return organization.owner_id
