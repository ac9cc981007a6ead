"""Extended thinking in the fake Anthropic API: the signatures it gave out, and the 400s
the real API answers when a request that enables thinking sends thinking back wrong."""

from __future__ import annotations

import base64
import hashlib
import hmac
import threading
from typing import Any

# Decoded JSON exactly as the client sent it: the point is to see what was sent,
# so it is deliberately not validated into a shape.
JSONObject = dict[str, Any]


class SignedThinking:
    """The thinking the fake signed and the redacted data it gave out; thread-safe."""

    def __init__(self, key: str = "fake-signing-key") -> None:
        self._key = key.encode()
        self._signed: dict[str, str] = {}  # signature -> its thinking
        self._redacted: set[str] = set()
        self._lock = threading.Lock()

    def sign(self, thinking: str, signature: str | None) -> str:
        """`signature`, or (None) one made from the text, kept as given out for it."""
        if signature is None:
            mac = hmac.new(self._key, thinking.encode(), hashlib.sha256).digest()
            signature = base64.b64encode(mac).decode()
        with self._lock:
            self._signed[signature] = thinking
        return signature

    def redact(self, data: str) -> str:
        with self._lock:
            self._redacted.add(data)
        return data

    def problem(self, messages: list[JSONObject]) -> str | None:
        """The API's 400 message for thinking sent back wrong, if it is."""
        for m, message in enumerate(messages):
            content = message.get("content")
            if message.get("role") != "assistant" or not isinstance(content, list):
                continue
            for b, block in enumerate(content):
                wrong = self._wrong(block)
                if wrong is not None:
                    return f"messages.{m}.content.{b}: {wrong}"
        return _unthinking_loop(messages)

    def _wrong(self, block: JSONObject) -> str | None:
        with self._lock:
            if block.get("type") == "thinking":
                signed = self._signed.get(block.get("signature") or "")
                if signed is None or signed != block.get("thinking"):
                    return "Invalid `signature` for `thinking` block"
            if block.get("type") == "redacted_thinking" and block.get("data") not in self._redacted:
                return "Invalid `data` in `redacted_thinking` block"
        return None


def thinks(body: object) -> bool:
    thinking = body.get("thinking") if isinstance(body, dict) else None
    return isinstance(thinking, dict) and thinking.get("type") == "enabled"


def _unthinking_loop(messages: list[JSONObject]) -> str | None:
    """The API's 400 when the newest assistant turn used tools without thinking first."""
    for m in range(len(messages) - 1, -1, -1):
        content = messages[m].get("content")
        if messages[m].get("role") != "assistant" or not isinstance(content, list):
            continue
        kinds = [block.get("type") for block in content]
        if "tool_use" in kinds and kinds[0] not in ("thinking", "redacted_thinking"):
            return (
                f"messages.{m}.content.0.type: Expected `thinking` or `redacted_thinking`, "
                f"but found `{kinds[0]}`. When `thinking` is enabled, a final `assistant` "
                "message must start with a thinking block (preceeding the lastmost set of "
                "`tool_use` and `tool_result` blocks). We recommend you include thinking "
                "blocks from previous turns. To avoid this requirement, disable `thinking`. "
                "Please consult our documentation at "
                "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
            )
        return None
    return None
