"""Long-term memory in runs on the whole system (real Postgres, NATS, the memories read
model with pgvector): the agent remembers in one session of a user and recalls in
another, at the run's start and with its `recall` tool; a user of another tenant, chatting
about the same thing, recalls nothing; episodic search finds the first session; and a
replay of the recalling session reproduces it from the log."""

from __future__ import annotations

import asyncio
import json
import time
from uuid import UUID

import pytest
from litestar.testing import TestClient

from adapters.bootstrap import bootstrap
from adapters.bootstrap.background import Background
from adapters.commands.demo import replay_events
from adapters.config.settings import Settings
from adapters.http.app import create_app
from adapters.llm.scripted import ScriptedLLM
from adapters.system import System
from domain.session import AgentSession as S
from projections import vector_graphs
from projections.memories import MemoriesView
from projections.vector_graphs import ready_groups
from tests.integration.conftest import BySession
from tests.integration.test_artifacts_api import sign_up
from tests.waiting import eventually

pytestmark = pytest.mark.integration
Client = TestClient  # type: ignore[type-arg]

FACT = "The Lyon office closes at 18:00 on Fridays"


def remembers() -> ScriptedLLM:
    call = {"name": "remember", "id": "m1",
            "input": {"text": FACT, "category": "knowledge"}}  # fmt: skip
    return ScriptedLLM.from_turns([{"tool_calls": [call]}, {"text": "I will remember."}])


def recalls() -> ScriptedLLM:
    call = {"name": "recall", "id": "r1", "input": {"query": "Lyon office Friday"}}
    return ScriptedLLM.from_turns([{"tool_calls": [call]}, {"text": "It closes at 18:00."}])


def chat(client: Client, who: dict[str, str], workspace: str, llm: BySession,
         script: ScriptedLLM, text: str) -> UUID:  # fmt: skip
    made = client.post("/api/v1/sessions/", json={"workspace_id": workspace, "title": "t"},
                       headers=who)  # fmt: skip
    assert made.status_code == 201, made.text
    sid = UUID(made.json()["id"])
    llm.scripts[str(sid)] = script
    with client.stream("POST", f"/api/v1/chat/{sid}/message", json={"content": text},
                       headers=who) as stream:  # fmt: skip
        for line in stream.iter_lines():
            if line.startswith("data:") and json.loads(line[5:]).get("type") in ("done", "error"):
                assert json.loads(line[5:])["type"] == "done", line
                break
    return sid


def test_remembered_in_one_session_is_recalled_in_the_next_and_only_by_its_user(
    running: tuple[Client, System, BySession],
) -> None:
    client, system, llm = running
    alice, workspace = sign_up(client, "alice@example.com")
    first = chat(client, alice, workspace, llm, remembers(), "Note when the Lyon office closes")
    second = chat(
        client, alice, workspace, llm, recalls(), "When does the Lyon office close on Fridays?"
    )

    events = list(system.container.sessions.session_events(second))
    (recalled,) = [e for e in events if isinstance(e, S.MemoriesRecalled)]
    assert [m.text for m in recalled.memories] == [FACT]
    assert recalled.memories[0].source_session_id == first
    (result,) = [e for e in events if isinstance(e, S.ToolResultRecorded)]
    assert FACT in result.summary

    listed = client.get("/api/v1/memories", headers=alice).json()
    (memory,) = listed["items"]
    assert memory["source"]["session_id"] == str(first)
    assert memory["created_by"] == {"kind": "agent", "id": str(first)}

    found = client.get("/api/v1/search", params={"q": "Lyon office"}, headers=alice).json()
    assert str(first) in {item["session_id"] for item in found["items"]}

    mallory, elsewhere = sign_up(client, "mallory@example.com")
    theirs = chat(
        client, mallory, elsewhere, llm, recalls(), "When does the Lyon office close on Fridays?"
    )
    events = list(system.container.sessions.session_events(theirs))
    assert not [e for e in events if isinstance(e, S.MemoriesRecalled)]
    (result,) = [e for e in events if isinstance(e, S.ToolResultRecorded)]
    assert FACT not in result.summary
    searched = client.get("/api/v1/search", params={"q": "Lyon office"}, headers=mallory)
    assert {item["session_id"] for item in searched.json()["items"]} == {str(theirs)}
    assert client.get("/api/v1/memories", headers=mallory).json()["items"] == []

    replayed = asyncio.run(
        replay_events(system.engine, list(system.container.sessions.session_events(second)))
    )
    assert replayed.identical, replayed.divergence


