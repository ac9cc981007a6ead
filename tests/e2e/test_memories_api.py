"""The memory API and episodic search through the real app (in process, its services
running) on real Postgres and NATS.

What is remembered is found by the very next search; another user and another tenant
never see it (by id, in lists, in searches, in episodic search); a team's shared base
is read by its members and written by its owners and admins only; a forgotten memory
is gone from search at once, a changed one is found by its new text, an expired one is
no longer recalled; the same text twice is one memory; and every bad input is a clear
4xx in the error format that writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import httpx
import pytest
from litestar.testing import TestClient

from adapters.http.app import create_app
from adapters.system import System
from tests.e2e.client import assert_error, wait_until
from tests.integration.test_artifacts_api import sign_up

pytestmark = [pytest.mark.e2e]

Client = TestClient  # type: ignore[type-arg]
MEMORIES = "/api/v1/memories"
SEARCH = "/api/v1/search"  # episodic


@pytest.fixture
def client(system: System) -> Iterator[Client]:
    app = create_app(system)
    with TestClient(app) as client:
        yield client


@dataclass(frozen=True)
class User:
    """A signed-up user's calls: their id, workspace, and a bearer token on each request."""

    client: Client
    headers: dict[str, str]
    id: str
    workspace: str
    organization: str
    team: str  # their personal organization's default team

    def get(self, path: str, **params: str) -> httpx.Response:
        return self.client.get(path, params=params, headers=self.headers)

    def post(self, path: str, body: object) -> httpx.Response:
        return self.client.post(path, json=body, headers=self.headers)

    def patch(self, memory_id: object, body: object) -> httpx.Response:
        return self.client.patch(f"{MEMORIES}/{memory_id}", json=body, headers=self.headers)

    def delete(self, memory_id: object) -> httpx.Response:
        return self.client.delete(f"{MEMORIES}/{memory_id}", headers=self.headers)

    def remember(self, text: object, **fields: object) -> httpx.Response:
        return self.post(MEMORIES, {"text": text, "category": "knowledge", **fields})

    def search(self, query: str, **fields: object) -> list[dict[str, object]]:
        return self._items(self.post(f"{MEMORIES}/search", {"query": query, **fields}))

    def episodes(self, **params: str) -> list[dict[str, object]]:
        return self._items(self.get(SEARCH, **params))

    def total(self, **params: str) -> int:
        answer = self.get(MEMORIES, **params)
        assert answer.status_code == 200, answer.text
        count = answer.json()["total"]
        assert isinstance(count, int)
        return count

    def _items(self, answer: httpx.Response) -> list[dict[str, object]]:
        assert answer.status_code == 200, answer.text
        items: list[dict[str, object]] = answer.json()["items"]
        return items


def user(client: Client, email: str) -> User:
    headers, workspace = sign_up(client, email)
    me = client.get("/api/v1/auth/me", headers=headers).json()
    organization = me["organizations"][0]["id"]
    team = next(t["id"] for t in me["teams"] if t["organization_id"] == organization)
    return User(client, headers, me["id"], workspace, organization, team)


def join(system: System, owner: User, member: str, role: str) -> None:
    """Add a registered user to the owner's personal organization, with `role`."""
    accounts = system.container.accounts
    accounts.add_member(UUID(owner.id), UUID(owner.organization), member, role)


def ids(items: list[dict[str, object]]) -> set[str]:
    return {str(item["id"]) for item in items}


