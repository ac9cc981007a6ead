"""Opaque list cursors: where a page of a list ended, given back for the next page.

Every paginated list answers `next_cursor` (None on its last page) and takes it back as
`cursor`. A cursor names its list and a position in it (the sort key of the page's
last item), and is signed with a key derived from the token secret: every replica
reads what any replica issued, and a cursor that was not issued (edited, made up, or
another list's) is a 400 naming `cursor`, never a silently wrong page.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar
from uuid import UUID

import msgspec

from adapters.http.errors import ApiError

T = TypeVar("T")
Position = tuple[str | int, ...]
MAC_BYTES = 12


@dataclass(frozen=True)
class Cursors:
    """Issues and reads the cursors of every list."""

    key: bytes

    @classmethod
    def of(cls, secret: str) -> Cursors:
        return cls(hashlib.sha256(b"tokendance list cursor\0" + secret.encode()).digest())

    def issue(self, listing: str, position: Position) -> str:
        body = msgspec.json.encode([listing, *position])
        mac = hmac.digest(self.key, body, "sha256")[:MAC_BYTES]
        return _b64(body) + "." + _b64(mac)

    def cut(
        self, listing: str, rows: Sequence[T], limit: int, key: Callable[[T], Position]
    ) -> tuple[list[T], str | None]:
        """Rows read `limit + 1` at a time: the page, and the cursor to the next when more
        follow."""
        taken = list(rows[:limit])
        return taken, self.issue(listing, key(taken[-1])) if len(rows) > limit else None

    def read(self, listing: str, cursor: str | None) -> Position | None:
        """The position `cursor` names in `listing` (None: from the start)."""
        if cursor is None:
            return None
        body_part, _, mac_part = cursor.partition(".")
        try:
            body, mac = _unb64(body_part), _unb64(mac_part)
        except (binascii.Error, ValueError):
            raise not_issued() from None
        if not hmac.compare_digest(mac, hmac.digest(self.key, body, "sha256")[:MAC_BYTES]):
            raise not_issued()
        name, *position = msgspec.json.decode(body, type=list[str | int])
        if name != listing or not position:
            raise not_issued()
        return tuple(position)


def page(
    items: Sequence[T], key: Callable[[T], Position], after: Position | None, limit: int
) -> tuple[list[T], Position | None]:
    """A page of `items` (sorted by `key`, ascending) after `after`, and the position of
    its last item when more follow."""
    rest = list(items) if after is None else [i for i in items if key(i) > after]
    taken = rest[:limit]
    return taken, key(taken[-1]) if len(rest) > limit else None


def latest_first(position: Position | None) -> tuple[datetime, UUID] | None:
    """A (time, id) position of a list with the latest first (sessions, memories)."""
    return None if position is None else (instant(position[0]), UUID(str(position[1])))


def instant(part: str | int) -> datetime:
    return datetime.fromisoformat(str(part))


def not_issued() -> ApiError:
    return ApiError(
        400,
        "`cursor`: not a cursor this list gave out (pass the `next_cursor` of its last "
        "page, or leave `cursor` out to start from its first)",
        "VALIDATION_ERROR",
    )


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    if not text:
        raise ValueError("empty")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
