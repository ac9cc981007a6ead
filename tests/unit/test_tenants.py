"""Tenants on the in-memory event store: workspaces, teams and roles, and who may do what
in another's organization."""

from __future__ import annotations

from uuid import uuid4

import pytest

from application.accounts import AccountService
from domain.account_errors import (
    AlreadyMember,
    Forbidden,
    OrganizationNotFound,
    UserNotFound,
    WorkspaceNotFound,
)
from domain.accounts import Organization
from domain.errors import InvalidCommand
from tests.unit.test_accounts import last_id, make_app, register


@pytest.fixture
def app() -> AccountService:
    return make_app()


def test_a_new_user_owns_its_default_workspace(app: AccountService) -> None:
    reg = register(app)
    [info] = app.workspaces_of(reg.user_id)
    assert (info.workspace_id, info.organization_id, info.team_id) == (
        reg.workspace_id,
        reg.organization_id,
        reg.team_id,
    )
    assert (info.name, info.role) == ("Default", "owner")
    assert app.authorize(reg.user_id, reg.workspace_id, write=True) == "owner"


def test_an_owner_creates_workspaces_in_its_default_team(app: AccountService) -> None:
    reg = register(app)
    info = app.create_workspace(reg.user_id, "  Research ")
    assert (info.name, info.team_id, info.role) == ("Research", reg.team_id, "owner")
    assert {w.name for w in app.workspaces_of(reg.user_id)} == {"Default", "Research"}
    assert app.role_in_workspace(reg.user_id, info.workspace_id) == "owner"
    with pytest.raises(InvalidCommand):
        app.create_workspace(reg.user_id, "")


def test_managers_create_teams_and_workspaces_in_them_and_others_cannot(
    app: AccountService,
) -> None:
    ada = register(app)
    vic = register(app, "vic@example.com")
    app.add_member(ada.user_id, ada.organization_id, "vic@example.com", "member")
    team = app.create_team(ada.user_id, " Research ")
    assert (team.name, team.organization_id) == ("Research", ada.organization_id)
    assert team.notification_id == last_id(app)
    info = app.create_workspace(ada.user_id, "Papers", team_id=team.team_id)
    assert info.team_id == team.team_id
    with pytest.raises(Forbidden):
        app.create_team(vic.user_id, "Mine", organization_id=ada.organization_id)
    with pytest.raises(InvalidCommand):
        app.create_team(ada.user_id, "")
    with pytest.raises(OrganizationNotFound):
        app.create_team(ada.user_id, "Elsewhere", organization_id=vic.organization_id)


def test_another_tenant_cannot_see_or_use_a_workspace(app: AccountService) -> None:
    ada = register(app)
    bob = register(app, "bob@example.com")
    assert [w.workspace_id for w in app.workspaces_of(bob.user_id)] == [bob.workspace_id]
    assert app.role_in_workspace(bob.user_id, ada.workspace_id) is None
    for write in (False, True):
        with pytest.raises(WorkspaceNotFound) as foreign:
            app.authorize(bob.user_id, ada.workspace_id, write=write)
        with pytest.raises(WorkspaceNotFound) as missing:
            app.authorize(bob.user_id, uuid4(), write=write)
        assert foreign.value.code == missing.value.code == "NOT_FOUND"
    with pytest.raises(OrganizationNotFound):
        app.create_workspace(bob.user_id, "Intrusion", organization_id=ada.organization_id)
    with pytest.raises(OrganizationNotFound):
        app.add_member(bob.user_id, ada.organization_id, "bob@example.com", "owner")
    assert app.workspaces_of(uuid4()) == []


def test_a_viewer_reads_but_cannot_write_or_create(app: AccountService) -> None:
    ada = register(app)
    vic = register(app, "vic@example.com")
    app.add_member(ada.user_id, ada.organization_id, "VIC@example.com", "viewer")
    assert app.authorize(vic.user_id, ada.workspace_id, write=False) == "viewer"
    with pytest.raises(Forbidden) as raised:
        app.authorize(vic.user_id, ada.workspace_id, write=True)
    assert raised.value.code == "FORBIDDEN"
    with pytest.raises(Forbidden):
        app.create_workspace(vic.user_id, "Mine", organization_id=ada.organization_id)
    roles = {w.workspace_id: w.role for w in app.workspaces_of(vic.user_id)}
    assert roles == {vic.workspace_id: "owner", ada.workspace_id: "viewer"}


def test_members_write_and_admins_manage_but_only_owners_grant_ownership(
    app: AccountService,
) -> None:
    ada = register(app)
    mel = register(app, "mel@example.com")
    adm = register(app, "adm@example.com")
    register(app, "new@example.com")
    app.add_member(ada.user_id, ada.organization_id, "mel@example.com", "member")
    assert app.authorize(mel.user_id, ada.workspace_id, write=True) == "member"
    with pytest.raises(Forbidden):
        app.add_member(mel.user_id, ada.organization_id, "new@example.com", "viewer")
    app.add_member(ada.user_id, ada.organization_id, "adm@example.com", "admin")
    with pytest.raises(Forbidden):
        app.add_member(adm.user_id, ada.organization_id, "new@example.com", "owner")
    with pytest.raises(Forbidden):
        app.change_member_role(adm.user_id, ada.organization_id, ada.user_id, "viewer")
    app.add_member(adm.user_id, ada.organization_id, "new@example.com", "viewer")
    assert app.create_workspace(adm.user_id, "Ops", ada.organization_id).role == "admin"
    with pytest.raises(AlreadyMember):
        app.add_member(ada.user_id, ada.organization_id, "mel@example.com", "viewer")
    with pytest.raises(UserNotFound):
        app.add_member(ada.user_id, ada.organization_id, "nobody@example.com", "viewer")
    with pytest.raises(InvalidCommand):
        app.add_member(ada.user_id, ada.organization_id, "new@example.com", "superuser")
    app.change_member_role(ada.user_id, ada.organization_id, mel.user_id, "viewer")
    with pytest.raises(Forbidden):
        app.authorize(mel.user_id, ada.workspace_id, write=True)


# -- the aggregates on their own -------------------------------------------------


def test_a_workspace_needs_an_existing_team() -> None:
    organization = Organization.create("Acme", uuid4())
    with pytest.raises(InvalidCommand):
        organization.create_workspace(uuid4(), uuid4(), "Orphan")


def test_an_organization_keeps_an_owner() -> None:
    owner = uuid4()
    organization = Organization.create("Acme", owner)
    with pytest.raises(InvalidCommand):
        organization.change_member_role(owner, "admin")
    with pytest.raises(InvalidCommand):
        organization.change_member_role(uuid4(), "admin")
