"""The handlers' dependency (`adapters.http.deps`) imports none of the modules that
import it: what `Api` holds lives beside the routes, not in them, so there is no
import circle to hide behind `TYPE_CHECKING`."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEPS = "adapters.http.deps"


def imported_by(module: str) -> set[str]:
    """The project's modules that `module` imports at run time (not under TYPE_CHECKING)."""
    path = ROOT / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = path.with_suffix("") / "__init__.py"
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in tree.body:  # module level: what runs when it is imported
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if (ROOT / (m.replace(".", "/") + ".py")).exists()}


def closure(start: str) -> dict[str, str]:
    """Every project module `start` imports, directly or not: module -> who imported it."""
    seen: dict[str, str] = {}
    todo = [start]
    while todo:
        module = todo.pop()
        for found in imported_by(module):
            if found not in seen:
                seen[found] = module
                todo.append(found)
    return seen


def test_nothing_deps_imports_imports_deps_back() -> None:
    reached = closure(DEPS)
    assert DEPS not in reached, f"{reached[DEPS]} imports {DEPS}, which imports it"
    source = (ROOT / "adapters/http/deps.py").read_text()
    assert "TYPE_CHECKING" not in source


def test_the_check_sees_a_circle() -> None:
    # The route modules do import deps: from one of them, deps is reached.
    assert DEPS in closure("adapters.http.routes.sessions")
