"""The memories read model as a search index, on real Postgres with pgvector.

Memories are remembered, changed and forgotten by real `MemoryNamespace` aggregates in
an event store; the view applies the stored log (as its runner would). Vectors come
from the deterministic hashing embedder, whose "meaning" is shared words and word
pieces (character trigrams), so the texts below are written for it: a morphological
variant (`deployments` for `deployment`) is close in meaning but not the same word.
"""

from __future__ import annotations

import io
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import ClassVar
from uuid import UUID, uuid4

import pytest
from eventsourcing.application import AggregateNotFoundError, Application
from psycopg.sql import SQL

import projections.reembed as reembed_module
import projections.vector_graphs as vector_graphs
from adapters.embeddings import HashingEmbedder
from adapters.memory_upkeep import run_graphs, run_reembed
from adapters.postgres.eventstore import datastore_of, eventstore_env
from application.ports import Embedder, MemoryHit
from domain.authors import ByUser
from domain.memories import MemoryNamespace, MemorySource, Namespace
from projections.memories import MemoriesView
from projections.memory_vectors import EmbeddingModels, model_states, vector_literal
from projections.rebuild import rebuild
from projections.reembed import reembed
from projections.vector_graphs import GraphKeeper, GroupIndex, ready_groups
from projections.view import decode

pytestmark = pytest.mark.integration

ALICE = ByUser(UUID(int=1))


def embedder_for(model: str) -> Embedder:
    found = re.fullmatch(r"hashing-(\d+)", model)
    if found is None:
        raise ValueError(f"no embedder of {model} in these tests")
    return HashingEmbedder(dimension=int(found[1]))


class Memories:
    """Memories kept by aggregates in an event store, and the view fed from its log."""

    def __init__(self, database_url: str, *, embedder: Embedder | None = None) -> None:
        env = eventstore_env(database_url, pool_size=2, max_overflow=4)
        self.store = Application[UUID](env=env)
        self.datastore = datastore_of(database_url, pool_size=8)
        configured = embedder or HashingEmbedder()
        self.models = EmbeddingModels(
            configured, lambda m: configured if m == configured.model else embedder_for(m)
        )
        self.view = MemoriesView(self.datastore, self.models)
        self.view.create_table()
        self.graphs: GraphKeeper | None = None  # a pass after each feed, when set
        self._feeding = threading.Lock()

    def remember(
        self, namespace: Namespace, texts: Sequence[str], category: str = "knowledge",
        *, expires_at: datetime | None = None, now: datetime | None = None,
    ) -> list[UUID]:  # fmt: skip
        aggregate = self.namespace(namespace)
        when = now or datetime.now(UTC)
        ids = [
            aggregate.remember(t, category, MemorySource(), expires_at, ALICE, when).memory_id
            for t in texts
        ]
        self.store.save(aggregate)
        self.feed()
        return ids

    def forget(self, namespace: Namespace, memory_id: UUID) -> None:
        aggregate = self.namespace(namespace)
        aggregate.forget(memory_id, ALICE)
        self.store.save(aggregate)
        self.feed()

    def namespace(self, namespace: Namespace) -> MemoryNamespace:
        try:
            found = self.store.repository.get(namespace.aggregate_id)
        except AggregateNotFoundError:
            return MemoryNamespace.create(namespace, None)
        assert isinstance(found, MemoryNamespace)
        return found

    def feed(self) -> None:
        """Apply what the log holds after the view's position, in one batch."""
        with self._feeding:
            log = self.store.recorder.select_notifications(self.view.position() + 1, 10_000)
            mapper = self.store.mapper
            self.view.apply_batch([(n.id, decode(mapper, "memories", n.id, n)) for n in log])
            if self.graphs is not None:
                assert not self.graphs.keep().busy

    def search(
        self, query: str, *namespaces: Namespace, k: int = 5, categories: list[str] | None = None
    ) -> list[UUID]:
        return [h.memory_id for h in self.hits(query, *namespaces, k=k, categories=categories)]

    def hits(
        self, query: str, *namespaces: Namespace, k: int = 5, categories: list[str] | None = None
    ) -> list[MemoryHit]:
        return self.view.search(query, [str(n) for n in namespaces], k=k, categories=categories)

    def close(self) -> None:
        self.store.close()
        self.datastore.close()


