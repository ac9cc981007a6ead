"""Access tokens never reach a log: `?access_token=` (EventSource's way to authenticate)
is masked in uvicorn's access log, and in any record that quotes a URL with it."""

from __future__ import annotations

import logging
import re

TOKEN_IN_QUERY = re.compile(r"((?:^|[?&])(?:access_token|refresh_token|token)=)[^&\s\"']*", re.I)
MASK = "[redacted]"
LOGGERS = ("uvicorn.access", "uvicorn.error", "litestar")


def redact(text: str) -> str:
    return TOKEN_IN_QUERY.sub(lambda m: m.group(1) + MASK, text)


class RedactTokens(logging.Filter):
    """Masks tokens in a record's message and its string arguments, keeps the record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        return True


def install() -> None:
    """Put the filter on the loggers that write request URLs (once; any time before use)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactTokens) for f in logger.filters):
            logger.addFilter(RedactTokens())
