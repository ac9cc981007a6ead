"""Password policy and hashing with argon2id (argon2-cffi)."""

from __future__ import annotations

import secrets

from argon2 import PasswordHasher
from argon2.exceptions import VerificationError

from domain.errors import InvalidCommand

MIN_PASSWORD_CHARS = 8
# Long enough for any passphrase, short enough that hashing cannot be made expensive.
MAX_PASSWORD_CHARS = 1024


def check_password_policy(password: str) -> None:
    if not MIN_PASSWORD_CHARS <= len(password) <= MAX_PASSWORD_CHARS:
        raise InvalidCommand(
            f"password must be {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters"
        )


class Passwords:
    """Hashes passwords and verifies them in comparable time whether or not a user exists."""

    def __init__(self, hasher: PasswordHasher | None = None) -> None:
        # The default is argon2-cffi's RFC 9106 low-memory profile (t=3, 64 MiB, p=4);
        # tests pass a cheaper hasher.
        self._hasher = hasher or PasswordHasher()
        # Checked against when no user has the email, so that answer costs one
        # verification like a wrong password does (no account discovery by timing).
        self._dummy_hash = self._hasher.hash(secrets.token_urlsafe(32))

    def hash(self, password: str) -> str:
        return self._hasher.hash(password)

    def verify(self, password_hash: str | None, password: str) -> bool:
        """Whether `password` matches `password_hash`; always False when there is no hash."""
        if len(password) > MAX_PASSWORD_CHARS:
            return False
        try:
            matched = self._hasher.verify(password_hash or self._dummy_hash, password)
        except VerificationError:
            # A mismatch (VerifyMismatchError is a VerificationError). A malformed
            # stored hash (InvalidHashError) is a data fault and propagates.
            return False
        return matched and password_hash is not None