@pytest.fixture
def memories(database_url: str) -> Iterator[Memories]:
    found = Memories(database_url)
    yield found
    found.close()


def user() -> Namespace:
    return Namespace("user", uuid4())


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_a_query_finds_one_memory_by_its_words_and_another_by_its_meaning(
    memories: Memories,
) -> None:
    ns = user()
    # Each shares both stems with the query, so the vector side ranks all of them above
    # the invoice (which holds the query's very words among many others).
    stems = [
        (d, a)
        for d in ("deploying", "deployed", "deploys", "deployments", "redeploys", "deployable")
        for a in ("automated", "automating", "automate", "automates", "automatic", "automatically")
    ]
    memories.remember(ns, [f"{d} {a}" for d, a in stems] + [f"{a} {d}" for d, a in stems])
    [by_meaning] = memories.remember(ns, ["redeployment automations"])
    [by_words] = memories.remember(ns, [INVOICE])

    hits = {h.memory_id: h for h in memories.hits("deployment automation", ns, k=5)}
    assert by_meaning in hits and by_words in hits, [h.text for h in hits.values()]
    assert (hits[by_meaning].similarity or 0) > 0.7, "the nearest in meaning"
    assert hits[by_words].similarity is None, "not among the vector candidates: by words only"
    assert memories.search("invoice Quixotrix", ns, k=1) == [by_words]


def test_recall_at_5_on_a_fixture_of_50_memories(memories: Memories) -> None:
    ns = user()
    ids = memories.remember(ns, MEMORIES)
    recalls = []
    for query, relevant in QUERIES:
        found = set(memories.search(query, ns, k=5))
        wanted = {ids[i] for i in relevant}
        recalls.append(len(found & wanted) / len(wanted))
    recall = sum(recalls) / len(recalls)
    print(f"recall@5 = {recall:.3f} over {len(QUERIES)} queries: {recalls}")
    assert len(QUERIES) >= 8 and len(MEMORIES) == 50
    assert recall >= RECALL_AT_5, recalls


@pytest.fixture(params=["exact", "graph"])
def scan(request: pytest.FixtureRequest, memories: Memories) -> Iterator[str]:
    """Namespaces searched exactly (small ones), or each through its own graph (large
    ones: here every namespace gets a graph as soon as it has a memory)."""
    if request.param == "graph":
        memories.graphs = GraphKeeper(memories.datastore, [MemoriesView.VECTORS], minimum=1)
    yield str(request.param)
    with memories.datastore.transaction() as curs:
        curs.execute("SELECT DISTINCT namespace FROM memories")
        namespaces = [str(r["namespace"]) for r in curs.fetchall()]
        graphs = ready_groups(curs, MemoriesView.VECTORS, "hashing-256", namespaces)
    assert namespaces and graphs == (set(namespaces) if request.param == "graph" else set())


