"""The switch against real model calls: in tests only a loopback fake can be called."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx2
import pytest

from adapters.bootstrap.parts import build_llm
from adapters.config.settings import Settings
from adapters.llm import retries as model_requests
from adapters.llm.anthropic import AnthropicLLM
from adapters.llm.retries import ModelRequestsForbidden
from adapters.llm.router import ModelRouter
from application.ports import LLMOverloaded
from domain.conversation import Message, ModelRequest, ModelTurn, TextBlock
from tests.fakes.anthropic_server import FakeAnthropic, Text, Turn, serve_fake_anthropic

ASK = ModelRequest(system="", tools=(), messages=(Message("user", (TextBlock("Hi"),)),))


class RecordingTransport(httpx2.AsyncBaseTransport):
    """Sees every request the SDK would send, and answers none of them (503)."""

    def __init__(self) -> None:
        self.urls: list[str] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.urls.append(str(request.url))
        return httpx2.Response(503, json={"type": "error", "error": {"type": "api_error"}})


def remote_llm(transport: RecordingTransport) -> AnthropicLLM:
    client = anthropic.AsyncAnthropic(
        api_key="sk-ant-not-a-real-key",
        base_url="https://api.anthropic.com",
        http_client=httpx2.AsyncClient(transport=transport),
    )
    return AnthropicLLM(client, model="claude-sonnet-5-5", max_tokens=64, max_retries=0)


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with serve_fake_anthropic() as fake:
        yield fake


async def test_a_call_to_the_real_api_is_refused_before_anything_is_sent() -> None:
    transport = RecordingTransport()

    with pytest.raises(ModelRequestsForbidden, match=r"api\.anthropic\.com"):
        async for _ in remote_llm(transport).stream(ASK):
            pass

    assert transport.urls == []


async def test_the_guard_is_what_refuses_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # The same call with the switch on reaches the transport: the refusal above is the
    # guard's, not a side effect of the client's set-up.
    monkeypatch.setattr(model_requests, "ALLOW_MODEL_REQUESTS", True)
    transport = RecordingTransport()

    with pytest.raises(LLMOverloaded):
        async for _ in remote_llm(transport).stream(ASK):
            pass

    assert transport.urls == ["https://api.anthropic.com/v1/messages"]


async def test_the_model_bootstrap_builds_from_a_real_key_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-not-a-real-key")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    llm = build_llm(Settings(data_dir=tmp_path))
    assert isinstance(llm, ModelRouter) and isinstance(llm.provider("anthropic"), AnthropicLLM)

    with pytest.raises(ModelRequestsForbidden):
        async for _ in llm.stream(ASK):
            pass


async def test_a_loopback_fake_still_answers(fake: FakeAnthropic) -> None:
    fake.plan(Turn((Text("hello from the fake"),)))
    client = anthropic.AsyncAnthropic(api_key=fake.api_key, base_url=fake.base_url)
    llm = AnthropicLLM(client, model="claude-sonnet-5-5", max_tokens=64)

    items = [item async for item in llm.stream(ASK)]
    await llm.aclose()

    assert isinstance(items[-1], ModelTurn) and items[-1].text == "hello from the fake"
