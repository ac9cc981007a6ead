"""The relay: every committed event reaches the stream once, in order, whatever fails."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from uuid import UUID, uuid4

import psycopg
import pytest

from adapters.bootstrap.background import Background, build_services
from adapters.container import Container
from adapters.processes.embedded import EmbeddedNats
from adapters.services import Services
from tests.integration.support import stream_notification_ids
from tests.waiting import eventually_async

pytestmark = pytest.mark.integration


def new_session(container: Container) -> UUID:
    return container.sessions.start_session(
        workspace_id=uuid4(), owner_id=uuid4(), title="relay"
    ).session_id


def append(container: Container, sid: UUID, n: int) -> None:
    for i in range(n):
        container.sessions.append_user_message(sid, f"message {i}")


async def published(container: Container, nats_url: str) -> list[int]:
    return await stream_notification_ids(nats_url, container.settings.nats_stream)


async def all_published(container: Container, nats_url: str) -> list[int]:
    head = container.recorder.max_notification_id() or 0

    async def done() -> bool:
        ids = await published(container, nats_url)
        return bool(ids) and ids[-1] >= head

    await eventually_async(done, what=f"stream to reach notification {head}")
    return await published(container, nats_url)


def stored_ids(container: Container) -> list[int]:
    return [n.id for n in container.recorder.select_notifications(1, 1_000_000)]


def inserting_slowly(database_url: str) -> bool:
    """Whether an insert into the events table is inside the slow-commit trigger's sleep."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE wait_event = 'PgSleep' AND query LIKE '%tokendance_events%'"
        ).fetchone()
    return row is not None and row[0] > 0