def test_a_memory_is_found_by_the_next_search_and_the_same_text_twice_is_one_memory(
    client: Client,
) -> None:
    alice = user(client, "alice@example.com")
    made = alice.remember("Alice prefers answers in metric units", category="preference",
                          source_document="notes/units.md")  # fmt: skip
    assert made.status_code == 201, made.text
    memory = made.json()
    assert memory["namespace"] == f"user:{alice.id}"  # the caller's own by default
    assert memory["category"] == "preference" and memory["revision"] == 1
    assert memory["deduplicated"] is False and memory["expires_at"] is None
    assert memory["source"] == {"session_id": None, "version": None, "document": "notes/units.md"}
    assert memory["created_by"] == memory["updated_by"] == {"kind": "user", "id": alice.id}

    hits = alice.search("metric units")  # no waiting: the command waited
    assert hits[0]["id"] == memory["id"] and hits[0]["text"] == memory["text"]
    assert hits[0]["namespace"] == f"user:{alice.id}" and isinstance(hits[0]["score"], float)
    assert hits[0]["source"] == memory["source"]
    assert alice.get(f"{MEMORIES}/{memory['id']}").json() == memory

    again = alice.remember("  alice PREFERS answers in   metric units ", category="preference")
    assert again.status_code == 200, again.text
    assert again.json()["id"] == memory["id"] and again.json()["deduplicated"] is True
    listed = alice.get(MEMORIES).json()
    assert listed["total"] == 1 and [m["id"] for m in listed["items"]] == [memory["id"]]


def test_another_user_and_another_tenant_never_see_a_memory(system: System, client: Client) -> None:
    alice, bob = user(client, "alice@example.com"), user(client, "bob@example.com")
    eve = user(client, "eve@example.com")  # another tenant
    join(system, alice, "bob@example.com", "member")  # Alice's workspace, not her own memory
    own = alice.remember("The launch code word is heliotrope").json()
    shared = alice.remember("The workspace deadline is heliotrope day",
                            namespace=f"workspace:{alice.workspace}").json()  # fmt: skip

    assert ids(alice.search("heliotrope", k=10)) == {own["id"], shared["id"]}
    assert ids(bob.search("heliotrope", k=10)) == {shared["id"]}
    assert eve.search("heliotrope", k=10) == []
    assert (alice.total(), bob.total(), eve.total()) == (2, 1, 0)
    for stranger, hidden in ((bob, [own]), (eve, [own, shared])):
        for memory in hidden:
            for answer in (
                stranger.get(f"{MEMORIES}/{memory['id']}"),
                stranger.patch(memory["id"], {"text": "planted"}),
                stranger.delete(memory["id"]),
            ):
                assert_error(answer, 404, "MEMORY_NOT_FOUND")
    assert_error(alice.get(f"{MEMORIES}/{uuid4()}"), 404, "MEMORY_NOT_FOUND")  # the same 404
    for namespace in (f"user:{alice.id}", f"workspace:{alice.workspace}"):
        for answer in (
            eve.post(f"{MEMORIES}/search", {"query": "heliotrope", "namespace": namespace}),
            eve.get(MEMORIES, namespace=namespace),
            eve.remember("planted", namespace=namespace),
        ):
            assert_error(answer, 404, "NAMESPACE_NOT_FOUND")
    assert alice.get(f"{MEMORIES}/{own['id']}").json()["text"] == own["text"]
    assert alice.total() == 2

    # Episodic search: Alice finds her session's message; nobody else does.
    made = alice.post("/api/v1/sessions/", {"workspace_id": alice.workspace})
    assert made.status_code == 201, made.text
    session_id = made.json()["id"]
    system.container.sessions.append_user_message(
        UUID(session_id), "compare heliotrope suppliers in Brittany"
    )
    hits = wait_until(lambda: alice.episodes(q="heliotrope"), timeout=30)
    assert isinstance(hits, list) and {h["session_id"] for h in hits} == {session_id}
    assert all(h["kind"] == "message" and "heliotrope" in h["snippet"] for h in hits)
    in_workspace = alice.episodes(q="heliotrope", workspace_id=alice.workspace)
    assert {h["session_id"] for h in in_workspace} == {session_id}
    assert bob.episodes(q="heliotrope") == eve.episodes(q="heliotrope") == []
    assert eve.episodes(q="heliotrope", workspace_id=eve.workspace) == []
    assert_error(eve.get(SEARCH, q="heliotrope", workspace_id=alice.workspace), 404)


