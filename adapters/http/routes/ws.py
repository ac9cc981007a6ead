"""`WS /api/v1/ws`: the push channel (the messages are `schemas.ws`).

The caller authenticates with an access token or an API key, as the `access_token`
query parameter (as the SSE streams take it; `token` as seed 002 writes it) or as its
first message, `auth`, within
`AUTH_WAIT` seconds; otherwise the socket closes (1008, with the reason). Then it
subscribes to sessions and is pushed their changes (`ws_socket.PushSocket`).

Bad input answers an `error` message and the socket goes on: a message that is not
JSON, of an unknown type, or not of its type's shape. Abuse closes it with a reason: a
message over `MAX_MESSAGE` bytes (1009), following more than `MAX_SESSIONS` sessions
(1008). A shutdown closes every socket (1001); the client connects again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import assert_never

import msgspec
from litestar import WebSocket, websocket
from litestar.datastructures import State
from litestar.status_codes import (
    WS_1001_GOING_AWAY,
    WS_1008_POLICY_VIOLATION,
    WS_1009_MESSAGE_TOO_BIG,
)

from adapters.http.deps import ApiDep
from adapters.http.middleware.auth import authenticate
from adapters.http.streams.ws_socket import LoginEnded, PushSocket, Send, TooMany
from application.tokens import Principal
from domain.account_errors import AuthError
from schemas import ws

PATH = "/api/v1/ws"
AUTH_WAIT = 5.0  # seconds a socket opened without a token has to send `auth`
MAX_MESSAGE = 512 * 1024  # bytes of one client message (500 session ids take ~20 KiB)

Socket = WebSocket[object, object, State]


class Closing(Exception):
    """The socket is to close with this code and reason."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


@websocket(PATH)
async def push_socket(socket: Socket, api: ApiDep) -> None:
    """Subscribe to sessions; be told of their status, runs, approvals and artifacts."""
    await socket.accept()
    lock = asyncio.Lock()

    async def send(message: ws.ServerMessage) -> None:
        async with lock:
            await socket.send_data(ws.encode(message), mode="text")

    try:
        principal = await _authenticate(socket)
        pushing = PushSocket(api, principal, send)
        try:
            await _first_ended(_read(socket, pushing, send), pushing.pump(), pushing.guard())
        finally:
            await pushing.close()
        code, reason = WS_1001_GOING_AWAY, "the server is shutting down: connect again"
    except Closing as e:
        code, reason = e.code, e.reason
    except _Gone:
        return
    with contextlib.suppress(Exception):  # it may be gone already
        await socket.close(code=code, reason=reason)


class _Gone(Exception):
    """The client went away."""


async def _first_ended(*jobs: Coroutine[object, object, None]) -> None:
    """Run the jobs until one ends (its error raised); the others are cancelled."""
    tasks = [asyncio.create_task(job) for job in jobs]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    for task in done:
        task.result()


async def _authenticate(socket: Socket) -> Principal:
    token = socket.query_params.get("access_token") or socket.query_params.get("token", "")
    if not token:
        try:
            async with asyncio.timeout(AUTH_WAIT):
                first = await _receive(socket)
        except TimeoutError:
            raise Closing(
                WS_1008_POLICY_VIOLATION, f"no auth message within {AUTH_WAIT:g} s"
            ) from None
        message = _parsed(first)
        if not isinstance(message, ws.Auth):
            raise Closing(WS_1008_POLICY_VIOLATION, 'the first message must be {"type": "auth"}')
        token = message.token
    try:
        return await authenticate(socket.app.state, token.strip())
    except AuthError as e:
        raise Closing(WS_1008_POLICY_VIOLATION, f"not authenticated: {e}"[:120]) from None


async def _read(socket: Socket, pushing: PushSocket, send: Send) -> None:
    while True:
        message = _parsed(await _receive(socket))
        if isinstance(message, ws.Sessions) and not message.wanted:
            message = ws.Error(
                detail=f"{message.__struct_config__.tag}: `session_ids` (or `session_id`) names "
                "no session",
                error_code="VALIDATION_ERROR",
            )
        if isinstance(message, ws.Error):
            await send(message)
            continue
        match message:
            case ws.Subscribe():
                try:
                    await pushing.subscribe(message.wanted)
                except TooMany as e:
                    await send(ws.Error(detail=str(e), error_code="TOO_MANY_SESSIONS"))
                    raise Closing(WS_1008_POLICY_VIOLATION, str(e)) from None
                except LoginEnded as e:
                    raise Closing(WS_1008_POLICY_VIOLATION, f"not authenticated: {e}") from None
            case ws.Unsubscribe():
                await pushing.unsubscribe(message.wanted)
            case ws.Ping():
                await send(ws.Pong())
            case ws.Auth():
                await send(ws.Error(detail="already authenticated", error_code="VALIDATION_ERROR"))
            case _:
                assert_never(message)


async def _receive(socket: Socket) -> bytes:
    """The next message's bytes (text or binary); `Closing` when it is too big."""
    event = await socket.receive()
    if event["type"] == "websocket.disconnect":
        raise _Gone()
    binary, text = event.get("bytes"), event.get("text")
    data = binary if isinstance(binary, bytes) else text.encode() if isinstance(text, str) else b""
    if len(data) > MAX_MESSAGE:
        raise Closing(WS_1009_MESSAGE_TOO_BIG, f"a message may have at most {MAX_MESSAGE} bytes")
    return data


def _parsed(data: bytes) -> ws.ClientMessage | ws.Error:
    """The client's message, or the `error` that answers it."""
    try:
        kind = ws.message_type(data)
    except msgspec.DecodeError as e:
        return ws.Error(detail=f"not a JSON message with a type: {e}", error_code="INVALID_JSON")
    if kind not in ws.CLIENT_TYPES:
        known = ", ".join(sorted(ws.CLIENT_TYPES))
        detail = f"unknown message type {kind[:40]!r} (one of {known})"
        return ws.Error(detail=detail, error_code="UNKNOWN_MESSAGE_TYPE")
    try:
        return ws.decode_client(data)
    except msgspec.DecodeError as e:
        return ws.Error(detail=f"{kind}: {e}", error_code="VALIDATION_ERROR")
