"""The process's logging: `TOKENDANCE_LOG_FORMAT=text` (lines for people, the default) or
`json` (one JSON object per line on stderr, for a log pipeline).

A JSON line has `time` (ISO 8601, UTC), `level`, `logger` and `message`; `trace_id` and
`span_id` of the current OpenTelemetry span when one is recording; `session_id`,
`run_id` and `user_id` where known (`application/log_context.py`); `exc_info` (the
traceback, as text) when there is one. Nothing else of the record is written (no
`extra` fields, which could hold anything), and the message and traceback are scrubbed
of what looks like a secret: bearer tokens, JWTs, TokenDance API keys and invitation
tokens, model providers' keys, `?access_token=` values.

Every role configures it the same way (`configure`, from `adapters/commands/cli_commands.py`);
uvicorn's loggers and litestar's propagate to the root logger's handler in JSON, and
Python's warnings are logged rather than printed.
"""

from __future__ import annotations

import logging
import re
import sys
from datetime import UTC, datetime

import msgspec
from opentelemetry import trace

from adapters.http.middleware.log_redaction import redact
from application import log_context
from domain.api_keys import KEY_PREFIX
from domain.invitations import TOKEN_PREFIX

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
MASK = "[redacted]"

_SECRETS = re.compile(
    "|".join(
        (
            r"(?P<scheme>\b(?:Bearer|Basic)\s+)[^\s\"',;]+",  # an Authorization value
            rf"\b(?P<prefix>{KEY_PREFIX}|{TOKEN_PREFIX})[A-Za-z0-9_\-]{{8,}}",  # tdk_, tdi_
            r"\beyJ[A-Za-z0-9_\-]{6,}\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*",  # a JWT
            r"\b(?:sk-|tvly-|pa-|AIza)[A-Za-z0-9_\-]{16,}",  # Anthropic, OpenAI, Tavily, ...
        )
    ),
    re.IGNORECASE,
)


def scrub(text: str) -> str:
    """`text` with every value that looks like a secret masked (its kind left readable)."""
    return _SECRETS.sub(_mask, redact(text))


def _mask(match: re.Match[str]) -> str:
    return (match.group("scheme") or match.group("prefix") or "") + MASK


class JsonFormatter(logging.Formatter):
    """A record as one line of JSON (see the module's docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, str] = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": scrub(record.getMessage()),
        }
        span = trace.get_current_span()
        context = span.get_span_context()
        if span.is_recording() and context.is_valid:
            entry["trace_id"] = format(context.trace_id, "032x")
            entry["span_id"] = format(context.span_id, "016x")
        entry.update(log_context.current())
        if record.exc_info:
            entry["exc_info"] = scrub(self.formatException(record.exc_info))
        elif record.exc_text:
            entry["exc_info"] = scrub(record.exc_text)
        if record.stack_info:
            entry["stack_info"] = scrub(self.formatStack(record.stack_info))
        return msgspec.json.encode(entry).decode()


def configure(level: str, fmt: str) -> None:
    """The root logger writes to stderr at `level`, as `text` or `json` lines."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
        logging.captureWarnings(True)  # a warning is a JSON line too, not a bare print
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):  # whatever configured them
        server = logging.getLogger(name)
        server.handlers.clear()
        server.propagate, server.disabled = True, False
        server.setLevel(logging.NOTSET)  # the root's level, until uvicorn sets its own