def test_the_server_gives_a_namespace_that_grew_large_a_graph_of_its_own(
    settings: Settings, database_url: str, nats_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_graphs, "GRAPH_MIN", 3)
    system = bootstrap(
        settings, database_url=database_url, nats_url=nats_url, llm=BySession(),
        background=Background(graph_interval=0.2),
    )  # fmt: skip
    app = create_app(system)
    try:
        with TestClient(app) as client:
            alice, _ = sign_up(client, "alice@example.com")
            me = client.get("/api/v1/auth/me", headers=alice).json()["id"]
            texts = ["tea at four", "the Lyon office closes early", "the boat is blue"]
            for text in texts:
                made = client.post(
                    "/api/v1/memories", json={"text": text, "category": "knowledge"}, headers=alice
                )
                assert made.status_code == 201, made.text
            namespace = f"user:{me}"
            graphs = eventually(
                lambda: built_graphs(system), timeout=60, what="a graph built", interval=0.1
            )
            assert graphs == [namespace], "the keeper's pass built the large namespace's graph"
            found = client.post("/api/v1/memories/search",
                                json={"query": "Lyon office"}, headers=alice)  # fmt: skip
            assert found.status_code == 200, found.text
            assert found.json()["items"][0]["text"] == texts[1], "searched through its graph"
    finally:
        system.close()


def built_graphs(system: System) -> list[str]:
    datastore = system.container.views["memories"].datastore
    with datastore.transaction() as curs:
        curs.execute("SELECT grp, model FROM vector_graphs ORDER BY grp")
        listed = [(str(r["grp"]), str(r["model"])) for r in curs.fetchall()]
        return sorted({g for g, m in listed if ready_groups(curs, MemoriesView.VECTORS, m, [g])})


def finds() -> ScriptedLLM:
    cited = {"text": FACT, "citations": [{"url": "https://example.org/lyon"}]}
    call = {"name": "record_finding", "id": "f1", "input": cited}
    return ScriptedLLM.from_turns([{"tool_calls": [call]}, {"text": "Found it."}])


def test_what_a_run_taught_and_never_kept_is_kept_by_the_server_from_the_log(
    settings: Settings, database_url: str, nats_url: str
) -> None:
    llm = BySession()
    system = bootstrap(
        settings, database_url=database_url, nats_url=nats_url, llm=llm,
        background=Background(memory_interval=0.2),
    )  # fmt: skip
    memory = system.engine.runner.memory
    assert memory is not None
    memory.auto = None  # the run keeps nothing: its process died before it got to
    app = create_app(system)
    try:
        with TestClient(app) as client:
            alice, workspace = sign_up(client, "alice@example.com")
            sid = chat(client, alice, workspace, llm, finds(), "Remember that I work in Lyon")
            deadline, items = time.monotonic() + 30, []
            while len(items) < 2 and time.monotonic() < deadline:
                time.sleep(0.2)
                items = client.get("/api/v1/memories", headers=alice).json()["items"]
            by_text = {m["text"]: m for m in items}
            assert set(by_text) == {FACT, "I work in Lyon"}
            assert by_text[FACT]["category"] == "knowledge"
            assert by_text[FACT]["namespace"] == f"workspace:{workspace}"
            assert by_text["I work in Lyon"]["category"] == "preference"
            assert {m["source"]["session_id"] for m in items} == {str(sid)}
            time.sleep(1.0)  # passes go on: none of them keeps anything twice
            assert len(client.get("/api/v1/memories", headers=alice).json()["items"]) == 2
            keeper = client.get("/health").json()["memory_keeper"]
            assert keeper["error"] is None and keeper["position"] > 0
    finally:
        system.close()
