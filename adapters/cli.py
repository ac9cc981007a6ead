"""The `tokendance` command: its arguments. What each command does is in
`adapters/commands/cli_commands.py`, imported only once the arguments are understood."""

from __future__ import annotations

import argparse
import sys
from importlib import metadata
from pathlib import Path
from uuid import UUID

from adapters.commands.cli_teams import add_team_arguments

DESCRIPTION = "TokenDance: an event-sourced backend for autonomous AI agents."


def version() -> str:
    """The installed package's version (pyproject.toml's), as pip installed it."""
    try:
        return metadata.version("tokendance")
    except metadata.PackageNotFoundError:  # run from a tree that was never installed
        return "unknown (not installed: pip install -e .)"


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if args.command == "openapi":  # no settings, no servers
        from adapters.http.contract.openapi_document import write_openapi

        sys.exit(write_openapi(check=args.check))
    import psycopg

    from adapters.commands.cli_commands import run_command  # the servers and the wiring: seconds
    from adapters.processes.embedded_nats import EmbeddedServerError

    try:
        run_command(args)
    except EmbeddedServerError as e:  # what is missing and what to do, not a traceback
        sys.exit(f"tokendance: {e}")
    except psycopg.OperationalError as e:  # a server of the operator's that does not answer
        sys.exit(
            f"tokendance: Postgres did not answer: {' '.join(str(e).split())}\n"
            "Check TOKENDANCE_DATABASE_URL (unset, tokendance runs its own embedded Postgres "
            "in the data directory)"
        )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tokendance", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    parser.add_argument("--data-dir", type=Path, help="overrides TOKENDANCE_DATA_DIR")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    serve = commands.add_parser("serve", help="run the API, the relay and the projections")
    serve.add_argument("--host", help="overrides TOKENDANCE_HOST")
    serve.add_argument("--port", type=int, help="overrides TOKENDANCE_PORT")
    serve.set_defaults(command="serve")

    api = commands.add_parser("api", help="run only the HTTP API; its runs go to the workers")
    api.add_argument("--host", help="overrides TOKENDANCE_HOST")
    api.add_argument("--port", type=int, help="overrides TOKENDANCE_PORT")
    api.set_defaults(command="api")

    worker = commands.add_parser("worker", help="drive runs from the runs work queue")
    worker.set_defaults(command="worker")

    relay = commands.add_parser("relay", help="run only the relay (Postgres -> NATS)")
    relay.set_defaults(command="relay")

    demo = commands.add_parser("demo", help="run a scripted session and show what it recorded")
    demo.add_argument("--question", default=None, help="what the user asks")
    demo.add_argument(
        "--slides", action="store_true", help="build, revise and regenerate a slide deck instead"
    )
    demo.set_defaults(command="demo")

    replay = commands.add_parser("replay", help="re-run a session's log and check it matches")
    replay.add_argument("session_id", type=_uuid, help="the session to replay")
    replay.set_defaults(command="replay")

    usage = commands.add_parser("usage", help="tokens and cost, grouped, as a table")
    usage.add_argument("--group-by", default="org,model", help="keys, e.g. org,model,day")
    usage.add_argument("--from", dest="start", help="first UTC day, YYYY-MM-DD (this month)")
    usage.add_argument("--to", dest="end", help="last UTC day, YYYY-MM-DD (today)")
    usage.add_argument("--workspace-id", type=UUID, help="only this workspace")
    usage.add_argument("--user-id", type=UUID, help="only this user")
    usage.add_argument("--model", help="only this model")
    usage.set_defaults(command="usage")

    projections = commands.add_parser(
        "projections", help="keep the read models up to date (or `projections rebuild`)"
    )
    projections.set_defaults(command="projections")
    projection_commands = projections.add_subparsers(required=False, metavar="ACTION")
    rebuild = projection_commands.add_parser("rebuild", help="rebuild from the event store")
    rebuild.add_argument("name", nargs="?", help="one read model (default: all)")
    rebuild.set_defaults(command="rebuild")

    memory = commands.add_parser("memory", help="long-term memory upkeep (`reembed`, `graphs`)")
    memory_commands = memory.add_subparsers(required=True, metavar="ACTION")
    reembed = memory_commands.add_parser(
        "reembed", help="re-embed memories and episodes with another model, then switch to it"
    )
    reembed.add_argument("--embedder", help="the model to switch to (default: TOKENDANCE_EMBEDDER)")
    reembed.set_defaults(command="reembed")
    graphs = memory_commands.add_parser(
        "graphs", help="give each large namespace its own vector graph now (and drop unused)"
    )
    graphs.set_defaults(command="graphs")

    openapi = commands.add_parser(
        "openapi", help="write the OpenAPI document to schemas/openapi.json (no server needed)"
    )
    openapi.add_argument("--check", action="store_true", help="only say whether it is current")
    openapi.set_defaults(command="openapi")

    secrets = commands.add_parser("secrets", help="secrets at rest: `reseal` with a new master key")
    secret_actions = secrets.add_subparsers(required=True, metavar="ACTION")
    secret_actions.add_parser(
        "reseal", help="seal every stored secret again with the first TOKENDANCE_MASTER_KEY"
    ).set_defaults(command="reseal")

    erase = commands.add_parser(
        "erase", help="erase a user's personal data (crypto-shredding; not undoable)"
    )
    erase.add_argument("user", help="the user's id or email")
    erase.set_defaults(command="erase")
    add_audit_arguments(commands)
    add_team_arguments(commands)
    return parser


def add_audit_arguments(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    audit = commands.add_parser(
        "audit", help="the events' hash chains: verify, anchor (print heads), backfill"
    )
    audit.set_defaults(command="audit")
    actions = audit.add_subparsers(required=True, metavar="ACTION", dest="action")
    for action, help_text, every in (
        (
            "verify", "recompute a session's hash chain; exit 1 naming its first bad version",
            "every chain: the sessions' and the accounts' aggregates'",
        ),
        ("anchor", "print a session's id, version and head hash (a JSON line)", "every session"),
    ):  # fmt: skip
        parser = actions.add_parser(action, help=help_text)
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("session_id", nargs="?", type=_uuid, help="one session")
        which.add_argument("--all", action="store_true", help=every)
    actions.add_parser("backfill", help="chain the events stored before the hash chain")


def _uuid(text: str) -> UUID:
    try:
        return UUID(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a session id: {text!r}") from None


if __name__ == "__main__":
    main()
