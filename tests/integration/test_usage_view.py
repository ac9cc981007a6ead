"""The usage read model's figures, to the micro-dollar, against sums made by hand.

Calls across two organizations, two workspaces and two models, with cache reads and
writes priced apart and a call above the long-context tier; a fork that does not
count its parent's calls again; a rebuild equal to the live view row for row.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from uuid import UUID, uuid4

from adapters.config.price_file import load_prices
from adapters.container import Container
from adapters.services import Services
from domain.conversation import ModelTurn, TextBlock, Usage
from domain.values import ModelCallCost
from projections.rebuild import rebuild
from projections.usage import UsageView
from projections.usage_queries import UsageFilter, UsageQueries, Visibility

SONNET, OPUS = "claude-sonnet-4-5", "claude-opus-4-5"
M = Decimal(1_000_000)
# USD per million tokens, from Anthropic's price list: input, output, 5m write, read
RATES = {
    SONNET: (Decimal(3), Decimal(15), Decimal("3.75"), Decimal("0.30")),
    OPUS: (Decimal(5), Decimal(25), Decimal("6.25"), Decimal("0.50")),
}
SONNET_LONG = (Decimal(6), Decimal("22.50"), Decimal("7.50"), Decimal("0.60"))  # > 200K input


def by_hand(model: str, usage: Usage) -> Decimal:
    whole_input = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    i, o, w, r = SONNET_LONG if model == SONNET and whole_input > 200_000 else RATES[model]
    return (
        usage.input_tokens * i + usage.output_tokens * o
        + usage.cache_write_tokens * w + usage.cache_read_tokens * r
    ) / M  # fmt: skip


def call(container: Container, sid: UUID, model: str, usage: Usage) -> None:
    run = uuid4()
    app = container.sessions
    app.append_user_message(sid, "go")
    app.request_run(sid, run)
    app.start_run(sid, run, "test")
    c = load_prices().cost(model, usage, "5m")
    turn = ModelTurn((TextBlock("done"),), "end_turn", usage, model)
    app.record_assistant_turn(sid, run, turn, 5, ModelCallCost(c.usd, c.price_version, c.priced))
    app.complete_run(sid, run)


async def test_every_grouping_equals_the_sums_made_by_hand(
    container: Container, services: Services
) -> None:
    org_a, org_b, team_a, team_b = uuid4(), uuid4(), uuid4(), uuid4()
    ws_a, ws_b, alice, bob = uuid4(), uuid4(), uuid4(), uuid4()
    app = container.sessions
    s1 = app.start_session(workspace_id=ws_a, owner_id=alice, title="a", organization_id=org_a,
                           team_id=team_a).session_id  # fmt: skip
    s2 = app.start_session(workspace_id=ws_b, owner_id=bob, title="b", organization_id=org_b,
                           team_id=team_b).session_id  # fmt: skip
    calls = [
        (s1, SONNET, Usage(1_000, 500, 2_000, 300)),
        (s1, OPUS, Usage(4_000, 1_000, 0, 1_200)),
        (s1, SONNET, Usage(150_000, 2_000, 60_000, 5_000)),  # above the 200K tier
        (s2, OPUS, Usage(700, 90, 10_000, 0)),
        (s2, "some-unknown-model", Usage(100, 10, 0, 0)),  # unpriced: counted at 0
    ]
    for sid, model, usage in calls:
        call(container, sid, model, usage)
    fork = app.fork_session(s1, app.get_session(s1).version).session_id
    head = container.recorder.max_notification_id() or 0
    view = container.views[UsageView.name]
    assert await container.bridge(view.wait_for, head, 30.0)

    queries = UsageQueries(view.datastore)
    today = datetime.now(UTC).date()
    where = UsageFilter(today, today)
    both = Visibility(uuid4(), whole=[org_a, org_b])

    def usage(group_by: list[str], who: Visibility = both) -> dict[tuple[object, ...], tuple]:
        groups = queries.usage(who, where, group_by)  # type: ignore[arg-type]
        return {
            tuple(g.keys.values()): (g.figures.cost_usd, g.figures.calls,
                                     g.figures.cache_read_tokens, g.figures.unpriced_calls)
            for g in groups
        }  # fmt: skip

    cost = [by_hand(m, u) if m in RATES else Decimal(0) for _, m, u in calls]
    assert usage(["model"]) == {
        (OPUS,): (cost[1] + cost[3], 2, 10_000, 0),
        (SONNET,): (cost[0] + cost[2], 2, 62_000, 0),
        ("some-unknown-model",): (Decimal(0), 1, 0, 1),
    }
    assert usage(["org"]) == {
        (org_a,): (sum(cost[:3]), 3, 62_000, 0),
        (org_b,): (cost[3], 2, 10_000, 1),
    }
    assert usage(["workspace", "model"])[(ws_a, SONNET)][0] == cost[0] + cost[2]
    assert usage(["user"])[(bob,)][1] == 2
    assert usage(["session"]) == {
        (s1,): (sum(cost[:3]), 3, 62_000, 0),
        (s2,): (cost[3], 2, 10_000, 1),
    }, "the fork's copies of its parent's calls count once"
    assert fork not in {k[0] for k in usage(["session"])}
    assert usage(["day"]) == {(today,): (sum(cost), 5, 72_000, 1)}
    assert cost[0] == Decimal("0.012225")  # 0.003 + 0.0075 + 0.0006 + 0.001125
    # A member of organization B (not an admin) sees only their own calls.
    bob_only = Visibility(bob, own_only=[org_b])
    assert set(usage(["org"], bob_only)) == {(org_b,)}
    assert usage(["org"], Visibility(uuid4(), own_only=[org_a])) == {}

    live = await container.bridge(view.all_rows)
    report = await container.bridge(rebuild, view, container.recorder, container.sessions.mapper)
    assert report.position == head
    assert await container.bridge(view.all_rows) == live
