"""Values of accounts checked where they enter: emails and names."""

from __future__ import annotations

import hashlib
import json

from domain.errors import InvalidCommand, InvalidValue

MAX_EMAIL_CHARS = 254  # RFC 5321's limit on a forward path
MAX_NAME_CHARS = 200


def normalize_email(email: str) -> str:
    """The email as it identifies a user: trimmed, lower case, simply well formed."""
    email = email.strip().lower()
    local, at, domain = email.partition("@")
    well_formed = (
        bool(at)
        and 0 < len(email) <= MAX_EMAIL_CHARS
        and bool(local)
        and "@" not in domain
        and "." in domain[1:-1]
        and not domain.startswith(".")
        and not domain.endswith(".")
        and not any(c.isspace() for c in email)
    )
    if not well_formed:
        raise InvalidCommand("email must look like name@example.com (at most 254 characters)")
    return email


def check_name(name: str, what: str = "name") -> str:
    name = name.strip()
    if not name or len(name) > MAX_NAME_CHARS:
        raise InvalidCommand(f"{what} must be 1 to {MAX_NAME_CHARS} characters")
    return name


def secret_digest(secret: str) -> str:
    """What is kept of a secret shown once (an API key, an invitation token): its SHA-256,
    from which the id of what it opens is derived."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


MAX_AVATAR_URL_CHARS = 2048
MAX_PREFERENCES_BYTES = 16 * 1024


class Unset:
    """A field not given (where None means "clear it")."""


UNSET = Unset()


def check_avatar_url(url: str | None) -> str | None:
    if url is None:
        return None
    url = url.strip()
    if not url.startswith(("https://", "http://")) or len(url) > MAX_AVATAR_URL_CHARS:
        raise InvalidValue(
            f"avatar_url must be an http(s) URL of at most {MAX_AVATAR_URL_CHARS} characters"
        )
    return url


def check_preferences(preferences: dict[str, object]) -> dict[str, object]:
    """A JSON object of at most 16 KiB, encoded."""
    try:
        size = len(json.dumps(preferences, separators=(",", ":")).encode("utf-8"))
    except (TypeError, ValueError):
        raise InvalidValue("preferences must be a JSON object") from None
    if size > MAX_PREFERENCES_BYTES:
        raise InvalidValue(
            f"preferences are {size} bytes as JSON; at most {MAX_PREFERENCES_BYTES} are kept"
        )
    return preferences
