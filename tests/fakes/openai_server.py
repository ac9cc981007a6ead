"""A local OpenAI API: real HTTP, real streaming Chat Completions and Responses, planned
replies, every request recorded (parsed and raw bytes).

It streams as OpenAI does: `chat.completion.chunk` frames (role, content pieces, tool
calls whose arguments arrive split over several chunks, the finish reason), then a
usage chunk with `choices: []` and `prompt_tokens_details.cached_tokens`, then
`data: [DONE]`. Cached tokens come from the prefix the request shares with an earlier
one (`model_http.FakeModelServer.cached_tokens`), as OpenAI's automatic caching does.

    with serve_fake_openai() as fake:
        fake.plan(Reply(text="Hello"), Failure(529, "overloaded"))
        client = AsyncOpenAI(api_key=fake.api_key, base_url=fake.base_url)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

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
    """A tool call; `arguments` a dict (sent as JSON) or text sent as it is. `id` "":
    `call_<index>`; None: no id at all, as some compatible servers stream it."""

    name: str
    arguments: dict[str, object] | str
    id: str | None = ""

    @property
    def arguments_text(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass(frozen=True)
class Reply:
    """One streamed turn: its text (in `pieces` chunks), reasoning, tool calls."""

    text: str = ""
    calls: tuple[Call, ...] = ()
    reasoning: str = ""
    pieces: int = 2
    finish_reason: str | None = None  # None: tool_calls if any, else stop
    output_tokens: int = 20
    cut_after: int | None = None  # frames sent before the connection drops
    model: str = ""  # the model the chunks name ("": the request's, dated)


@dataclass(frozen=True)
class Failure:
    status: int
    code: str
    message: str = ""
    retry_after: float | None = None
    in_stream: bool = False  # sent as an error chunk inside a 200 stream


FakeReply = Reply | Failure


@dataclass
class FakeOpenAI(FakeModelServer[FakeReply]):
    served_models: list[str] = field(default_factory=lambda: ["gpt-4.1", "gpt-4o-mini"])


class _Handler(ModelHandler):
    fake: FakeOpenAI

    def answer(self, request: Recorded) -> None:
        given = (self.headers.get("authorization") or "").removeprefix("Bearer ")
        if given != self.fake.api_key:
            # As OpenAI words it: the key, masked but for its ends, is in the message.
            masked = f"{given[:3]}{'*' * max(len(given) - 7, 0)}{given[-4:]}"
            message = (
                f"Incorrect API key provided: {masked}. You can find your API key at "
                "https://platform.openai.com/account/api-keys."
            )
            return self._error(Failure(401, "invalid_api_key", message))
        if request.path == "/v1/models":
            data = [
                {"id": m, "object": "model", "owned_by": "fake"} for m in self.fake.served_models
            ]
            return self.send_json(200, {"object": "list", "data": data})
        if request.path not in ("/v1/chat/completions", "/v1/responses"):
            return self._error(Failure(404, "not_found", f"Unknown path {request.path}"))
        model = str(request.body.get("model") or "")
        if model not in self.fake.served_models:
            message = f"The model `{model}` does not exist or you do not have access to it."
            return self._error(Failure(404, "model_not_found", message))
        reply = self.fake.next_reply()
        if reply is None:
            return self._error(Failure(500, "server_error", "the fake has no reply planned"))
        if isinstance(reply, Failure) and not reply.in_stream:
            return self._error(reply)
        if request.path == "/v1/responses":
            return self._responses(request.body, reply)
        return self._chat(request.body, reply)

    def _error(self, failure: Failure) -> None:
        kinds = {429: "requests", 401: "invalid_request_error", 404: "invalid_request_error"}
        body = {"error": {"message": failure.message or failure.code, "type": kinds.get(
            failure.status, "server_error" if failure.status >= 500 else "invalid_request_error"),
            "param": None, "code": failure.code}}  # fmt: skip
        headers = {} if failure.retry_after is None else {"retry-after": str(failure.retry_after)}
        self.send_json(failure.status, body, headers)

    def _usage(self, body: JSONObject, cacheable: str) -> tuple[int, int]:
        prompt = tokens(json.dumps(body, ensure_ascii=False))
        return prompt, min(self.fake.cached_tokens(cacheable), prompt)

    def _chat(self, body: JSONObject, reply: FakeReply) -> None:
        if isinstance(reply, Failure):
            frame = data_frame({"error": {"message": reply.message, "type": reply.code,
                                          "code": reply.code}})  # fmt: skip
            return self.send_sse([frame])
        # What OpenAI caches: the rendered prompt, tools and messages in order.
        cacheable = json.dumps([body.get("tools"), body.get("messages")], ensure_ascii=False)
        prompt, cached = self._usage(body, cacheable)
        model = reply.model or f"{body['model']}-2025-04-14"
        head = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_764_000_000,
                "model": model, "system_fingerprint": "fp_fake"}  # fmt: skip

        def chunk(delta: JSONObject, finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return data_frame({**head, "choices": [choice]})

        frames = [chunk({"role": "assistant", "content": ""})]
        frames += [
            chunk({"reasoning_content": p}) for p in split_text(reply.reasoning, reply.pieces)
        ]
        frames += [chunk({"content": p}) for p in split_text(reply.text, reply.pieces)]
        for index, call in enumerate(reply.calls):
            arguments = call.arguments_text
            first, rest = arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]
            opening: JSONObject = {"index": index, "type": "function",
                                   "function": {"name": call.name, "arguments": first}}  # fmt: skip
            if call.id is not None:
                opening["id"] = call.id or f"call_{index}"
            frames.append(chunk({"tool_calls": [opening]}))
            frames.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": rest}}]})
            )
        finish = reply.finish_reason or ("tool_calls" if reply.calls else "stop")
        frames.append(chunk({}, finish))
        usage = {"prompt_tokens": prompt, "completion_tokens": reply.output_tokens,
                 "total_tokens": prompt + reply.output_tokens,
                 "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
                 "completion_tokens_details": {"reasoning_tokens": tokens(reply.reasoning)},
                 }  # fmt: skip
        frames.append(data_frame({**head, "choices": [], "usage": usage}))
        frames.append(b"data: [DONE]\n\n")
        self.send_sse(frames, reply.cut_after)

    def _responses(self, body: JSONObject, reply: FakeReply) -> None:
        if isinstance(reply, Failure):
            error = {"type": "error", "code": reply.code, "message": reply.message,
                     "param": None, "sequence_number": 0}  # fmt: skip
            return self.send_sse([data_frame(error, "error")])
        cacheable = json.dumps(
            [body.get("instructions"), body.get("tools"), body.get("input")], ensure_ascii=False
        )
        prompt, cached = self._usage(body, cacheable)
        model = reply.model or f"{body['model']}-2025-04-14"
        frames: list[bytes] = []
        n = 0

        def event(kind: str, **fields: object) -> None:
            nonlocal n
            frames.append(data_frame({"type": kind, "sequence_number": n, **fields}, kind))
            n += 1

        output: list[JSONObject] = []
        if reply.reasoning:
            for p in split_text(reply.reasoning, reply.pieces):
                event("response.reasoning_summary_text.delta", item_id="rs_1", output_index=0,
                      summary_index=0, delta=p)  # fmt: skip
            summary = [{"type": "summary_text", "text": reply.reasoning}]
            output.append({"type": "reasoning", "id": "rs_1", "summary": summary})
        if reply.text:
            for p in split_text(reply.text, reply.pieces):
                event("response.output_text.delta", item_id="msg_1", output_index=len(output),
                      content_index=0, delta=p, logprobs=[])  # fmt: skip
            output.append({"type": "message", "id": "msg_1", "role": "assistant", "status":
                           "completed", "content": [{"type": "output_text", "text": reply.text,
                                                     "annotations": []}]})  # fmt: skip
        for index, call in enumerate(reply.calls):
            output.append({"type": "function_call", "id": f"fc_{index}", "call_id": call.id or
                           f"call_{index}", "name": call.name, "arguments": call.arguments_text,
                           "status": "completed"})  # fmt: skip
        usage = {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": cached},
                 "output_tokens": reply.output_tokens, "output_tokens_details":
                 {"reasoning_tokens": 0}, "total_tokens": prompt + reply.output_tokens}  # fmt: skip
        response = {"id": "resp_fake", "object": "response", "created_at": 1_764_000_000,
                    "status": "completed", "model": model, "output": output, "usage": usage,
                    "incomplete_details": None, "error": None, "parallel_tool_calls": True,
                    "tool_choice": "auto", "tools": []}  # fmt: skip
        event("response.completed", response=response)
        self.send_sse(frames, reply.cut_after)


@contextmanager
def serve_fake_openai(*, api_key: str = "sk-test-openai") -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI(api_key)
    with serving(fake, _Handler, "/v1"):
        yield fake