def test_only_the_namespaces_and_categories_asked_for_are_searched(
    memories: Memories, scan: str
) -> None:
    alice, bob, workspace = user(), user(), Namespace("workspace", uuid4())
    texts = ["prefers green tea in the afternoon", "green tea supplier is in Kyoto"]
    mine = memories.remember(alice, texts[:1], "preference") + memories.remember(alice, texts[1:])
    theirs = memories.remember(bob, texts[:1], "preference") + memories.remember(bob, texts[1:])
    shared = memories.remember(workspace, ["the office kitchen stocks green tea"])

    assert set(memories.search("green tea", alice, k=10)) == set(mine)
    assert set(memories.search("green tea", alice, workspace, k=10)) == {*mine, *shared}
    assert memories.search("green tea", alice, workspace, k=10, categories=["preference"]) == [
        mine[0]
    ]
    assert memories.search("green tea", alice, k=10, categories=["history"]) == []
    everything = memories.search("tea Kyoto afternoon office", alice, workspace, k=100)
    assert not set(everything) & set(theirs), "another namespace never leaks"
    assert memories.view.nearest(str(bob), texts[1]) == (theirs[1], pytest.approx(1.0))
    assert memories.view.nearest(str(Namespace("team", uuid4())), texts[1]) is None

    assert memories.view.locate(mine[1]) == str(alice)
    assert memories.view.locate(uuid4()) is None
    rows, total = memories.view.listing([str(alice), str(workspace)], limit=2, offset=0)
    assert total == 3 and [r.memory_id for r in rows] == [shared[0], mine[1]], "newest first"
    rows, total = memories.view.listing([str(alice)], category="preference", limit=5, offset=0)
    assert (total, [r.memory_id for r in rows]) == (1, [mine[0]])
    assert rows[0].created_by_kind == "user" and rows[0].created_by == ALICE.user_id


def test_an_expired_memory_is_found_by_neither_search_nor_nearest(
    memories: Memories, scan: str
) -> None:
    ns = user()
    now = datetime.now(UTC)
    [expired] = memories.remember(
        ns, ["the parking pass code is 4412"], expires_at=now - timedelta(seconds=1),
        now=now - timedelta(minutes=1),
    )  # fmt: skip
    [later] = memories.remember(
        ns, ["the parking garage closes at midnight"], expires_at=now + timedelta(days=1)
    )
    assert memories.search("parking pass code 4412", ns) == [later]
    assert memories.view.nearest(str(ns), "the parking pass code is 4412") == (
        later, pytest.approx(0.5, abs=0.5),
    )  # fmt: skip
    assert memories.view.listing([str(ns)], limit=10, offset=0)[1] == 1
    assert memories.view.listing([str(ns)], limit=10, offset=0, include_expired=True)[1] == 2
    assert expired != later


def test_a_forgotten_memory_is_gone_at_once_and_after_a_rebuild(memories: Memories) -> None:
    ns = user()
    kept, changed, forgotten = memories.remember(
        ns, ["likes sailing on lakes", "the boat is moored in Kiel", "the boat is blue"]
    )
    aggregate = memories.namespace(ns)
    aggregate.update(changed, ALICE, datetime.now(UTC), text="the boat is moored in Rostock")
    memories.store.save(aggregate)
    memories.feed()
    assert forgotten in memories.search("boat blue", ns)
    memories.forget(ns, forgotten)

    assert forgotten not in memories.search("boat blue", ns, k=10)
    assert memories.view.nearest(str(ns), "the boat is blue") != (forgotten, pytest.approx(1.0))
    assert memories.search("moored Rostock", ns, k=1) == [changed]
    assert all("Kiel" not in h.text for h in memories.hits("Kiel", ns, k=10))
    live = memories.view.all_rows()
    assert [r["memory_id"] for r in live["memories"]] == sorted([kept, changed])
    assert len(live["memory_vectors"]) == 2

    report = rebuild(memories.view, memories.store.recorder, memories.store.mapper)
    assert report.position == memories.store.recorder.max_notification_id()
    assert memories.view.all_rows() == live
    assert forgotten not in memories.search("boat blue", ns, k=10)


def graph_state(memories: Memories) -> dict[tuple[str, str], bool]:
    """Each index listed in vector_graphs: its namespace and model ("" for its words), and
    whether it is valid."""
    with memories.datastore.get_connection() as conn:
        rows = conn.execute(
            "SELECT g.grp, g.model, coalesce(i.indisvalid, false) AS valid FROM vector_graphs g "
            "LEFT JOIN pg_class c ON c.relname = g.index_name "
            "LEFT JOIN pg_index i ON i.indexrelid = c.oid"
        ).fetchall()
    return {(str(r["grp"]), str(r["model"])): bool(r["valid"]) for r in rows}


def indexes_of_vectors(memories: Memories, table: str = "memory_vectors") -> set[str]:
    with memories.datastore.get_connection() as conn:
        rows = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = %s", (table,)
        ).fetchall()
    return {str(r["indexname"]) for r in rows}


