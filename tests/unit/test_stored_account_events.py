"""Every account event ever stored still loads, and folds to the same aggregate."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import get_args
from uuid import UUID

import pytest
from eventsourcing.persistence import StoredEvent

from adapters.bootstrap.in_memory import in_memory_accounts
from application.accounts import AccountService
from domain.accounts import AccountEvent, Organization, TokenFamily, User

FIXTURE = Path(__file__).parents[1] / "fixtures" / "account_events_v1.json"

State = dict[str, object]


def aggregate_state(aggregate: object) -> State:
    """What an account aggregate holds, as JSON-able data (named, not introspected)."""
    if isinstance(aggregate, User):
        return {
            "kind": "User",
            "version": aggregate.version,
            "email": aggregate.email,
            "name": aggregate.name,
            "password_hash": aggregate.password_hash,
            "organization_ids": [str(o) for o in aggregate.organization_ids],
        }
    if isinstance(aggregate, Organization):
        return {
            "kind": "Organization",
            "version": aggregate.version,
            "name": aggregate.name,
            "owner_id": str(aggregate.owner_id),
            "members": {str(u): r for u, r in aggregate.members.items()},
            "teams": {str(t): n for t, n in aggregate.teams.items()},
            "workspaces": {str(w): [str(t), n] for w, (t, n) in aggregate.workspaces.items()},
        }
    if isinstance(aggregate, TokenFamily):
        return {
            "kind": "TokenFamily",
            "version": aggregate.version,
            "user_id": str(aggregate.user_id),
            "refresh_jti": aggregate.refresh_jti,
            "revoked": aggregate.revoked,
            "revoked_reason": aggregate.revoked_reason,
        }
    raise TypeError(f"not an account aggregate: {aggregate!r}")


def stored_events() -> list[StoredEvent]:
    fixture = json.loads(FIXTURE.read_text())
    return [
        StoredEvent(
            originator_id=UUID(e["originator_id"]),
            originator_version=e["originator_version"],
            topic=e["topic"],
            state=e["state"].encode(),
        )
        for e in fixture["events"]
    ]


def expected_states() -> dict[UUID, State]:
    return {UUID(i): s for i, s in json.loads(FIXTURE.read_text())["expected"].items()}


@pytest.fixture
def app() -> AccountService:
    """A fresh in-memory accounts application holding the fixture's stored events."""
    app = in_memory_accounts(jwt_secret="s" * 32)
    app.recorder.insert_events(stored_events())
    return app


def test_stored_account_events_fold_to_the_aggregates_the_old_code_made(
    app: AccountService,
) -> None:
    expected = expected_states()
    assert {t.split(".")[-1] for t in (s.topic for s in stored_events())} == {
        "UserRegistered", "OrganizationJoined", "OrganizationCreated", "MemberAdded",
        "MemberRoleChanged", "TeamCreated", "WorkspaceCreated", "TokenFamilyStarted",
        "RefreshTokenRotated", "TokenFamilyRevoked",
    }  # fmt: skip
    assert {i: aggregate_state(app.repository.get(i)) for i in expected} == expected


def test_each_stored_account_event_decodes_to_its_typed_class_and_encodes_back(
    app: AccountService,
) -> None:
    for stored in stored_events():
        event = app.mapper.to_domain_event(stored)
        aggregate_name, event_name = stored.topic.split(":")[1].split(".")
        aggregate_class = {"User": User, "Organization": Organization, "TokenFamily": TokenFamily}
        assert type(event) is getattr(aggregate_class[aggregate_name], event_name)
        assert type(event) in get_args(AccountEvent), f"{stored.topic} is not an AccountEvent"
        # The mapper restores any stored keys, so compare them with the declared fields:
        # the same, but for the fields a later class version added (its upcast fills them).
        declared = {f.name for f in fields(event)} - {"originator_id", "originator_version"}
        kept = json.loads(stored.state)
        added = declared - set(kept)
        assert not added or getattr(type(event), "class_version", 1) > 1, stored.topic
        assert set(kept) <= declared, stored.topic
        again = json.loads(app.mapper.to_stored_event(event).state)
        assert {k: v for k, v in again.items() if k not in added | {"class_version"}} == kept


def test_the_loaded_aggregates_take_new_commands(app: AccountService) -> None:
    ada = User.id_for("ada@example.com")
    organization = app.repository.get(personal_organization(app, ada))
    assert isinstance(organization, Organization)
    organization.create_team(UUID(int=0xB), "Later")
    app.save(organization)
    assert app.repository.get(organization.id).teams[UUID(int=0xB)] == "Later"


def personal_organization(app: AccountService, user_id: UUID) -> UUID:
    user = app.repository.get(user_id)
    assert isinstance(user, User) and user.personal_organization_id is not None
    return user.personal_organization_id
