"""`tokendance audit verify | anchor | backfill`: the hash chains of the event logs, read
from the database (`application/audit_chain.py` says which bytes are hashed)."""

from __future__ import annotations

import argparse
import json
from typing import TextIO
from uuid import UUID

from adapters.container import Container
from adapters.postgres.hash_chain import PostgresHashChain
from application.audit_chain import ChainVerdict, audit

OK, BAD, NOT_FOUND = 0, 1, 2


def run_audit(container: Container, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run `audit <action>`; the exit status (0 verified, 1 a bad chain, 2 no such session)."""
    sessions = PostgresHashChain(container.recorder)
    if args.action == "backfill":
        for log, chain in (("sessions", sessions), ("accounts", accounts_chain(container))):
            print(f"{log} log: chained {chain.backfill()} events", file=out)
        return OK
    if args.action == "anchor":
        return _anchor(sessions, args.session_id, out, err)
    if args.session_id is not None:
        verdict = audit(sessions, args.session_id)
        if verdict is None:
            print(f"tokendance audit verify: no session {args.session_id}", file=err)
            return NOT_FOUND
        print(_line(f"session {args.session_id}", verdict), file=out if verdict.verified else err)
        return OK if verdict.verified else BAD
    return _verify_all(container, out, err)


def accounts_chain(container: Container) -> PostgresHashChain:
    return PostgresHashChain(container.accounts_recorder)


def _verify_all(container: Container, out: TextIO, err: TextIO) -> int:
    bad = 0
    logs = (
        ("session", PostgresHashChain(container.recorder)),
        ("aggregate", accounts_chain(container)),
    )
    counts = []
    for kind, chain in logs:
        ids = chain.originators()
        counts.append(len(ids))
        for originator_id in ids:
            verdict = audit(chain, originator_id)
            if verdict is not None and not verdict.verified:
                bad += 1
                what = f"session {originator_id}" if kind == "session" else (
                    f"accounts aggregate {originator_id}"
                )  # fmt: skip
                print(_line(what, verdict), file=err)
    summary = f"{counts[0]} sessions and {counts[1]} accounts aggregates checked"
    print(f"{summary}: {bad} bad" if bad else f"{summary}: all verified", file=err if bad else out)
    return BAD if bad else OK


def _anchor(chain: PostgresHashChain, session_id: UUID | None, out: TextIO, err: TextIO) -> int:
    """One JSON line a session: its id, its last version and that event's hash."""
    found = False
    for head in chain.heads(session_id):
        found = True
        line = {
            "session_id": str(head.originator_id),
            "version": head.version,
            "head_hash": None if head.hash is None else head.hash.hex(),
        }
        print(json.dumps(line), file=out)
    if session_id is not None and not found:
        print(f"tokendance audit anchor: no session {session_id}", file=err)
        return NOT_FOUND
    return OK


def _line(what: str, verdict: ChainVerdict) -> str:
    head = "none" if verdict.head_hash is None else verdict.head_hash.hex()
    if verdict.verified:
        return f"{what}: verified, {verdict.events} events, head {verdict.head_version} {head}"
    return f"{what}: first bad version {verdict.first_bad_version}: {verdict.reason}"
