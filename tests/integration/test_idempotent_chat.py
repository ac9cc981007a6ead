"""A chat message under an `Idempotency-Key`, through the in-process API on real
Postgres and NATS: a key claimed for the first time has nothing under it (the handler
does not look), a retry after a failure finds what the failed request wrote."""

from __future__ import annotations

import json
from collections.abc import Iterator
from uuid import UUID

import pytest
from litestar.testing import TestClient

from adapters.http.routes import chat as chat_route
from adapters.llm.scripted import ScriptedLLM
from adapters.system import System
from domain.session import AgentSession as S
from tests.integration.conftest import BySession
from tests.integration.test_artifacts_api import sign_up

pytestmark = pytest.mark.integration
Client = TestClient  # type: ignore[type-arg]


def stream_types(lines: Iterator[str]) -> list[str]:
    """The `type` of each SSE event of a chat answer, up to its `done` or `error`."""
    types = []
    for line in lines:
        if line.startswith("data:"):
            types.append(json.loads(line[5:])["type"])
            if types[-1] in ("done", "error"):
                break
    return types


def messages_and_runs(system: System, sid: UUID) -> tuple[list[str | None], list[UUID]]:
    events = list(system.container.sessions.session_events(sid))
    keys = [e.idempotency_key for e in events if isinstance(e, S.UserMessageAppended)]
    return keys, [e.run_id for e in events if isinstance(e, S.RunRequested)]


def test_a_message_whose_request_failed_after_its_write_is_not_written_again_on_retry(
    running: tuple[Client, System, BySession], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first request writes the message and its run, then fails (a 500 gives the key
    back); the retry under the same key streams that run and writes nothing."""
    client, system, llm = running
    alice, workspace = sign_up(client, "alice@example.com")
    made = client.post(
        "/api/v1/sessions/", json={"workspace_id": workspace, "title": "t"}, headers=alice
    )
    sid = UUID(made.json()["id"])
    llm.scripts[str(sid)] = ScriptedLLM.from_turns([{"text": "Hello."}])
    url, body = f"/api/v1/chat/{sid}/message", {"content": "hi"}
    headers = {**alice, "Idempotency-Key": "m-1"}

    def broken(*_: object) -> object:
        raise RuntimeError("a fault after the message was written")

    with monkeypatch.context() as fault:
        fault.setattr(chat_route, "run_waiting", broken)
        failed = client.post(url, json=body, headers=headers)
    assert failed.status_code == 500, failed.text
    keys, runs = messages_and_runs(system, sid)
    assert keys == ["m-1"] and len(runs) == 1, "the failed request had written its message"

    with client.stream("POST", url, json=body, headers=headers) as retried:
        assert retried.status_code == 200
        types = stream_types(retried.iter_lines())
    assert types[0] == "message" and types[-1] == "done", types
    assert messages_and_runs(system, sid) == (keys, runs), "nothing written twice"

    with client.stream("POST", url, json=body, headers={**alice, "Idempotency-Key": "m-2"}) as new:
        assert new.status_code == 200
        assert stream_types(new.iter_lines())[-1] in ("done", "error")
    keys, runs = messages_and_runs(system, sid)
    assert keys == ["m-1", "m-2"] and len(runs) == 2, "a new key's message is written"
