"""What a log line is about: the session, run and user in hand, carried in a context
variable so every record logged meanwhile can say so (`adapters/observability/json_logs.py` writes
them). Set where a run starts (`AgentRunner.run`, and the schedulers around it) and where
a request is authenticated; an asyncio task starts with a copy of its creator's, and the
bridge's threads run in a copy of their caller's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType
from uuid import UUID

FIELDS = ("session_id", "run_id", "user_id")

_EMPTY: Mapping[str, str] = MappingProxyType({})
_current: ContextVar[Mapping[str, str]] = ContextVar("tokendance_log_context", default=_EMPTY)


def current() -> Mapping[str, str]:
    """The fields known here (`session_id`, `run_id`, `user_id`), as strings."""
    return _current.get()


@contextmanager
def bound(
    *, session_id: UUID | str | None = None, run_id: UUID | str | None = None
) -> Iterator[None]:
    """The session and run known for the block (the user, if known, stays)."""
    token = _current.set(_with(session_id=session_id, run_id=run_id))
    try:
        yield
    finally:
        _current.reset(token)


def set_user(user_id: UUID | str) -> None:
    """The caller of the request in hand, for the rest of the request's task (each
    request is a task of its own, so it goes with the task)."""
    _current.set(_with(user_id=user_id))


def _with(**fields: UUID | str | None) -> Mapping[str, str]:
    merged = dict(_current.get())
    merged.update({k: str(v) for k, v in fields.items() if v is not None})
    return MappingProxyType(merged)
