"""What a request's access check costs: a login's token against an API key, a personal
workspace against a team's in a busy organization, and what the open streams' re-checks
add (each open SSE stream asks again every 2 s whether its caller may still see it, in
full only when the accounts log has moved).

On embedded Postgres: each check reads the cached aggregates, brought forward from the
store (one small query each), so the figures are of the real path. Ratios against the
first row are the comparable figures; the absolute ones move with the machine.

python -m bench.access_cost [--rounds N] [--teams T] [--members M]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from uuid import UUID

from adapters.http.streams.stream_guard import RECHECK
from application.accounts import AccountService
from application.tokens import Principal
from bench.harness import bench_system, cores, median

PASSWORD = "correct horse battery"


def timed(rounds: int, check: Callable[[], object]) -> float:
    """Median microseconds of CPU per call, over `rounds` calls in 5 batches."""
    batches = []
    for _ in range(5):
        start = time.process_time()
        for _ in range(rounds // 5):
            check()
        batches.append((time.process_time() - start) / (rounds // 5) * 1e6)
    return median(batches)


def busy_organization(accounts: AccountService, teams: int, members: int) -> tuple[str, UUID]:
    """An owner with `teams` teams, a workspace each, and `members` members spread over
    them; (a member's email, the last team's workspace id)."""
    owner = accounts.register("owner@example.com", PASSWORD, "Owner")
    workspace_id = owner.workspace_id
    made = []
    for t in range(teams):
        team = accounts.create_team(owner.user_id, f"Team {t}")
        workspace_id = accounts.create_workspace(
            owner.user_id, f"W{t}", team_id=team.team_id
        ).workspace_id
        made.append(team.team_id)
    for m in range(members):
        email = f"m{m}@example.com"
        accounts.register(email, PASSWORD, f"M{m}")
        accounts.add_team_member(owner.user_id, made[m % teams], email, "member")
    email = "member@example.com"
    accounts.register(email, PASSWORD, "Member")
    accounts.add_team_member(owner.user_id, made[-1], email, "member")
    return email, workspace_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--teams", type=int, default=20)
    parser.add_argument("--members", type=int, default=100)
    args = parser.parse_args()
    with bench_system(projections=False) as system:
        accounts = system.container.accounts
        solo = accounts.register("solo@example.com", PASSWORD, "Solo")
        email, team_workspace = busy_organization(accounts, args.teams, args.members)
        solo_token = accounts.login("solo@example.com", PASSWORD).access_token
        member_token = accounts.login(email, PASSWORD).access_token
        member_id = accounts.authenticate(member_token).user_id
        key = accounts.create_api_key(member_id, "bench", "member", team_workspace).key

        def request(credential: str, workspace: UUID) -> Callable[[], object]:
            def check() -> object:
                principal = accounts.authenticate(credential)
                return accounts.authorize(principal, workspace, write=True)

            return check

        def recheck(principal: Principal, workspace: UUID) -> Callable[[], object]:
            def check() -> object:
                accounts.check_live(principal)
                return accounts.authorize(principal, workspace)

            return check

        rows = [
            ("login token, own workspace", request(solo_token, solo.workspace_id)),
            (f"login token, team workspace ({args.teams} teams, {args.members} members)",
             request(member_token, team_workspace)),
            ("API key, its team workspace", request(key, team_workspace)),
            ("an open stream's full re-check (API key)",
             recheck(accounts.authenticate(key), team_workspace)),
        ]  # fmt: skip
        for _, check in rows:  # warm the caches
            check()
        figures = [(name, timed(args.rounds, check)) for name, check in rows]
    base = figures[0][1]
    print(f"access check per request, CPU (median of 5 batches; {cores()} cores)")
    for name, us in figures:
        print(f"  {name:<62} {us:8.0f} us   x{us / base:.2f}")
    streams, full = 1000, figures[-1][1]
    print(
        f"  {streams} open streams: a full re-check of each every {RECHECK:.0f} s would take "
        f"{full * streams / RECHECK / 1e6:.0%} of a core; they re-check in full only after "
        f"the accounts log moved (one head read a second per process otherwise), so an "
        f"accounts change costs {full * streams / 1e3:.0f} ms of CPU spread over {RECHECK:.0f} s"
    )


if __name__ == "__main__":
    main()
