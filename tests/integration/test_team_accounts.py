"""Teams, invitations, API keys and profiles are events: the accounts read model folds
them, equals a rebuilt one, and answers who is where as the aggregates do; the
operator's `teams` command acts through the same use cases."""

from __future__ import annotations

import argparse
import asyncio
from uuid import UUID

import pytest

from adapters.commands.team_commands import run_teams
from adapters.container import Container
from adapters.services import Services
from application.accounts import AccountService
from application.team_members import InvitationSent
from domain.errors import DomainError
from domain.values import SessionSettings
from projections.accounts import AccountsView
from projections.rebuild import rebuild
from tests.integration.test_accounts_projection import accounts_view, caught_up, register

pytestmark = pytest.mark.integration


@pytest.fixture
def accounts(container: Container) -> AccountService:
    return container.accounts


def busy_team(accounts: AccountService) -> tuple[UUID, UUID, dict[str, UUID]]:
    """(team, workspace, users by name) after every kind of team event there is."""
    users = {who: register(accounts, who).user_id for who in ("ada", "bob", "cy", "dee")}
    team = accounts.create_team(users["ada"], "Research")
    workspace = accounts.create_workspace(users["ada"], "Papers", team_id=team.team_id)
    accounts.change_workspace(
        users["ada"], workspace.workspace_id, name="Papers 2",
        settings=SessionSettings(confirmation="always", model="m1"),
    )  # fmt: skip
    accounts.add_team_member(users["ada"], team.team_id, "bob@example.com", "member")
    accounts.add_team_member(users["ada"], team.team_id, "cy@example.com", "viewer")
    accounts.change_team_member_role(users["ada"], team.team_id, users["cy"], "admin")
    accounts.remove_team_member(users["ada"], team.team_id, users["bob"])
    invited = accounts.add_team_member(users["ada"], team.team_id, "eve@example.com", "viewer")
    assert isinstance(invited, InvitationSent)
    users["eve"] = register(accounts, "eve").user_id
    accounts.accept_invitation(users["eve"], invited.token)
    issued = accounts.create_api_key(users["ada"], "ci", "member", workspace.workspace_id)
    accounts.revoke_api_key(users["ada"], issued.api_key.id)
    accounts.change_profile(users["dee"], name="Dee Dee", avatar_url="https://example.com/d.png")
    accounts.change_password(users["dee"], "correct horse battery", "another good one")
    gone = accounts.create_team(users["ada"], "Short-lived")
    accounts.create_workspace(users["ada"], "Scratch", team_id=gone.team_id)
    accounts.add_team_member(users["ada"], gone.team_id, "dee@example.com", "member")
    accounts.delete_team(users["ada"], gone.team_id)
    return team.team_id, workspace.workspace_id, users


async def test_team_events_fold_into_the_view_as_the_aggregates_have_them_and_rebuild_equal(
    container: Container, services: Services, accounts: AccountService
) -> None:
    team_id, workspace_id, users = busy_team(accounts)
    head = await caught_up(container)
    view = accounts_view(container)
    for user_id in users.values():
        assert view.workspaces_of(user_id) == accounts.workspaces_of(user_id)
    [papers] = [w for w in view.workspaces_of(users["cy"]) if w.workspace_id == workspace_id]
    assert (papers.name, papers.role, papers.settings.model) == ("Papers 2", "admin", "m1")
    assert workspace_id not in {w.workspace_id for w in view.workspaces_of(users["bob"])}
    members = [(m.email, m.role) for m in view.team_members(team_id)]
    assert members == [
        ("ada@example.com", "owner"), ("cy@example.com", "admin"), ("eve@example.com", "viewer")
    ]  # fmt: skip
    live = view.all_rows()
    assert [r["accepted_by"] for r in live["accounts_invitations"]] == [users["eve"]]
    assert [r["revoked_at"] is not None for r in live["accounts_api_keys"]] == [True]
    assert [r["name"] for r in live["accounts_users"] if r["user_id"] == users["dee"]] == [
        "Dee Dee"
    ]

    report = rebuild(view, accounts.recorder, accounts.mapper)
    assert report.position == head
    assert view.all_rows() == live


async def test_the_operators_teams_command_lists_adds_invites_and_removes(
    container: Container, services: Services, accounts: AccountService
) -> None:
    ada = register(accounts, "ada")
    register(accounts, "bob")
    view = container.views[AccountsView.name]
    assert isinstance(view, AccountsView)

    async def teams(*argv: str) -> str:  # on a thread: the projections run on this loop
        action, *rest = argv
        args = argparse.Namespace(action=action)
        match action:
            case "create":
                args.name, args.owner = rest
            case "list":
                (args.user,) = rest
            case "members":
                args.team_id = UUID(rest[0])
            case "add":
                args.team_id, args.email, args.role = UUID(rest[0]), rest[1], rest[2]
            case "remove":
                args.team_id, args.email = UUID(rest[0]), rest[1]
        return await asyncio.to_thread(run_teams, accounts, view, args)

    team_id = (await teams("create", "Ops", "ada@example.com")).split()[0]
    assert (
        await teams("add", team_id, "bob@example.com", "viewer")
        == "added bob@example.com as viewer"
    )
    assert "pass on this token" in await teams("add", team_id, "new@example.com", "member")
    listed = await teams("members", team_id)
    assert "ada@example.com" in listed and "bob@example.com  Bob  viewer" in listed
    assert f"{team_id}  Ops  role=viewer  members=2" in await teams("list", "bob@example.com")
    assert await teams("remove", team_id, "bob@example.com") == "removed bob@example.com"
    assert team_id not in await teams("list", "bob@example.com")  # his own Default is left
    with pytest.raises(DomainError):
        await teams("remove", team_id, "ada@example.com")  # the last owner stays
    assert ada.user_id in {m.user_id for m in view.team_members(UUID(team_id))}
