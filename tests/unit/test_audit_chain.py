"""The hash chain's arithmetic and its verification, on rows made here (no database)."""

from __future__ import annotations

import hashlib
from dataclasses import replace

from application.audit_chain import GENESIS, ChainRow, link_hash, verify_chain

TOPIC = "domain.session:AgentSession.UserMessageAppended"


def chain(n: int, genesis: bytes = GENESIS) -> list[ChainRow]:
    rows, prev = [], genesis
    for v in range(1, n + 1):
        state = b'{"text":"m%d","timestamp":{"_type_":"datetime_iso","_data_":"t"}}' % v
        h = link_hash(prev, TOPIC, v, state)
        rows.append(ChainRow(v, TOPIC, state, prev, h))
        prev = h
    return rows


def test_the_hash_is_sha256_of_prev_topic_version_as_8_bytes_big_endian_and_state() -> None:
    expected = hashlib.sha256(
        bytes(32) + TOPIC.encode() + b"\x00\x00\x00\x00\x00\x00\x01\x02" + b"{}"
    ).digest()
    assert link_hash(bytes(32), TOPIC, 258, b"{}") == expected


def test_a_clean_chain_verifies_and_names_its_head() -> None:
    rows = chain(5)
    verdict = verify_chain(rows, GENESIS)
    assert verdict.verified and verdict.events == 5
    assert verdict.head_hash == rows[-1].hash and verdict.head_version == 5
    assert verdict.first_bad_version is None and verdict.reason is None


def test_one_changed_byte_of_a_state_is_named() -> None:
    rows = chain(5)
    rows[2] = replace(rows[2], state=rows[2].state.replace(b"m3", b"m4"))
    verdict = verify_chain(rows, GENESIS)
    assert not verdict.verified and verdict.first_bad_version == 3
    assert "do not hash" in (verdict.reason or "")


def test_a_changed_topic_is_named() -> None:
    rows = chain(3)
    rows[1] = replace(rows[1], topic="domain.session:AgentSession.SessionRenamed")
    assert verify_chain(rows, GENESIS).first_bad_version == 2


def test_a_missing_version_is_named_whether_first_or_in_the_middle() -> None:
    rows = chain(5)
    assert verify_chain(rows[:2] + rows[3:], GENESIS).first_bad_version == 3
    gap_at_one = verify_chain(rows[1:], GENESIS)
    assert gap_at_one.first_bad_version == 1 and "version 1 is missing" in (gap_at_one.reason or "")


def test_a_rehashed_event_breaks_the_link_to_its_successor() -> None:
    """Rewriting an event and its own hash is seen at the next event's prev_hash."""
    rows = chain(4)
    state = rows[1].state.replace(b"m2", b"xx")
    rows[1] = replace(
        rows[1], state=state, hash=link_hash(rows[1].prev_hash or b"", TOPIC, 2, state)
    )
    verdict = verify_chain(rows, GENESIS)
    assert verdict.first_bad_version == 3 and "prev_hash" in (verdict.reason or "")


def test_a_fork_chains_from_the_given_genesis_not_from_zeros() -> None:
    parent_hash = hashlib.sha256(b"parent").digest()
    rows = chain(3, parent_hash)
    assert verify_chain(rows, parent_hash).verified
    assert verify_chain(rows, GENESIS).first_bad_version == 1


def test_an_unhashed_event_is_not_verified() -> None:
    rows = chain(3)
    rows[2] = replace(rows[2], prev_hash=None, hash=None)
    verdict = verify_chain(rows, GENESIS)
    assert verdict.first_bad_version == 3 and "backfill" in (verdict.reason or "")
