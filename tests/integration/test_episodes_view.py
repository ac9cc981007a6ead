"""Episodic search on real Postgres: a user finds her own past words, and only hers.

Sessions are written through the session service, their stored events fed to the view
in small overlapping batches (each session spans several, so a batch's writes must
see the writes before them), and searched by words and by meaning (hashed n-grams,
whose "meaning" is shared word pieces: `ultralite` is near `ultralight`). A rebuild
gives the same rows; a re-embed moves this view's vectors to another model.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass
from uuid import UUID, uuid4

import pytest
from eventsourcing.postgres import PostgresDatastore
from psycopg.conninfo import conninfo_to_dict

from adapters.config.settings import Settings
from adapters.container import Container
from adapters.embeddings.hashing import HashingEmbedder
from application.ports import Embedder
from application.receipt import Receipt
from application.sessions import SessionService
from domain.conversation import ModelTurn, TextBlock, ToolUseBlock, Usage
from domain.values import Citation
from projections import episode_queries
from projections.episodes import EPISODE_VECTORS, EpisodeHit, EpisodesView
from projections.memory_vectors import EmbeddingModels, model_states
from projections.rebuild import rebuild
from projections.reembed import reembed
from projections.view import decode

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Written:
    """What the test wrote, by name: the receipts say each episode's session and version."""

    alice: UUID
    ws_work: UUID
    ws_home: UUID
    laptops: UUID
    beach: UUID
    message: Receipt
    answer: Receipt
    finding: Receipt
    beach_finding: Receipt
    bob: UUID
    bob_session: UUID
    carol: UUID


def turn(*blocks: TextBlock | ToolUseBlock) -> ModelTurn:
    return ModelTurn(blocks, "end_turn", Usage(10, 5), "m")


def write_sessions(container: Container) -> Written:
    app = container.sessions
    org_a, org_b = uuid4(), uuid4()
    alice, bob, carol = uuid4(), uuid4(), uuid4()
    ws_work, ws_home, ws_bob = uuid4(), uuid4(), uuid4()

    laptops = app.start_session(workspace_id=ws_work, owner_id=alice, title="Laptop comparison",
                                organization_id=org_a).session_id  # fmt: skip
    message = app.append_user_message(laptops, "Which ultralight laptop has the best battery?")
    run = uuid4()
    app.request_run(laptops, run)
    app.start_run(laptops, run, "w")
    app.record_assistant_turn(laptops, run, turn(ToolUseBlock("t1", "web_search", {"q": "x"})), 5)
    answer = app.record_assistant_turn(
        laptops, run, turn(TextBlock("The Zenbook S is lightest, "), TextBlock("at 980 grams.")), 5
    )
    finding = app.record_finding(
        laptops, "Zenbook S battery lasts fourteen hours", [Citation("https://a.example", "A")]
    )
    app.note_progress(laptops, "battery compared")  # progress is not an episode
    app.complete_run(laptops, run)

    beach = app.start_session(workspace_id=ws_home, owner_id=alice, title="Holiday plans",
                              organization_id=org_a).session_id  # fmt: skip
    app.append_user_message(beach, "Find a quiet beach in Portugal")
    beach_finding = app.record_finding(beach, "Praia da Ursa is quiet in May, bring a battery pack",
                                       [])  # fmt: skip

    # Carol shares Alice's organization and workspace; Bob is in another organization.
    carol_session = app.start_session(workspace_id=ws_work, owner_id=carol, title="Phones",
                                      organization_id=org_a).session_id  # fmt: skip
    app.append_user_message(carol_session, "Which phone has the best camera?")
    bob_session = app.start_session(workspace_id=ws_bob, owner_id=bob, title="Zenbook battery",
                                    organization_id=org_b).session_id  # fmt: skip
    app.append_user_message(bob_session, "Is the ultralight laptop battery any good?")
    return Written(alice, ws_work, ws_home, laptops, beach, message, answer, finding,
                   beach_finding, bob, bob_session, carol)  # fmt: skip


def new_view(container: Container) -> EpisodesView:
    def no_other_model(model: str) -> HashingEmbedder:
        raise AssertionError(f"only {embedder.model} is in use, not {model}")

    embedder = HashingEmbedder()
    models = EmbeddingModels(embedder, no_other_model)
    view = EpisodesView(container.views["sessions"].datastore, models)
    view.create_table()
    return view


def catch_up(view: EpisodesView, container: Container, batch: int = 4) -> None:
    """Apply the log in small batches, each one repeating the end of the one before."""
    log = container.recorder.select_notifications(1, 1000)
    mapper = container.sessions.mapper
    events = [(n.id, decode(mapper, view.name, n.id, n)) for n in log]
    for i in range(0, len(events), batch):
        view.apply_batch(events[max(0, i - 2) : i + batch])
    assert view.position() == log[-1].id


