"""Reads of the accounts as of the log's head (`application.account_store.as_of`): an
aggregate brought up to date at the head a check read is not read again while the head
has not moved, and whatever was written after it, by anyone, is read."""

from __future__ import annotations

import pytest

from application import account_store
from application.account_store import as_of
from application.accounts import AccountService
from domain.account_errors import WorkspaceNotFound
from tests.fakes.store_reads import reads_of
from tests.unit.test_accounts import make_app
from tests.unit.test_team_access import team_of_three


def head(app: AccountService) -> int:
    return app.recorder.max_notification_id() or 0


def test_a_check_at_an_unchanged_head_reads_nothing_again() -> None:
    app = make_app()
    _, bob, _, _, workspace = team_of_three(app)
    reads = reads_of(app)
    with as_of(head(app)):
        assert app.authorize(bob.user_id, workspace.workspace_id) == "member"
        first = len(reads)
        assert first > 0, "brought up to date once"
    with as_of(head(app)):  # another request, nothing written since
        assert app.authorize(bob.user_id, workspace.workspace_id) == "member"
        assert app.authorize(bob.user_id, workspace.workspace_id, write=True) == "member"
    assert len(reads) == first
    app.authorize(bob.user_id, workspace.workspace_id)  # outside a check: as before
    assert len(reads) > first


def test_what_was_written_after_the_head_is_read() -> None:
    app = make_app()
    ada, bob, _, team, workspace = team_of_three(app)
    with as_of(head(app)):
        assert app.authorize(bob.user_id, workspace.workspace_id) == "member"
    app.remove_team_member(ada.user_id, team.team_id, bob.user_id)  # another request
    with as_of(head(app)), pytest.raises(WorkspaceNotFound):
        app.authorize(bob.user_id, workspace.workspace_id)


def test_a_write_within_the_check_is_read_back_by_it() -> None:
    app = make_app()
    ada, bob, _, team, workspace = team_of_three(app)
    with as_of(head(app)):
        assert app.authorize(bob.user_id, workspace.workspace_id) == "member"
        app.remove_team_member(ada.user_id, team.team_id, bob.user_id)
        with pytest.raises(WorkspaceNotFound):
            app.authorize(bob.user_id, workspace.workspace_id)


def test_a_head_is_used_for_a_second_at_most(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run started by a request reads as of the request's head at its start only."""
    app = make_app()
    _, bob, _, _, workspace = team_of_three(app)
    reads = reads_of(app)
    now = [1000.0]
    monkeypatch.setattr(account_store.time, "monotonic", lambda: now[0])
    with as_of(head(app)):
        app.authorize(bob.user_id, workspace.workspace_id)
        first = len(reads)
        now[0] += 0.5
        app.authorize(bob.user_id, workspace.workspace_id)
        assert len(reads) == first
        now[0] += 1.0
        app.authorize(bob.user_id, workspace.workspace_id)
        assert len(reads) > first, "read again once the head is older than a second"
