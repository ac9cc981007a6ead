"""What makes a wired system one of the split layout's roles: an API replica whose runs
go to the workers, a worker, and the runs a restart resumes."""

from __future__ import annotations

from adapters.container import Container
from adapters.nats.run_queue import RunQueue
from adapters.postgres.active_runs import active_runs
from adapters.postgres.advisory_locks import AdvisoryLocks, SessionRunLocks
from adapters.processes.worker import Worker, WorkerSettings
from adapters.system import Engine, System


def dispatch_runs_to_workers(system: System) -> RunQueue:
    """Make `system` an API replica: the runs it starts or resumes go to the workers."""
    queue = RunQueue(system.services.link, system.settings.nats_runs_stream)
    system.engine.scheduler.dispatch = queue
    return queue


def build_worker(system: System) -> Worker:
    """A worker that drives `system`'s engine on runs from the work queue."""
    s, c = system.settings, system.container
    return Worker(
        engine=system.engine,
        queue=RunQueue(system.services.link, s.nats_runs_stream),
        locks=SessionRunLocks(AdvisoryLocks(c.database_url)),
        recorder=c.recorder,
        mapper=c.sessions.mapper,
        settings=WorkerSettings(
            concurrency=s.worker_concurrency,
            ack_wait=float(s.run_ack_wait),
            max_deliveries=s.run_max_deliveries,
            sweep=float(s.run_sweep),
        ),
    )


async def recover_runs(container: Container, engine: Engine) -> int:
    """Resume the runs a previous process left active; how many.

    Read from the event store itself, not a read model that may be behind it, so no
    run that ended or started just before the restart is missed or resumed twice.
    """
    active = await container.bridge(active_runs, container.recorder, container.sessions.mapper)
    engine.scheduler.recover(active)
    return len(active)
