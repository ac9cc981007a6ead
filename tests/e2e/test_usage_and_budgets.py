"""Usage and budgets through the API, against a real `tokendance serve`.

Each scripted call costs 0.012225 USD (Sonnet: 1,000 input, 500 output, 2,000 cache
read, 300 cache write). A budget below the next call's worst case stops the run with
`BUDGET_EXCEEDED` before the model is asked (the script's next answer is still unplayed
when the budget is lifted); thresholds alert once each; another tenant sees none of it.
"""

from __future__ import annotations

from decimal import Decimal

import httpx
import pytest

from tests.e2e.client import read_sse, settled, sign_up
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]

CALL = Decimal("0.012225")


def login(server: httpx.Client, email: str) -> tuple[dict[str, object], httpx.Client]:
    account = sign_up(server, email)
    http = httpx.Client(
        base_url=str(server.base_url),
        headers={"Authorization": f"Bearer {account['access_token']}"},
        timeout=30,
    )
    return account, http


def run_once(http: httpx.Client, session_id: object, text: str) -> list[dict[str, object]]:
    read = read_sse(http, "POST", f"/api/v1/chat/{session_id}/message", json={"content": text})
    assert read.status == 200, read.body
    return [{**e.data, "type": e.event} for e in read.events]


def test_usage_budgets_and_alerts(start_server: StartServer) -> None:
    server = start_server("budget", extra_env={"TOKENDANCE_MAX_TOKENS": "100"})
    with server.client() as anonymous:
        alice, http = login(anonymous, "alice@example.org")
        _, eve = login(anonymous, "eve@example.org")
    org, workspace = alice["organization_id"], alice["workspace_id"]
    me = http.get("/api/v1/auth/me").json()
    assert me["organizations"][0] == {"id": org, "name": me["organizations"][0]["name"],
                                      "role": "owner"}  # fmt: skip
    session = http.post("/api/v1/sessions/", json={"workspace_id": workspace}).json()["id"]

    events = run_once(http, session, "one")
    assert events[-1]["type"] == "done", events
    settled(http)
    report = http.get("/api/v1/usage", params={"group_by": "org,model"}).json()
    assert report["items"] == [{
        "org_id": org, "model": "claude-sonnet-5-5", "input_tokens": 1000,
        "output_tokens": 500, "cache_read_tokens": 2000, "cache_write_tokens": 300,
        "cost_usd": "0.012225", "calls": 1, "unpriced_calls": 0,
    }]  # fmt: skip
    assert report["totals"]["cost_usd"] == "0.012225"
    csv = http.get("/api/v1/usage?group_by=model", headers={"Accept": "text/csv"})
    assert csv.headers["content-type"].startswith("text/csv")
    assert csv.text.splitlines()[1].startswith("claude-sonnet-5-5,1000,500,2000,300,0.012225,1")
    assert eve.get("/api/v1/usage").json()["items"] == []
    assert eve.get("/api/v1/usage", params={"workspace_id": workspace}).status_code == 404
    assert http.get("/api/v1/usage", params={"group_by": "planet"}).status_code == 400
    assert http.get("/api/v1/usage", params={"from": "2026-13-01"}).status_code == 400
    bad = http.get("/api/v1/usage", params={"from": "2026-11-02", "to": "2026-11-01"})
    assert bad.status_code == 400 and bad.json()["error_code"] == "VALIDATION_ERROR"

    # A budget the next call's worst case would exceed: no model call, the run fails.
    tight = http.put(f"/api/v1/budgets/org/{org}", json={"monthly_usd": "0.013"})
    assert tight.status_code == 200, tight.text
    assert tight.json()["spent_usd"] == "0.012225"
    failed = run_once(http, session, "two")
    errors = [e for e in failed if e["type"] == "error"]
    assert errors and errors[0]["error_code"] == "BUDGET_EXCEEDED", failed
    assert "org budget" in str(errors[0]["message"])
    assert eve.put(f"/api/v1/budgets/org/{org}", json={"monthly_usd": 5}).status_code == 404
    assert http.put(f"/api/v1/budgets/org/{org}", json={"monthly_usd": -1}).status_code == 400
    assert http.put(f"/api/v1/budgets/org/{org}",
                    json={"monthly_usd": 1, "thresholds": [0]}).status_code == 400  # fmt: skip

    # Thresholds: the next call takes spend from 50% to 85% of the limit: 50 and 80 fire.
    limit = (2 * CALL / Decimal("0.85")).quantize(Decimal("0.000001"))
    assert http.put(f"/api/v1/budgets/org/{org}", json={"monthly_usd": str(limit)}).is_success
    done = run_once(http, session, "three")
    assert any(e.get("content") == "Answer 2." for e in done if e["type"] == "message"), (
        "the refused call never reached the model: its answer is the next one played"
    )
    settled(http)
    alerts = http.get("/api/v1/budgets/alerts").json()["items"]
    assert sorted(a["threshold"] for a in alerts) == [50, 80]
    assert eve.get("/api/v1/budgets/alerts").json()["items"] == []
    budgets = http.get("/api/v1/budgets").json()["items"]
    assert budgets[0]["spent_usd"] == str(2 * CALL)
    assert http.delete(f"/api/v1/budgets/org/{org}").status_code == 204
    assert http.get("/api/v1/budgets").json()["items"] == []
    usage = http.get(f"/api/v1/sessions/{session}/usage").json()
    assert usage["totals"]["calls"] == 2 and len(usage["calls"]) == 2
    assert eve.get(f"/api/v1/sessions/{session}/usage").status_code == 404
