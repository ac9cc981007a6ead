"""Teams, invitations, API keys and passwords on the in-memory store: the policy table,
roles in teams, keys capped by their role, workspace and their maker's current rights."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import uuid4

import pytest

from application.accounts import AccountService
from application.team_members import InvitationSent
from domain.account_errors import (
    AlreadyMember,
    Forbidden,
    InvitationInvalid,
    InvitationNotFound,
    TeamNotFound,
    TokenExpired,
    TokenRevoked,
    WorkspaceNotFound,
    WrongPassword,
)
from domain.errors import InvalidCommand, InvalidValue
from domain.roles import POLICY, ROLES, UserActor, allows, policy_table, require
from tests.unit.test_accounts import PASSWORD, FakeClock, make_app, register


def test_the_policy_table_orders_the_roles_and_names_what_is_missing() -> None:
    assert [a for a in POLICY if allows("viewer", a)] == ["read"]
    assert [a for a in POLICY if allows("member", a)] == ["read", "write"]
    assert not allows("admin", "grant_owner") and all(allows("owner", a) for a in POLICY)
    with pytest.raises(Forbidden, match="needs the member role or higher; you act as viewer"):
        require("viewer", "write", "chat")
    table = policy_table()
    assert all(f"`{a}`" in table for a in POLICY) and all(r in table for r in ROLES)


def team_of_three(app: AccountService) -> tuple[object, ...]:
    ada, bob, cy = register(app), register(app, "bob@example.com"), register(app, "cy@example.com")
    team = app.create_team(ada.user_id, "Research")
    workspace = app.create_workspace(ada.user_id, "Papers", team_id=team.team_id)
    app.add_team_member(ada.user_id, team.team_id, "bob@example.com", "member")
    app.add_team_member(ada.user_id, team.team_id, "cy@example.com", "viewer")
    return ada, bob, cy, team, workspace


def test_team_members_see_the_team_workspaces_only_with_their_team_role() -> None:
    app = make_app()
    ada, bob, cy, team, workspace = team_of_three(app)
    assert app.authorize(bob.user_id, workspace.workspace_id, write=True) == "member"
    assert app.authorize(cy.user_id, workspace.workspace_id) == "viewer"
    with pytest.raises(Forbidden):
        app.authorize(cy.user_id, workspace.workspace_id, write=True)
    with pytest.raises(WorkspaceNotFound):  # the owner's personal workspace is not the team's
        app.authorize(bob.user_id, ada.workspace_id)
    assert {t.team_id: t.member_count for t in app.teams_of(cy.user_id)}[team.team_id] == 3
    with pytest.raises(Forbidden):  # a member manages nothing
        app.add_team_member(bob.user_id, team.team_id, "dee@example.com", "viewer")
    with pytest.raises(AlreadyMember):
        app.add_team_member(ada.user_id, team.team_id, "bob@example.com", "viewer")
    with pytest.raises(TeamNotFound):  # another tenant's team does not exist for them
        app.add_team_member(register(app, "eve@example.com").user_id, team.team_id,
                            "eve@example.com", "owner")  # fmt: skip

    app.remove_team_member(ada.user_id, team.team_id, bob.user_id)
    assert app.role_in_workspace(bob.user_id, workspace.workspace_id) is None
    assert team.team_id not in {t.team_id for t in app.teams_of(bob.user_id)}


def test_a_team_keeps_an_owner_and_only_owners_make_owners() -> None:
    app = make_app()
    ada, bob, cy, team, _ = team_of_three(app)
    app.change_team_member_role(ada.user_id, team.team_id, cy.user_id, "admin")
    with pytest.raises(Forbidden):
        app.change_team_member_role(cy.user_id, team.team_id, bob.user_id, "owner")
    with pytest.raises(InvalidCommand, match="at least one owner"):
        app.remove_team_member(ada.user_id, team.team_id, ada.user_id)
    with pytest.raises(InvalidCommand, match="at least one owner"):
        app.change_team_member_role(ada.user_id, team.team_id, ada.user_id, "admin")
    with pytest.raises(InvalidValue):
        app.change_team_member_role(ada.user_id, team.team_id, bob.user_id, "superuser")
    # Ownership handed on: then the first owner may step down.
    app.change_team_member_role(ada.user_id, team.team_id, bob.user_id, "owner")
    assert app.team_of(bob.user_id, team.team_id)[1] == "owner"
    app.remove_team_member(cy.user_id, team.team_id, cy.user_id)  # anyone may leave


def test_only_an_owner_deletes_a_team_and_its_workspaces_go_with_it() -> None:
    app = make_app()
    ada, bob, cy, team, workspace = team_of_three(app)
    app.change_team_member_role(ada.user_id, team.team_id, cy.user_id, "admin")
    with pytest.raises(Forbidden, match="owner"):
        app.delete_team(cy.user_id, team.team_id)
    app.delete_team(ada.user_id, team.team_id)
    for user in (ada, bob, cy):
        with pytest.raises(WorkspaceNotFound):
            app.authorize(user.user_id, workspace.workspace_id)
        assert team.team_id not in {t.team_id for t in app.teams_of(user.user_id)}
    with pytest.raises(InvalidCommand, match="at least one team"):  # the Default team stays
        app.delete_team(ada.user_id, ada.team_id)


def test_an_invitation_is_for_one_email_once_until_it_expires() -> None:
    clock = FakeClock()
    app = make_app(clock)
    ada = register(app)
    team = app.create_team(ada.user_id, "Research")
    sent = app.add_team_member(ada.user_id, team.team_id, "Nina@Example.com", "admin")
    assert isinstance(sent, InvitationSent) and sent.email == "nina@example.com"
    late = app.add_team_member(ada.user_id, team.team_id, "late@example.com", "viewer")
    assert isinstance(late, InvitationSent)
    other = register(app, "other@example.com")
    with pytest.raises(InvitationInvalid, match="another email"):
        app.accept_invitation(other.user_id, sent.token)
    nina = register(app, "nina@example.com")
    app.accept_invitation(nina.user_id, sent.token)
    assert app.team_of(nina.user_id, team.team_id)[1] == "admin"
    with pytest.raises(InvitationInvalid, match="already been used"):
        app.accept_invitation(nina.user_id, sent.token)
    with pytest.raises(InvitationNotFound):
        app.accept_invitation(nina.user_id, "tdi_made_up")
    clock.now += app.invitation_ttl + 1
    with pytest.raises(InvitationInvalid, match="expired"):
        app.accept_invitation(register(app, "late@example.com").user_id, late.token)


def test_a_key_never_exceeds_its_role_its_workspace_or_its_makers_current_rights() -> None:
    clock = FakeClock()
    app = make_app(clock)
    ada, bob, _, team, workspace = team_of_three(app)
    # Bob is a member of the team: his admin key acts as a member there.
    issued = app.create_api_key(bob.user_id, "ci", "admin", workspace.workspace_id)
    assert issued.key.startswith("tdk_") and issued.key not in repr(issued.api_key.__dict__)
    principal = app.authenticate(issued.key)
    assert app.authorize(principal, workspace.workspace_id, write=True) == "member"
    with pytest.raises(WorkspaceNotFound):  # his own personal workspace is outside the key
        app.authorize(principal, bob.workspace_id)
    assert [w.workspace_id for w in app.workspaces_of(principal)] == [workspace.workspace_id]
    # Ada's viewer key on her own workspace reads but cannot write.
    viewer = app.authenticate(app.create_api_key(ada.user_id, "ro", "viewer").key)
    assert app.authorize(viewer, ada.workspace_id) == "viewer"
    with pytest.raises(Forbidden):
        app.authorize(viewer, ada.workspace_id, write=True)
    with pytest.raises(Forbidden):
        app.create_api_key(viewer, "more", "owner")
    # Bob leaves the team: his key loses the workspace with him.
    app.remove_team_member(ada.user_id, team.team_id, bob.user_id)
    with pytest.raises(WorkspaceNotFound):
        app.authorize(app.authenticate(issued.key), workspace.workspace_id)
    app.revoke_api_key(bob.user_id, issued.api_key.id)
    with pytest.raises(TokenRevoked):
        app.authenticate(issued.key)


def test_a_key_expires_and_its_expiry_must_be_in_the_future() -> None:
    clock = FakeClock()
    app = make_app(clock)
    ada = register(app)
    now = datetime.fromtimestamp(clock.now, UTC)
    with pytest.raises(InvalidValue):
        app.create_api_key(ada.user_id, "old", "member", expires_at=now - timedelta(seconds=1))
    with pytest.raises(WorkspaceNotFound):
        app.create_api_key(ada.user_id, "elsewhere", "member", workspace_id=uuid4())
    key = app.create_api_key(ada.user_id, "day", "member", expires_at=now + timedelta(days=1)).key
    assert app.authenticate(key).user_id == ada.user_id
    clock.now += 86_401
    with pytest.raises(TokenExpired):
        app.authenticate(key)
    assert [k.name for k in app.api_keys_of(ada.user_id)] == ["day"]


def test_a_new_password_ends_every_login_s_refresh() -> None:
    app = make_app()
    ada = register(app)
    first = app.login("ada@example.com", PASSWORD)
    with pytest.raises(WrongPassword):
        app.change_password(ada.user_id, "not the password", "a new password")
    app.change_password(ada.user_id, PASSWORD, "a new password")
    with pytest.raises(TokenRevoked):
        app.refresh(first.refresh_token)
    fresh = app.new_login(ada.user_id)
    assert app.refresh(fresh.refresh_token).access_token
    assert app.login("ada@example.com", "a new password").access_token


def test_a_profile_keeps_what_is_given_and_refuses_oversized_preferences() -> None:
    app = make_app()
    ada = register(app)
    app.change_profile(ada.user_id, avatar_url="https://example.com/a.png",
                       preferences={"theme": "dark"})  # fmt: skip
    app.change_profile(ada.user_id, name="Ada L.")
    profile = app.profile(UserActor(ada.user_id))
    assert (profile.name, profile.avatar_url, profile.preferences) == (
        "Ada L.", "https://example.com/a.png", {"theme": "dark"}
    )  # fmt: skip
    with pytest.raises(InvalidValue):
        app.change_profile(ada.user_id, preferences={"x": "y" * 16_384})
    with pytest.raises(InvalidValue):
        app.change_profile(ada.user_id, avatar_url="ftp://example.com/a.png")


def test_the_api_page_prints_the_policy_table_the_checks_read() -> None:
    page = (Path(__file__).parents[2] / "docs" / "api.md").read_text()
    assert policy_table() in page
