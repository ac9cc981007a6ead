"""The tests' databases are copies of a template `bootstrap` set up once per run
(tests/conftest.py `template_database`): a copy, bootstrapped as each test's system does,
must be what an empty database bootstrapped is, to the last table, column, index,
trigger, function, policy and row."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from adapters.bootstrap import bootstrap
from adapters.config.settings import Settings
from adapters.llm.unconfigured import UnconfiguredLLM

pytestmark = pytest.mark.integration

SCHEMA = {
    "columns": "SELECT table_name, column_name, data_type, column_default, is_nullable "
    "FROM information_schema.columns WHERE table_schema = 'public'",
    "indexes": "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'",
    "triggers": "SELECT tgrelid::regclass::text, tgname, pg_get_triggerdef(oid) FROM pg_trigger "
    "WHERE NOT tgisinternal",
    "functions": "SELECT proname, md5(prosrc) FROM pg_proc p JOIN pg_namespace n "
    "ON n.oid = p.pronamespace WHERE nspname = 'public'",
    "policies": "SELECT tablename, policyname, qual FROM pg_policies WHERE schemaname = 'public'",
    "extensions": "SELECT extname FROM pg_extension",
}


def described(url: str) -> dict[str, object]:
    """The database's schema, and what each table holds (timestamps left out)."""
    with psycopg.connect(url) as conn:
        found: dict[str, object] = {}
        for key, query in SCHEMA.items():
            found[key] = sorted(conn.execute(query).fetchall())
        listing = "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
        tables = [r[0] for r in conn.execute(listing)]
        for table in sorted(tables):
            columns = [
                r[0]
                for r in conn.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
                    "AND data_type NOT LIKE 'timestamp%%' ORDER BY column_name",
                    (table,),
                )
            ]
            listed = ", ".join(f'"{c}"::text' for c in columns)
            found[table] = sorted(conn.execute(f'SELECT {listed} FROM "{table}"').fetchall())
    return found


def test_a_copy_of_the_template_bootstrapped_is_an_empty_database_bootstrapped(
    servers: tuple[str, str], template_database: str, settings: Settings, nats_url: str
) -> None:
    admin_url = servers[0]
    names = {"empty": f"test_{uuid.uuid4().hex[:16]}", "copy": f"test_{uuid.uuid4().hex[:16]}"}
    urls = {}
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{names["empty"]}"')
        conn.execute(f'CREATE DATABASE "{names["copy"]}" TEMPLATE "{template_database}"')
    try:
        for kind, name in names.items():
            params = conninfo_to_dict(admin_url)
            params["dbname"] = name
            urls[kind] = make_conninfo("", **params)
            made = bootstrap(
                settings, database_url=urls[kind], nats_url=nats_url, llm=UnconfiguredLLM()
            )
            made.close()
        empty, copy = described(urls["empty"]), described(urls["copy"])
        assert empty["columns"] and empty["indexes"] and empty["functions"], "a schema was made"
        assert copy.keys() == empty.keys(), "the same tables, none renamed or left over"
        for key in empty:
            assert copy[key] == empty[key], key
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            for name in names.values():
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
