"""`GET /usage?group_by=model,day` over 90 days of one organization's calls.

The usage read model (`projections/usage.py`) is loaded, server side, with `--calls`
recorded calls (default 1,000,000) spread evenly over the 90 days before today, for
one organization of 3 teams, 10 workspaces, 50 users and 4 models, plus a tenth as
many calls of a second organization as noise. Sessions have 20 calls each; a user
works in two workspaces (a third of their sessions in the second), so the daily
rollup holds up to 50 x 2 x 4 rows a day. `usage_calls` is filled by one
`INSERT ... SELECT FROM generate_series`, `usage_daily`, `usage_org_daily` and
`usage_sessions` from it by `GROUP BY` (the sums the projection keeps call by call),
then ANALYZE. An admin's `group_by=model,day` reads `usage_org_daily` (a row per
organization, day and model).

Timed: `UsageQueries.usage` as the endpoint calls it for an admin of the organization
(what `GET /usage` costs in the database and in Python, without HTTP). Target: p99
under 50 ms for `group_by=model,day` over the 90 days. `group_by=session` over one
week (read from `usage_calls`, not the rollup) and `group_by=org` (totals) are shown
for information.

The usage queries are not prepared (a prepared statement's generic plan sorted on
disk here); the warm-up (`--warmup`, 100 calls) fills every pooled connection's caches.

At the default 1,000,000 calls the load takes ~20 s and the whole run ~2 minutes on
2 busy cores.

    python -m bench.usage_query [--calls 1000000] [--runs 200] [--warmup 100]
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta

from eventsourcing.postgres import PostgresDatastore

from adapters.postgres.eventstore import datastore_of
from bench.api_harness import machine
from bench.harness import fresh_servers, median, percentile
from projections.usage import UsageView
from projections.usage_queries import GroupKey, UsageFilter, UsageQueries, Visibility

DAYS = 90
CALLS_PER_SESSION = 20
TEAMS, WORKSPACES, USERS = 3, 10, 50
MODELS = ["claude-sonnet-4-5", "claude-opus-4-5", "claude-haiku-4-5", "gpt-5"]


def datastore(database_url: str) -> PostgresDatastore:
    """A datastore on `database_url`, pooled as the server's (pool 8, overflow 8)."""
    return datastore_of(database_url, pool_size=8, max_overflow=8)


def ids(kind: str, n: int) -> list[uuid.UUID]:
    return [uuid.uuid5(uuid.NAMESPACE_URL, f"bench:{kind}:{i}") for i in range(n)]


class Tenant:
    """An organization's teams, workspaces (each in a team) and users."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.org = uuid.uuid5(uuid.NAMESPACE_URL, f"bench:{name}")
        self.teams = ids(f"{name}:team", TEAMS)
        self.workspaces = ids(f"{name}:workspace", WORKSPACES)
        self.users = ids(f"{name}:user", USERS)


# One row per call g (0 <= g < n): session g / 20, its user, the user's workspace
# (home, or the next one for every third session), the workspace's team.
LOAD_CALLS = """
INSERT INTO usage_calls
SELECT session_id, 3 + 4 * (g %% %(per)s)::int, run_id,
       CASE WHEN g %% 50 = 49 THEN 'compaction' ELSE 'turn' END,
       %(org)s, (%(teams)s::uuid[])[1 + ws %% %(nteams)s], (%(workspaces)s::uuid[])[1 + ws],
       (%(users)s::uuid[])[1 + u], (%(models)s::text[])[1 + (g * 7 + s) %% 4],
       at, (at AT TIME ZONE 'UTC')::date,
       i, o, cr, cw,
       round((i * 3 + o * 15 + cr * 0.3 + cw * 3.75) / 1000000.0, 6),
       'bench', g %% 1000 <> 0
FROM (
    SELECT g, s, u, (u + (s %% 3 = 2)::int) %% %(nworkspaces)s AS ws,
           (%(prefix)s || lpad(to_hex(s), 12, '0'))::uuid AS session_id,
           (%(run_prefix)s || lpad(to_hex(s), 12, '0'))::uuid AS run_id,
           %(start)s::timestamptz + (g::float8 / %(n)s) * make_interval(days => %(days)s) AS at,
           1000 + (g * 37) %% 20000 AS i, 100 + (g * 13) %% 2000 AS o,
           (g * 101) %% 50000 AS cr, (g %% 7) * 500 AS cw
    FROM (SELECT g, g / %(per)s AS s, (g / %(per)s) %% %(nusers)s AS u
          FROM generate_series(0, %(n)s - 1) AS g) AS calls
) AS c
"""
ROLL_UP = """
INSERT INTO usage_daily (organization_id, team_id, workspace_id, user_id, model, day,
    input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, calls,
    unpriced_calls)
SELECT organization_id, team_id, workspace_id, user_id, model, day,
       sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), sum(cache_write_tokens),
       sum(cost_usd), count(*), count(*) FILTER (WHERE NOT priced)
