"""The upkeep of the memories' vectors on real Postgres with pgvector: each large
namespace's own indexes (built, dropped, a build cut short, the `memory graphs` command)
and re-embedding with another model while memories keep coming and searches go on.
"""

from __future__ import annotations

import io
import threading
import time
from uuid import UUID

import pytest
from psycopg.sql import SQL

import projections.reembed as reembed_module
import projections.vector_graphs as vector_graphs
from adapters.commands.memory_upkeep import run_graphs, run_reembed
from adapters.embeddings import HashingEmbedder
from application.ports import MemoryHit
from projections.memories import MemoriesView
from projections.memory_vectors import model_states, vector_literal
from projections.reembed import reembed
from projections.vector_graphs import GraphKeeper, GroupIndex, ready_groups
from tests.integration.memory_store import (
    WORDS,
    Memories,
    cosine,
    embedder_for,
    graph_state,
    guarded,
    indexes_of_vectors,
    user,
)
from tests.waiting import eventually

# Each test makes the tables it uses on an empty database (`database_url`).
pytestmark = [pytest.mark.integration, pytest.mark.empty_database]


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
        eventually(
            lambda: name in indexes_of_vectors(memories, "memories"),
            timeout=30,
            what="the build to begin",
        )
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