def test_a_namespace_gets_a_graph_of_its_own_when_large_and_loses_it_when_small(
    memories: Memories,
) -> None:
    keeper = GraphKeeper(memories.datastore, [MemoriesView.VECTORS], minimum=4)
    large, small = user(), user()
    ids = memories.remember(
        large, [f"note {i}: the {w} team ships" for i, w in enumerate(WORDS[:5])]
    )
    memories.remember(small, ["one note", "another note"])
    exact = memories.hits("the support team ships", large, k=3)
    assert not indexes_of_vectors(memories) & {MemoriesView.VECTORS.index_name("hashing-256")}

    kept = keeper.keep()
    built = [f"{large} (words)", f"{large} (hashing-256)"]
    assert kept.built == built and not kept.dropped, kept
    graph = GroupIndex(MemoriesView.VECTORS, str(large), "hashing-256")
    words = GroupIndex(MemoriesView.VECTORS, str(large), "")
    assert graph.name in indexes_of_vectors(memories)
    assert words.name in indexes_of_vectors(memories, "memories")
    assert memories.hits("the support team ships", large, k=3) == exact, "same answer by graph"
    with memories.datastore.transaction() as curs:
        # Tiny here, so sorting a few rows looks cheaper than any graph: not an option.
        curs.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off")
        vector = vector_literal([1.0] + [0.0] * 255)
        curs.execute(SQL("EXPLAIN ") + graph.scan("memory_id", 256),
                     {"vector": vector, "ef": 40}, prepare=False)  # fmt: skip
        plan = "\n".join(str(r["QUERY PLAN"]) for r in curs.fetchall())
    assert graph.name in plan, "the search says the graph's cast and predicate"
    assert memories.search("ships support", large, k=1) == [ids[3]], "by words, its index"
    assert "nothing to do" in str(keeper.keep())

    for memory_id in ids[:3]:  # 2 left: at half the minimum, a graph that is there stays
        memories.forget(large, memory_id)
    both = {(str(large), ""): True, (str(large), "hashing-256"): True}
    assert keeper.keep().dropped == [] and graph_state(memories) == both
    memories.forget(large, ids[3])
    assert sorted(keeper.keep().dropped) == sorted(built)
    assert graph_state(memories) == {} and graph.name not in indexes_of_vectors(memories)
    assert words.name not in indexes_of_vectors(memories, "memories")
    assert memories.search("the team ships", large, k=3) == [ids[4]], "exactly, again"


def test_a_graph_build_cut_short_is_found_and_made_again(memories: Memories) -> None:
    keeper = GraphKeeper(memories.datastore, [MemoriesView.VECTORS], minimum=2)
    ns = user()
    memories.remember(ns, ["the first note", "the second note", "the third note"])
    with memories.datastore.get_connection() as blocker:
        # A writer's open transaction: a concurrent build waits for it to end.
        blocker.autocommit = False
        blocker.execute("LOCK TABLE memories IN ROW EXCLUSIVE MODE")
        failures: list[BaseException] = []
        building = threading.Thread(target=guarded(lambda: print(keeper.keep()), failures))
        building.start()
        name = GroupIndex(MemoriesView.VECTORS, str(ns), "").name  # the words: built first
        deadline = time.monotonic() + 30
        while name not in indexes_of_vectors(memories, "memories"):
            assert time.monotonic() < deadline, "the build never began"
            time.sleep(0.05)
        assert graph_state(memories) == {(str(ns), ""): False}, "made, not yet valid"
        time.sleep(0.2)  # waiting for the blocker
        keeper.cancel()
        building.join(30)
        blocker.rollback()
        blocker.autocommit = True
    assert not building.is_alive() and len(failures) == 1, failures
    assert "canceling statement due to user request" in str(failures[0]), failures
    assert graph_state(memories) == {(str(ns), ""): False}, "left invalid; nothing more began"
    with memories.datastore.transaction() as curs:  # searched by its rows meanwhile
        assert not ready_groups(curs, MemoriesView.VECTORS, "", [str(ns)])
    assert len(memories.search("the second note", ns, k=3)) == 3

    again = GraphKeeper(memories.datastore, [MemoriesView.VECTORS], minimum=2).keep()
    assert again.dropped == [f"{ns} (words)"], again
    assert again.built == [f"{ns} (words)", f"{ns} (hashing-256)"], again
    assert graph_state(memories) == {(str(ns), ""): True, (str(ns), "hashing-256"): True}
    assert memories.search("second", ns, k=1) == memories.search("the second note", ns, k=1)
    with memories.datastore.get_connection() as holder:  # a re-embed at work
        holder.execute("SELECT pg_advisory_lock(hashtext('embedding_models'))")
        busy = GraphKeeper(memories.datastore, [MemoriesView.VECTORS], minimum=2).keep()
        holder.execute("SELECT pg_advisory_unlock(hashtext('embedding_models'))")
    assert busy.busy and "nothing done" in str(busy)


