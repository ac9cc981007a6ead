"""The API's read-model connections: the API role's pool, scoped to the caller.

`caller` holds who a request speaks for (its organizations and user), set where the
request's caller is authenticated (`adapters.http.middleware.auth.authenticate`). Store calls
go through `SyncBridge`, which runs each call in a copy of its caller's context, so the
thread that runs a query sees the request's `caller`.

`ScopedDatastore.get_connection` sets both settings on every connection it hands out,
before any query: the caller's, or empty ones outside a request (and then the row-level
security policies of `adapters.postgres.row_security` answer no row). The settings are
the session's (`set_config(..., false)`, sent while the pooled connection is idle in
autocommit): the views read in autocommit mode as well as in transactions, and a
transaction-local setting would be gone before an autocommit read's statement.

That first statement is also the connection's check: one Postgres closed (it restarted)
is discarded and the next one tried, as many times as the pool holds connections, so
the first reads after a restart do not answer 503 for connections made before it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass
from uuid import UUID

import psycopg
from psycopg import Connection
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import DictRow

from adapters.postgres.busy_store import BusyAwareDatastore
from adapters.postgres.row_security import API_ROLE, ORGANIZATIONS, USER

SET_CALLER = "SELECT set_config(%s, %s, false), set_config(%s, %s, false)"


@dataclass(frozen=True)
class Caller:
    """What the API's read-model queries may see: these organizations' rows (and the
    user's own rows that belong to no organization)."""

    organization_ids: tuple[UUID, ...]
    user_id: UUID | None = None


NOBODY = Caller(())
caller: ContextVar[Caller] = ContextVar("tokendance_caller", default=NOBODY)


def set_caller(who: Caller) -> Token[Caller]:
    return caller.set(who)


class ScopedDatastore(BusyAwareDatastore):
    """A pooled datastore whose every connection carries the current `caller`."""

    @contextmanager
    def get_connection(self) -> Iterator[Connection[DictRow]]:
        who = caller.get()
        organizations = ",".join(str(o) for o in who.organization_ids)
        user = "" if who.user_id is None else str(who.user_id)
        settings = (ORGANIZATIONS, organizations, USER, user)
        for attempt in range(self.pool.max_size + 1):
            with super().get_connection() as conn:
                try:
                    conn.execute(SET_CALLER, settings)
                except psycopg.OperationalError:
                    if not conn.broken or attempt == self.pool.max_size:
                        raise
                    continue  # back in the pool a broken connection is thrown away
                yield conn
                return


@dataclass(frozen=True)
class ApiLogin:
    """How the API's reads log in: the URL, and its role's name and password."""

    url: str
    role: str
    password: str


def api_login(database_url: str, given: str | None) -> ApiLogin:
    """The API role's login: `given` (TOKENDANCE_API_DATABASE_URL), else the owner's URL
    with the user `tokendance_api` and no password (embedded Postgres trusts its socket)."""
    params = conninfo_to_dict(given or database_url)
    if not given:
        params["user"] = API_ROLE
        params.pop("password", None)
    role = str(params.get("user") or API_ROLE)
    return ApiLogin(make_conninfo("", **params), role, str(params.get("password") or ""))


def scoped_datastore(login: ApiLogin, *, pool_size: int, max_overflow: int) -> ScopedDatastore:
    params = conninfo_to_dict(login.url)
    return ScopedDatastore(
        str(params.get("dbname") or "postgres"),
        str(params.get("host") or "localhost"),
        str(params.get("port") or "5432"),
        login.role,
        login.password,
        pool_size=pool_size,
        max_overflow=max_overflow,
        connect_timeout=3.0,
        idle_in_transaction_session_timeout=60.0,
    )
