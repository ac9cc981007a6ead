"""The relay as a process of its own, which can SIGKILL itself at a chosen point.

    python -m tests.integration.relay_process DATABASE_URL NATS_URL STREAM [before|after N]

`before N`: killed just before publishing the batch that holds notification id N.
`after N`: killed once the stream acknowledged N, before the checkpoint is written.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Sequence

from eventsourcing.persistence import Notification

from adapters.bootstrap import bootstrap
from adapters.bootstrap.background import Background
from adapters.config.settings import Settings
from adapters.nats.stream import EventStream


class CrashingStream(EventStream):
    kill_when: str = ""
    kill_at: int = 0

    async def publish(self, notifications: Sequence[Notification], after: int) -> int:
        ids = [n.id for n in notifications]
        if self.kill_when == "before" and self.kill_at in ids:
            os.kill(os.getpid(), signal.SIGKILL)
        position = await super().publish(notifications, after)
        if self.kill_when == "after" and position >= self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return position


async def main(database_url: str, nats_url: str, stream: str, when: str, at: int) -> None:
    CrashingStream.kill_when, CrashingStream.kill_at = when, at
    system = bootstrap(
        Settings.from_env({**os.environ, "TOKENDANCE_NATS_STREAM": stream}),
        database_url=database_url,
        nats_url=nats_url,
        background=Background(projections=False, relay_batch_size=5, stream_factory=CrashingStream),
    )
    await system.services.start()
    print("relay started", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    db, nats_url, stream_name = sys.argv[1:4]
    kill_when, kill_at = (sys.argv[4], int(sys.argv[5])) if len(sys.argv) > 5 else ("", 0)
    asyncio.run(main(db, nats_url, stream_name, kill_when, kill_at))
