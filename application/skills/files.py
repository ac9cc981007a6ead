"""Level 3: a file of a skill, read only from inside that skill's folder."""

from __future__ import annotations

from pathlib import Path, PurePosixPath, PureWindowsPath

from application.skills.skill import Skill

MAX_FILE_BYTES = 256 * 1024


class SkillFileError(Exception):
    """A skill file that may not or cannot be read; the message says which and why."""


def read_file(skill: Skill, relative_path: str) -> str:
    """The text of `relative_path` inside `skill.folder`; nothing outside it, even by symlink."""
    path = _confined(skill, relative_path)
    if path.is_dir():
        inside = sorted(
            str(rel)
            for rel in (p.relative_to(path) for p in path.rglob("*") if p.is_file())
            if not any(part.startswith((".", "__")) for part in rel.parts)
        )
        listing = ", ".join(inside[:50]) or "nothing"
        raise SkillFileError(f"{relative_path} is a folder; it holds: {listing}")
    if not path.is_file():
        raise SkillFileError(f"skill {skill.name} has no file {relative_path}")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise SkillFileError(
            f"{relative_path} is {size} bytes; files over {MAX_FILE_BYTES} bytes are not read"
        )
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SkillFileError(f"{relative_path} is not a UTF-8 text file") from None


def folder_files(
    skill: Skill, relative_path: str, limit: int = 16 * MAX_FILE_BYTES
) -> dict[str, bytes]:
    """Every file under a folder of the skill (its `scripts/`, say), by its path inside
    the skill; symlinks and hidden files left out; `limit` bytes in all at most."""
    root = _confined(skill, relative_path)
    if not root.is_dir():
        raise SkillFileError(f"skill {skill.name} has no folder {relative_path}")
    base = skill.folder.resolve()
    found: dict[str, bytes] = {}
    total = 0
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(base)
        if (
            path.is_symlink()
            or not path.is_file()
            or any(part.startswith((".", "__")) for part in rel.parts)
        ):
            continue
        total += path.stat().st_size
        if total > limit:
            raise SkillFileError(f"{relative_path} holds over {limit} bytes: too much to run")
        found[rel.as_posix()] = path.read_bytes()
    return found


def _confined(skill: Skill, relative_path: str) -> Path:
    raw = relative_path.strip()
    if not raw:
        raise SkillFileError("give the path of a file inside the skill, e.g. references/x.md")
    posix, windows = PurePosixPath(raw), PureWindowsPath(raw)
    if posix.is_absolute() or windows.is_absolute() or windows.drive or raw.startswith("\\"):
        raise SkillFileError(f"{relative_path} is absolute; give a path inside the skill folder")
    if ".." in posix.parts or ".." in windows.parts:
        raise SkillFileError(f"{relative_path} leaves the skill folder ('..' is not allowed)")
    root = skill.folder.resolve()
    path = (root / posix).resolve()
    # Resolving follows symlinks: one that points out of the folder ends up outside it.
    if not path.is_relative_to(root):
        raise SkillFileError(f"{relative_path} points outside the skill folder")
    return path
