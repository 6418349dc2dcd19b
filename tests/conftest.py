"""Fixtures shared by every test folder: a PostgreSQL server, and a fresh database per test."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from kgrag_adapters.postgres.embedded import EmbeddedPostgres

# The contract suites live in an installed package, where pytest would not rewrite their asserts; without
# this a failing contract test reports a bare AssertionError instead of the compared values.
pytest.register_assert_rewrite("kgrag_testing.contracts")


@pytest.fixture(scope="session")
def pg_server_dsn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """DSN of a server on which tests may create databases: $KGRAG_TEST_PG_DSN, else an embedded one."""
    external = os.environ.get("KGRAG_TEST_PG_DSN")
    if external:
        yield external
        return
    with EmbeddedPostgres(tmp_path_factory.mktemp("postgres") / "pgdata") as server:
        with psycopg.connect(server.admin_dsn, autocommit=True) as conn:
            # A throwaway test server needs no crash safety; without fsync, CREATE/DROP DATABASE per
            # test and every commit are several times faster. (Persisted only in this temp pgdata.)
            conn.execute("ALTER SYSTEM SET fsync = off")
            conn.execute("ALTER SYSTEM SET synchronous_commit = off")
            conn.execute("SELECT pg_reload_conf()")
        yield server.admin_dsn


@pytest.fixture
def pg_dsn(pg_server_dsn: str) -> Iterator[str]:
    """DSN of a new, empty database of its own for this test, dropped afterwards."""
    with fresh_database(pg_server_dsn) as dsn:
        yield dsn


@contextmanager
def fresh_database(pg_server_dsn: str) -> Iterator[str]:
    """A new, empty database on the server, dropped on leaving (for fixtures wider than one test)."""
    name = f"kgrag_test_{uuid.uuid4().hex[:16]}"
    ident = sql.Identifier(name)
    with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(ident))
    try:
        yield make_conninfo(pg_server_dsn, dbname=name)
    finally:
        with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
            # FORCE: a connection the test leaked must not keep its database (and the test's data) alive.
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(ident))
