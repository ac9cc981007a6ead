"""Every environment variable the code reads is documented, and docs/settings.md lists it."""

from __future__ import annotations

import re
from pathlib import Path

from adapters.config.env_vars import DOCUMENTED

ROOT = Path(__file__).parent.parent.parent
PACKAGES = ("adapters", "application", "domain", "projections", "sandbox", "schemas", "skills")
NAME = re.compile(r"\bTOKENDANCE_[A-Z0-9_]*[A-Z0-9]\b")


def test_each_variable_the_code_names_is_documented() -> None:
    named = {
        name
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        for name in NAME.findall(path.read_text())
    }
    assert named, "no variable found: the pattern is wrong"
    assert sorted(named - set(DOCUMENTED)) == []


def test_the_settings_page_lists_each_documented_variable() -> None:
    rows = [
        line
        for line in (ROOT / "docs" / "settings.md").read_text().splitlines()
        if line.startswith("|")
    ]
    listed = {name for row in rows for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row)}
    assert sorted(set(DOCUMENTED) - listed) == []
