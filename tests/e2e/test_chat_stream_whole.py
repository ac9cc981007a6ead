"""A chat stream shows a turn's text whole and once, however fast the model streams.

The model here answers at once and streams as fast as the server can send: a long
answer (hundreds of chunks in a few milliseconds, before the response has started)
and a two-word one (its turn stored before the stream has read the store). The chunks
the stream sends before the turn's stored `message` must join to exactly its content,
and none may come after it (a stale chunk there shows the text twice).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.e2e.chat_helpers import chat, new_session, user
from tests.e2e.client import SseEvent
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]

LONG = " ".join(f"word{i}" for i in range(400))
SHORT = "Short answer."


def streamed_then_stored(events: list[SseEvent]) -> tuple[str, str, list[str]]:
    """(the content chunks before the assistant's message joined, the message's content,
    the events after it but before `done`)."""
    chunks: list[str] = []
    for i, e in enumerate(events):
        if e.event == "content":
            chunks.append(str(e.data["content"]))
        elif e.event == "message" and e.data.get("role") == "assistant":
            after = [x.event for x in events[i + 1 :] if x.event != "done"]
            return "".join(chunks), str(e.data["content"]), after
    raise AssertionError(f"no assistant message in {[e.event for e in events]}")


@pytest.mark.parametrize("answer", [LONG, SHORT], ids=["long", "short"])
def test_a_fast_turn_streams_whole_and_once(
    start_server: StartServer, tmp_path: Path, answer: str
) -> None:
    script = tmp_path / "fast.yaml"
    script.write_text(yaml.safe_dump([{"text": answer}] * 3))
    server = start_server(script)
    account, http = user(server.client(), "fast@example.com")
    sid = new_session(http, account["workspace_id"])["id"]
    for question in ("one", "two", "three"):
        read = chat(http, sid, question)
        streamed, stored, after = streamed_then_stored(read.events)
        assert stored == answer
        assert streamed == answer, (question, len(streamed), len(answer))
        assert after == [], (question, after)
