"""A key per user for personal content (`application.ports.PersonalKeys`), AES-256-GCM.

A sealed field is `sealed:v1:<user id>:` + base64(nonce + ciphertext), the user id also
the cipher's associated data (a field moved to another user's name does not open).
Each user's key is made on first use, stored wrapped by the master key (`Sealer`), and
destroyed by erasure: its row keeps only when and by whom. Keys are cached for `ttl`
seconds, so another process stops opening an erased user's content within that time.
"""

from __future__ import annotations

import base64
import binascii
import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol
from uuid import UUID

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from adapters.config.secrets import SealBroken, Sealer
from domain.errors import UserGone
from domain.personal_data import ERASED, UNREADABLE

PREFIX = "sealed:v1:"
TTL = 2.0  # seconds a key (or its absence) is believed
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class KeyRow:
    wrapped: str | None  # None: destroyed (erased)


class KeyStore(Protocol):
    def load(self, user_id: UUID) -> KeyRow | None: ...

    def create(self, user_id: UUID, wrapped: str) -> None:
        """Store the key unless the user has one (or a tombstone) already."""
        ...

    def destroy(self, user_id: UUID, by: UUID | None) -> bool:
        """Destroy the key (a tombstone if there was none); False if already erased."""
        ...

    def wrapped_keys(self) -> list[tuple[UUID, str]]: ...

    def rewrap(self, user_id: UUID, wrapped: str) -> None: ...


class InMemoryKeyStore:
    def __init__(self) -> None:
        self.rows: dict[UUID, KeyRow] = {}

    def load(self, user_id: UUID) -> KeyRow | None:
        return self.rows.get(user_id)

    def create(self, user_id: UUID, wrapped: str) -> None:
        self.rows.setdefault(user_id, KeyRow(wrapped))

    def destroy(self, user_id: UUID, by: UUID | None) -> bool:
        erased = self.rows.get(user_id) == KeyRow(None)
        self.rows[user_id] = KeyRow(None)
        return not erased

    def wrapped_keys(self) -> list[tuple[UUID, str]]:
        return [(u, r.wrapped) for u, r in self.rows.items() if r.wrapped is not None]

    def rewrap(self, user_id: UUID, wrapped: str) -> None:
        self.rows[user_id] = KeyRow(wrapped)


_Erased = object()  # the cached state of a destroyed key


class UserKeys:
    def __init__(
        self,
        store: KeyStore,
        master: Sealer,
        *,
        ttl: float = TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store, self.master, self.ttl, self.clock = store, master, ttl, clock
        self._cache: dict[UUID, tuple[float, AESGCM | object | None]] = {}
        self._lock = threading.Lock()

    def seal(self, user_id: UUID, text: str) -> str:
        key = self._key(user_id)
        if key is None:
            self.store.create(
                user_id, self.master.seal(base64.b64encode(AESGCM.generate_key(256)).decode())
            )
            self.forget(user_id)
            key = self._key(user_id)
        if not isinstance(key, AESGCM):
            raise UserGone(f"user {user_id} is erased: nothing more is kept for it")
        nonce = secrets.token_bytes(12)
        body = key.encrypt(nonce, text.encode(), user_id.bytes)
        return f"{PREFIX}{user_id}:" + base64.b64encode(nonce + body).decode()

    def is_sealed(self, value: str) -> bool:
        return value.startswith(PREFIX)

    def held(self, user_id: UUID) -> bool:
        with self._lock:
            cached = self._cache.get(user_id)
        return cached is not None and cached[0] > self.clock() and cached[1] is not None

    def open(self, sealed: str, where: str) -> str:
        try:
            user, _, body = sealed[len(PREFIX) :].partition(":")
            user_id = UUID(user)
            key = self._key(user_id)
        except (ValueError, SealBroken) as e:
            log.warning("personal field of %s cannot be opened: %s", where, e)
            return UNREADABLE
        if key is _Erased:
            return ERASED
        if not isinstance(key, AESGCM):
            log.warning("personal field of %s: user %s has no key", where, user_id)
            return UNREADABLE
        try:
            raw = base64.b64decode(body, validate=True)
            return key.decrypt(raw[:12], raw[12:], user_id.bytes).decode()
        except (InvalidTag, binascii.Error, ValueError):
            log.warning("personal field of %s: user %s's key does not open it", where, user_id)
            return UNREADABLE

    def destroy(self, user_id: UUID, by: UUID | None) -> bool:
        """Erase: the key is gone for good (False: it was already)."""
        destroyed = self.store.destroy(user_id, by)
        self.forget(user_id)
        return destroyed

    def reseal(self) -> int:
        """Wrap every key sealed with an older master key with the current one."""
        stale = [(u, w) for u, w in self.store.wrapped_keys() if self.master.stale(w)]
        for user_id, wrapped in stale:
            self.store.rewrap(user_id, self.master.seal(self.master.unseal(wrapped)))
            self.forget(user_id)
        return len(stale)

    def unopenable(self) -> list[UUID]:
        """The users whose key the master keys cannot unwrap (the wrong key given)."""
        broken = []
        for user_id, wrapped in self.store.wrapped_keys():
            try:
                self.master.unseal(wrapped)
            except SealBroken:
                broken.append(user_id)
        return broken

    def erased(self, user_id: UUID) -> bool:
        return self._key(user_id) is _Erased

    def forget(self, user_id: UUID) -> None:
        with self._lock:
            self._cache.pop(user_id, None)

    def _key(self, user_id: UUID) -> AESGCM | object | None:
        """The user's cipher, `_Erased`, or None (no key yet); `SealBroken` if the
        master key cannot unwrap it."""
        now = self.clock()
        with self._lock:
            cached = self._cache.get(user_id)
        if cached is not None and cached[0] > now:
            return cached[1]
        row = self.store.load(user_id)
        key: AESGCM | object | None
        if row is None:
            key = None
        elif row.wrapped is None:
            key = _Erased
        else:
            key = AESGCM(base64.b64decode(self.master.unseal(row.wrapped)))
        with self._lock:
            self._cache[user_id] = (now + self.ttl, key)
        return key
