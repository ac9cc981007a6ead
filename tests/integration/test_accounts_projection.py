"""Accounts go through their own relay and stream into the accounts read model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from uuid import UUID

import pytest
from eventsourcing.persistence import StoredEvent

from adapters.container import Container
from adapters.services import Services
from application.accounts import AccountService, Registration
from projections.accounts import AccountsView, MemberRow, WorkspaceDirectory
from projections.rebuild import rebuild
from projections.view import ProjectionError
from tests.integration.support import stream_notification_ids
from tests.waiting import eventually_async

pytestmark = pytest.mark.integration

PASSWORD = "correct horse battery"


@pytest.fixture
def accounts(container: Container) -> AccountService:
    return container.accounts


def accounts_view(container: Container) -> AccountsView:
    view = container.views["accounts"]
    assert isinstance(view, AccountsView)
    return view


def register(accounts: AccountService, who: str) -> Registration:
    return accounts.register(f"{who}@example.com", PASSWORD, who.title())


def busy_tenants(accounts: AccountService) -> tuple[Registration, Registration]:
    """Two users; a shared organization with a team, a workspace, a member; logins."""
    ada, bob = register(accounts, "ada"), register(accounts, "bob")
    accounts.add_member(ada.user_id, ada.organization_id, "bob@example.com", "member")
    team = accounts.create_team(ada.user_id, "Research")
    accounts.create_workspace(ada.user_id, "Papers", team_id=team.team_id)
    accounts.change_member_role(ada.user_id, ada.organization_id, bob.user_id, "admin")
    pair = accounts.login("bob@example.com", PASSWORD)
    accounts.logout(accounts.refresh(pair.refresh_token).access_token)
    return ada, bob


def stored_ids(accounts: AccountService) -> list[int]:
    return [n.id for n in accounts.recorder.select_notifications(1, 1_000_000)]


async def caught_up(container: Container) -> int:
    head = container.accounts.recorder.max_notification_id() or 0
    assert await container.bridge(accounts_view(container).wait_for, head, 30.0)
    return head


async def test_account_events_reach_the_accounts_stream_once_each_in_order(
    container: Container, services: Services, accounts: AccountService, nats_url: str
) -> None:
    busy_tenants(accounts)
    container.sessions.start_session(workspace_id=UUID(int=1), owner_id=UUID(int=2), title="s")
    stream = container.settings.nats_accounts_stream
    head = accounts.recorder.max_notification_id() or 0

    async def published() -> bool:
        ids = await stream_notification_ids(nats_url, stream)
        return bool(ids) and ids[-1] >= head

    await eventually_async(published, what=f"{stream} to reach notification {head}")
    assert await stream_notification_ids(nats_url, stream) == stored_ids(accounts)
    sessions = await stream_notification_ids(nats_url, container.settings.nats_stream)
    assert sessions == [1], "the sessions stream carries the sessions' log only"


async def test_the_two_relays_keep_separate_checkpoints(
    container: Container, services: Services, accounts: AccountService
) -> None:
    busy_tenants(accounts)
    head = accounts.recorder.max_notification_id() or 0
    assert head > 1
    container.sessions.start_session(workspace_id=UUID(int=1), owner_id=UUID(int=2), title="s")
    settings, checkpoints = container.settings, container.checkpoints

    async def checkpointed() -> bool:
        accounts_at = checkpoints.max_tracking_id(f"relay:{settings.nats_accounts_stream}")
        sessions_at = checkpoints.max_tracking_id(f"relay:{settings.nats_stream}")
        return (accounts_at, sessions_at) == (head, 1)

    await eventually_async(checkpointed, what="each relay to checkpoint its own log's head")


async def test_teams_workspaces_and_members_made_through_the_application_appear_in_the_view(
    container: Container, services: Services, accounts: AccountService
) -> None:
    ada, bob = busy_tenants(accounts)
    await caught_up(container)
    view = accounts_view(container)
    for user in (ada.user_id, bob.user_id):
        assert view.workspaces_of(user) == accounts.workspaces_of(user)
    assert [w.name for w in view.workspaces_of(bob.user_id)] == ["Default", "Default", "Papers"]
    assert view.members(ada.organization_id) == [
        MemberRow(ada.organization_id, ada.user_id, "owner", "ada@example.com", "Ada"),
        MemberRow(ada.organization_id, bob.user_id, "admin", "bob@example.com", "Bob"),
    ]
    organization = accounts.repository.get(ada.organization_id)
    assert view.teams(ada.organization_id) == organization.teams


async def test_the_live_accounts_view_equals_a_rebuilt_one(
    container: Container, services: Services, accounts: AccountService
) -> None:
    busy_tenants(accounts)
    register(accounts, "cy")
    head = await caught_up(container)
    view = accounts_view(container)
    live = view.all_rows()
    assert len(live["accounts_members"]) == 4

    report = rebuild(view, accounts.recorder, accounts.mapper)
    assert (report.events, report.position) == (head, head)
    assert view.all_rows() == live


async def test_an_unknown_topic_stops_the_accounts_projection_naming_its_notification_id(
    container: Container, services: Services, accounts: AccountService
) -> None:
    register(accounts, "ada")
    accounts.recorder.insert_events(
        [StoredEvent(UUID(int=7), 1, "domain.accounts:Organization.Vanished", b"{}")]
    )
    bad = accounts.recorder.max_notification_id() or 0
    runner = services.runners["accounts"]

    async def stopped() -> bool:
        return runner.error is not None

    await eventually_async(stopped, what="the accounts projection to stop")
    assert f"notification id {bad}" in str(runner.error)
    assert runner.view.position() == bad - 1, "nothing after the bad event is applied"
    with pytest.raises(ProjectionError, match=f"notification id {bad}"):
        rebuild(runner.view, accounts.recorder, accounts.mapper)


def test_the_rebuild_command_rebuilds_the_accounts_view_from_the_accounts_log(
    container: Container, accounts: AccountService, database_url: str, nats_url: str,
    data_root: Path,
) -> None:  # fmt: skip
    ada, _ = busy_tenants(accounts)
    head = accounts.recorder.max_notification_id() or 0
    env = {
        **os.environ,
        "TOKENDANCE_DATABASE_URL": database_url,
        "TOKENDANCE_NATS_URL": nats_url,
        "TOKENDANCE_DATA_DIR": str(data_root / "cli-accounts"),
        "TOKENDANCE_MASTER_KEY_FILE": str(container.settings.data_dir / "master-key"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "adapters.cli", "projections", "rebuild", "accounts"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"rebuilt accounts: {head} events up to notification id {head}" in done.stdout
    view = accounts_view(container)
    assert view.workspaces_of(ada.user_id) == accounts.workspaces_of(ada.user_id)


def test_the_workspace_list_comes_from_the_view_when_current_else_from_the_aggregates(
    container: Container, accounts: AccountService
) -> None:
    ada = register(accounts, "ada")
    view = accounts_view(container)
    directory = WorkspaceDirectory(view, accounts)
    assert directory.workspaces_of(ada.user_id) == accounts.workspaces_of(ada.user_id)

    rebuild(view, accounts.recorder, accounts.mapper)
    # Marks the view's rows, so an answer shows where it came from.
    with view.datastore.transaction(commit=True) as curs:
        curs.execute("UPDATE accounts_workspaces SET name = name || ' (view)'")
    assert [w.name for w in directory.workspaces_of(ada.user_id)] == ["Default (view)"]

    accounts.create_workspace(ada.user_id, "Fresh")  # the view has not applied it
    assert [w.name for w in directory.workspaces_of(ada.user_id)] == ["Default", "Fresh"]