def test_reembedding_while_memories_keep_coming_never_mixes_models(
    memories: Memories, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reembed_module, "FILL_BATCH", 8)  # many batches to interleave with
    monkeypatch.setattr(vector_graphs, "GRAPH_MIN", 10)
    ns, small = user(), user()
    memories.remember(ns, [f"note {i}: {w} for the {w}s team" for i, w in enumerate(WORDS)])
    [anchor] = memories.remember(ns, ["redeployment automations"])
    memories.remember(small, ["a namespace searched exactly throughout"])
    assert GraphKeeper(memories.datastore, [MemoriesView.VECTORS]).keep().built == [
        f"{ns} (words)",
        f"{ns} (hashing-256)",
    ]
    models = {m: embedder_for(m) for m in ("hashing-256", "hashing-128")}
    building, enough, stop = threading.Event(), threading.Event(), threading.Event()
    added: list[tuple[UUID, str]] = []  # after the new model was registered
    answers: list[list[MemoryHit]] = []
    failures: list[BaseException] = []

    def add() -> None:
        for i in range(10_000):
            if stop.is_set():
                return
            text = f"late note {i} about zebra{i}"
            [memory_id] = memories.remember(ns, [text])
            if building.is_set():
                added.append((memory_id, text))
                if len(added) >= 5:
                    enough.set()

    def search() -> None:
        while not stop.is_set():
            answers.append(memories.hits("deployment automation", ns, k=5))

    def progress(done: int, total: int) -> None:
        building.set()  # registered by now: hold the fill until memories came meanwhile
        assert enough.wait(60)

    threads = [threading.Thread(target=guarded(f, failures)) for f in (add, search)]
    for t in threads:
        t.start()
    try:
        report = reembed(
            memories.datastore, memories.models, models["hashing-128"],
            [MemoriesView.VECTORS], progress,
        )  # fmt: skip
        after = len(answers)
        deadline = time.monotonic() + 60
        while len(answers) < after + 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    assert not failures, failures
    assert report.changed and report.model == "hashing-128", report
    assert len(answers) > after, "searches kept answering after the flip"
    query = {m: e.embed(["deployment automation"])[0] for m, e in models.items()}
    for hits in answers:
        assert anchor in {h.memory_id for h in hits}, "searches kept finding what was there"
        assert any(
            all(
                abs((h.similarity or 0) - cosine(query[m], models[m].embed([h.text])[0])) < 1e-4
                for h in hits
                if h.similarity is not None
            )
            for m in models
        ), f"one model's vectors per search: {hits}"

    assert model_states(memories.datastore) == {"hashing-256": "retired", "hashing-128": "ready"}
    with memories.datastore.get_connection() as conn:
        left = conn.execute("SELECT model, count(*) AS n FROM memory_vectors GROUP BY model")
        counts = {r["model"]: r["n"] for r in left.fetchall()}
        rows = conn.execute("SELECT count(*) AS n FROM memories").fetchone()
        indexes = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'memory_vectors'"
        ).fetchall()
    assert rows is not None and counts == {"hashing-128": rows["n"]}, counts
    names = {r["indexname"] for r in indexes}
    graphs = {m: GroupIndex(MemoriesView.VECTORS, str(ns), m).name for m in models}
    assert graphs["hashing-128"] in names, "the new model's graph built before the flip"
    assert graphs["hashing-256"] not in names, "the old one's dropped after it"
    assert graph_state(memories) == {(str(ns), ""): True, (str(ns), "hashing-128"): True}
    assert not names & {MemoriesView.VECTORS.index_name(m) for m in models}, "no whole graph"
    assert len(added) >= 5
    for memory_id, text in added:
        assert memories.view.nearest(str(ns), text) == (memory_id, pytest.approx(1.0, abs=1e-4))
    again = reembed(memories.datastore, memories.models, models["hashing-128"],
                    [MemoriesView.VECTORS], progress)  # fmt: skip
    assert not again.changed and "already" in str(again)


