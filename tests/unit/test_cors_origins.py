"""`TOKENDANCE_CORS_ORIGINS`: each origin checked at start, written as a browser sends it,
and the web client's dev server allowed on the embedded defaults only."""

from __future__ import annotations

import pytest

from adapters.config.origins import DEV_ORIGIN
from adapters.config.settings import Settings
from adapters.http.middleware.cors import allowed_origins, cors_config

ORIGINS = "TOKENDANCE_CORS_ORIGINS"
EXTERNAL_DB = {"TOKENDANCE_DATABASE_URL": "postgresql://db.internal/tokendance"}


def test_origins_are_kept_as_a_browser_writes_them() -> None:
    env = {
        ORIGINS: " https://App.Example.com:443 , http://127.0.0.1:3000,http://[::1]:8080,,"
        "https://app.example.com",
        **EXTERNAL_DB,
    }
    assert Settings.from_env(env).cors_origins == (
        "https://app.example.com",
        "http://127.0.0.1:3000",
        "http://[::1]:8080",
    )


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("https://app.example.com/", "no path"),
        ("https://app.example.com/app", "no path"),
        ("*", "list each origin"),
        ("app.example.com", "scheme://host"),
        ("ftp://app.example.com", "scheme://host"),
        ("https://user@app.example.com", "scheme://host"),
        ("https://app.example.com:99999", "scheme://host"),
        ("https://app_example.com", "scheme://host"),
        ("http://localhost:5173,null", "'null'"),
    ],
)
def test_a_malformed_origin_stops_the_start_by_name(value: str, why: str) -> None:
    with pytest.raises(SystemExit, match=ORIGINS) as refused:
        Settings.from_env({ORIGINS: value})
    assert why in str(refused.value)


def test_the_embedded_defaults_allow_the_web_clients_dev_server_and_nothing_else() -> None:
    assert allowed_origins(Settings.from_env({})) == (DEV_ORIGIN,)
    both = Settings.from_env({ORIGINS: "https://app.example.com"})
    assert allowed_origins(both) == ("https://app.example.com", DEV_ORIGIN)


def test_a_server_on_its_own_database_allows_only_the_origins_it_names() -> None:
    assert allowed_origins(Settings.from_env(EXTERNAL_DB)) == ()
    assert cors_config(Settings.from_env(EXTERNAL_DB)) is None  # no CORS headers at all
    named = Settings.from_env({ORIGINS: "https://app.example.com", **EXTERNAL_DB})
    config = cors_config(named)
    assert config is not None
    assert config.allow_origins == ["https://app.example.com"]
    assert not config.allow_credentials
    assert config.is_origin_allowed("https://app.example.com")
    assert not config.is_origin_allowed(DEV_ORIGIN)
    assert not config.is_origin_allowed("https://app.example.com.evil.test")
