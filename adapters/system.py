"""What one process is made of: the store and read models, the engine, the background services.

`adapters/bootstrap/` builds these; everything else receives them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from adapters.config.settings import Settings
from adapters.container import Container
from adapters.observability.telemetry import shutdown
from adapters.services import Services
from adapters.slides.previews import SlidePreviews

if TYPE_CHECKING:  # the SDK is imported only when spans are exported
    from opentelemetry.sdk.trace import TracerProvider

    from adapters.http.parts import HttpParts  # which builds on `Engine`
from application.bridge import SyncBridge
from application.manual_tools import ManualTools
from application.ports import BlobStore
from application.runner import AgentRunner
from application.runs import RunScheduler
from application.sessions import SessionService
from application.slide_regeneration import SlideRegenerator


@dataclass
class Engine:
    """The agent loop and the tasks that drive it, on one event store."""

    runner: AgentRunner
    scheduler: RunScheduler
    blobs: BlobStore
    manual: ManualTools
    sessions: SessionService
    bridge: SyncBridge
    regenerator: SlideRegenerator  # one slide of a deck, from a user's instructions
    previews: SlidePreviews  # decks' PDFs and thumbnails (LibreOffice)


@dataclass
class System:
    """Everything one process runs, wired once by `bootstrap`."""

    container: Container
    services: Services
    engine: Engine
    http: HttpParts  # what `create_app` serves, when this process serves the API
    telemetry: TracerProvider | None = None  # set when spans are exported (OTLP)

    @property
    def settings(self) -> Settings:
        return self.container.settings

    async def stop(self) -> None:
        """End the run tasks (their runs stay active in the log) and the background services."""
        await self.engine.scheduler.close()
        await self.services.stop()
        await self.container.close_loop_pool()

    def close(self) -> None:
        """Flush the spans, close the event store's connections and the thread pool."""
        shutdown(self.telemetry)
        self.container.close()
