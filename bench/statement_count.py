"""SQL statements Postgres executes per chat message, with a breakdown.

`tokendance serve` runs as its own process with a scripted one-turn answer, as in
`bench.chat_accept`. After a warm-up Postgres logs every statement (ALTER SYSTEM
`log_statement = all`, reset after), and its log (`<pgdata>/log`) is read for an idle
window (pollers) and for the messages, each run to `done`, plus `SETTLE` seconds for the
background work they cause. Each executed statement counts once (BEGIN, COMMIT, SET are
round trips too), by role, by part (hot path: the request and its run; background: relay,
projections, pollers) and by shape. This process's own statements are left out.

By default one session sends 20 messages in turn, so each message's background work is its
own; `--sessions 20 --messages 1` sends twenty first messages at once (the relay and the
projections then batch across sessions).

python -m bench.statement_count [--sessions 1] [--messages 20] [--idle 3] [--keep-log PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import psycopg
from psycopg import sql

from bench.api_harness import api_stack, create_sessions, machine, register
from bench.chat_accept import drive, write_script

BENCH_APP = "statement_count"  # this process's connection, left out of the counts
SETTINGS = {"log_statement": "all", "log_line_prefix": "%n [%p] %d %u %a "}
API_ROLE = "tokendance_api"
SETTLE = 2.0  # seconds after the last `done` for the work it caused in the background
LEVELS = "LOG|DETAIL|HINT|CONTEXT|STATEMENT|ERROR|WARNING|NOTICE|FATAL|PANIC"
RECORD = re.compile(rf"^\d+\.\d+ \[(\d+)\] (.*?)({LEVELS}):  (.*)$")
EXECUTED = re.compile(r"^(?:statement|execute [^:]*): ?(.*)$", re.S)
# Round trips that belong to the work around them: BEGIN to what follows, COMMIT to what
# precedes, SET / set_config to what follows (or precedes, at a transaction's end).
TX = r"BEGIN|START|COMMIT|END|ROLLBACK|SAVEPOINT|RELEASE"
ATTACHED = re.compile(rf"^({TX}|SET|RESET|SHOW)\b|^SELECT set_config", re.I)
SESSION_ID = re.compile(r"\$1 = '\{?([0-9a-f-]{36})")
# (part, statement pattern, parameters pattern), first match wins.
RULES: tuple[tuple[str, str, str], ...] = (
    ("request", r"rate_limit", ""),
    # The accounts log's head: a request's authentication, a run's MCP servers, and the
    # open streams' check once a second (all counted on the hot path).
    ("accounts head", r"^SELECT MAX\(notification_id\) AS max FROM \S+\.\"accounts_events\"$", ""),
    ("request", r"append_\w+_events", r"UserMessageAppended"),
    ("run", r"append_\w+_events", ""),
    ("run", r"advisory_(try_|un)?lock", r"'run:"),
    ("run", r"context_(snapshots|segments)|memory_namespaces|WITH position AS", ""),
    ("relay", r"projection_tracking|advisory", r"'relay:"),
    ("relay", r"notification_id>=\$1 ORDER BY notification_id LIMIT", ""),
    ("memory keeper", r"projection_tracking", r"'memory-keeper'"),
    ("memory keeper", r"topic = ANY|^SELECT MAX\(notification_id\) FROM \S+_events\"$", ""),
    ("store tail", r"coalesce\(max\(notification_id\), 0\)|notification_id > \$1 ORDER BY", ""),
    ("listen", r"^(UN)?LISTEN\b", ""),
    ("projections", r"projection_tracking|pg_notify|_view\b|episode|embedding_|usage_", ""),
    ("accounts catch-up", r"accounts_events\" WHERE \S+ = \$1 AND originator_version >", ""),
    ("accounts load", r"accounts_(events|snapshots)\" WHERE originator_id", ""),
    ("session read", r"_(events|snapshots)\" WHERE originator_id", ""),
)
# A session's log read is told by where the session is: before its message is stored
# (the request) or from then to the end of its run (the run, or the request's stream).
BEFORE, DURING = "session read, before store", "session read, in run"
GROUPS = {
    "hot path": (
        "request",
        "accounts head",
        "accounts catch-up",
        "accounts load",
        BEFORE,
        DURING,
        "run",
    ),
    "background": ("projections", "relay", "store tail", "memory keeper", "listen"),
    "unclassified": ("other",),
}


@dataclass
class Statement:
    pid: int
    user: str
    app: str
    text: str
    params: str = ""
    part: str = "other"


def parse(text: str, database: str) -> tuple[list[Statement], Counter[str]]:
    """The statements in a slice of the server log that the database's clients ran, and
    the other lines (by kind)."""
    statements: list[Statement] = []
    skipped: Counter[str] = Counter()
    last = None
    for line in text.splitlines():
        m = RECORD.match(line)
        if m is None:  # a continuation: the statement's (or its parameters') next line
            if last is not None and last.params:
                last.params += "\n" + line
            elif last is not None:
                last.text += "\n" + line
            continue
        pid, fields, level, message = int(m[1]), m[2].split(), m[3], m[4]
        ours = len(fields) == 3 and fields[0] == database and fields[2] != BENCH_APP
        executed = EXECUTED.match(message) if level == "LOG" else None
        if ours and executed:
            last = Statement(pid, fields[1], fields[2], executed[1])
            statements.append(last)
        elif ours and last is not None and last.pid == pid and level == "DETAIL":
            last.params = message
        else:
            skipped[f"{level} {message.split(':')[0][:40]}" if ours else "other"] += 1
            last = None
    return statements, skipped


def shape(text: str) -> str:
    """The statement with its literals replaced and its whitespace collapsed."""
    text = re.sub(r"'(?:[^']|'')*'", "?", text)
    text = re.sub(r"\b\d+(?:\.\d+)?\b", "?", text)
    return re.sub(r"\s+", " ", text).strip()[:120]


def classify(statements: list[Statement]) -> None:
    """Each statement's part: by its text, then a session's log read by where the session
    is (before its message is stored, or during its run), then BEGIN/COMMIT/SET by the
    statements around them on the same connection."""
    running: set[str] = set()
    for s in statements:
        flat = re.sub(r"\s+", " ", s.text).strip()
        if ATTACHED.match(flat):
            s.part = ""
            continue
        for part, pattern, params in RULES:
            if re.search(pattern, flat) and (not params or re.search(params, s.params)):
                s.part = part
                break
        session = SESSION_ID.search(s.params)
        key = session[1] if session else ""
        if s.part == "session read":
            s.part = DURING if key in running else BEFORE
        elif "UserMessageAppended" in s.params:
            running.add(key)
        elif re.search(r"Run(Completed|Failed|Stopped)", s.params):
            running.discard(key)
    by_pid: dict[int, list[Statement]] = {}
    for s in statements:
        by_pid.setdefault(s.pid, []).append(s)
    for seq in by_pid.values():
        for i, s in enumerate(seq):
            if s.part:
                continue
            ahead = [t.part for t in seq[i + 1 :] if t.part][:1]
            behind = [t.part for t in reversed(seq[:i]) if t.part][:1]
            closes = re.match(r"(COMMIT|END|ROLLBACK|RELEASE)\b", s.text.strip(), re.I)
            s.part = ((behind or ahead) if closes else (ahead or behind) or ["other"])[0]


def slice_of(log: Path, start: int, end: int) -> str:
    with log.open("rb") as f:
        f.seek(start)
        return f.read(end - start).decode("utf-8", errors="replace")


def configure(conn: psycopg.Connection[tuple[object, ...]], on: bool) -> None:
    for name, value in SETTINGS.items():
        setting = sql.Identifier(name)
        query = sql.SQL("SET {} = {}").format(setting, sql.Literal(value)) if on else None
        conn.execute(sql.SQL("ALTER SYSTEM ") + (query or sql.SQL("RESET {}").format(setting)))
    conn.execute("SELECT pg_reload_conf()")
    time.sleep(0.2)  # backends take the new settings before their next statement


def report(
    counted: list[Statement], skipped: Counter[str], idle: list[Statement], n: int, idle_s: float,
    busy_s: float,
) -> None:  # fmt: skip
    total, rate = len(counted), len(idle) / idle_s
    print(f"idle before sending: {len(idle)} statements in {idle_s:.1f} s = {rate:.1f}/s (pollers)")
    print(
        f"statements: {total} in {busy_s:.1f} s for {n} messages = {total / n:.1f} per message "
        f"(at the idle rate, polling would account for {rate * busy_s / n:.1f} of them)"
    )
    roles = Counter(s.user for s in counted)
    by_role = ", ".join(f"{u} {roles[u] / n:.1f}" for u in {**roles, API_ROLE: 0})
    print(f"by role, per message: {by_role}")
    parts = Counter(s.part for s in counted)
    pids: dict[str, set[int]] = {}
    for s in counted:
        pids.setdefault(s.part, set()).add(s.pid)
    for group, members in GROUPS.items():
        print(f"{group}: {sum(parts[p] for p in members) / n:.1f} per message")
        for p in sorted((p for p in members if parts[p]), key=lambda p: -parts[p]):
            print(f"  {parts[p] / n:6.2f}  {p} ({len(pids[p])} backends)")
    apps = dict(Counter(s.app for s in counted))
    hot = set().union(*(pids.get(p, set()) for p in GROUPS["hot path"]))
    back = set().union(*(pids.get(p, set()) for p in GROUPS["background"]))
    print(
        f"backends: {len(hot | back)}, {len(hot)} with hot-path work, {len(back)} with "
        f"background work, {len(hot & back)} with both; application_name: {apps}"
    )
    others = ", ".join(f"{k} {v}" for k, v in skipped.most_common()) or "none"
    print(f"other log lines, not counted: {others}")
    shapes = Counter((s.part, shape(s.text)) for s in counted)
    idle_shapes = Counter((s.part, shape(s.text)) for s in idle)
    print("top 25 statement shapes: per message, idle per second, part, shape")
    for (part, text), c in shapes.most_common(25):
        print(f"  {c / n:5.2f} {idle_shapes[part, text] / idle_s:5.2f}  {part:<26} {text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1, help="sessions talking at once")
    parser.add_argument("--messages", type=int, default=20, help="messages per session, in turn")
    parser.add_argument("--idle", type=float, default=3.0, help="seconds of idle log first")
    parser.add_argument("--keep-log", type=Path, help="write the measured log slice there")
    options = parser.parse_args()
    print(machine())
    print(f"date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    total = options.sessions * options.messages
    with tempfile.TemporaryDirectory(prefix="tokendance-stmtbench-") as scratch:
        script = write_script(Path(scratch), total + 10)
        with api_stack(script=script) as stack:
            with httpx.Client(base_url=stack.server.url, timeout=30) as http:
                account = register(http, "statements@bench.example")
                sessions = create_sessions(http, account, options.sessions + 1)
            warm = asyncio.run(drive(stack.server.url, account, sessions[:1], 3))
            assert len(warm.completed) == 3, warm.refused
            url = stack.database_url
            with psycopg.connect(url, autocommit=True, application_name=BENCH_APP) as conn:
                database = str(conn.info.dbname)  # pgserver logs to <pgdata>/log
                log = Path(str(conn.execute("SHOW data_directory").fetchall()[0][0])) / "log"
                configure(conn, on=True)
                try:
                    idle_start = log.stat().st_size
                    time.sleep(options.idle)
                    start, started = log.stat().st_size, time.monotonic()
                    tally = asyncio.run(
                        drive(stack.server.url, account, sessions[1:], options.messages)
                    )
                    time.sleep(SETTLE)
                    end, busy_s = log.stat().st_size, time.monotonic() - started
                finally:
                    configure(conn, on=False)
            text, idle_text = slice_of(log, start, end), slice_of(log, idle_start, start)
    assert len(tally.completed) == total, tally.refused
    if options.keep_log:
        options.keep_log.write_text(text)
    (counted, skipped), (idle, _) = parse(text, database), parse(idle_text, database)
    classify(counted)
    classify(idle)
    print(
        f"{options.sessions} sessions at once x {options.messages} message(s) each, in turn "
        f"= {total} messages, each run to `done`, then {SETTLE:.0f} s for background work"
    )
    report(counted, skipped, idle, total, options.idle, busy_s)


if __name__ == "__main__":
    main()
