"""One MCP tool call as TokenDance's handlers see it: who calls, the services, what to
answer, and how to tell the client how it goes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import msgspec

from adapters.http.deps import Api
from application.tokens import Principal

Progress = Callable[[str], Awaitable[None]]  # one progress notification, in words


@dataclass(frozen=True)
class Call:
    """A tool call: the app's services, its caller (as the API authenticated them), and
    where its progress goes (nowhere unless the client gave a progress token)."""

    api: Api
    user: Principal
    progress: Progress


@dataclass(frozen=True)
class Answer:
    """A tool's result: text for a model or a person to read, and the same as data
    (the tool's `outputSchema`); `is_error` when the work itself failed (an agent
    tool's recorded failure)."""

    text: str
    data: msgspec.Struct
    is_error: bool = False
