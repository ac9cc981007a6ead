"""Usage and budgets through the API, against a real `tokendance serve`.

Each scripted call costs 0.012225 USD (Sonnet: 1,000 input, 500 output, 2,000 cache
read, 300 cache write). A budget below the next call's worst case stops the run with
`BUDGET_EXCEEDED` before the model is asked (the script's next answer is still unplayed
when the budget is lifted); thresholds alert once each; another tenant sees none of it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from adapters.alert_webhook import verify
from tests.e2e.client import E2E_JWT_SECRET, Server, read_sse, settled, sign_up, wait_until
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]

CALL = Decimal("0.012225")
SECRET = b"a webhook secret of the test"


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


class Receiver:
    """A webhook that refuses its first delivery and records every one."""

    def __init__(self) -> None:
        self.deliveries: list[tuple[int, dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                status = 500 if not receiver.deliveries else 200
                receiver.deliveries.append((status, dict(self.headers), body))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/alerts"

    def delivered(self) -> list[dict[str, object]]:
        bodies = [json.loads(body) for status, _, body in self.deliveries if status == 200]
        return sorted(bodies, key=lambda b: int(b["threshold"]))


def usage_command(server: Server, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKENDANCE_")}
    env.update(
        TOKENDANCE_DATABASE_URL=server.database_url,
        TOKENDANCE_NATS_URL=server.nats_url,
        TOKENDANCE_NATS_STREAM=server.stream,
        TOKENDANCE_JWT_SECRET=E2E_JWT_SECRET,
        TOKENDANCE_DATA_DIR=str(server.data_dir),
        TOKENDANCE_LOG_LEVEL="WARNING",
    )
    done = subprocess.run(
        [sys.executable, "-m", "adapters.cli", "usage", *args],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_usage_budgets_and_alerts(start_server: StartServer) -> None:
    receiver = Receiver()
    env = {"TOKENDANCE_MAX_TOKENS": "100", "TOKENDANCE_ALERT_WEBHOOK": receiver.url,
           "TOKENDANCE_ALERT_WEBHOOK_SECRET": SECRET.decode()}  # fmt: skip
    server = start_server("budget", extra_env=env)
    with server.client() as anonymous:
        alice, http = login(anonymous, "alice@example.org")
        _, eve = login(anonymous, "eve@example.org")
    org, workspace = alice["organization_id"], alice["workspace_id"]
    me = http.get("/api/v1/auth/me").json()
    assert me["organizations"][0] == {"id": org, "name": me["organizations"][0]["name"],
                                      "role": "owner"}  # fmt: skip
    # One tool offered: the worst case of a call is the same however many tools exist.
    only = {"allowed_tools": ["note_progress"]}
    made = http.post("/api/v1/sessions/", json={"workspace_id": workspace, "settings": only})
    session = made.json()["id"]

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

    # Thresholds: the next call takes spend from 36% to 73% of the limit: 50 and 70 fire.
    # (The limit leaves room for the third call's worst case, about 0.6 of a call.)
    limit = (CALL * Decimal("2.75")).quantize(Decimal("0.000001"))
    budget = {"monthly_usd": str(limit), "thresholds": [50, 70, 100]}
    assert http.put(f"/api/v1/budgets/org/{org}", json=budget).is_success
    done = run_once(http, session, "three")
    assert any(e.get("content") == "Answer 2." for e in done if e["type"] == "message"), (
        "the refused call never reached the model: its answer is the next one played"
    )
    notices = [e for e in done if e["type"] == "notice" and e.get("kind") == "budget"]
    assert sorted(int(n["budget"]["threshold"]) for n in notices) == [50, 70], done
    settled(http)
    alerts = http.get("/api/v1/budgets/alerts").json()["items"]
    assert sorted(a["threshold"] for a in alerts) == [50, 70]
    # Each alert reaches the webhook once, signed, though its first delivery failed.
    wait_until(lambda: len(receiver.delivered()) == 2, timeout=60)
    assert [d["threshold"] for d in receiver.delivered()] == [50, 70]
    for _, headers, body in receiver.deliveries:
        signature = headers["X-TokenDance-Signature"]
        assert verify(SECRET, int(headers["X-TokenDance-Timestamp"]), body, signature)
    assert "0.024450" in usage_command(server, "--group-by", "model")
    assert eve.get("/api/v1/budgets/alerts").json()["items"] == []

    # After a restart the thresholds crossed this month stay crossed: the next call
    # (which takes spend past the limit) raises only the 100% alert, sent once.
    assert eve.get(f"/api/v1/sessions/{session}/usage").status_code == 404
    server.stop()
    server = start_server("budget", extra_env=env)
    with server.client(str(alice["access_token"])) as again:
        later = run_once(again, session, "four")
        notices = [e for e in later if e["type"] == "notice" and e.get("kind") == "budget"]
        assert [int(n["budget"]["threshold"]) for n in notices] == [100], later
        settled(again)
        alerts = again.get("/api/v1/budgets/alerts").json()["items"]
        assert sorted(a["threshold"] for a in alerts) == [50, 70, 100]
        wait_until(lambda: len(receiver.delivered()) == 3, timeout=60)
        assert [d["threshold"] for d in receiver.delivered()] == [50, 70, 100]
        budgets = again.get("/api/v1/budgets").json()["items"]
        assert budgets[0]["spent_usd"] == str(3 * CALL)
        assert again.delete(f"/api/v1/budgets/org/{org}").status_code == 204
        assert again.get("/api/v1/budgets").json()["items"] == []
        usage = again.get(f"/api/v1/sessions/{session}/usage").json()
        assert usage["totals"]["calls"] == 3 and len(usage["calls"]) == 3
    receiver.server.shutdown()