def test_the_reembed_command_draws_its_progress_and_says_what_it_did(
    memories: Memories, database_url: str
) -> None:
    ns = user()
    ids = memories.remember(ns, [f"note {i} for the {w} team" for i, w in enumerate(WORDS)])
    out = io.StringIO()
    assert run_reembed(database_url, HashingEmbedder(dimension=64), embedder_for, out=out) == 0
    assert f"{len(ids)}/{len(ids)}" in out.getvalue()
    assert "re-embedded from hashing-256 to hashing-64" in out.getvalue()
    assert memories.view.nearest(str(ns), "note 3 for the support team") == (
        ids[3], pytest.approx(1.0, abs=1e-4),
    )  # fmt: skip
    again = io.StringIO()
    assert run_reembed(database_url, HashingEmbedder(dimension=64), embedder_for, out=again) == 0
    assert "hashing-64 is already the model searches use" in again.getvalue()


def guarded(target: Callable[[], None], failures: list[BaseException]) -> Callable[[], None]:
    def run() -> None:
        try:
            target()
        except BaseException as e:
            failures.append(e)

    return run


WORDS = [
    "billing", "search", "design", "support", "sales", "platform", "mobile", "data",
    "security", "growth", "finance", "legal", "research", "infra", "quality", "docs",
] * 4  # fmt: skip
INVOICE = (
    "Invoice 7731 from Quixotrix Ltd lists deployment automation under consulting fees, "
    "settled by bank transfer in March with reference 99812-B, approved by Margaret from "
    "procurement after the yearly audit of vendor contracts"
)
RECALL_AT_5 = 0.70  # measured 0.722 (12 queries, hashing-256); stated a little below
# 50 memories, 10 topics of 5; a query names the memories it should find.
MEMORIES = [
    # coffee and food (0-4)
    "The user drinks coffee black, without sugar or milk",
    "Prefers espresso over filter coffee when travelling",
    "Is vegetarian: suggest restaurants with meatless menus",
    "Allergic to peanuts; check every recipe for nuts",
    "Lunch breaks are at noon and last forty minutes",
    # travel (5-9)
    "Books train tickets rather than flights for trips under five hours",
    "Always asks for an aisle seat on long flights",
    "Travel budget for conferences is capped at 2000 euros",
    "Keeps a frequent flyer account with Lufthansa Miles and More",
    "Hotels must be within walking distance of the conference venue",
    # reports (10-14)
    "Quarterly reports go to the finance team on the first Monday",
    "Reports are exported as PDF, never as Word documents",
    "The annual report uses the blue corporate template",
    "Charts in reports use the colour-blind friendly palette",
    "Every report starts with a one-paragraph executive summary",
    # programming (15-19)
    "Writes Python with type hints and runs mypy in strict mode",
    "Prefers pytest fixtures over unittest setUp methods",
    "Code reviews need two approvals before merging to main",
    "Formats code with ruff, line length 100",
    "Uses PostgreSQL for every new service, never MySQL",
    # meetings and schedule (20-24)
    "No meetings on Friday afternoons",
    "Works from Berlin, in the Central European time zone",
    "Standup is at 9:30 every weekday",
    "Prefers video calls with the camera off",
    "Blocks two hours of focus time every morning",
    # writing style (25-29)
    "Answers should be short, with bullet points",
    "Writes in British English: colour, organise, travelling",
    "Avoid jargon when writing for customers",
    "Cite sources with links at the end of each answer",
    "Headings in documents use sentence case",
    # family and personal (30-34)
    "Has two children, aged six and nine",
    "The dog is called Pepper and needs a walk at six",
    "Birthday is on the fourteenth of March",
    "Plays the cello in an amateur orchestra on Tuesdays",
    "Runs a half marathon every spring",
    # project Atlas (35-39)
    "Project Atlas migrates the billing system to the cloud",
    "Atlas deadline is the end of the third quarter",
    "The Atlas team lead is Priya Raman",
    "Atlas uses Kubernetes on the eu-west region",
    "Atlas weekly sync happens on Wednesdays at 14:00",
    # security (40-44)
    "Passwords are stored in the company vault, never in documents",
    "Two-factor authentication is required for every admin account",
    "Security incidents are reported to the on-call engineer at once",
    "Customer data must stay in European data centres",
    "Laptops are encrypted with full-disk encryption",
    # learning (45-49)
    "Is learning Japanese, at beginner level",
    "Reads one book about history every month",
    "Wants to improve at public speaking",
    "Takes an online course on machine learning",
    "Practises piano scales for fifteen minutes a day",
]
QUERIES = [
    ("how does the user take their coffee", [0, 1]),
    ("which seat does the user want on a flight", [6]),
    ("travelling to a conference: train or plane, hotel, budget", [5, 7, 9]),
    ("format for exporting the quarterly report", [10, 11]),
    ("python typing and test style", [15, 16]),
    ("when are meetings not allowed", [20]),
    ("spelling conventions for written answers", [26, 25]),
    ("who leads the Atlas project and when is it due", [36, 37]),
    ("where may customer data be stored", [43]),
    ("authentication requirements for admins", [41]),
    ("food allergies and diet", [2, 3]),
    ("which musical instruments does the user play", [33, 49]),
]


