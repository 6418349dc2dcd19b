"""Schema migrations: plain `*.sql` files applied once each, in name order.

The SQL lives in `schemas/postgres/migrations/` (its one home); `migrations/` next to this module is a
symlink to it so the adapter finds it in an editable install.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"

# Key of the transaction-scoped advisory lock that serialises concurrent runners (several services may
# start at once against one database). Any fixed 64-bit value works; this one is "kgrag" in ASCII.
_LOCK_KEY = 0x6B67726167

_CREATE_TABLE = b"""
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    TEXT PRIMARY KEY,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)
"""


def migration_files(directory: Path = MIGRATIONS_DIR) -> list[Path]:
    """The migration files, in the order they apply (by file name, so prefix them `0001_`, `0002_`...)."""
    files = sorted(directory.glob("*.sql"), key=lambda p: p.name)
    if not files:
        # An empty list here means a broken install (e.g. the symlink was not followed), not "no schema".
        raise FileNotFoundError(f"no migrations found in {directory}")
    return files


def apply_migrations(conn: psycopg.Connection[Any], directory: Path = MIGRATIONS_DIR) -> list[str]:
    """Apply the migrations not yet recorded in `schema_migrations`; return their versions (file stems).

    Everything runs in one transaction, so a failing migration leaves the database as it was. The
    advisory lock is taken first: a second runner waits, then sees the versions the first recorded and
    applies nothing. If `conn` is already inside a transaction, this becomes a savepoint of it and the
    caller commits.
    """
    files = migration_files(directory)
    applied: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        conn.execute(_CREATE_TABLE)
        done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
        for path in files:
            version = path.stem
            if version in done:
                continue
            # bytes, not str: a file's text is not a literal, and with no parameters psycopg sends it with
            # the simple query protocol, which allows several statements in one call.
            conn.execute(path.read_bytes())
            conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
            applied.append(version)
    return applied


def applied_versions(conn: psycopg.Connection[Any]) -> list[str]:
    """Versions recorded in `schema_migrations`, in order (empty if the runner never ran)."""
    exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return []
    return [row[0] for row in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
