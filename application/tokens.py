"""Access and refresh tokens: HS256 JWTs that name their user, their login and their kind.

Expiry is checked against the injected clock rather than by PyJWT (which reads the
system clock), so tests can move time and the whole service agrees on one "now".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal
from uuid import UUID, uuid4

import jwt

from domain.account_errors import InvalidToken, TokenExpired
from domain.roles import Role

TokenType = Literal["access", "refresh"]
ALGORITHM = "HS256"
# RFC 7518 section 3.2: an HS256 key at least as long as the hash output.
MIN_SECRET_BYTES = 32
REQUIRED_CLAIMS = ["typ", "sub", "fam", "jti", "iat", "exp"]
# Tokens verified lately, kept so a client's next request skips PyJWT (0.6 ms each).
VERIFIED_TOKENS = 4096


@dataclass(frozen=True, kw_only=True)
class TokenPair:
    """What a login or a refresh answers (OAuth 2 token response fields, in order)."""

    access_token: str
    token_type: str = "bearer"
    expires_in: int
    refresh_token: str


@dataclass(frozen=True)
class Principal:
    """Who a request speaks for: a login's access token (its family), or an API key
    (which caps the role and may restrict the workspace); an `Actor`."""

    user_id: UUID
    family_id: UUID  # the login; for a key, the key's id
    expires_at: int  # seconds since the epoch
    api_key_id: UUID | None = None
    role_cap: Role | None = None
    workspace_id: UUID | None = None


@dataclass(frozen=True)
class Claims:
    """The verified contents of a token."""

    typ: TokenType
    user_id: UUID
    family_id: UUID
    jti: str
    expires_at: int


def new_jti() -> str:
    """A token id: 122 random bits, so a jti cannot be guessed from another one."""
    return uuid4().hex


class TokenCodec:
    """Issues and verifies the tokens of one secret."""

    def __init__(
        self,
        secret: str,
        *,
        access_ttl: int,
        refresh_ttl: int,
        clock: Callable[[], float],
    ) -> None:
        if len(secret.encode("utf-8")) < MIN_SECRET_BYTES:
            raise ValueError(f"the JWT secret must be at least {MIN_SECRET_BYTES} bytes")
        if access_ttl <= 0 or refresh_ttl <= 0:
            raise ValueError("token lifetimes must be positive")
        self._secret = secret
        self.access_ttl = access_ttl
        self.refresh_ttl = refresh_ttl
        self._clock = clock
        # A token's signature and claims never change, so a verified one is kept by its
        # exact text (bounded, least recently used first out); expiry and kind are
        # still checked on every use, and a token that fails is never kept.
        self._verified = lru_cache(maxsize=VERIFIED_TOKENS)(self._verify)

    def pair(self, user_id: UUID, family_id: UUID, refresh_jti: str) -> TokenPair:
        """A fresh access token and the refresh token whose id the family holds."""
        return TokenPair(
            access_token=self._encode("access", user_id, family_id, new_jti(), self.access_ttl),
            expires_in=self.access_ttl,
            refresh_token=self._encode(
                "refresh", user_id, family_id, refresh_jti, self.refresh_ttl
            ),
        )

    def decode(
        self, token: str, *, typ: TokenType | None = None, check_expiry: bool = True
    ) -> Claims:
        """The claims of a token this service signed, of kind `typ` (any if None)."""
        claims = self._verified(token)
        if typ is not None and claims.typ != typ:
            # A refresh token is not an access token, nor the other way round.
            raise InvalidToken()
        if check_expiry and claims.expires_at <= self._clock():
            raise TokenExpired()
        return claims

    def _verify(self, token: str) -> Claims:
        try:
            payload = jwt.decode(
                token,
                self._secret,
                # Pinned, so a token cannot choose its own algorithm ("none", RS256...).
                algorithms=[ALGORITHM],
                options={
                    "verify_exp": False,
                    "verify_iat": False,
                    "verify_nbf": False,
                    "require": REQUIRED_CLAIMS,
                },
            )
            return Claims(
                typ=_token_type(payload["typ"]),
                user_id=UUID(str(payload["sub"])),
                family_id=UUID(str(payload["fam"])),
                jti=str(payload["jti"]),
                expires_at=int(payload["exp"]),
            )
        except (jwt.InvalidTokenError, ValueError, TypeError):
            raise InvalidToken() from None

    def _encode(self, typ: TokenType, user_id: UUID, family_id: UUID, jti: str, ttl: int) -> str:
        issued_at = int(self._clock())
        payload = {
            "typ": typ,
            "sub": str(user_id),
            "fam": str(family_id),
            "jti": jti,
            "iat": issued_at,
            "exp": issued_at + ttl,
        }
        return jwt.encode(payload, self._secret, algorithm=ALGORITHM)


def _token_type(value: object) -> TokenType:
    if value == "access":
        return "access"
    if value == "refresh":
        return "refresh"
    raise ValueError(f"unknown token type {value!r}")
