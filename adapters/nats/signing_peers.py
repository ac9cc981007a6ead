"""API replicas must sign tokens with one secret: a replica that differs is refused at start.

Every API process answers on `<stream>.api.signing` with a fingerprint of its JWT secret
(an HMAC of a fixed text, never the secret). A replica starting beside others asks
first; if a live peer answers with another fingerprint, its tokens would be refused by
that peer (and the other way round), so it does not start. With NATS away it cannot
tell, and starts: a differing secret then shows as 401s on some requests only.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
from collections.abc import Callable

import nats
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import Error as NatsError

ANSWER_WAIT = 0.5  # seconds a starting replica listens for its peers


def subject(stream: str) -> str:
    return f"{stream.lower()}.api.signing"


def fingerprint(secret: str) -> str:
    return hmac.new(secret.encode(), b"tokendance api signing key", hashlib.sha256).hexdigest()[:32]


async def answer(nc: NATS, stream: str, secret: str) -> Subscription:
    """Answer the peers' question for as long as the subscription lives."""
    mine = fingerprint(secret).encode()

    async def reply(msg: Msg) -> None:
        if msg.reply:
            await msg.respond(mine)

    return await nc.subscribe(subject(stream), cb=reply)


async def differing(nc: NATS, stream: str, secret: str) -> int:
    """How many live API replicas sign with another secret than `secret`."""
    mine = fingerprint(secret).encode()
    answers: list[bytes] = []
    inbox = nc.new_inbox()

    async def collect(msg: Msg) -> None:
        if msg.data:  # not NATS's own "no responders" status
            answers.append(msg.data)

    sub = await nc.subscribe(inbox, cb=collect)
    try:
        await nc.publish(subject(stream), b"", reply=inbox)
        await nc.flush()
        await asyncio.sleep(ANSWER_WAIT)
    finally:
        with contextlib.suppress(NatsError):
            await sub.unsubscribe()
    return sum(a != mine for a in answers)


async def differing_at(nats_url: str, stream: str, secret: str) -> int:
    """`differing`, on a connection of its own (0 when NATS does not answer: cannot tell)."""
    try:
        nc = await nats.connect(nats_url, connect_timeout=2, allow_reconnect=False)
    except (NatsError, OSError, TimeoutError):
        return 0
    try:
        return await differing(nc, stream, secret)
    finally:
        await nc.close()


async def keep_answering(connection: Callable[[], NATS | None], stream: str, secret: str) -> None:
    """Answer the peers once this process's NATS connection is there, until cancelled."""
    while (nc := connection()) is None:
        await asyncio.sleep(0.2)
    sub = await answer(nc, stream, secret)
    try:
        await asyncio.Event().wait()
    finally:
        with contextlib.suppress(NatsError):
            await sub.unsubscribe()
