"""`VoyageEmbedder` through the real `voyageai` client against a loopback fake of Voyage's
embeddings API: vectors in order and of the asked size, batches, document vs query,
retries that recover or give up with a clear message, keys never echoed, model ids that
turn back into embedders, and no request ever leaving this machine."""

from __future__ import annotations

import math
import socket
from collections.abc import Iterator

import pytest

from adapters.config.settings import Settings
from adapters.embeddings import (
    EmbedderUnavailable,
    HashingEmbedder,
    VoyageEmbedder,
    WordLlamaEmbedder,
    build_embedder,
    default_embedder_name,
    embedder_for,
    voyage,
)
from adapters.embeddings.voyage import DEFAULT_BASE_URL, EmbedRequestsForbidden, batches
from adapters.loopback import is_loopback_host
from application.ports import Embedder
from tests.fakes.voyage_server import FakeVoyage, serve_fake_voyage


class RecordedSleeps:
    """Stands in for `time.sleep`: remembers each delay and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.fixture(autouse=True)
def no_real_embedding_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only loopback servers may be asked for embeddings here (see the last tests)."""
    monkeypatch.setattr(voyage, "ALLOW_EMBED_REQUESTS", False)


@pytest.fixture
def fake() -> Iterator[FakeVoyage]:
    with serve_fake_voyage() as running:
        yield running


@pytest.fixture
def sleeps() -> RecordedSleeps:
    return RecordedSleeps()


def embedder_on(
    fake: FakeVoyage,
    sleeps: RecordedSleeps,
    *,
    model: str = "voyage-3.5",
    dimension: int | None = None,
    retries: int = 3,
    retry_wait: float = 1.0,
) -> VoyageEmbedder:
    """An embedder on the fake whose waits are recorded, not slept."""
    return VoyageEmbedder(
        fake.api_key,
        model=model,
        dimension=dimension,
        base_url=fake.base_url,
        retries=retries,
        retry_wait=retry_wait,
        sleep=sleeps,
    )


def norm(vector: list[float]) -> float:
    return math.sqrt(sum(x * x for x in vector))


def close(a: list[float], b: list[float]) -> bool:
    if len(a) != len(b):
        return False
    return all(math.isclose(x, y, abs_tol=1e-6) for x, y in zip(a, b, strict=True))


def test_each_text_gets_its_unit_vector_in_order(fake: FakeVoyage, sleeps: RecordedSleeps) -> None:
    embedder = embedder_on(fake, sleeps)
    texts = ["research the AI agent market", "帮我调研AI Agent市场", "a third text"]

    vectors = embedder.embed(texts)

    assert (embedder.model, embedder.dimension) == ("voyage-3.5-1024", 1024)
    assert len(vectors) == 3
    for text, vector in zip(texts, vectors, strict=True):
        expected = fake.vector(text, model="voyage-3.5", input_type="document", dimension=1024)
        assert close(vector, expected)
        assert math.isclose(norm(vector), 1.0, rel_tol=1e-6)
    # What went over the wire: one request, Voyage's body, the key as a bearer token.
    [request] = fake.requests
    assert request.path == "/v1/embeddings"
    assert request.headers["authorization"] == f"Bearer {fake.api_key}"
    assert request.body["input"] == texts
    assert request.body["model"] == "voyage-3.5"
    assert request.body["input_type"] == "document"
    assert request.body["truncation"] is True
    assert request.body["output_dimension"] == 1024
    assert embedder.embed([]) == []
    assert len(fake.requests) == 1


def test_a_chosen_dimension_is_asked_for_and_named(
    fake: FakeVoyage, sleeps: RecordedSleeps
) -> None:
    embedder = embedder_on(fake, sleeps, model="voyage-3.5-lite", dimension=256)

    [vector] = embedder.embed(["short"])

    assert embedder.model == "voyage-3.5-lite-256"
    assert len(vector) == 256
    assert fake.bodies[0]["output_dimension"] == 256
    with pytest.raises(ValueError, match="256, 512, 1024, 2048"):
        VoyageEmbedder("pa-key", model="voyage-3.5", dimension=300)
    with pytest.raises(ValueError, match="no default dimension"):
        VoyageEmbedder("pa-key", model="voyage-unknown")


def test_vectors_are_normalized_when_the_api_sends_other_lengths(sleeps: RecordedSleeps) -> None:
    with serve_fake_voyage(scale=3.0) as fake:
        [vector] = embedder_on(fake, sleeps).embed(["not a unit vector on the wire"])

    assert math.isclose(norm(vector), 1.0, rel_tol=1e-6)


