"""The bridge's threads: as set, never more than the Postgres connections, at least one."""

from __future__ import annotations

import pytest

from adapters.config.settings import Settings


def test_the_bridge_has_the_threads_set() -> None:
    assert Settings.from_env({"TOKENDANCE_STORE_THREADS": "3"}).thread_pool_size == 3


def test_the_bridge_never_has_more_threads_than_connections() -> None:
    env = {
        "TOKENDANCE_STORE_THREADS": "12",
        "TOKENDANCE_DB_POOL_SIZE": "2",
        "TOKENDANCE_DB_MAX_OVERFLOW": "1",
    }
    assert Settings.from_env(env).thread_pool_size == 3


@pytest.mark.parametrize("value", ["0", "-2", "four"])
def test_a_count_of_threads_not_a_whole_number_from_one_is_refused_by_name(value: str) -> None:
    with pytest.raises(SystemExit, match="TOKENDANCE_STORE_THREADS"):
        Settings.from_env({"TOKENDANCE_STORE_THREADS": value})
