"""`TOKENDANCE_LOG_FORMAT=json`: one JSON object per line, with the trace, session, run
and user in hand, exceptions as text, and nothing that looks like a secret."""

from __future__ import annotations

import contextvars
import io
import logging
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import msgspec
import pytest
from opentelemetry.sdk.trace import TracerProvider

from adapters.config.settings import Settings
from adapters.observability.json_logs import JsonFormatter, configure, scrub
from application import log_context

KEY = "tdk_" + "a" * 52
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.c2lnbmF0dXJl"


def record(message: str, *args: object, exc: bool = False) -> logging.LogRecord:
    exc_info = sys.exc_info() if exc else None
    return logging.LogRecord(
        "tokendance.test", logging.WARNING, __file__, 1, message, args, exc_info
    )


def line(rec: logging.LogRecord) -> dict[str, str]:
    text = JsonFormatter().format(rec)
    assert "\n" not in text
    decoded = msgspec.json.decode(text)
    assert isinstance(decoded, dict)
    return decoded


def test_a_line_has_the_time_in_utc_the_level_the_logger_and_the_message() -> None:
    rec = record("run %s: %d turns", "r1", 3)
    rec.created = datetime(2026, 5, 4, 3, 2, 1, 500000, tzinfo=UTC).timestamp()
    assert line(rec) == {
        "time": "2026-05-04T03:02:01.500Z",
        "level": "WARNING",
        "logger": "tokendance.test",
        "message": "run r1: 3 turns",
    }


def test_extra_fields_of_a_record_are_not_written() -> None:
    rec = record("hello")
    rec.headers = {"authorization": "Bearer abc"}
    rec.password = "hunter2"
    assert set(line(rec)) == {"time", "level", "logger", "message"}


def test_the_session_run_and_user_in_hand_are_on_the_line_and_gone_after() -> None:
    session, run, user = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    with log_context.bound(session_id=session, run_id=run):
        inside = line(record("step"))
    assert (inside["session_id"], inside["run_id"]) == (str(session), str(run))
    assert "user_id" not in inside
    assert "session_id" not in line(record("after"))

    def request() -> dict[str, str]:  # a request's task: the user stays with it
        log_context.set_user(user)
        with log_context.bound(session_id=session):
            return line(record("in a request"))

    in_request = contextvars.copy_context().run(request)
    assert (in_request["user_id"], in_request["session_id"]) == (str(user), str(session))
    assert "user_id" not in line(record("another request"))


def test_the_trace_and_span_of_a_recording_span_are_on_the_line() -> None:
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("run") as span:
        inside = line(record("in a span"))
    context = span.get_span_context()
    assert inside["trace_id"] == format(context.trace_id, "032x")
    assert inside["span_id"] == format(context.span_id, "016x")
    assert "trace_id" not in line(record("outside"))


def test_an_exception_is_its_traceback_as_text_scrubbed() -> None:
    try:
        raise RuntimeError(f"refused key {KEY}")
    except RuntimeError:
        written = line(record("it broke", exc=True))
    assert written["message"] == "it broke"
    assert written["exc_info"].startswith("Traceback (most recent call last):")
    assert "RuntimeError: refused key tdk_[redacted]" in written["exc_info"]
    assert KEY not in written["exc_info"]


@pytest.mark.parametrize(
    ("secret", "kept"),
    [
        (f"Authorization: Bearer {JWT}", "Authorization: Bearer [redacted]"),
        ("authorization=bearer sk_live_12345678", "authorization=bearer [redacted]"),
        (f"key {KEY} used", "key tdk_[redacted] used"),
        ("invitation tdi_Zx8-3kq_9sdfPq12 sent", "invitation tdi_[redacted] sent"),
        (f"token {JWT}", "token [redacted]"),
        ("GET /api/v1/sessions/x/stream?access_token=abc.def&x=1", "access_token=[redacted]&x=1"),
        ("ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrst", "ANTHROPIC_API_KEY=[redacted]"),
        ("tavily tvly-abcdefghijklmnop1234", "tavily [redacted]"),
    ],
)
def test_what_looks_like_a_secret_is_masked(secret: str, kept: str) -> None:
    written = line(record("%s", secret))["message"]
    assert kept in written
    assert written == scrub(secret)


def test_ordinary_text_is_left_alone() -> None:
    text = 'run 1c0e of session 7f3a: completed (keys start with tdk_; eyJ is base64 of {")'
    assert scrub(text) == text


@pytest.fixture
def root_restored() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.captureWarnings(False)


def test_configure_json_puts_every_logger_on_json_lines(
    root_restored: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    configure("INFO", "json")
    logging.getLogger("uvicorn.error").info("Started server process")
    logging.getLogger("adapters.x").debug("below the level")
    lines = [msgspec.json.decode(text) for text in err.getvalue().splitlines()]
    assert [(e["logger"], e["message"]) for e in lines] == [
        ("uvicorn.error", "Started server process")
    ]


def test_the_format_is_text_by_default_and_a_bad_one_stops_the_start() -> None:
    assert Settings.from_env({}).log_format == "text"
    assert Settings.from_env({"TOKENDANCE_LOG_FORMAT": "json"}).log_format == "json"
    with pytest.raises(SystemExit, match="TOKENDANCE_LOG_FORMAT must be one of text, json"):
        Settings.from_env({"TOKENDANCE_LOG_FORMAT": "logfmt"})


def test_a_log_level_python_does_not_know_stops_the_start_saying_which_it_knows() -> None:
    assert Settings.from_env({"TOKENDANCE_LOG_LEVEL": "debug"}).log_level == "DEBUG"
    with pytest.raises(SystemExit, match="TOKENDANCE_LOG_LEVEL must be one of DEBUG, INFO"):
        Settings.from_env({"TOKENDANCE_LOG_LEVEL": "LOUD"})  # was a traceback at start