FROM usage_calls GROUP BY organization_id, team_id, workspace_id, user_id, model, day
"""
ROLL_UP_ORG = """
INSERT INTO usage_org_daily (organization_id, day, model, input_tokens, output_tokens,
    cache_read_tokens, cache_write_tokens, cost_usd, calls, unpriced_calls)
SELECT organization_id, day, model, sum(input_tokens), sum(output_tokens),
       sum(cache_read_tokens), sum(cache_write_tokens), sum(cost_usd), sum(calls),
       sum(unpriced_calls)
FROM usage_daily GROUP BY organization_id, day, model
"""
SESSIONS = """
INSERT INTO usage_sessions
SELECT DISTINCT ON (session_id) session_id, organization_id, team_id, workspace_id, user_id,
       0, run_id
FROM usage_calls ORDER BY session_id
"""


def load(store: PostgresDatastore, tenants: Sequence[tuple[Tenant, int]], start: date) -> None:
    """`n` calls of each tenant over `DAYS` days from `start`, and their rollups."""
    with store.get_connection() as conn:
        conn.execute("SET work_mem = '256MB'")
        conn.execute("SET maintenance_work_mem = '256MB'")
        with conn.transaction():
            for number, (t, n) in enumerate(tenants):
                conn.execute(
                    LOAD_CALLS,
                    {
                        "per": CALLS_PER_SESSION, "org": t.org, "teams": t.teams,
                        "workspaces": t.workspaces, "users": t.users, "models": MODELS,
                        "nteams": TEAMS, "nworkspaces": WORKSPACES, "nusers": USERS,
                        "prefix": f"00000000-0000-4000-8{number:03x}-",
                        "run_prefix": f"00000000-0000-4000-9{number:03x}-", "n": n, "days": DAYS,
                        "start": datetime(start.year, start.month, start.day, tzinfo=UTC),
                    },
                )  # fmt: skip
            conn.execute(ROLL_UP)
            conn.execute(ROLL_UP_ORG)
            conn.execute(SESSIONS)
        conn.execute("RESET work_mem")
        conn.execute("RESET maintenance_work_mem")
        conn.execute("ANALYZE usage_calls, usage_daily, usage_org_daily, usage_sessions")


def counts(store: PostgresDatastore) -> dict[str, int]:
    with store.get_connection() as conn:
        return {
            table: int(row["n"])
            for table in ("usage_calls", "usage_daily", "usage_sessions")
            if (row := conn.execute(f"SELECT count(*) AS n FROM {table}").fetchone())
        }


def timed(
    queries: UsageQueries,
    who: Visibility,
    where: UsageFilter,
    group_by: Sequence[GroupKey],
    runs: int,
    warmup: int,
) -> tuple[list[float], int]:
    """Milliseconds per call (after a warm-up), and the groups returned."""
    groups = len(queries.usage(who, where, group_by))
    for _ in range(warmup):
        queries.usage(who, where, group_by)
    took = []
    for _ in range(runs):
        started = time.perf_counter()
        queries.usage(who, where, group_by)
        took.append((time.perf_counter() - started) * 1000)
    return took, groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=100)
    args = parser.parse_args()
    print(f"usage query on the usage read model; {machine()}")
    org, noise = Tenant("org"), Tenant("noise")
    end = datetime.now(UTC).date() - timedelta(days=1)
    start = end - timedelta(days=DAYS - 1)
    with fresh_servers("usageq") as fresh:
        store = datastore(fresh.database_url)
        try:
            UsageView(store).create_table()
            started = time.perf_counter()
            load(store, [(org, args.calls), (noise, args.calls // 10)], start)
            loaded = time.perf_counter() - started
            rows = counts(store)
            print(
                f"  loaded {rows['usage_calls']:,} calls ({args.calls:,} of the organization), "
                f"{rows['usage_daily']:,} daily rows, {rows['usage_sessions']:,} sessions "
                f"in {loaded:.1f} s"
            )
            queries = UsageQueries(store)
            admin = Visibility(user_id=org.users[0], whole=[org.org])
            week = UsageFilter(end - timedelta(days=6), end)
            cases: list[tuple[str, UsageFilter, list[GroupKey]]] = [
                ("group_by=model,day  90 days", UsageFilter(start, end), ["model", "day"]),
                ("group_by=session    7 days", week, ["session"]),
                ("group_by=org        90 days", UsageFilter(start, end), ["org"]),
            ]
            print(f"  {'query':<29} {'rows':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
            for name, where, group_by in cases:
                took, groups = timed(queries, admin, where, group_by, args.runs, args.warmup)
                print(
                    f"  {name:<29} {groups:>6} {median(took):8.2f} {percentile(took, 99):8.2f} "
                    f"{max(took):8.2f}"
                )
            print(
                f"  target: group_by=model,day p99 under 50 ms ({args.runs} timed calls each, "
                f"after {args.warmup} untimed)"
            )
        finally:
            store.close()


if __name__ == "__main__":
    main()
