"""Helpers for integration tests: read a stream back, wait for a condition."""

from __future__ import annotations

from pathlib import Path

import nats
from nats.js.errors import NotFoundError

from schemas.nats import StoredEventHeaders


async def stream_notification_ids(nats_url: str, stream: str) -> list[int]:
    """Every message's notification id, in stream order ([] if there is no stream)."""
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        try:
            info = await js.stream_info(stream)
        except NotFoundError:
            return []
        if not info.state.messages:
            return []
        ids = []
        for seq in range(info.state.first_seq, info.state.last_seq + 1):
            msg = await js.get_msg(stream, seq)
            ids.append(StoredEventHeaders.of(msg.headers or {}).notification_id)
        return ids
    finally:
        await nc.close()


def started_work(workdir: Path) -> bool:
    """The slow tool has written its line (the file exists a moment before: a kill then
    would leave it empty, as if the tool had never run)."""
    log = workdir / "slow_work.log"
    return log.exists() and log.read_text().strip() != ""