def where(hits: list[EpisodeHit]) -> set[tuple[UUID, int, str]]:
    return {(h.session_id, h.version, h.kind) for h in hits}


def at(receipt: Receipt, kind: str) -> tuple[UUID, int, str]:
    return (receipt.session_id, receipt.version, kind)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The system's models are the hashing embedder's too: the view below uses it alone."""
    return dataclasses.replace(settings, embedder="hashing")


@pytest.fixture
def written(container: Container) -> Written:
    return write_sessions(container)


@pytest.fixture
def view(container: Container, written: Written) -> EpisodesView:
    view = new_view(container)
    catch_up(view, container)
    return view


def test_a_user_finds_her_own_message_and_finding_by_a_word(
    view: EpisodesView, written: Written
) -> None:
    hits = view.search(written.alice, "battery")

    found = where(hits)
    assert at(written.message, "message") in found
    assert at(written.finding, "finding") in found
    assert at(written.beach_finding, "finding") in found
    assert {h.session_id for h in hits} == {written.laptops, written.beach}
    assert all("**battery**" in h.snippet.lower() for h in hits)
    assert hits == sorted(hits, key=lambda h: -h.score)
    answers = [h for h in view.search(written.alice, "zenbook grams") if h.kind == "answer"]
    assert [(h.version, h.snippet) for h in answers] == [
        (written.answer.version, "The **Zenbook** S is lightest, at 980 **grams**.")
    ]


def test_a_user_finds_her_own_message_by_a_query_near_in_meaning(
    view: EpisodesView, written: Written
) -> None:
    # No episode holds all these words; the message is near them in meaning.
    hits = view.search(written.alice, "ultralite laptops")
    assert [(h.session_id, h.version, h.kind, h.snippet) for h in hits][:1] == [
        (*at(written.message, "message"), "Which ultralight laptop has the best battery?")
    ]
    assert {h.session_id for h in hits} <= {written.laptops, written.beach}
    beach = view.search(written.alice, "sandy beaches in portugal")
    assert [h.snippet for h in beach][:1] == ["Find a quiet beach in Portugal"]
    assert view.search(written.alice, "quantum chromodynamics") == []
    assert view.search(written.alice, "   ") == []


def test_an_owner_too_large_to_scan_exactly_is_searched_through_the_graph_index(
    view: EpisodesView, written: Written, monkeypatch: pytest.MonkeyPatch
) -> None:
    exact = view.search(written.alice, "ultralite laptops")
    monkeypatch.setattr(episode_queries, "EXACT_MAX", 1)
    assert view.search(written.alice, "ultralite laptops") == exact
    assert {h.session_id for h in view.search(written.bob, "battery")} == {written.bob_session}


def test_no_other_user_or_tenant_sees_her_episodes(view: EpisodesView, written: Written) -> None:
    for query in ("battery", "ultralight laptop", "Zenbook", "ultralite laptops"):
        assert {h.session_id for h in view.search(written.bob, query)} == {written.bob_session}
        assert view.search(written.carol, query) == []
        assert written.bob_session not in {h.session_id for h in view.search(written.alice, query)}
    assert view.search(uuid4(), "battery") == []


def test_workspace_and_time_bounds_narrow_the_search(view: EpisodesView, written: Written) -> None:
    at_home = view.search(written.alice, "battery", workspace_id=written.ws_home)
    assert where(at_home) == {at(written.beach_finding, "finding")}
    assert view.search(written.alice, "battery", workspace_id=uuid4()) == []
    # Only the workspaces she may still see (a team she left takes its workspace away).
    still = view.search(written.alice, "battery", workspaces=(written.ws_home,))
    assert where(still) == where(at_home)
    assert view.search(written.alice, "battery", workspaces=()) == []

    # Bounds taken from the events themselves: [start, end) around the laptops finding.
    start = written.finding.events[0].timestamp
    end = written.beach_finding.events[0].timestamp
    assert where(view.search(written.alice, "battery", start=start, end=end)) == {
        at(written.finding, "finding")
    }
    assert where(view.search(written.alice, "battery", start=end)) == {
        at(written.beach_finding, "finding")
    }
    assert where(view.search(written.alice, "battery", end=start)) == {
        at(written.message, "message")
    }


def test_a_renamed_session_is_found_by_its_new_title(
    container: Container, written: Written
) -> None:
    renamed = container.sessions.rename_session(written.laptops, "Featherweight notebooks")
    view = new_view(container)
    catch_up(view, container)

    def titles(query: str) -> list[tuple[UUID, int, str]]:
        return [(h.session_id, h.version, h.kind) for h in view.search(written.alice, query)
                if h.kind == "session"]  # fmt: skip

    found = view.search(written.alice, "featherweight")
    assert (found[0].session_id, found[0].version, found[0].kind) == at(renamed, "session")
    assert found[0].snippet == "**Featherweight** notebooks"
    assert titles("featherweight") == [at(renamed, "session")]
    assert titles("comparison") == []
    assert titles("holiday") == [(written.beach, 1, "session")]


async def test_a_rebuilt_view_equals_the_incremental_one(
    container: Container, written: Written, view: EpisodesView
) -> None:
    container.sessions.rename_session(written.beach, "Portugal trip")
    # A fork holds copies of its parent's episodes up to the fork's version, as its own.
    fork = container.sessions.fork_session(written.laptops, written.finding.version)
    catch_up(view, container, batch=3)
    live = view.all_rows()
    tables = [r["table"] for r in live]
    assert (tables.count("episodes"), tables.count("episode_vectors")) == (15, 15)
    assert where(view.search(written.alice, "fourteen")) == {
        at(written.finding, "finding"),
        (fork.session_id, written.finding.version, "finding"),
    }

    report = rebuild(view, container.recorder, container.sessions.mapper)
    assert report.position == view.position()
    assert view.all_rows() == live


def test_a_whole_log_in_one_batch_writes_what_event_by_event_writes(
    container: Container, written: Written
) -> None:
    """A batch embeds its episodes together; a title renamed twice within the batch
    leaves one title, with one vector, as applying the events one by one does."""
    app = container.sessions
    app.rename_session(written.laptops, "Featherweight notebooks")
    app.rename_session(written.laptops, "Notebooks under a kilo")
    app.append_user_message(written.laptops, "Which ultralight laptop has the best battery?")
    batched = new_view(container)
    catch_up(batched, container, batch=1000)
    rows = batched.all_rows()
    vectors = [r for r in rows if r["table"] == "episode_vectors"]
    assert len(vectors) == sum(r["table"] == "episodes" for r in rows) > 10

    rebuild(batched, container.recorder, container.sessions.mapper)  # one event at a time
    assert batched.all_rows() == rows
    titles = [h for h in batched.search(written.alice, "kilo") if h.kind == "session"]
    assert [(h.session_id, h.snippet) for h in titles] == [
        (written.laptops, "Notebooks under a **kilo**")
    ]


def embedder_for(model: str) -> Embedder:
    found = re.fullmatch(r"hashing-(\d+)", model)
    if found is None:
        raise ValueError(f"no embedder of {model} in these tests")
    return HashingEmbedder(dimension=int(found[1]))


@pytest.fixture
def datastore(database_url: str) -> Iterator[PostgresDatastore]:
    """A database that holds this view alone (the re-embed must list every vectors table)."""
    params = conninfo_to_dict(database_url)
    found = PostgresDatastore(
        str(params["dbname"]), str(params.get("host") or "localhost"),
        str(params.get("port") or "5432"), str(params.get("user") or "postgres"),
        str(params.get("password") or ""), pool_size=4,
    )  # fmt: skip
    yield found
    found.close()


@pytest.mark.empty_database  # the view's tables alone (see `datastore`)
def test_a_reembed_moves_search_and_new_episodes_to_the_new_model(
    datastore: PostgresDatastore, sessions: SessionService
) -> None:
    models = EmbeddingModels(HashingEmbedder(), embedder_for)
    view = EpisodesView(datastore, models)
    view.create_table()
    owner = uuid4()
    sid = sessions.start_session(
        workspace_id=uuid4(), owner_id=owner, title="Travel gear"
    ).session_id
    message = sessions.append_user_message(sid, "Which ultralight laptop has the best battery?")
    log = list(sessions.session_events(sid))
    view.apply_batch(list(enumerate(log, start=1)))

    report = reembed(datastore, models, embedder_for("hashing-128"), [EPISODE_VECTORS],
                     lambda done, total: None)  # fmt: skip
    later = sessions.append_user_message(sid, "And which ultralight tablet?")
    view.apply_batch([(len(log) + 1, later.events[0])])

    assert (report.previous, report.model) == ("hashing-256", "hashing-128")
    assert model_states(datastore) == {"hashing-256": "retired", "hashing-128": "ready"}
    vectors = [r for r in view.all_rows() if r["table"] == "episode_vectors"]
    assert {r["model"] for r in vectors} == {"hashing-128"} and len(vectors) == 3
    found = [(h.session_id, h.version) for h in view.search(owner, "ultralite laptops")]
    assert found[:1] == [(sid, message.version)]
    assert (sid, later.version) in {
        (h.session_id, h.version) for h in view.search(owner, "tablets")
    }
