"""Print the requirements of pyproject.toml, one a line: the dependencies and the extras named.

The image's dependency layer installs requirements-deploy.lock, then the requirements of
any extras asked for besides (`--extras-only`), before any source is copied in, so a change
to the code rebuilds only the layers after it (Dockerfile, stage `build`):

    python deploy/pyproject_requirements.py --extras-only pyproject.toml voyage > extras.txt

An extra that names the project itself (`tokendance[a,b]`) is followed; an extra that
pyproject.toml does not have stops the build, naming it.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

_SELF = re.compile(r"^\s*([A-Za-z0-9_.-]+)\s*\[([^\]]*)\]\s*$")


def requirements(
    pyproject: dict[str, object], extras: list[str], *, extras_only: bool = False
) -> list[str]:
    """The project's dependencies (unless `extras_only`) and those of `extras`, in order,
    without duplicates."""
    project = pyproject["project"]
    assert isinstance(project, dict)
    name = str(project["name"]).lower()
    optional: dict[str, list[str]] = project.get("optional-dependencies", {})
    found: list[str] = [] if extras_only else list(project.get("dependencies", []))
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
    only = "--extras-only" in argv
    argv = [arg for arg in argv if arg != "--extras-only"]
    if not argv:
        raise SystemExit("usage: pyproject_requirements.py [--extras-only] PYPROJECT [EXTRA ...]")
    data = tomllib.loads(Path(argv[0]).read_text(encoding="utf-8"))
    extras = [e for arg in argv[1:] for e in arg.split(",")]
    print("\n".join(requirements(data, extras, extras_only=only)))


if __name__ == "__main__":
    main(sys.argv[1:])