def test_a_teams_shared_base_is_read_by_members_and_written_by_owners_and_admins(
    system: System, client: Client
) -> None:
    alice, bob = user(client, "alice@example.com"), user(client, "bob@example.com")
    ada, vic = user(client, "ada@example.com"), user(client, "vic@example.com")
    eve = user(client, "eve@example.com")
    for email, role in (("bob", "member"), ("ada", "admin"), ("vic", "viewer")):
        join(system, alice, f"{email}@example.com", role)
    team = f"team:{alice.team}"

    first = alice.remember("Quarterly reports use the blue template", namespace=team)
    assert first.status_code == 201, first.text
    by_admin = ada.remember("Invoices go out on the first Monday", namespace=team)
    assert by_admin.status_code == 201, by_admin.text
    memory_id = first.json()["id"]

    for reader in (bob, vic):
        assert reader.get(f"{MEMORIES}/{memory_id}").status_code == 200
        assert reader.total(namespace=team) == 2
        assert memory_id in ids(reader.search("blue template", namespace=team))
        for answer in (
            reader.remember("Members may not write here", namespace=team),
            reader.patch(memory_id, {"text": "Reports use the red template"}),
            reader.delete(memory_id),
        ):
            assert_error(answer, 403, "FORBIDDEN")
    assert_error(eve.remember("planted", namespace=team), 404, "NAMESPACE_NOT_FOUND")
    assert_error(eve.get(f"{MEMORIES}/{memory_id}"), 404, "MEMORY_NOT_FOUND")

    changed = ada.patch(memory_id, {"category": "history"})
    assert changed.status_code == 200 and changed.json()["revision"] == 2, changed.text
    listed = bob.get(MEMORIES, namespace=team).json()
    assert listed["total"] == 2
    assert [m["text"] for m in listed["items"]] == [  # newest first
        "Invoices go out on the first Monday", "Quarterly reports use the blue template",
    ]  # fmt: skip
    assert vic.total(namespace=team, category="history") == 1


def test_forgetting_and_changing_a_memory_show_in_search_at_once(client: Client) -> None:
    alice = user(client, "alice@example.com")
    plant = alice.remember("The office plant is a fern").json()
    standup = alice.remember("Standup is at half past nine").json()

    changed = alice.patch(plant["id"], {"text": "The office plant is a cactus named Spike"})
    assert changed.status_code == 200 and changed.json()["revision"] == 2, changed.text
    hits = alice.search("cactus named Spike", k=1)
    assert [(h["id"], h["text"]) for h in hits] == [
        (plant["id"], "The office plant is a cactus named Spike")
    ]
    assert all(h["text"] != "The office plant is a fern" for h in alice.search("fern"))

    assert alice.delete(standup["id"]).status_code == 204
    assert standup["id"] not in ids(alice.search("standup half past nine", k=100))
    assert_error(alice.get(f"{MEMORIES}/{standup['id']}"), 404, "MEMORY_NOT_FOUND")
    assert_error(alice.delete(standup["id"]), 404, "MEMORY_NOT_FOUND")
    assert alice.total() == 1

    # An expiry set, kept when left out, cleared with null.
    soon = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    assert alice.patch(plant["id"], {"expires_at": soon}).json()["expires_at"]
    assert alice.patch(plant["id"], {"category": "history"}).json()["expires_at"]
    assert alice.patch(plant["id"], {"expires_at": None}).json()["expires_at"] is None


def test_an_expired_memory_is_no_longer_recalled(client: Client) -> None:
    alice = user(client, "alice@example.com")
    now = datetime.now(UTC)
    brief = alice.remember("The door code is 4711 until the audit",
                           expires_at=(now + timedelta(seconds=5)).isoformat())  # fmt: skip
    assert brief.status_code == 201, brief.text
    lasting = alice.remember("The door code of the lab is 0815",
                             expires_at=(now + timedelta(days=1)).isoformat())  # fmt: skip
    assert lasting.status_code == 201, lasting.text

    def gone() -> bool:
        return brief.json()["id"] not in ids(alice.search("door code", k=10))

    wait_until(gone, timeout=30, interval=0.5)  # bounded: expiry is the server's clock
    assert ids(alice.search("door code", k=10)) == {lasting.json()["id"]}
    assert alice.total() == 1  # lists leave it out too


