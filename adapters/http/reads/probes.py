"""What the operational endpoints and the metrics look at: the log, the relays, the read
models and their lags."""

from __future__ import annotations

from dataclasses import dataclass

from eventsourcing.postgres import PostgresApplicationRecorder, PostgresTrackingRecorder

from adapters.http.reads.read_your_writes import ViewWaiter
from adapters.services import Services
from application.auto_memory import MemoryKeeper
from application.bridge import SyncBridge
from projections.read_models import ReadModels


@dataclass(frozen=True)
class Probes:
    """What the operational endpoints and metrics look at: the log, relay and read models."""

    recorder: PostgresApplicationRecorder
    views: ReadModels
    services: Services
    bridge: SyncBridge
    waiter: ViewWaiter
    # view name -> the log it reads (the accounts view reads the accounts' log)
    logs: dict[str, PostgresApplicationRecorder]
    checkpoints: PostgresTrackingRecorder  # the relay's and the memory keeper's

    def kept(self) -> int:
        """The notification id up to which the memory keeper kept what sessions taught."""
        return self.checkpoints.max_tracking_id(MemoryKeeper.NAME) or 0

    def view_lags(self) -> dict[str, tuple[int, int]]:
        """view name -> (its position, events of its log it has yet to apply)."""
        heads: dict[int, int] = {}
        lags: dict[str, tuple[int, int]] = {}
        for name, view in self.views.items():
            log = self.logs[name]
            if id(log) not in heads:
                heads[id(log)] = log.max_notification_id() or 0
            position = view.position()
            lags[name] = (position, max(heads[id(log)] - position, 0))
        return lags
