"""Budgets against the real Anthropic adapter and a local Messages API.

A call whose worst case would take a budget over its limit is never sent: the fake
API receives no request for it, and the run ends with `BUDGET_EXCEEDED`. A price
table changed later prices new calls only: recorded costs, and a rebuild, stay.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from uuid import UUID, uuid4

import anthropic

from adapters.bootstrap import bootstrap
from adapters.config.price_file import load_prices
from adapters.config.settings import Settings
from adapters.llm.anthropic import AnthropicLLM
from adapters.system import System
from domain.budgets import BudgetLimits
from domain.pricing import PriceTable, Rates
from domain.session import AgentSession as S
from projections.rebuild import rebuild
from projections.usage import UsageView
from projections.view import View
from tests.fakes.anthropic_server import Text, Turn, serve_fake_anthropic

MODEL = "claude-sonnet-4-5"
FIRST = Decimal("0.012225")  # 1,000 in, 500 out, 2,000 cache read, 300 cache write


def known_usage(text: str) -> Turn:
    return Turn((Text(text),), input_tokens=1000, output_tokens=500,
                cache_read_input_tokens=2000, cache_creation_input_tokens=300)  # fmt: skip


async def settled(system: System, view: str, log_head: int) -> None:
    target = system.container.views[view]
    assert isinstance(target, View)
    assert await system.container.bridge(target.wait_for, log_head, 30.0)


async def run_once(system: System, sid: UUID, text: str) -> str:
    run = uuid4()
    await system.container.bridge(system.container.sessions.submit_message, sid, text, run)
    return await system.engine.runner.run(sid, run)


async def test_a_call_over_budget_is_never_sent_and_recorded_costs_never_change(
    settings: Settings, database_url: str, nats_url: str
) -> None:
    with serve_fake_anthropic() as fake:
        sdk = anthropic.AsyncAnthropic(api_key=fake.api_key, base_url=fake.base_url, max_retries=0)
        llm = AnthropicLLM(sdk, model=MODEL, max_tokens=100)
        system = bootstrap(settings.override(max_tokens=100), database_url=database_url,
                           nats_url=nats_url, llm=llm)  # fmt: skip
        await system.services.start()
        try:
            await scenario(system, fake)
        finally:
            await system.services.stop()
            await llm.aclose()
            system.close()


async def scenario(system: System, fake: object) -> None:
    c = system.container
    me = await c.bridge(c.accounts.register, "payer@example.org", "correct horse battery", "P")
    sid = c.sessions.start_session(
        workspace_id=me.workspace_id, owner_id=me.user_id, title="spend",
        organization_id=me.organization_id, team_id=me.team_id, model=MODEL,
    ).session_id  # fmt: skip
    fake.plan(known_usage("one"))  # type: ignore[attr-defined]
    assert await run_once(system, sid, "first") == "completed"
    await settled(system, "usage", c.recorder.max_notification_id() or 0)

    # The output alone (100 tokens at $15/M) costs more than this budget leaves.
    limits = BudgetLimits.of(FIRST + Decimal("0.0005"), None)
    await c.bridge(c.accounts.set_budget, me.user_id, "org", me.organization_id, limits)
    await settled(system, "budgets", c.accounts_recorder.max_notification_id() or 0)
    fake.plan(known_usage("two"))  # type: ignore[attr-defined]
    sent = len(fake.bodies)  # type: ignore[attr-defined]
    assert await run_once(system, sid, "second") == "failed"
    assert len(fake.bodies) == sent, "the model server received no request"  # type: ignore[attr-defined]
    ended = list(c.sessions.session_events(sid))[-1]
    assert isinstance(ended, S.RunFailed) and ended.error_code == "BUDGET_EXCEEDED"
    assert f"org budget of {me.organization_id}" in ended.reason

    # Prices change; the next call is priced by the new table, the first keeps its cost.
    await c.bridge(c.accounts.remove_budget, me.user_id, "org", me.organization_id)
    bundled = load_prices()
    doubled = PriceTable("doubled", tuple(
        replace(p, rates=Rates(*(2 * getattr(p.rates, f) for f in
                                 ("input", "output", "cache_write_5m", "cache_write_1h",
                                  "cache_read")))) for p in bundled.models
    ))  # fmt: skip
    system.engine.runner.prices = doubled
    assert await run_once(system, sid, "third") == "completed"  # the planned "two"
    await settled(system, "usage", c.recorder.max_notification_id() or 0)
    calls = c.usage.session_calls(sid)
    assert [(x.figures.cost_usd, x.price_version) for x in calls] == [
        (FIRST, bundled.version), (2 * FIRST, "doubled"),
    ]  # fmt: skip
    view = c.views[UsageView.name]
    live = view.all_rows()  # type: ignore[attr-defined]
    await c.bridge(rebuild, view, c.recorder, c.sessions.mapper)
    assert view.all_rows() == live  # type: ignore[attr-defined]
