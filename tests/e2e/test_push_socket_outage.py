"""The push channel through a NATS outage: a socket subscribed before NATS stops hears of
the runs that end while it is away (from the store) and after it is back, each once."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.config.settings import Settings
from tests.e2e.chat_helpers import chat, new_session, user
from tests.e2e.client import wait_until
from tests.e2e.own_nats import server_on_own_nats
from tests.e2e.push import Push, kind
from tests.e2e.test_stream_failover import nats_ready

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_a_socket_hears_of_runs_through_a_nats_outage_and_after_it(
    database_url: str, settings: Settings, data_root: Path
) -> None:
    with server_on_own_nats(database_url, settings, data_root, "replies") as (server, nats):
        account, http = user(server.client(), "outage@example.com")
        sid = str(new_session(http, account["workspace_id"])["id"])
        wait_until(lambda: nats_ready(http), timeout=30)
        push = Push.open(server, str(account["access_token"]))
        push.subscribe(sid)
        push.until(kind("session_update", session_id=sid))

        runs = [_run(http, push, sid, "before")]
        nats.stop()
        runs.append(_run(http, push, sid, "during"))
        nats.restart()
        wait_until(lambda: nats_ready(http), timeout=30)
        runs.append(_run(http, push, sid, "after"))

        push.ping()
        ended = push.of("notification", kind="run_completed")
        assert [n["run_id"] for n in ended] == runs, ended
        versions = [m["version"] for m in push.messages if m["type"] == "session_update"]
        assert versions == sorted(set(versions)), versions
        push.close()


def _run(http: object, push: Push, sid: str, text: str) -> object:
    """A run to its end; its id, once the socket has heard it completed."""
    done = chat(http, sid, text, timeout=40)  # type: ignore[arg-type]
    assert done.events[-1].event == "done", done.events[-1]
    run_id = done.events[-1].data["run_id"]
    push.until(kind("notification", kind="run_completed", run_id=run_id), timeout=30)
    return run_id