def test_bad_input_gets_a_clear_4xx_and_writes_nothing(system: System, client: Client) -> None:
    alice, eve = user(client, "alice@example.com"), user(client, "eve@example.com")
    vic = user(client, "vic@example.com")
    join(system, alice, "vic@example.com", "viewer")
    kept = alice.remember("One memory that stays").json()
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    fine = {"text": "fine", "category": "knowledge"}
    invalid, missing = (400, "VALIDATION_ERROR"), (404, "NAMESPACE_NOT_FOUND")
    malformed = bad_search = (400, "VALIDATION_ERROR")
    bodies: list[tuple[dict[str, object], tuple[int, str]]] = [
        ({**fine, "text": ""}, invalid),
        ({**fine, "text": " \n\t "}, invalid),
        ({**fine, "text": "x" * 4001}, invalid),
        ({**fine, "category": "opinion"}, invalid),
        ({**fine, "namespace": "planet:mars"}, invalid),
        ({**fine, "namespace": "user:not-an-id"}, invalid),
        ({**fine, "namespace": ""}, invalid),
        ({**fine, "expires_at": past}, invalid),
        ({**fine, "expires_at": "2099-01-01T00:00:00"}, invalid),  # no time zone
        ({**fine, "source_document": "a\x00b"}, invalid),
        ({**fine, "namespace": f"team:{eve.team}"}, missing),
        ({**fine, "namespace": f"team:{uuid4()}"}, missing),
        ({**fine, "namespace": f"user:{eve.id}"}, missing),
        ({**fine, "text": 5}, malformed),
        ({**fine, "colour": "red"}, malformed),
        ({"category": "knowledge"}, malformed),
    ]
    searches: list[tuple[dict[str, object], tuple[int, str]]] = [
        ({"query": "x", "k": 0}, invalid),
        ({"query": "x", "k": 101}, invalid),
        ({"query": "  "}, invalid),
        ({"query": "\x00"}, invalid),
        ({"query": "x", "category": "opinion"}, invalid),
        ({"query": "x", "namespace": "team:"}, invalid),
        ({"query": "x", "namespace": f"team:{eve.team}"}, missing),
        ({"query": "x", "k": "five"}, malformed),
    ]
    patches: list[tuple[dict[str, object], tuple[int, str]]] = [
        ({"text": ""}, invalid),
        ({"category": "x"}, invalid),
        ({"expires_at": past}, invalid),
        ({"text": ["x"]}, malformed),
    ]
    listings: list[tuple[dict[str, str], tuple[int, str]]] = [
        ({"category": "opinion"}, invalid),
        ({"namespace": "nowhere"}, invalid),
        ({"namespace": f"team:{eve.team}"}, missing),
        ({"limit": "0"}, malformed),
        ({"cursor": "made-up"}, malformed),
    ]
    episodic: list[tuple[dict[str, str], tuple[int, str]]] = [
        ({}, bad_search),
        ({"q": " "}, bad_search),
        ({"q": "x", "k": "0"}, bad_search),
        ({"q": "x", "k": "101"}, bad_search),
        ({"q": "x", "from": "yesterday"}, bad_search),
        ({"q": "x", "from": "2026-02-01", "to": "2026-01-01"}, bad_search),
        ({"q": "x", "workspace_id": str(uuid4())}, (404, "NOT_FOUND")),
    ]
    broken_json = client.post(
        MEMORIES,
        content=b'{"text": "fine",',
        headers={**alice.headers, "content-type": "application/json"},
    )
    answers = [
        *[(alice.post(MEMORIES, b), e) for b, e in bodies],
        *[(alice.post(f"{MEMORIES}/search", b), e) for b, e in searches],
        *[(alice.patch(kept["id"], b), e) for b, e in patches],
        *[(alice.get(MEMORIES, **p), e) for p, e in listings],
        *[(alice.get(SEARCH, **p), e) for p, e in episodic],
        (vic.remember("fine", namespace=f"workspace:{alice.workspace}"), (403, "FORBIDDEN")),
        (broken_json, malformed),
    ]
    for answer, (status, code) in answers:
        assert_error(answer, status, code)

    listed = alice.get(MEMORIES).json()
    assert listed["total"] == 1 and [m["id"] for m in listed["items"]] == [kept["id"]]
    assert alice.get(f"{MEMORIES}/{kept['id']}").json() == kept
    assert vic.total(namespace=f"workspace:{alice.workspace}") == 0
    assert eve.total() == 0
