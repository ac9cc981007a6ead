"""Accounts and tokens, on the in-memory event store (tenants: `test_tenants`)."""

from __future__ import annotations

import base64
import json
from typing import Literal
from uuid import UUID, uuid4

import jwt
import pytest
from argon2 import PasswordHasher

from adapters.bootstrap.in_memory import in_memory_accounts
from application.accounts import AccountService, Registration
from application.tokens import Claims
from domain.account_errors import (
    AuthError,
    EmailTaken,
    Forbidden,
    InvalidCredentials,
    InvalidToken,
    TokenExpired,
    TokenReused,
    TokenRevoked,
)
from domain.accounts import Organization, TokenFamily, User, normalize_email
from domain.errors import InvalidCommand

SECRET = "s" * 32
PASSWORD = "correct horse battery"


class FakeClock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class CountingHasher(PasswordHasher):
    """A cheap argon2id hasher that counts verifications (timing cannot be asserted)."""

    def __init__(self) -> None:
        super().__init__(time_cost=1, memory_cost=8192, parallelism=1)
        self.verifications = 0

    def verify(self, hash: str | bytes, password: str | bytes) -> Literal[True]:  # noqa: A002
        self.verifications += 1
        return super().verify(hash, password)


def make_app(
    clock: FakeClock | None = None, secret: str = SECRET, hasher: PasswordHasher | None = None
) -> AccountService:
    return in_memory_accounts(
        jwt_secret=secret,
        access_ttl=600,
        refresh_ttl=3600,
        clock=clock or FakeClock(),
        hasher=hasher or CountingHasher(),
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def app(clock: FakeClock) -> AccountService:
    return make_app(clock)


def register(app: AccountService, email: str = "ada@example.com") -> Registration:
    return app.register(email, PASSWORD, "Ada Lovelace")


def last_id(app: AccountService) -> int:
    return app.recorder.max_notification_id() or 0


def topics(app: AccountService, start: int = 1) -> list[str]:
    notifications = app.recorder.select_notifications(start=start, limit=100)
    return [n.topic.rsplit(":", 1)[-1] for n in notifications]


def payload(token: str) -> dict[str, object]:
    part = token.split(".")[1]
    decoded: dict[str, object] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return decoded


# -- registration ---------------------------------------------------------------


def test_registration_writes_user_organization_team_and_workspace_in_one_batch(
    app: AccountService,
) -> None:
    reg = register(app)
    assert topics(app) == [
        "User.UserRegistered",
        "User.OrganizationJoined",
        "Organization.OrganizationCreated",
        "Organization.TeamCreated",
        "Organization.WorkspaceCreated",
    ]
    assert reg.notification_id == last_id(app) == 5
    assert reg.user_id == User.id_for("ada@example.com")
    organization: Organization = app.repository.get(reg.organization_id)
    assert organization.members == {reg.user_id: "owner"}
    assert organization.workspaces == {reg.workspace_id: (reg.team_id, "Default")}


def test_the_events_go_to_the_accounts_table(app: AccountService) -> None:
    assert app.name == "accounts"
    # The Postgres factory names its table "<env name>_events": "accounts_events".
    assert app.factory.env.name == "accounts"


def test_a_taken_email_in_any_case_is_refused_and_nothing_is_written(app: AccountService) -> None:
    register(app)
    before = last_id(app)
    with pytest.raises(EmailTaken) as raised:
        app.register("  ADA@Example.COM ", "another password", "Impostor")
    assert raised.value.code == "EMAIL_TAKEN"
    assert last_id(app) == before


@pytest.mark.parametrize(
    ("email", "password", "name"),
    [
        ("not-an-email", PASSWORD, "Ada"),
        ("a@b@example.com", PASSWORD, "Ada"),
        ("ada@localhost", PASSWORD, "Ada"),
        ("ada@.example.com", PASSWORD, "Ada"),
        ("a" * 250 + "@example.com", PASSWORD, "Ada"),
        ("ada@example.com", "short", "Ada"),
        ("ada@example.com", "x" * 1025, "Ada"),
        ("ada@example.com", PASSWORD, "   "),
        ("ada@example.com", PASSWORD, "n" * 201),
    ],
)
def test_bad_registrations_are_refused_before_anything_is_written(
    app: AccountService, email: str, password: str, name: str
) -> None:
    with pytest.raises(InvalidCommand):
        app.register(email, password, name)
    assert last_id(app) == 0


def test_the_password_is_stored_only_as_an_argon2id_hash(app: AccountService) -> None:
    reg = register(app)
    user: User = app.repository.get(reg.user_id)
    assert user.password_hash.startswith("$argon2id$")
    for notification in app.recorder.select_notifications(start=1, limit=100):
        assert PASSWORD.encode() not in notification.state


def test_emails_are_normalized() -> None:
    assert normalize_email("  Ada@Example.COM ") == "ada@example.com"
    assert User.id_for("Ada@Example.com ") == User.id_for("ada@example.com")


# -- login and access tokens -----------------------------------------------------


def test_login_answers_a_bearer_pair_whose_access_token_authenticates(
    app: AccountService, clock: FakeClock
) -> None:
    reg = register(app)
    pair = app.login("ADA@example.com", PASSWORD)
    assert (pair.token_type, pair.expires_in) == ("bearer", 600)
    principal = app.authenticate(pair.access_token)
    assert principal.user_id == reg.user_id
    assert principal.expires_at == int(clock.now) + 600
    family: TokenFamily = app.repository.get(principal.family_id)
    assert not family.revoked


@pytest.mark.parametrize(
    ("email", "password"),
    [("ada@example.com", "wrong password"), ("bob@example.com", PASSWORD), ("nonsense", PASSWORD)],
)
def test_wrong_password_and_unknown_email_fail_alike(
    app: AccountService, email: str, password: str
) -> None:
    register(app)
    with pytest.raises(InvalidCredentials) as raised:
        app.login(email, password)
    assert str(raised.value) == "invalid email or password"
    assert raised.value.code == "INVALID_CREDENTIALS"


def test_an_unknown_email_costs_a_password_verification_too() -> None:
    hasher = CountingHasher()
    app = make_app(hasher=hasher)
    with pytest.raises(InvalidCredentials):
        app.login("nobody@example.com", PASSWORD)
    assert hasher.verifications == 1


def test_an_expired_access_token_is_refused(app: AccountService, clock: FakeClock) -> None:
    register(app)
    pair = app.login("ada@example.com", PASSWORD)
    clock.now += 599
    app.authenticate(pair.access_token)
    clock.now += 1
    with pytest.raises(TokenExpired):
        app.authenticate(pair.access_token)


def test_tampered_foreign_and_wrong_kind_tokens_are_invalid(app: AccountService) -> None:
    register(app)
    pair = app.login("ada@example.com", PASSWORD)
    app.authenticate(pair.access_token)  # the genuine token verified (and kept) first
    header, body, signature = pair.access_token.split(".")
    flipped = ("A" if signature[0] != "A" else "B") + signature[1:]
    claims = payload(pair.access_token)
    other = make_app(secret="o" * 32)
    unsigned = jwt.encode({**claims}, key=None, algorithm="none")
    forged_body = base64.urlsafe_b64encode(
        json.dumps({**claims, "sub": str(uuid4())}).encode()
    ).rstrip(b"=")
    for token in [
        f"{header}.{body}.{flipped}",
        f"{header}.{forged_body.decode()}.{signature}",
        jwt.encode(claims, "o" * 32, algorithm="HS256"),
        unsigned,
        pair.refresh_token,
        "not a token",
        "",
    ]:
        for _ in range(2):  # a refused token is refused again, never kept
            with pytest.raises(InvalidToken):
                app.authenticate(token)
    with pytest.raises(InvalidToken):
        other.authenticate(pair.access_token)
    with pytest.raises(InvalidToken):
        app.refresh(pair.access_token)


def test_auth_errors_share_one_base_for_http() -> None:
    for error in (InvalidCredentials, InvalidToken, TokenExpired, TokenRevoked, TokenReused):
        assert issubclass(error, AuthError)
    assert not issubclass(Forbidden, AuthError)


def test_a_short_jwt_secret_is_refused() -> None:
    with pytest.raises(ValueError):
        make_app(secret="short")


# -- refresh, reuse and logout ---------------------------------------------------


def test_refresh_rotates_and_the_new_tokens_work(app: AccountService) -> None:
    register(app)
    first = app.login("ada@example.com", PASSWORD)
    second = app.refresh(first.refresh_token)
    assert second.refresh_token != first.refresh_token
    assert payload(second.refresh_token)["fam"] == payload(first.refresh_token)["fam"]
    app.authenticate(second.access_token)
    third = app.refresh(second.refresh_token)
    app.authenticate(third.access_token)


def test_reusing_a_spent_refresh_token_revokes_the_whole_login(app: AccountService) -> None:
    register(app)
    first = app.login("ada@example.com", PASSWORD)
    second = app.refresh(first.refresh_token)
    with pytest.raises(TokenReused):
        app.refresh(first.refresh_token)
    with pytest.raises(TokenRevoked):
        app.refresh(second.refresh_token)
    for access_token in (first.access_token, second.access_token):
        with pytest.raises(TokenRevoked):
            app.authenticate(access_token)
    assert topics(app)[-1] == "TokenFamily.TokenFamilyRevoked"
    family: TokenFamily = app.repository.get(UUID(str(payload(first.access_token)["fam"])))
    assert family.revoked_reason == "refresh token reused"


def test_a_reuse_does_not_touch_other_logins(app: AccountService) -> None:
    register(app)
    victim = app.login("ada@example.com", PASSWORD)
    other = app.login("ada@example.com", PASSWORD)
    app.refresh(victim.refresh_token)
    with pytest.raises(TokenReused):
        app.refresh(victim.refresh_token)
    app.authenticate(other.access_token)
    app.refresh(other.refresh_token)


class RacingAccounts(AccountService):
    """Another request spends the refresh token between our read and our write."""

    racing_token: str | None = None

    def _family(self, claims: Claims, *, copy: bool = True) -> TokenFamily:
        family = super()._family(claims, copy=copy)
        token, self.racing_token = self.racing_token, None
        if token is not None:
            self.refresh(token)
        return family


def test_two_refreshes_racing_with_one_token_revoke_the_login() -> None:
    app = RacingAccounts(
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
        jwt_secret=SECRET,
        hasher=CountingHasher(),
    )
    register(app)  # type: ignore[arg-type]
    pair = app.login("ada@example.com", PASSWORD)
    app.racing_token = pair.refresh_token
    with pytest.raises(TokenReused):
        app.refresh(pair.refresh_token)
    with pytest.raises(TokenRevoked):
        app.authenticate(pair.access_token)


def test_an_expired_refresh_token_is_refused(app: AccountService, clock: FakeClock) -> None:
    register(app)
    pair = app.login("ada@example.com", PASSWORD)
    clock.now += 3600
    with pytest.raises(TokenExpired):
        app.refresh(pair.refresh_token)


@pytest.mark.parametrize("with_refresh_token", [True, False])
def test_logout_revokes_the_login_and_only_it(
    app: AccountService, with_refresh_token: bool
) -> None:
    register(app)
    pair = app.login("ada@example.com", PASSWORD)
    other = app.login("ada@example.com", PASSWORD)
    app.logout(pair.refresh_token if with_refresh_token else pair.access_token)
    with pytest.raises(TokenRevoked):
        app.authenticate(pair.access_token)
    with pytest.raises(TokenRevoked):
        app.refresh(pair.refresh_token)
    before = last_id(app)
    app.logout(pair.refresh_token)  # again: nothing more to record
    assert last_id(app) == before
    app.authenticate(other.access_token)


def test_a_replayed_refresh_token_records_the_revocation_before_raising() -> None:
    family = TokenFamily.start(uuid4(), "one")
    family.rotate("one", "two")
    with pytest.raises(TokenReused):
        family.rotate("one", "three")
    assert family.revoked and family.refresh_jti == "two"
    assert [type(e).__name__ for e in family.collect_events()] == [
        "TokenFamilyStarted",
        "RefreshTokenRotated",
        "TokenFamilyRevoked",
    ]
    with pytest.raises(TokenRevoked):
        family.rotate("two", "four")
