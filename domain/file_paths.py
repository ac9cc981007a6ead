"""What a workspace file's path and media type may be.

A path is relative and stays inside the workspace: normalized (NFC, no `.` or empty
segments), no `..`, no leading `/` or drive letter, no backslash, no control or
invisible character, within limits of bytes and depth, so the files can always be laid
out on a disk. A media type is `type/subtype` with optional parameters, or none.
"""

from __future__ import annotations

import re
import unicodedata

from domain.errors import DomainError

MAX_PATH_BYTES = 1024  # UTF-8 bytes of a whole path
MAX_NAME_BYTES = 255  # of one segment: what Linux filesystems allow
MAX_DEPTH = 32  # folders deep
MAX_MEDIA_TYPE = 255
DEFAULT_MEDIA_TYPE = "application/octet-stream"

_DRIVE = re.compile(r"[A-Za-z]:")
_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*(;[ -~]*)?")
# Unicode categories no file name holds: controls, format characters (bidi overrides
# that make `txt.exe` read as `exe.txt`), surrogates, private use, unassigned, and
# line or paragraph separators.
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


class InvalidPath(DomainError):
    """A path that is not a relative path inside the workspace (HTTP 400)."""

    code = "VALIDATION_ERROR"
    http_status = 400


def check_path(path: str) -> str:
    """The path, normalized (NFC, no `.` or empty segments), or `InvalidPath` saying why.

    Relative, inside the workspace: no `..`, no leading `/`, no drive letter, no
    backslash; no NUL or other control or invisible characters; at most
    `MAX_NAME_BYTES` per name, `MAX_DEPTH` names and `MAX_PATH_BYTES` in all.
    """
    if not isinstance(path, str):
        raise InvalidPath("a path must be text")
    if "\x00" in path:
        raise InvalidPath("a path may not contain NUL characters")
    text = unicodedata.normalize("NFC", path.strip())
    shown = shown_path(text)
    if not text:
        raise InvalidPath("the path is empty: give a file name such as notes.md")
    if text.startswith("/") or _DRIVE.match(text):
        raise InvalidPath(f"{shown} is absolute: give a path relative to the workspace")
    if "\\" in text:
        raise InvalidPath(f"{shown} has a backslash: separate folders with '/'")
    if text.endswith("/"):
        raise InvalidPath(f"{shown} names a folder: give a file name (folders come with files)")
    names = [name for name in text.split("/") if name not in ("", ".")]
    if ".." in names:
        raise InvalidPath(f"{shown} goes up with '..': paths stay inside the workspace")
    if not names:
        raise InvalidPath(f"{shown} names no file: give a file name such as notes.md")
    for name in names:
        _check_name(name, shown)
    if len(names) > MAX_DEPTH:
        raise InvalidPath(f"{shown} is more than {MAX_DEPTH} folders deep")
    normal = "/".join(names)
    if len(normal.encode()) > MAX_PATH_BYTES:
        raise InvalidPath(f"the path has more than {MAX_PATH_BYTES} bytes (UTF-8)")
    return normal


def _check_name(name: str, shown: str) -> None:
    for char in name:
        if unicodedata.category(char) in _FORBIDDEN_CATEGORIES:
            raise InvalidPath(
                f"{shown} holds U+{ord(char):04X}, a control or invisible character: "
                "use printable characters"
            )
    if not name.strip():
        raise InvalidPath(f"{shown} has a name of blanks only")
    if len(name.encode()) > MAX_NAME_BYTES:
        raise InvalidPath(f"a name in the path has more than {MAX_NAME_BYTES} bytes (UTF-8)")


def shown_path(text: str) -> str:
    """The path for a message: quoted, escaped, and short."""
    return repr(text if len(text) <= 200 else text[:197] + "...")


def check_media_type(media_type: str | None) -> str | None:
    """The media type, lower case, if it is one (`type/subtype`, parameters allowed)."""
    if not media_type:
        return None
    value = media_type.strip().lower()
    if len(value) > MAX_MEDIA_TYPE or not _MEDIA_TYPE.fullmatch(value):
        return None
    return value
