"""Secrets at rest: AES-GCM with a master key (the `cryptography` package's AESGCM).

The key is `TOKENDANCE_MASTER_KEY` (base64 of 32 bytes), the same on every process;
without it, one made once in the data directory (`master-key`, mode 0600), as the JWT
secret is. A sealed value is `v1:` + base64(nonce + ciphertext); unsealing with another
key fails loudly (`SealBroken`) rather than returning garbage.
"""

from __future__ import annotations

import base64
import binascii
import os
import secrets
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

PREFIX = "v1:"


class SealBroken(Exception):
    """A sealed value that this key cannot open (another key, or tampered with)."""


class Sealer:
    """Seals and unseals short secrets with one AES-256-GCM key."""

    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise ValueError("the master key must be 32 bytes")
        self._aead = AESGCM(key)

    @classmethod
    def from_settings(cls, configured: str | None, data_dir: Path) -> Sealer:
        """The configured key (base64), else the data directory's, made on first use."""
        if configured:
            try:
                key = base64.b64decode(configured, validate=True)
            except (binascii.Error, ValueError):
                raise SystemExit("TOKENDANCE_MASTER_KEY must be base64 of 32 bytes") from None
            if len(key) != 32:
                raise SystemExit("TOKENDANCE_MASTER_KEY must be base64 of 32 bytes")
            return cls(key)
        path = data_dir / "master-key"
        if not path.exists():
            data_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(base64.b64encode(secrets.token_bytes(32)).decode())
        return cls(base64.b64decode(path.read_text().strip()))

    def seal(self, value: str) -> str:
        nonce = secrets.token_bytes(12)
        sealed = self._aead.encrypt(nonce, value.encode(), None)
        return PREFIX + base64.b64encode(nonce + sealed).decode()

    def unseal(self, sealed: str) -> str:
        if not sealed.startswith(PREFIX):
            raise SealBroken("not a sealed value")
        try:
            raw = base64.b64decode(sealed[len(PREFIX) :], validate=True)
            return self._aead.decrypt(raw[:12], raw[12:], None).decode()
        except (InvalidTag, binascii.Error, ValueError) as e:
            raise SealBroken("a sealed value this key cannot open") from e
