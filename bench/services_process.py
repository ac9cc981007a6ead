"""The relay and projections alone in a process, as `tokendance serve` runs them.

python -m bench.services_process DATABASE_URL NATS_URL STREAM
"""

from __future__ import annotations

import asyncio
import sys

from adapters.bootstrap import bootstrap
from adapters.config.settings import Settings


async def main(database_url: str, nats_url: str, stream: str) -> None:
    system = bootstrap(Settings(nats_stream=stream), database_url=database_url, nats_url=nats_url)
    await system.services.start()
    print("ready", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
