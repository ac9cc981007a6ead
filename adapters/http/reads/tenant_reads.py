"""The API's read models, read as the API role with the caller's organizations.

`TenantReads` is the API process's second pool (`adapters.postgres.scoped_datastore`)
and a copy of each read model on it: the handlers' queries (sessions, working memory,
approvals, accounts, usage and budgets, artifacts, files, memories, episodes) go
through these, so row-level security (`adapters.postgres.row_security`) holds for
every one of them. The projections, the engine, the probes and `/metrics` keep the
owner's pool (`container.views`).

`caller_of` finds, where a request's caller is authenticated, the organizations
it belongs to (from the accounts' aggregates, as authorization does) and sets them for
the rest of the request; a caller in no organization sees no read-model row.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any

from eventsourcing.postgres import PostgresFactory

from adapters.container import Container
from adapters.postgres.row_security import apply_row_security
from adapters.postgres.schema_lock import schema_lock
from adapters.postgres.scoped_datastore import (
    Caller,
    ScopedDatastore,
    api_login,
    caller,
    scoped_datastore,
    set_caller,
)
from application.accounts import AccountService
from application.tokens import Principal
from domain.errors import NotFound
from projections.read_models import ReadModels

SCOPE_KEY = "tokendance.caller"  # the request's `Caller`, in its ASGI scope's state


@dataclass
class TenantReads:
    """The API role's pool and the read models on it."""

    datastore: ScopedDatastore
    views: ReadModels
    role: str
    password: str

    def container(self, owner: Container) -> Container:
        """`owner` with these read models in place of its own (the memories' service
        searching through them too): what the handlers are given."""
        memories = copy.copy(owner.memories)
        memories.index = self.views.memories
        return dataclasses.replace(owner, views=self.views, memories=memories)

    def prepare(self, owner: Container) -> None:
        """Put the role, its grants and the policies in place (under the schema lock),
        then check that the role logs in and is held by them (blocking)."""
        factory = owner.sessions.factory
        assert isinstance(factory, PostgresFactory)
        with schema_lock(owner.database_url):  # other replicas may be starting too
            apply_row_security(factory.datastore, self.role, self.password)
        try:
            with self.datastore.get_connection() as conn:
                row = conn.execute(
                    "SELECT rolsuper OR rolbypassrls AS unsafe FROM pg_roles "
                    "WHERE rolname = current_user"
                ).fetchone()
        except Exception as e:
            raise SystemExit(
                f"TOKENDANCE_API_DATABASE_URL: the API role {self.role!r} cannot log in "
                f"({type(e).__name__}); give its URL with a password"
            ) from e
        if row is None or row["unsafe"]:
            raise SystemExit(
                f"TOKENDANCE_API_DATABASE_URL: role {self.role!r} bypasses row-level security"
            )

    def close(self) -> None:
        self.datastore.close()


def tenant_reads(owner: Container) -> TenantReads:
    """The API role's pool (as large as the owner's) and a copy of each read model on it
    (not connected until a query needs it)."""
    s = owner.settings
    login = api_login(owner.database_url, s.api_database_url)
    datastore = scoped_datastore(login, pool_size=s.db_pool_size, max_overflow=s.db_max_overflow)
    return TenantReads(datastore, owner.views.on(datastore), login.role, login.password)


def caller_of(accounts: AccountService, principal: Principal) -> Caller:
    """The organizations the caller belongs to (an API key restricted to a workspace:
    that workspace's alone), and its user (blocking: cached aggregates)."""
    if principal.workspace_id is not None:
        try:
            info = accounts.workspace_of(principal, principal.workspace_id)
        except NotFound:
            return Caller((), principal.user_id)
        return Caller((info.organization_id,), principal.user_id)
    return Caller(accounts.organization_ids_of(principal.user_id), principal.user_id)


def caller_in(scope: MutableMapping[str, Any]) -> None:
    """Set the caller its request's authentication kept in `scope` (or nobody)."""
    found = scope.get("state", {}).get(SCOPE_KEY)
    set_caller(found if isinstance(found, Caller) else Caller(()))


__all__ = ["SCOPE_KEY", "TenantReads", "caller", "caller_in", "caller_of", "tenant_reads"]
