"""Secrets at rest: AES-GCM with a master key (the `cryptography` package's AESGCM).

The keys are `TOKENDANCE_MASTER_KEY` (base64 of 32 bytes; several, comma-separated,
while rotating), or the file `TOKENDANCE_MASTER_KEY_FILE` names, the same on every
process; without either, one made once in the data directory (`master-key`, mode
0600), as the JWT secret is. The first key seals; every key listed opens. A sealed
value is `v2:<key id>:` + base64(nonce + ciphertext), the key id the first 8 hex digits
of the key's SHA-256, so a value sealed with a key no longer listed says which key it
needs. (`v1:` values, sealed before key ids, are tried with every key.) Opening with
the wrong key fails loudly (`SealBroken`) rather than returning garbage.

Rotating: put the new key first and keep the old one after it, run `tokendance secrets
reseal` (every stored secret sealed again with the new key), then drop the old key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import secrets
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

PREFIX = "v2:"
OLD_PREFIX = "v1:"
VARIABLE = "TOKENDANCE_MASTER_KEY"


class SealBroken(Exception):
    """A sealed value that these keys cannot open (another key, or tampered with)."""


def key_id(key: bytes) -> str:
    return hashlib.sha256(key).hexdigest()[:8]


class Sealer:
    """Seals with the first AES-256-GCM key; opens with any key it holds."""

    def __init__(self, *keys: bytes) -> None:
        if not keys or any(len(k) != 32 for k in keys):
            raise ValueError("a master key must be 32 bytes")
        self._keys = {key_id(k): AESGCM(k) for k in keys}
        self.current = key_id(keys[0])

    @classmethod
    def from_settings(
        cls, configured: str | None, data_dir: Path, key_file: Path | None = None
    ) -> Sealer:
        """The configured keys (base64, comma-separated) or the key file's, else the data
        directory's key, made on first use."""
        if configured and key_file is not None:
            raise SystemExit(f"set {VARIABLE} or {VARIABLE}_FILE, not both")
        if key_file is not None:
            try:
                configured = key_file.read_text().strip()
            except OSError as e:
                raise SystemExit(f"{VARIABLE}_FILE: cannot read {key_file}: {e.strerror}") from None
            source = f"{VARIABLE}_FILE ({key_file})"
        else:
            source = VARIABLE
        if configured:
            return cls(*parse_keys(configured, source))
        path = data_dir / "master-key"
        if not path.exists():
            data_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(base64.b64encode(secrets.token_bytes(32)).decode())
        return cls(*parse_keys(path.read_text().strip(), str(path)))

    def seal(self, value: str) -> str:
        nonce = secrets.token_bytes(12)
        sealed = self._keys[self.current].encrypt(nonce, value.encode(), None)
        return f"{PREFIX}{self.current}:" + base64.b64encode(nonce + sealed).decode()

    def unseal(self, sealed: str) -> str:
        if sealed.startswith(PREFIX):
            kid, _, body = sealed[len(PREFIX) :].partition(":")
            aead = self._keys.get(kid)
            if aead is None:
                raise SealBroken(f"sealed with master key {kid}, which {VARIABLE} does not list")
            return _open(aead, body)
        if sealed.startswith(OLD_PREFIX):
            for aead in self._keys.values():
                try:
                    return _open(aead, sealed[len(OLD_PREFIX) :])
                except SealBroken:
                    continue
            raise SealBroken(f"a sealed value none of the keys in {VARIABLE} opens")
        raise SealBroken("not a sealed value")

    def stale(self, sealed: str) -> bool:
        """Whether `sealed` is sealed with another key than the one that seals now."""
        return not sealed.startswith(f"{PREFIX}{self.current}:")


def parse_keys(text: str, source: str) -> list[bytes]:
    keys = []
    for i, entry in enumerate(text.split(","), start=1):
        try:
            key = base64.b64decode(entry.strip(), validate=True)
        except (binascii.Error, ValueError):
            key = b""
        if len(key) != 32:
            raise SystemExit(f"{source}: key {i} is not base64 of 32 bytes")
        keys.append(key)
    return keys


def _open(aead: AESGCM, body: str) -> str:
    try:
        raw = base64.b64decode(body, validate=True)
        return aead.decrypt(raw[:12], raw[12:], None).decode()
    except (InvalidTag, binascii.Error, ValueError) as e:
        raise SealBroken("a sealed value this key cannot open") from e