def test_300_texts_go_in_three_requests_in_order(fake: FakeVoyage, sleeps: RecordedSleeps) -> None:
    texts = [f"text number {n}" for n in range(300)]

    vectors = embedder_on(fake, sleeps, dimension=256).embed(texts)

    assert [len(body["input"]) for body in fake.bodies] == [128, 128, 44]
    assert [t for body in fake.bodies for t in body["input"]] == texts
    expected = [
        fake.vector(t, model="voyage-3.5", input_type="document", dimension=256) for t in texts
    ]
    assert all(close(v, e) for v, e in zip(vectors, expected, strict=True))


def test_batches_keep_under_the_token_limit_too() -> None:
    texts = ["x" * 1000, "y" * 1000, "z" * 1000, "w"]  # about 500 tokens each by the estimate

    assert [len(b) for b in batches(texts, 128, token_limit=1100)] == [2, 2]
    assert [len(b) for b in batches(texts, 3, token_limit=10**6)] == [3, 1]
    # One text over the limit still goes (alone): Voyage truncates it to the context.
    assert [len(b) for b in batches(["a" * 10**6, "b"], 128, token_limit=1000)] == [1, 1]


def test_queries_and_documents_are_embedded_as_such(
    fake: FakeVoyage, sleeps: RecordedSleeps
) -> None:
    embedder = embedder_on(fake, sleeps)

    query = embedder.embed_query("market size of AI agents")
    [document] = embedder.embed(["market size of AI agents"])

    assert [body["input_type"] for body in fake.bodies] == ["query", "document"]
    assert fake.bodies[0]["input"] == ["market size of AI agents"]
    expected = fake.vector(
        "market size of AI agents", model="voyage-3.5", input_type="query", dimension=1024
    )
    assert close(query, expected)
    assert not close(query, document)


def test_a_rate_limit_is_retried_after_what_voyage_asks(
    fake: FakeVoyage, sleeps: RecordedSleeps
) -> None:
    fake.fail_next(429, retry_after=7)

    [vector] = embedder_on(fake, sleeps, retry_wait=0.5).embed(["hello"])

    assert len(vector) == 1024
    assert [r.status for r in fake.requests] == [429, 200]
    assert sleeps.delays == [7.0]  # Retry-After, over the 0.5 s backoff


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_failures_are_retried_with_backoff(
    fake: FakeVoyage, sleeps: RecordedSleeps, status: int
) -> None:
    fake.fail_next(status, times=2)

    embedder_on(fake, sleeps, retry_wait=0.25).embed(["hello"])

    assert [r.status for r in fake.requests] == [status, status, 200]
    assert sleeps.delays == [0.25, 0.5]


def test_a_lasting_rate_limit_gives_up_with_a_clear_message(
    fake: FakeVoyage, sleeps: RecordedSleeps
) -> None:
    fake.fail_next(429, times=10)

    with pytest.raises(EmbedderUnavailable) as raised:
        embedder_on(fake, sleeps, retries=2, retry_wait=0.0).embed(["hello"])

    assert str(raised.value) == (
        "Voyage AI rate limited every one of 3 attempts: "
        "You have exceeded your rate limit. Please slow down and try again later."
    )
    assert len(fake.requests) == 3


def test_a_refused_key_is_named_but_never_shown(fake: FakeVoyage, sleeps: RecordedSleeps) -> None:
    secret = "pa-wrong-secret-123"
    embedder = VoyageEmbedder(secret, base_url=fake.base_url, sleep=sleeps)

    with pytest.raises(EmbedderUnavailable) as raised:
        embedder.embed(["hello"])

    message = str(raised.value)
    assert message == (
        "Voyage AI refused the API key (VOYAGE_API_KEY): Provided API key is invalid."
    )
    assert secret not in message and secret not in repr(raised.value)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    assert len(fake.requests) == 1  # not retried: another try cannot help
    assert sleeps.delays == []


def test_a_bad_request_says_what_voyage_said(fake: FakeVoyage, sleeps: RecordedSleeps) -> None:
    embedder = embedder_on(fake, sleeps, model="voyage-nope", dimension=1024)

    with pytest.raises(EmbedderUnavailable) as raised:
        embedder.embed(["hello"])

    assert str(raised.value).startswith(
        "Voyage AI rejected the request (HTTP 400): Model voyage-nope is not supported."
    )
    assert len(fake.requests) == 1


def test_an_unreachable_server_is_said_to_be(sleeps: RecordedSleeps) -> None:
    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    embedder = VoyageEmbedder(
        "pa-key", base_url=f"http://127.0.0.1:{port}/v1", retries=1, retry_wait=0.0, sleep=sleeps
    )

    with pytest.raises(EmbedderUnavailable) as raised:
        embedder.embed(["hello"])

    message = str(raised.value)
    assert message.startswith(
        f"Voyage AI at http://127.0.0.1:{port}/v1 is unreachable (2 attempts)"
    )
    assert "pa-key" not in message
    assert sleeps.delays == [0.0]


