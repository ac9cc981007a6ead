"""A local Gemini API: real HTTP, real `streamGenerateContent?alt=sse`, planned replies,
every request recorded (parsed and raw bytes).

It streams as Google does: `GenerateContentResponse` frames whose candidate carries text
parts, thought parts (`thought: true`), function calls with a `thoughtSignature`, the
finish reason on the last, with `usageMetadata` (prompt, candidates, thoughts and
`cachedContentTokenCount`: the prefix shared with an earlier request, as implicit
caching counts it) and `modelVersion`. A later request must send each signature back
on the function call it came with, else 400 as Gemini's.

    with serve_fake_gemini() as fake:
        fake.plan(Reply(text="Hello"), Failure(503, "UNAVAILABLE"))
        client = genai.Client(api_key=fake.api_key, http_options={"base_url": fake.base_url})
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import parse_qs

from tests.fakes.model_http import (
    FakeModelServer,
    JSONObject,
    ModelHandler,
    Recorded,
    data_frame,
    serving,
    split_text,
    tokens,
)


@dataclass(frozen=True)
class Call:
    name: str
    args: dict[str, object]
    id: str = ""  # Gemini often sends none


@dataclass(frozen=True)
class Reply:
    text: str = ""
    calls: tuple[Call, ...] = ()
    thought: str = ""
    pieces: int = 2
    finish_reason: str = "STOP"
    output_tokens: int = 20
    cut_after: int | None = None  # frames sent before the connection drops
    block_reason: str | None = None  # the prompt itself blocked


@dataclass(frozen=True)
class Failure:
    status: int
    kind: str  # RESOURCE_EXHAUSTED, UNAVAILABLE, INVALID_ARGUMENT, ...
    message: str = ""
    details: tuple[JSONObject, ...] = ()  # google.rpc details: ErrorInfo, RetryInfo, ...


def retry_info(delay: str) -> JSONObject:
    """The `RetryInfo` detail Gemini puts on a 429: how long to wait, e.g. "7s"."""
    return {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}


_UNREGISTERED = Failure(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers "
                        "(callers without established identity). Please use API Key or other "
                        "form of API consumer identity to call this API.")  # fmt: skip
_KEY_INVALID = Failure(
    400,
    "INVALID_ARGUMENT",
    "API key not valid. Please pass a valid API key.",
    ({"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
      "domain": "googleapis.com"},),
)  # fmt: skip


FakeReply = Reply | Failure


@dataclass
class FakeGemini(FakeModelServer[FakeReply]):
    served_models: list[str] = field(default_factory=lambda: ["gemini-2.5-pro", "gemini-2.5-flash"])
    # Signatures given out, by function name and args: one must come back on its call.
    signatures: dict[str, set[str]] = field(default_factory=dict)


def _call_key(call: JSONObject) -> str:
    return json.dumps([call.get("name"), call.get("args")], sort_keys=True)


class _Handler(ModelHandler):
    fake: FakeGemini

    def answer(self, request: Recorded) -> None:
        # As Google: the key in the header or the `key` query; none 403, a wrong one 400.
        key = request.headers.get("x-goog-api-key") or parse_qs(request.query).get("key", [""])[0]
        if key != self.fake.api_key:
            return self._error(_KEY_INVALID if key else _UNREGISTERED)
        path = request.path
        prefix, _, action = path.rpartition(":")
        model = prefix.rsplit("/", 1)[-1]
        if (
            not path.startswith(("/v1beta/models/", "/v1/models/"))
            or action != "streamGenerateContent"
        ):
            return self._error(Failure(404, "NOT_FOUND", f"Unknown path {path}"))
        if model not in self.fake.served_models:
            message = f"models/{model} is not found for API version v1beta"
            return self._error(Failure(404, "NOT_FOUND", message))
        problem = self._unsigned_call(request.body)
        if problem:
            return self._error(Failure(400, "INVALID_ARGUMENT", problem))
        reply = self.fake.next_reply()
        if reply is None:
            return self._error(Failure(500, "INTERNAL", "the fake has no reply planned"))
        if isinstance(reply, Failure):
            return self._error(reply)
        self._stream(request.body, model, reply)

    def _unsigned_call(self, body: JSONObject) -> str | None:
        for content in body.get("contents") or []:
            for part in content.get("parts") or []:
                call = part.get("functionCall")
                if call is None:
                    continue
                given = self.fake.signatures.get(_call_key(call))
                sent = part.get("thoughtSignature") or part.get("thought_signature")
                if given is not None and sent not in given:
                    return (f"Function call `{call.get('name')}` in the 2. content block is "
                            "missing a `thought_signature`.")  # fmt: skip
        return None

    def _error(self, failure: Failure) -> None:
        message = failure.message or failure.kind
        error: JSONObject = {"code": failure.status, "message": message, "status": failure.kind}
        if failure.details:
            error["details"] = list(failure.details)
        self.send_json(failure.status, {"error": error})

    def _stream(self, body: JSONObject, model: str, reply: Reply) -> None:
        cacheable = json.dumps(
            [body.get("systemInstruction"), body.get("tools"), body.get("contents")],
            ensure_ascii=False,
        )
        prompt = tokens(json.dumps(body, ensure_ascii=False))
        cached = min(self.fake.cached_tokens(cacheable), prompt)
        head = {"modelVersion": f"{model}-001", "responseId": "fake-response"}
        if reply.block_reason is not None:
            frame = {**head, "promptFeedback": {"blockReason": reply.block_reason},
                     "usageMetadata": {"promptTokenCount": prompt}}  # fmt: skip
            return self.send_sse([data_frame(frame)])

        def frame(parts: list[JSONObject], last: bool = False) -> bytes:
            candidate: JSONObject = {"content": {"parts": parts, "role": "model"}, "index": 0}
            usage: JSONObject = {"promptTokenCount": prompt, "totalTokenCount": prompt}
            if last:
                candidate["finishReason"] = reply.finish_reason
                thoughts = tokens(reply.thought)
                usage = {"promptTokenCount": prompt, "candidatesTokenCount": reply.output_tokens,
                         "thoughtsTokenCount": thoughts, "cachedContentTokenCount": cached,
                         "totalTokenCount": prompt + reply.output_tokens + thoughts}  # fmt: skip
                if not cached:
                    del usage["cachedContentTokenCount"]  # Gemini leaves out a zero
            return data_frame({"candidates": [candidate], "usageMetadata": usage, **head})

        frames = [
            frame([{"text": p, "thought": True}]) for p in split_text(reply.thought, reply.pieces)
        ]
        frames += [frame([{"text": p}]) for p in split_text(reply.text, reply.pieces)]
        calls: list[JSONObject] = []
        for index, call in enumerate(reply.calls):
            function: JSONObject = {"name": call.name, "args": call.args}
            if call.id:
                function["id"] = call.id
            part: JSONObject = {"functionCall": function}
            if index == 0:  # Gemini signs the first call of a turn
                signature = base64.b64encode(
                    f"sig:{call.name}:{len(self.fake.signatures)}".encode()
                ).decode()
                self.fake.signatures.setdefault(_call_key(function), set()).add(signature)
                part["thoughtSignature"] = signature
            calls.append(part)
        frames.append(frame(calls, last=True))
        self.send_sse(frames, reply.cut_after)


@contextmanager
def serve_fake_gemini(*, api_key: str = "gemini-test-key") -> Iterator[FakeGemini]:
    fake = FakeGemini(api_key)
    with serving(fake, _Handler, ""):
        yield fake