def asking_for_the_lock(database_url: str) -> bool:
    """Whether a connection's latest statement asked for the relay's advisory lock (the
    leader's has moved on to LISTEN, so this is a standby's)."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND query LIKE 'SELECT pg_try_advisory_lock%%'"
        ).fetchone()
    return row is not None and row[0] > 0


async def test_every_event_is_published_once_in_commit_order(
    container: Container, services: Services, nats_url: str
) -> None:
    sids = [new_session(container) for _ in range(3)]
    threads = [threading.Thread(target=append, args=(container, s, 40)) for s in sids]
    for t in threads:
        t.start()
    await asyncio.to_thread(lambda: [t.join() for t in threads])
    ids = await all_published(container, nats_url)
    assert ids == stored_ids(container)


async def test_full_reads_read_on_and_short_reads_wait_for_the_next_commit(
    container: Container, nats_url: str
) -> None:
    """Batches of 4 and a poll so slow that only a NOTIFY can wake the relay in time: a
    burst fills batches (read on at once), a trickle gives short reads (then wait for
    the next commit); either way every event goes out once, in order, without the poll."""
    relay_only = build_services(
        container,
        background=Background(projections=False, relay_batch_size=4, relay_poll_interval=3600),
    )
    await relay_only.start()
    try:
        sids = [new_session(container) for _ in range(3)]
        threads = [threading.Thread(target=append, args=(container, s, 25)) for s in sids]
        for t in threads:
            t.start()
        await asyncio.to_thread(lambda: [t.join() for t in threads])
        assert await all_published(container, nats_url) == stored_ids(container)
        for _ in range(5):
            await asyncio.to_thread(append, container, sids[0], 1)
            assert await all_published(container, nats_url) == stored_ids(container)
    finally:
        await relay_only.stop()


async def test_a_commit_held_back_by_a_trigger_is_not_skipped(
    container: Container, services: Services, nats_url: str, database_url: str
) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            """CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF position('slow-commit'::bytea in NEW.state) > 0 THEN
                    PERFORM pg_sleep(1.5);
                END IF;
                RETURN NEW;
            END $$"""
        )
        conn.execute(
            "CREATE TRIGGER slow_commit BEFORE INSERT ON tokendance_events "
            "FOR EACH ROW EXECUTE FUNCTION slow_commit()"
        )
    slow, fast = new_session(container), new_session(container)
    held = threading.Thread(  # the key, not the text: the text is sealed in the state
        target=container.sessions.append_user_message,
        args=(slow, "slow"),
        kwargs={"idempotency_key": "slow-commit"},
    )
    held.start()
    await eventually_async(
        lambda: asyncio.to_thread(inserting_slowly, database_url),
        what="the slow insert to hold its id, uncommitted",
    )
    await asyncio.to_thread(append, container, fast, 5)
    await asyncio.to_thread(held.join)

    ids = await all_published(container, nats_url)
    assert ids == stored_ids(container)
    position = services.runners["sessions"].view.position
    await eventually_async(
        lambda: asyncio.to_thread(lambda: position() == ids[-1]), what="read model to catch up"
    )
    rows = {
        r.session_id: r
        for r in [container.views["sessions"].get(slow), container.views["sessions"].get(fast)]
    }  # type: ignore[union-attr]
    assert rows[slow].message_count == 1
    assert rows[fast].message_count == 5


async def test_holes_in_notification_ids_do_not_stall_the_relay(
    container: Container, services: Services, nats_url: str, database_url: str
) -> None:
    sid = new_session(container)
    with psycopg.connect(database_url) as conn:
        for _ in range(3):  # rolled-back transactions leave sequence values unused
            conn.execute("SELECT nextval('tokendance_events_notification_id_seq')")
            conn.rollback()
    append(container, sid, 3)
    ids = await all_published(container, nats_url)
    assert ids == stored_ids(container)
    assert ids[1] - ids[0] > 1, "no hole was made: the test proved nothing"


def run_relay(
    container: Container, database_url: str, nats_url: str, stream: str, *kill: str
) -> subprocess.Popen[str]:
    key = container.settings.data_dir / "master-key"  # the users' keys' master key
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.integration.relay_process",
            database_url,
            nats_url,
            stream,
            *kill,
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "TOKENDANCE_MASTER_KEY_FILE": str(key)},
    )


@pytest.mark.slow
async def test_relay_killed_before_and_after_publishing_leaves_each_event_once(
    container: Container, nats_url: str, database_url: str
) -> None:
    stream = container.settings.nats_stream
    sid = new_session(container)
    append(container, sid, 29)  # notification ids 1..30

    before = run_relay(container, database_url, nats_url, stream, "before", "12")
    assert await asyncio.to_thread(before.wait, 60) == -9
    ids = await published(container, nats_url)
    assert ids == list(range(1, 11)), "killed before publishing the batch holding 12"

    after = run_relay(container, database_url, nats_url, stream, "after", "20")
    assert await asyncio.to_thread(after.wait, 60) == -9
    assert (await published(container, nats_url))[-1] == 20
    checkpoint = container.checkpoints.max_tracking_id(f"relay:{stream}")
    assert checkpoint is not None and checkpoint < 20, "checkpoint advanced past its PubAck"

    healthy = run_relay(container, database_url, nats_url, stream)
    try:
        ids = await all_published(container, nats_url)
    finally:
        healthy.kill()
        healthy.wait()
    assert ids == list(range(1, 31))


@pytest.mark.slow
async def test_commands_go_on_while_nats_is_down_and_everything_catches_up(
    container: Container,
    database_url: str,
    data_root,
    settings,  # type: ignore[no-untyped-def]
) -> None:
    own_nats = EmbeddedNats(data_root / f"nats-{uuid4().hex[:8]}")
    nats_url = own_nats.start()
    container.nats_url = nats_url
    services = build_services(container)
    await services.start()
    try:
        sid = new_session(container)
        await asyncio.to_thread(append, container, sid, 10)
        await all_published(container, nats_url)

        own_nats.stop()
        await asyncio.to_thread(append, container, sid, 40)  # every command succeeds
        assert container.sessions.get_session(sid).version == 51

        own_nats.start()
        ids = await all_published(container, nats_url)
        assert ids == stored_ids(container)
        view = container.views["sessions"]
        await eventually_async(
            lambda: asyncio.to_thread(lambda: view.position() == ids[-1]),
            what="read model to catch up",
        )
        row = view.get(sid)
        assert row is not None and row.message_count == 50 and row.version == 51
    finally:
        await services.stop()
        own_nats.stop()


async def test_only_one_relay_is_active_at_a_time(
    container: Container, services: Services, database_url: str
) -> None:
    standby = build_services(container, background=Background(projections=False))
    await standby.start()
    try:
        assert services.relay is not None and standby.relay is not None
        relay, standing_by = services.relay, standby.relay
        await eventually_async(lambda: relay.is_leader, what="the first relay to lead")
        # Known events go out through the leader while the standby keeps asking for the
        # lock: it has had every chance to publish them too, and has not.
        append(container, new_session(container), 3)
        head = stored_ids(container)[-1]
        await eventually_async(lambda: relay.position >= head, what="the leader to publish")
        await eventually_async(
            lambda: asyncio.to_thread(asking_for_the_lock, database_url),
            what="the standby to ask for the lock",
        )
        assert not standing_by.is_leader and standing_by.published == 0
        await services.stop()  # the leader goes away: the standby takes over
        await eventually_async(lambda: standing_by.is_leader, what="the standby to take over")
    finally:
        await standby.stop()
