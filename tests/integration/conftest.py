"""Fixtures shared by the integration suites."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.memory_store import Memories


@pytest.fixture
def memories(database_url: str) -> Iterator[Memories]:
    """Memory namespaces in an event store and the memories view fed from its log."""
    found = Memories(database_url)
    yield found
    found.close()
