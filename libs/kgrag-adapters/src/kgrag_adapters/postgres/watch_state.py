"""`WatchState` in PostgreSQL (migration 0026): the watcher's per-file delivery state survives restarts."""

from __future__ import annotations

from kgrag_adapters.postgres.pool import ConnectionPool
from kgrag_core.watching import FileState


class PostgresWatchState:
    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool

    def load(self, root: str) -> dict[str, FileState]:
        with self._pool as conn:
            rows = conn.execute(
                "SELECT relative_path, doc_ids, fingerprint FROM watch_files WHERE root = %s ORDER BY relative_path",
                (root,),
            ).fetchall()
        return {str(r[0]): FileState(str(r[0]), tuple(sorted(str(d) for d in r[1])), str(r[2])) for r in rows}

    def save(self, root: str, state: FileState) -> None:
        with self._pool as conn:
            conn.execute(
                """
                INSERT INTO watch_files (root, relative_path, doc_ids, fingerprint) VALUES (%s, %s, %s, %s)
                ON CONFLICT (root, relative_path)
                DO UPDATE SET doc_ids = EXCLUDED.doc_ids, fingerprint = EXCLUDED.fingerprint, updated_at = now()
                """,
                (root, state.relative_path, list(state.doc_ids), state.fingerprint),
            )

    def remove(self, root: str, relative_path: str) -> None:
        with self._pool as conn:
            conn.execute("DELETE FROM watch_files WHERE root = %s AND relative_path = %s", (root, relative_path))
