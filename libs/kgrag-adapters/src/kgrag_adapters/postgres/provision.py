"""Make sure the configured database exists before anything else is created (`admin init`)."""

from __future__ import annotations

import psycopg
from psycopg import errors, sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from kgrag_core.errors import ErrorCode, KgragError


def ensure_database(dsn: str) -> bool:
    """True if the database was created now, False if it was there. Raises CONFIGURATION_INVALID when the
    server is unreachable, or the database is missing and this user may not create it."""
    try:
        with psycopg.connect(dsn, connect_timeout=10):
            return False
    except psycopg.OperationalError as err:
        refused = err  # libpq reports a missing database, bad credentials and no server alike
    name = str(conninfo_to_dict(dsn).get("dbname") or "")
    try:
        maintenance = psycopg.connect(make_conninfo(dsn, dbname="postgres"), autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as err:
        raise KgragError(
            ErrorCode.CONFIGURATION_INVALID,
            f"PostgreSQL is not reachable with KGRAG_PG_DSN: {_first_line(refused)}",
            hint="Check host, port, user and password in KGRAG_PG_DSN, and that the server is running.",
        ) from err
    with maintenance:
        if maintenance.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            raise KgragError(
                ErrorCode.CONFIGURATION_INVALID,
                f"The database {name!r} exists but refused the connection: {_first_line(refused)}",
                hint="Check the user's CONNECT privilege and pg_hba.conf, then run init again.",
            )
        try:
            maintenance.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        except errors.DuplicateDatabase:
            return False  # created concurrently by another init: fine
        except errors.InsufficientPrivilege as err:
            raise KgragError(
                ErrorCode.CONFIGURATION_INVALID,
                f"The database {name!r} does not exist and this user may not create it: {_first_line(err)}",
                hint=f'Create it (CREATE DATABASE "{name}"), or give this user CREATEDB, then run init again.',
            ) from err
    return True


def _first_line(err: BaseException) -> str:
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
