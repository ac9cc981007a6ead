"""The push sockets' shared subscription on a real NATS server: one subscription for the
process whatever the sockets follow, a message decoded once and only for a session some
socket follows, and a new subscription on the client NATS came back as."""

from __future__ import annotations

import uuid
from uuid import UUID

import nats
import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from adapters.nats.push_hub import PushHub
from adapters.nats.session_hub import Inbox

pytestmark = pytest.mark.integration
STREAM = "PUSHTEST"


async def test_one_subscription_decodes_what_is_followed_once_and_moves_to_a_new_client(
    nats_url: str,
) -> None:
    first, second = await nats.connect(nats_url), await nats.connect(nats_url)
    current: list[NATS] = [first]
    parsed: list[str] = []

    def parse(msg: Msg) -> str:
        parsed.append(msg.subject)
        return msg.data.decode()

    stream = f"{STREAM}{uuid.uuid4().hex[:6].upper()}"
    hub: PushHub[str] = PushHub(connection=lambda: current[0], stream=stream, parse=parse)
    a, b, unfollowed = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    one, two = Inbox[str](), Inbox[str]()
    try:
        assert hub.subscriptions == 0
        hub.follow(a, one)
        hub.follow(a, two)
        hub.follow(b, two)
        await hub.subscribe()
        assert hub.subscriptions == 1 and hub.is_live()

        await _publish(first, stream, a, "to a")
        await _publish(first, stream, unfollowed, "to nobody")
        await _publish(first, stream, b, "to b")
        assert [await one.get(5)] == ["to a"]
        assert [await two.get(5), await two.get(5)] == ["to a", "to b"]
        assert parsed == [f"{stream.lower()}.events.{a}", f"{stream.lower()}.events.{b}"]

        current[0] = second  # NATS came back as another client
        assert not hub.is_live()
        await hub.subscribe()
        assert hub.is_live() and hub.subscriptions == 1
        await _publish(second, stream, b, "again")
        assert await two.get(5) == "again"

        await hub.unfollow(a, one)
        await hub.unfollow(a, two)
        await hub.unfollow(b, two)
        assert hub.subscriptions == 0 and not hub.is_live()
    finally:
        await first.close()
        await second.close()


async def _publish(nc: NATS, stream: str, session_id: UUID, text: str) -> None:
    await nc.publish(f"{stream.lower()}.events.{session_id}", text.encode())
    await nc.flush()
