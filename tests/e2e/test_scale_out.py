"""Beyond one process: two API replicas and two workers on shared Postgres and NATS.

The relay and the projections run as roles of their own too. Fifty sessions chat at
once, each sending through one API while a client follows its session stream on the
other: every run ends in `done` exactly once, driven by one worker, and each client
sees every stored event of its session once, in order. An approval given through the
other replica resumes its run on a worker.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from adapters.config.settings import Settings
from tests.e2e.chat_helpers import assert_contiguous, audit_log, chat, follow, new_session, user
from tests.e2e.client import Server, SseRead, is_event
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SESSIONS = 50


def test_two_apis_and_two_workers_drive_fifty_sessions_once_each(
    start_server: StartServer,
) -> None:
    for role in ("relay", "projections", "worker", "worker"):
        start_server("scale", role=role)
    apis = [start_server("scale", role="api") for _ in range(2)]
    account, first = user(apis[0].client(), "scale@example.com")
    both = [first, httpx.Client(base_url=apis[1].url, headers=first.headers, timeout=30)]

    sids: list[str] = []
    for i in range(SESSIONS):
        here, there = both[i % 2], both[(i + 1) % 2]
        sid = str(new_session(here, account["workspace_id"])["id"])
        assert there.get(f"/api/v1/sessions/{sid}").status_code == 200  # the other, at once
        sids.append(sid)

    def run(i: int) -> tuple[SseRead, SseRead]:
        sid, sender, follower = sids[i], both[i % 2], both[(i + 1) % 2]
        with ThreadPoolExecutor(1) as pool:
            followed = pool.submit(follow, follower, sid, 1, timeout=120)
            sent = chat(sender, sid, "hello", until=is_event("done"), timeout=120)
            return sent, followed.result()

    with ThreadPoolExecutor(SESSIONS) as pool:
        reads = list(pool.map(run, range(SESSIONS)))

    for sid, (sent, followed) in zip(sids, reads, strict=True):
        assert_contiguous(followed.ids, 2)  # every stored event once, in order
        assert_contiguous(sent.ids, 2)
        assert [(e.id, e.event) for e in sent.stored] == [(e.id, e.event) for e in followed.stored]
        assert [e.event for e in followed.stored].count("done") == 1
        assert sent.stored[-1].data["status"] == "completed"
        types = [e["type"] for e in audit_log(both[0], sid)]
        assert types.count("RunStarted") == 1 and types.count("RunCompleted") == 1
        assert types.count("AssistantTurnRecorded") == 2

    # Each replica counts what it answered: the sum over both is every chat once, and the
    # store's totals are not in either (they would be summed twice).
    chats = [requests_of(api, "POST", "/api/v1/chat/{session_id}/message") for api in apis]
    assert sum(chats) == SESSIONS and all(chats), chats

    # An approval given through the other API replica resumes the run on a worker.
    sid = str(new_session(both[0], account["workspace_id"], confirmation="always")["id"])
    asked = chat(both[0], sid, "hello", until=is_event("confirm_required"), timeout=60)
    question = asked.events[-1]
    approved = both[1].post(
        f"/api/v1/chat/{sid}/confirm",
        json={"action_id": question.data["action_id"], "confirmed": True},
    )
    assert approved.status_code == 200, approved.text
    rest = follow(both[1], sid, question.id or 0, timeout=60)
    assert [e.event for e in rest.stored][-1] == "done"
    assert rest.stored[-1].data["status"] == "completed"
    types = [e["type"] for e in audit_log(both[0], sid)]
    assert types.count("RunStarted") == 2  # the worker that resumed it claims it
    assert types.count("ToolResultRecorded") == 1 and types.count("RunCompleted") == 1


def requests_of(api: Server, method: str, route: str) -> float:
    """The requests one replica answered on `route` (200), from its own `/metrics`."""
    with api.client() as http:
        text = http.get("/metrics").text
    assert "tokendance_model_tokens" not in text
    samples = [
        s for family in text_string_to_metric_families(text) for s in family.samples
        if s.name == "tokendance_http_requests_total"
        and s.labels == {"method": method, "route": route, "status": "200"}
    ]  # fmt: skip
    return sum(s.value for s in samples)


def test_an_api_replica_signing_with_another_secret_is_refused_at_start(
    start_server: StartServer, database_url: str, nats_url: str, settings: Settings, tmp_path: Path
) -> None:
    running = start_server(None, role="api")
    stderr = tmp_path / "stderr.log"
    odd = Server(
        database_url, nats_url, settings.nats_stream, running.data_dir, stderr=stderr, role="api",
        extra_env={"TOKENDANCE_JWT_SECRET": "another-secret-" + "y" * 32},
    )  # fmt: skip
    try:
        with pytest.raises(RuntimeError, match="exited with 1"):
            odd.start()
    finally:
        odd.stop()
    assert "set the same TOKENDANCE_JWT_SECRET on every replica" in stderr.read_text()
    same = start_server(None, role="api")  # the same secret: welcome
    assert same.client().get("/health").status_code == 200
