"""Print the requirements of pyproject.toml, one a line: the dependencies and the extras named.

The image's dependency layer installs these before any source is copied in, so a change
to the code rebuilds only the layers after it (Dockerfile, stage `build`):

    python deploy/pyproject_requirements.py pyproject.toml s3 > requirements.txt

An extra that names the project itself (`tokendance[a,b]`) is followed; an extra that
pyproject.toml does not have stops the build, naming it.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

_SELF = re.compile(r"^\s*([A-Za-z0-9_.-]+)\s*\[([^\]]*)\]\s*$")


def requirements(pyproject: dict[str, object], extras: list[str]) -> list[str]:
    """The project's dependencies and those of `extras`, in order, without duplicates."""
    project = pyproject["project"]
    assert isinstance(project, dict)
    name = str(project["name"]).lower()
    optional: dict[str, list[str]] = project.get("optional-dependencies", {})
    found: list[str] = list(project.get("dependencies", []))
    seen: set[str] = set()
    todo = list(extras)
    while todo:
        extra = todo.pop(0).strip()
        if not extra or extra in seen:
            continue
        seen.add(extra)
        if extra not in optional:
            known = ", ".join(sorted(optional)) or "none"
            raise SystemExit(f"pyproject.toml has no extra {extra!r} (it has: {known})")
        for requirement in optional[extra]:
            itself = _SELF.match(requirement)
            if itself and itself.group(1).lower().replace("_", "-") == name:
                todo += itself.group(2).split(",")
            else:
                found.append(requirement)
    return list(dict.fromkeys(found))


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit("usage: pyproject_requirements.py PYPROJECT [EXTRA ...]")
    data = tomllib.loads(Path(argv[0]).read_text(encoding="utf-8"))
    extras = [e for arg in argv[1:] for e in arg.split(",")]
    print("\n".join(requirements(data, extras)))


if __name__ == "__main__":
    main(sys.argv[1:])