def test_model_ids_turn_back_into_their_embedders(fake: FakeVoyage) -> None:
    env = {"VOYAGE_API_KEY": fake.api_key, "TOKENDANCE_VOYAGE_BASE_URL": fake.base_url}
    made: list[Embedder] = [
        HashingEmbedder(dimension=128),
        WordLlamaEmbedder.load(dimension=256),
        VoyageEmbedder(fake.api_key, model="voyage-3.5", dimension=1024),
        VoyageEmbedder(fake.api_key, model="voyage-3.5-lite", dimension=512),
    ]

    for embedder in made:
        again = embedder_for(embedder.model, env=env)
        assert type(again) is type(embedder)
        assert (again.model, again.dimension) == (embedder.model, embedder.dimension)

    voyage_again = embedder_for("voyage-3.5-1024", env=env)
    assert isinstance(voyage_again, VoyageEmbedder)
    assert voyage_again.base_url == fake.base_url
    assert len(voyage_again.embed(["round trip"])[0]) == 1024
    with pytest.raises(ValueError, match="hashing-<dimension>") as raised:
        embedder_for("openai-small-1536", env=env)
    assert "voyage-<model>-<dimension>" in str(raised.value)
    with pytest.raises(EmbedderUnavailable, match="VOYAGE_API_KEY"):
        embedder_for("voyage-3.5-1024", env={})


def test_building_voyage_needs_a_key_and_reads_the_model(fake: FakeVoyage) -> None:
    with pytest.raises(EmbedderUnavailable) as raised:
        build_embedder("voyage", env={"TOKENDANCE_VOYAGE_MODEL": "voyage-3.5"})
    assert str(raised.value) == (
        "the Voyage AI embedder (voyage-3.5) needs an API key: set VOYAGE_API_KEY"
    )

    built = build_embedder(
        "voyage",
        env={
            "VOYAGE_API_KEY": fake.api_key,
            "TOKENDANCE_VOYAGE_MODEL": "voyage-3.5-lite",
            "TOKENDANCE_VOYAGE_BASE_URL": fake.base_url,
        },
    )
    assert built.model == "voyage-3.5-lite-1024"
    assert built.embed(["hello"])[0] == pytest.approx(
        fake.vector("hello", model="voyage-3.5-lite", input_type="document", dimension=1024),
        abs=1e-6,
    )
    default = build_embedder("voyage", env={"VOYAGE_API_KEY": "pa-key"})
    assert default.model == "voyage-3.5-1024"
    sized = {"VOYAGE_API_KEY": "pa-key", "TOKENDANCE_VOYAGE_MODEL": "voyage-3.5-lite-512"}
    assert build_embedder("voyage", env=sized).model == "voyage-3.5-lite-512"
    with pytest.raises(ValueError, match="no default dimension"):
        build_embedder("voyage", env={"VOYAGE_API_KEY": "pa-key", "TOKENDANCE_VOYAGE_MODEL": "v"})


def test_a_voyage_key_makes_voyage_the_default_embedder() -> None:
    assert default_embedder_name({}) == "wordllama"
    assert default_embedder_name({"VOYAGE_API_KEY": "pa-key"}) == "voyage"
    assert default_embedder_name({"VOYAGE_API_KEY": " "}) == "wordllama"
    assert Settings.from_env({}).embedder == "wordllama"
    assert Settings.from_env({"VOYAGE_API_KEY": "pa-key"}).embedder == "voyage"
    chosen = {"VOYAGE_API_KEY": "pa-key", "TOKENDANCE_EMBEDDER": "hashing"}
    assert Settings.from_env(chosen).embedder == "hashing"
    with pytest.raises(SystemExit, match="VOYAGE_API_KEY must be set"):
        Settings.from_env({"TOKENDANCE_EMBEDDER": "voyage"})
    with pytest.raises(SystemExit, match="wordllama, hashing, voyage"):
        Settings.from_env({"TOKENDANCE_EMBEDDER": "openai"})


def test_tests_never_reach_voyage_itself(
    fake: FakeVoyage, sleeps: RecordedSleeps, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fakes' embedders point at loopback; one left on Voyage's URL is refused before
    any connection is opened."""
    assert is_loopback_host("127.0.0.1")
    assert embedder_on(fake, sleeps).base_url.startswith("http://127.0.0.1:")
    connections: list[object] = []

    def refuse(*args: object, **kwargs: object) -> object:
        connections.append(args)
        raise OSError("no network in this test")

    monkeypatch.setattr(socket, "create_connection", refuse)
    real = build_embedder("voyage", env={"VOYAGE_API_KEY": "pa-real-looking-key"})
    assert isinstance(real, VoyageEmbedder)
    assert real.base_url == DEFAULT_BASE_URL == "https://api.voyageai.com/v1"

    with pytest.raises(EmbedRequestsForbidden, match=r"api\.voyageai\.com"):
        real.embed(["hello"])
    with pytest.raises(EmbedRequestsForbidden):
        real.embed_query("hello")
    assert connections == []
