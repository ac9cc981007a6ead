"""What each `tokendance` command does, once its arguments are parsed (`adapters/cli.py`).

Everything a command needs (the servers, the wiring, the engine) is imported here, so
`tokendance --help` and a mistyped argument answer at once.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager

from adapters.bootstrap import bootstrap
from adapters.bootstrap.background import EVERY_DUTY, NO_BACKGROUND, Background
from adapters.bootstrap.parts import announce_model
from adapters.bootstrap.roles import build_worker, dispatch_runs_to_workers
from adapters.config.settings import Settings
from adapters.llm.scripted import check_llm_spec
from adapters.nats.signing_peers import differing_at
from adapters.observability.json_logs import configure as configure_logging
from adapters.processes.embedded import EmbeddedServers, LeaseHeld
from adapters.processes.heap import freeze_started_heap
from adapters.processes.loop import run as run_loop
from adapters.system import System

Command = Callable[[Settings, argparse.Namespace], None]


def run_command(args: argparse.Namespace) -> None:
    """Run the command `args.command` names, on the settings of the environment."""
    settings = Settings.from_env().override(
        host=getattr(args, "host", None),
        port=getattr(args, "port", None),
        data_dir=args.data_dir,
    )
    configure_logging(settings.log_level, settings.log_format)
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    if problem := check_llm_spec(settings.llm):  # a malformed script: refused before starting
        sys.exit(f"tokendance: {problem}")
    COMMANDS[args.command](settings, args)


@contextmanager
def _system(
    settings: Settings,
    *,
    background: Background = EVERY_DUTY,
    role: str = "command",
) -> Iterator[System]:
    """The servers the settings name, or embedded ones, and the system wired over them.

    `serve` must own the embedded servers (and restarts them if they die); any other
    command shares them when a live process owns them.
    """
    serving = role == "serve"
    if role in ("serve", "api", "worker"):  # the roles that call a model say which
        announce_model(settings)
    embedded = EmbeddedServers(
        settings.data_dir,
        postgres=settings.database_url is None,
        nats=settings.nats_url is None,
        role=role,
        exclusive=serving,
        supervise=serving,
    )
    try:
        embedded.start()
    except LeaseHeld as e:  # the data directory's owner is named: no traceback
        sys.exit(f"tokendance {role}: {e}")
    with contextlib.closing(embedded):  # started above: closing() only stops it
        system = bootstrap(
            settings,
            database_url=settings.database_url or embedded.database_url or "",
            nats_url=settings.nats_url or embedded.nats_url or "",
            background=background,
        )
        try:
            yield system
        finally:
            system.close()


def _serve(settings: Settings, _: argparse.Namespace) -> None:
    """Serve until SIGTERM or SIGINT, then stop accepting, end the open streams, wait up
    to the grace period for requests in flight, and stop what this process started.

    A signal before or after uvicorn serves is a KeyboardInterrupt, so the servers are
    stopped on the way out then too.
    """
    from adapters.http.server import serve

    signal.signal(signal.SIGTERM, _interrupt)
    with contextlib.suppress(KeyboardInterrupt), _system(settings, role="serve") as system:
        _chain_old_events(system)
        run_loop(serve(system, settings))


def _chain_old_events(system: System) -> None:
    """The hash chain's backfill (`tokendance audit backfill`): events stored before the
    chain get their hashes. Cheap once done (an index of the unhashed rows, empty)."""
    from adapters.commands.audit_commands import accounts_chain
    from adapters.postgres.hash_chain import PostgresHashChain

    for log, chain in (
        ("sessions", PostgresHashChain(system.container.recorder)),
        ("accounts", accounts_chain(system.container)),
    ):
        if chained := chain.backfill():
            logging.getLogger(__name__).info("hash chain: %d events of the %s log", chained, log)


def _api(settings: Settings, _: argparse.Namespace) -> None:
    """One API replica: the commands, queries and streams; its runs go to the workers."""
    from adapters.http.server import serve

    signal.signal(signal.SIGTERM, _interrupt)
    system_of = _system(settings, background=NO_BACKGROUND, role="api")
    with contextlib.suppress(KeyboardInterrupt), system_of as system:
        secret, stream = settings.signing_secret(), settings.nats_stream
        if asyncio.run(differing_at(system.container.nats_url, stream, secret)):
            sys.exit(
                "tokendance api: the API replicas already running sign tokens with another "
                "secret; set the same TOKENDANCE_JWT_SECRET on every replica"
            )
        dispatch_runs_to_workers(system)
        run_loop(serve(system, settings))


def _worker(settings: Settings, _: argparse.Namespace) -> None:
    """Drive runs from the work queue until SIGTERM; the runs in hand go back to the queue."""

    async def run(system: System) -> None:
        await system.services.start()
        try:
            await build_worker(system).run()
        finally:
            await system.stop()

    _background(settings, run, role="worker", background=NO_BACKGROUND)


def _relay(settings: Settings, _: argparse.Namespace) -> None:
    _background(
        settings, _services_until_stopped, role="relay", background=Background(projections=False)
    )


def _projections(settings: Settings, _: argparse.Namespace) -> None:
    """Keep every read model up to date; beside other such processes, one is active per
    log (for all the read models of that log)."""
    projections = Background(relay=False, standby=True)
    _background(settings, _services_until_stopped, role="projections", background=projections)


async def _services_until_stopped(system: System) -> None:
    await system.services.start()
    try:
        await asyncio.Event().wait()
    finally:
        await system.services.stop()


def _background(
    settings: Settings,
    run: Callable[[System], Coroutine[object, object, None]],
    *,
    role: str,
    background: Background = EVERY_DUTY,
) -> None:
    """A role without HTTP: `run` until SIGTERM or SIGINT."""
    signal.signal(signal.SIGTERM, _interrupt)
    system_of = _system(settings, background=background, role=role)
    with system_of as system, contextlib.suppress(KeyboardInterrupt):
        freeze_started_heap()  # built: what lives now lives as long as the process
        run_loop(run(system))


def _demo(settings: Settings, args: argparse.Namespace) -> None:
    from adapters.commands.demo import DEMO_QUESTION, demo_settings, run_demo
    from adapters.commands.demo_slides import SLIDES_QUESTION, run_slides_demo, slides_settings
    from adapters.web_search.local_web import serve_local_web

    if args.slides:
        with _system(slides_settings(settings)) as system:
            identical = asyncio.run(run_slides_demo(system, args.question or SLIDES_QUESTION))
        sys.exit(0 if identical else 1)
    # The demo needs no key and no network: a local research web answers its searches and
    # serves its pages; its own script plays the model unless TOKENDANCE_LLM names another.
    logging.getLogger("httpx").setLevel(logging.WARNING)  # the event stream shows each call
    with serve_local_web() as web, _system(demo_settings(settings, web)) as system:
        identical = asyncio.run(run_demo(system, args.question or DEMO_QUESTION))
    sys.exit(0 if identical else 1)


def _replay(settings: Settings, args: argparse.Namespace) -> None:
    from adapters.commands.command_store import require_recorded
    from adapters.commands.demo import run_replay

    require_recorded(settings, "replay")
    with _system(settings, background=NO_BACKGROUND) as system:
        identical = asyncio.run(run_replay(system, args.session_id))
    sys.exit(0 if identical else 1)


def _usage(settings: Settings, args: argparse.Namespace) -> None:
    from adapters.commands.command_store import empty_store_note, require_recorded
    from adapters.commands.usage_report import report

    require_recorded(settings, "usage")
    with _system(settings, background=NO_BACKGROUND) as system:
        print(report(system.container.usage, args))
        if note := empty_store_note(system, "usage"):
            print(note, file=sys.stderr)


def _teams(settings: Settings, args: argparse.Namespace) -> None:
    from adapters.commands.team_commands import run_teams
    from domain.errors import DomainError

    with _system(settings, background=NO_BACKGROUND) as system:
        try:
            print(run_teams(system.container.accounts, system.container.views.accounts, args))
        except DomainError as e:
            sys.exit(f"tokendance teams {args.action}: {e}")


def _audit(settings: Settings, args: argparse.Namespace) -> None:
    from adapters.commands.audit_commands import run_audit

    with _system(settings, background=NO_BACKGROUND) as system:
        status = run_audit(system.container, args, sys.stdout, sys.stderr)
    sys.exit(status)


def _reseal(settings: Settings, args: argparse.Namespace) -> None:
    with _system(settings, background=NO_BACKGROUND) as system:
        changed = system.container.accounts.reseal_mcp_secrets()
        keys = system.container.erasure.keys.reseal()
    print(
        f"sealed again with the first master key: the secrets of {changed} MCP server(s), "
        f"the personal keys of {keys} user(s)"
    )


def _erase(settings: Settings, args: argparse.Namespace) -> None:
    from adapters.commands.erase_command import run_erase

    with _system(settings, background=NO_BACKGROUND) as system:
        status = run_erase(system, args.user, sys.stdout, sys.stderr)
    sys.exit(status)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _rebuild(settings: Settings, args: argparse.Namespace) -> None:
    from tqdm import tqdm

    from projections.rebuild import rebuild

    with _system(settings, background=NO_BACKGROUND) as system:
        container = system.container
        names = [args.name] if args.name else list(container.views)
        unknown = [n for n in names if n not in container.views]
        if unknown:
            sys.exit(f"unknown read model {unknown[0]!r}; known: {', '.join(container.views)}")
        for name in names:
            with tqdm(desc=f"rebuilding {name}", unit=" ids", file=sys.stderr) as bar:

                def progress(position: int, target: int, bar: tqdm[None] = bar) -> None:
                    bar.total = target
                    bar.update(position - bar.n)

                log = container.log_of(name)  # the accounts view reads the accounts' log
                report = rebuild(
                    container.views[name], log.recorder, log.mapper, on_progress=progress
                )
            print(
                f"rebuilt {name}: {report.events} events up to notification id "
                f"{report.position} in {report.seconds:.2f}s "
                f"({report.events_per_second:,.0f} events/s)"
            )


def _reembed(settings: Settings, args: argparse.Namespace) -> None:
    from adapters.commands.memory_upkeep import run_reembed
    from adapters.embeddings import EmbedderUnavailable, build_embedder, embedder_for
    from projections.episodes import EPISODE_VECTORS
    from projections.memories import MemoriesView

    try:  # never the hashing fallback the server takes: that would re-embed with it
        embedder = build_embedder(args.embedder or settings.embedder)
    except (EmbedderUnavailable, ValueError) as e:
        sys.exit(f"tokendance memory reembed: {e}")
    with _system(settings, background=NO_BACKGROUND) as system:
        status = run_reembed(
            system.container.database_url, embedder, embedder_for,
            out=sys.stderr, tables=(MemoriesView.VECTORS, EPISODE_VECTORS),
        )  # fmt: skip
    sys.exit(status)


def _graphs(settings: Settings, args: argparse.Namespace) -> None:
    from adapters.commands.memory_upkeep import run_graphs

    with _system(settings, background=NO_BACKGROUND) as system:
        status = run_graphs(system.container.database_url, out=sys.stdout)
    sys.exit(status)


COMMANDS: dict[str, Command] = {
    "serve": _serve, "api": _api, "worker": _worker, "relay": _relay,
    "projections": _projections, "rebuild": _rebuild, "demo": _demo, "replay": _replay,
    "usage": _usage, "reembed": _reembed, "graphs": _graphs, "teams": _teams, "audit": _audit,
    "reseal": _reseal, "erase": _erase,
}  # fmt: skip
