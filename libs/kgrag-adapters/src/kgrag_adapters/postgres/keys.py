"""The KeyStore port on PostgreSQL: wrapped per-document data keys (table document_keys, migration 0009)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import psycopg

from kgrag_core.shredding import WrappedKey

Row = tuple[Any, ...]


class PostgresKeyStore:
    """Runs on its store's connection lease, so key writes join the store's open transaction: a
    document's key row and its sealed rows commit (or roll back) together."""

    def __init__(self, conn: Callable[[], psycopg.Connection[Row]], lock: AbstractContextManager[object]) -> None:
        self._conn = conn
        self._lock = lock

    def wrapped_key(self, doc_id: str) -> WrappedKey | None:
        with self._lock:
            row = (
                self._conn()
                .execute("SELECT doc_id, key_id, kek_id, wrapped_key FROM document_keys WHERE doc_id = %s", (doc_id,))
                .fetchone()
            )
        return _key(row) if row else None

    def add_wrapped_key(self, key: WrappedKey) -> WrappedKey:
        with self._lock:
            conn = self._conn()
            conn.execute(
                "INSERT INTO document_keys (doc_id, key_id, kek_id, wrapped_key) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (doc_id) DO NOTHING",
                (key.doc_id, key.key_id, key.kek_id, key.wrapped),
            )
            row = conn.execute(
                "SELECT doc_id, key_id, kek_id, wrapped_key FROM document_keys WHERE doc_id = %s", (key.doc_id,)
            ).fetchone()
        if row is None:  # deleted between the two statements by a concurrent shred: seal nothing
            raise RuntimeError(f"the data key of {key.doc_id!r} was destroyed while it was being created")
        return _key(row)

    def destroy_wrapped_key(self, doc_id: str) -> bool:
        with self._lock:
            cur = self._conn().execute("DELETE FROM document_keys WHERE doc_id = %s", (doc_id,))
        return cur.rowcount > 0

    def wrapped_keys_not_under(self, kek_id: str, limit: int) -> list[WrappedKey]:
        with self._lock:
            rows = (
                self._conn()
                .execute(
                    "SELECT doc_id, key_id, kek_id, wrapped_key FROM document_keys WHERE kek_id <> %s"
                    " ORDER BY doc_id LIMIT %s",
                    (kek_id, limit),
                )
                .fetchall()
            )
        return [_key(r) for r in rows]

    def replace_wrapping(self, keys: Sequence[WrappedKey]) -> int:
        if not keys:
            return 0
        changed = 0
        with self._lock, self._conn().transaction():
            for k in keys:
                # key_id in the WHERE: a key destroyed and re-created meanwhile is not overwritten.
                cur = self._conn().execute(
                    "UPDATE document_keys SET kek_id = %s, wrapped_key = %s WHERE doc_id = %s AND key_id = %s",
                    (k.kek_id, k.wrapped, k.doc_id, k.key_id),
                )
                changed += cur.rowcount
        return changed

    def count_wrapped_keys(self) -> dict[str, int]:
        with self._lock:
            rows = self._conn().execute("SELECT kek_id, count(*) FROM document_keys GROUP BY kek_id").fetchall()
        return {r[0]: int(r[1]) for r in rows}


def _key(r: Row) -> WrappedKey:
    return WrappedKey(doc_id=r[0], key_id=bytes(r[1]), kek_id=r[2], wrapped=bytes(r[3]))