def test_the_graphs_command_builds_the_graphs_due_and_says_what_it_did(
    memories: Memories, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_graphs, "GRAPH_MIN", 3)
    large = user()
    memories.remember(large, ["the first note", "the second note", "the third note"])
    memories.remember(user(), ["a lone note"])
    out = io.StringIO()
    assert run_graphs(database_url, out=out) == 0
    assert out.getvalue() == (
        f"tokendance memory graphs: built 2: {large} (words), {large} (hashing-256)\n"
    )
    assert graph_state(memories) == {(str(large), ""): True, (str(large), "hashing-256"): True}
    again = io.StringIO()
    assert run_graphs(database_url, out=again) == 0
    assert "nothing to do" in again.getvalue()


class Asymmetric(HashingEmbedder):
    """A retrieval model in miniature: a question's vector is its answer's."""

    ANSWERS: ClassVar[dict[str, str]] = {"q7?": "the boat is moored in Kiel"}

    def embed_query(self, text: str) -> list[float]:
        return super().embed_query(self.ANSWERS.get(text, text))


def test_a_search_embeds_its_question_as_a_query_and_a_new_memory_as_a_document(
    database_url: str,
) -> None:
    memories = Memories(database_url, embedder=Asymmetric())
    try:
        ns = user()
        boat, tea = memories.remember(ns, ["the boat is moored in Kiel", "green tea at four"])
        [hit] = memories.hits("q7?", ns, k=1)
        assert (hit.memory_id, hit.similarity) == (boat, pytest.approx(1.0)), "as a query"
        assert memories.view.nearest(str(ns), "green tea at four") == (tea, pytest.approx(1.0))
        near = memories.view.nearest(str(ns), "q7?")
        assert near is None or near[1] < 0.5, "a memory-to-be is compared as a document"
    finally:
        memories.close()
