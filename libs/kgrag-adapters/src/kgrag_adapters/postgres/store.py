"""The authoritative store on PostgreSQL: documents, ACL classes, chunks, ingest log, embedding cache.

One psycopg connection per store object, in autocommit mode: every multi-statement write opens an
explicit transaction, and reads see committed data without holding a transaction open. A lock makes the
object safe to share between threads (one operation at a time on the connection).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, LiteralString

import psycopg

from kgrag_adapters.lifecycle import Closeable
from kgrag_adapters.postgres.migrate import apply_migrations
from kgrag_core.acl import AclClass
from kgrag_core.documents import Chunk, DocumentStatus, StoredDocument
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.ingest import DeletionRecord, IngestOutcome, IngestStatus
from kgrag_core.ports import StoreStats

Row = tuple[Any, ...]

# Typed LiteralString so queries built from them with `+` still count as literal SQL.
_DOC_COLUMNS: LiteralString = (
    "doc_id, source, uri, title, version, content_hash, acl_class_id, modified_at, status, media_type,"
    " byte_length, observed_at, deleted_at"
)
_CHUNK_COLUMNS: LiteralString = (
    "c.chunk_id, c.doc_id, c.seq, c.section_path, c.start_byte, c.end_byte, c.text, c.token_count,"
    " c.content_hash, c.acl_class_id, c.doc_time"
)

# The ID is a hash of the principals, so an existing row already says the same thing. DO NOTHING (unlike
# DO UPDATE) also takes no row lock: concurrent commits sharing a class (most documents share PUBLIC) do
# not queue behind each other on it.
_UPSERT_ACL = """
INSERT INTO acl_classes (acl_class_id, principals, malformed) VALUES (%s, %s, %s)
ON CONFLICT (acl_class_id) DO NOTHING
"""

# A commit is a new ingestion of the document, so ingested_at moves; status comes from the caller (a
# re-ingested DELETED document becomes ACTIVE again).
_UPSERT_DOC = """
INSERT INTO documents (doc_id, source, uri, title, version, content_hash, acl_class_id, modified_at,
                       status, media_type, byte_length, observed_at, deleted_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, NULL)
ON CONFLICT (doc_id) DO UPDATE SET
    source = EXCLUDED.source, uri = EXCLUDED.uri, title = EXCLUDED.title, version = EXCLUDED.version,
    content_hash = EXCLUDED.content_hash, acl_class_id = EXCLUDED.acl_class_id,
    modified_at = EXCLUDED.modified_at, status = EXCLUDED.status, media_type = EXCLUDED.media_type,
    byte_length = EXCLUDED.byte_length, ingested_at = now(),
    observed_at = GREATEST(documents.observed_at, EXCLUDED.observed_at), deleted_at = NULL
"""

# The WHERE skips rows that did not change, so a kept chunk is not rewritten (no dead tuple, and its
# indexed_at still says when it was really indexed).
_UPSERT_CHUNK = """
INSERT INTO chunks AS c (chunk_id, doc_id, seq, section_path, start_byte, end_byte, text, token_count,
                         content_hash, acl_class_id, doc_time)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (chunk_id) DO UPDATE SET
    seq = EXCLUDED.seq, section_path = EXCLUDED.section_path, start_byte = EXCLUDED.start_byte,
    end_byte = EXCLUDED.end_byte, text = EXCLUDED.text, token_count = EXCLUDED.token_count,
    content_hash = EXCLUDED.content_hash, acl_class_id = EXCLUDED.acl_class_id,
    doc_time = EXCLUDED.doc_time, indexed_at = now()
WHERE (c.seq, c.section_path, c.start_byte, c.end_byte, c.text, c.token_count, c.content_hash,
       c.acl_class_id, c.doc_time)
      IS DISTINCT FROM
      (EXCLUDED.seq, EXCLUDED.section_path, EXCLUDED.start_byte, EXCLUDED.end_byte, EXCLUDED.text,
       EXCLUDED.token_count, EXCLUDED.content_hash, EXCLUDED.acl_class_id, EXCLUDED.doc_time)
"""

_INSERT_OUTCOME = """
INSERT INTO ingest_log (doc_id, status, source, uri, error_code, message, chunks_total, chunks_embedded,
                        chunks_removed, at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, COALESCE(%s::timestamptz, now()))
"""

_STATS = """
SELECT (SELECT count(*) FROM documents WHERE status = 'ACTIVE'),
       (SELECT count(*) FROM documents WHERE status = 'DELETED'),
       (SELECT count(*) FROM chunks),
       (SELECT count(*) FROM acl_classes),
       (SELECT count(*) FROM embedding_cache),
       (SELECT count(*) FROM ingest_log WHERE error_code IS NOT NULL)
"""


class PostgresStore(Closeable):
    """DocumentStore, AclStore, IngestLog, EmbeddingCache and StatsSource on one connection."""

    def __init__(self, conn: psycopg.Connection[Row]) -> None:
        """Wrap an open autocommit connection (prefer `connect`); the store closes it on `close`."""
        if not conn.autocommit:
            raise ValueError("PostgresStore needs an autocommit connection; it opens its own transactions")
        self._current = conn
        self._dsn: str | None = None
        self._closed = False
        self._lock = threading.RLock()

    @classmethod
    def connect(cls, dsn: str) -> PostgresStore:
        """Open a connection, bring the schema up to date, and return the store.

        A store opened this way reconnects by itself when its connection breaks (a server restart or
        failover); the failing call still raises, and the caller's retry finds a fresh connection.
        """
        conn = psycopg.connect(dsn, autocommit=True)
        try:
            apply_migrations(conn)
        except BaseException:
            conn.close()
            raise
        store = cls(conn)
        store._dsn = dsn
        return store

    @property
    def _conn(self) -> psycopg.Connection[Row]:
        if (self._current.closed or self._current.broken) and self._dsn is not None and not self._closed:
            self._current = psycopg.connect(self._dsn, autocommit=True)
        return self._current

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._current.close()

    # --- DocumentStore ----------------------------------------------------------------------------

    def get_document(self, doc_id: str) -> StoredDocument | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT " + _DOC_COLUMNS + " FROM documents WHERE doc_id = %s", (doc_id,)
            ).fetchone()
        return _document(row) if row else None

    def get_documents(self, doc_ids: Sequence[str]) -> dict[str, StoredDocument]:
        if not doc_ids:
            return {}
        with self._lock:
            rows = self._conn.execute(
                "SELECT " + _DOC_COLUMNS + " FROM documents WHERE doc_id = ANY(%s)", (list(doc_ids),)
            ).fetchall()
        return {doc.doc_id: doc for doc in map(_document, rows)}

    def list_documents(self, *, include_deleted: bool = False) -> list[StoredDocument]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT " + _DOC_COLUMNS + " FROM documents WHERE %s OR status = 'ACTIVE' ORDER BY doc_id",
                (include_deleted,),
            ).fetchall()
        return [_document(r) for r in rows]

    def chunks_of(self, doc_id: str) -> list[Chunk]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT " + _CHUNK_COLUMNS + " FROM chunks c JOIN documents d USING (doc_id)"
                " WHERE c.doc_id = %s AND d.status = 'ACTIVE' ORDER BY c.seq",
                (doc_id,),
            ).fetchall()
        return [_chunk(r) for r in rows]

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        if not chunk_ids:
            return {}
        with self._lock:
            rows = self._conn.execute(
                "SELECT " + _CHUNK_COLUMNS + " FROM chunks c JOIN documents d USING (doc_id)"
                " WHERE c.chunk_id = ANY(%s) AND d.status = 'ACTIVE'",
                (list(chunk_ids),),
            ).fetchall()
        return {r[0]: _chunk(r) for r in rows}

    def commit_document(self, doc: StoredDocument, acl: AclClass, chunks: Sequence[Chunk]) -> None:
        if doc.acl_class_id != acl.acl_class_id:
            raise ValueError(f"document {doc.doc_id} names ACL class {doc.acl_class_id}, not {acl.acl_class_id}")
        for ch in chunks:
            if ch.doc_id != doc.doc_id:
                raise ValueError(f"chunk {ch.chunk_id} belongs to {ch.doc_id}, not {doc.doc_id}")
        keep = [ch.chunk_id for ch in chunks]
        with self._lock, self._conn.transaction():
            self._conn.execute(_UPSERT_ACL, (acl.acl_class_id, list(acl.principals), acl.malformed))
            self._conn.execute(
                _UPSERT_DOC,
                (
                    doc.doc_id,
                    doc.source,
                    doc.uri,
                    doc.title,
                    doc.version,
                    doc.content_hash,
                    doc.acl_class_id,
                    _utc_or_none(doc.modified_at),
                    doc.status.value,
                    doc.media_type,
                    doc.byte_length,
                    _utc_or_none(doc.observed_at),
                ),
            )
            self._conn.execute("DELETE FROM chunks WHERE doc_id = %s AND NOT (chunk_id = ANY(%s))", (doc.doc_id, keep))
            if chunks:
                with self._conn.cursor() as cur:
                    cur.executemany(_UPSERT_CHUNK, [_chunk_params(ch) for ch in chunks])

    def update_acl(self, doc_id: str, acl: AclClass) -> bool:
        with self._lock, self._conn.transaction():
            self._conn.execute(_UPSERT_ACL, (acl.acl_class_id, list(acl.principals), acl.malformed))
            found = self._conn.execute(
                "UPDATE documents SET acl_class_id = %s WHERE doc_id = %s AND status = 'ACTIVE' RETURNING doc_id",
                (acl.acl_class_id, doc_id),
            ).fetchone()
            if found is None:
                return False
            self._conn.execute("UPDATE chunks SET acl_class_id = %s WHERE doc_id = %s", (acl.acl_class_id, doc_id))
        return True

    def mark_deleted(self, doc_id: str, record: DeletionRecord) -> None:
        if record.doc_id != doc_id:
            raise ValueError(f"deletion record is for {record.doc_id}, not {doc_id}")
        with self._lock, self._conn.transaction():
            found = self._conn.execute(
                "UPDATE documents SET status = 'DELETED', deleted_at = COALESCE(%s::timestamptz, now())"
                " WHERE doc_id = %s RETURNING doc_id",
                (_utc_or_none(record.at), doc_id),
            ).fetchone()
            if found is None:
                # Raising rolls the transaction back: no audit row for a document that never existed.
                raise KgragError(ErrorCode.DOCUMENT_NOT_FOUND, f"no document {doc_id!r} to delete")
            self._conn.execute("DELETE FROM chunks WHERE doc_id = %s", (doc_id,))
            self._conn.execute(
                "INSERT INTO deletion_log (doc_id, chunk_ids, object_keys, stores, at)"
                " VALUES (%s, %s, %s, %s, COALESCE(%s::timestamptz, now()))",
                (
                    doc_id,
                    list(record.chunk_ids),
                    list(record.object_keys),
                    list(record.stores),
                    _utc_or_none(record.at),
                ),
            )

    def deletion_records(self, doc_id: str) -> list[DeletionRecord]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT doc_id, chunk_ids, object_keys, stores, at FROM deletion_log WHERE doc_id = %s ORDER BY id",
                (doc_id,),
            ).fetchall()
        return [DeletionRecord(r[0], tuple(r[1]), tuple(r[2]), tuple(r[3]), _utc(r[4])) for r in rows]

    # --- AclStore -------------------------------------------------------------------------------------

    def acl_classes(self) -> list[AclClass]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT acl_class_id, principals, malformed FROM acl_classes ORDER BY acl_class_id"
            ).fetchall()
        return [AclClass(r[0], tuple(r[1]), r[2]) for r in rows]

    # --- IngestLog ------------------------------------------------------------------------------------

    def record_outcomes(self, outcomes: Sequence[IngestOutcome]) -> None:
        if not outcomes:
            return
        params = [
            (
                o.doc_id,
                o.status.value,
                o.source,
                o.uri,
                o.error_code.value if o.error_code else None,
                o.message,
                o.chunks_total,
                o.chunks_embedded,
                o.chunks_removed,
                _utc_or_none(o.at),
            )
            for o in outcomes
        ]
        with self._lock, self._conn.transaction(), self._conn.cursor() as cur:
            cur.executemany(_INSERT_OUTCOME, params)

    def recent_outcomes(self, limit: int = 100) -> list[IngestOutcome]:
        """The latest `limit` outcomes, newest first."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT doc_id, status, source, uri, error_code, message, chunks_total, chunks_embedded,"
                " chunks_removed, at FROM ingest_log ORDER BY id DESC LIMIT %s",
                (limit,),
            ).fetchall()
        return [_outcome(r) for r in rows]

    def recent_errors(self, limit: int = 20) -> list[IngestOutcome]:
        """The latest `limit` rejected outcomes, newest first, however many successes came after them."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT doc_id, status, source, uri, error_code, message, chunks_total, chunks_embedded,"
                " chunks_removed, at FROM ingest_log WHERE error_code IS NOT NULL ORDER BY id DESC LIMIT %s",
                (limit,),
            ).fetchall()
        return [_outcome(r) for r in rows]

    # --- EmbeddingCache ---------------------------------------------------------------------------------

    def get_vectors(self, model_id: str, hashes: Sequence[str]) -> dict[str, tuple[float, ...]]:
        if not hashes:
            return {}
        with self._lock:
            # float4 -> float8 is exact, and float8's text form round-trips, so the caller gets exactly
            # the stored float32 values (float4's shortest text form would parse to a different double).
            rows = self._conn.execute(
                "SELECT content_hash, vector::float8[] FROM embedding_cache"
                " WHERE model_id = %s AND content_hash = ANY(%s)",
                (model_id, list(hashes)),
            ).fetchall()
        return {r[0]: tuple(r[1]) for r in rows}

    def put_vectors(self, model_id: str, vectors: Mapping[str, Sequence[float]]) -> None:
        """Store vectors (rounded to float32); a hash already cached for the model is left as it is."""
        if not vectors:
            return
        # float(): callers may hand numpy arrays/scalars; psycopg then sends plain float8 values.
        params = [(model_id, h, len(v), [float(x) for x in v]) for h, v in vectors.items()]
        with self._lock, self._conn.transaction(), self._conn.cursor() as cur:
            # executemany pipelines the statements: one round trip per batch, not per vector.
            cur.executemany(
                "INSERT INTO embedding_cache (model_id, content_hash, dimension, vector)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                params,
            )

    def delete_vectors(self, model_id: str, hashes: Sequence[str]) -> int:
        if not hashes:
            return 0
        with self._lock:
            cur = self._conn.execute(
                "DELETE FROM embedding_cache WHERE model_id = %s AND content_hash = ANY(%s)", (model_id, list(hashes))
            )
        return cur.rowcount

    # --- StatsSource ------------------------------------------------------------------------------------

    def stats(self) -> StoreStats:
        with self._lock:
            row = self._conn.execute(_STATS).fetchone()
        if row is None:  # cannot happen: a SELECT without FROM returns exactly one row
            raise RuntimeError("stats query returned no row")
        return StoreStats(*(int(v) for v in row))


# --- row <-> dataclass ------------------------------------------------------------------------------------


def _utc(value: datetime) -> datetime:
    """An aware UTC datetime. A naive one is taken to be UTC already (the store's only time zone)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def _utc_or_none(value: datetime | None) -> datetime | None:
    return None if value is None else _utc(value)


def _document(r: Row) -> StoredDocument:
    return StoredDocument(
        doc_id=r[0],
        source=r[1],
        uri=r[2],
        title=r[3],
        version=r[4],
        content_hash=r[5],
        acl_class_id=r[6],
        modified_at=_utc_or_none(r[7]),
        status=DocumentStatus(r[8]),
        media_type=r[9],
        byte_length=r[10],
        observed_at=_utc_or_none(r[11]),
        deleted_at=_utc_or_none(r[12]),
    )


def _chunk(r: Row) -> Chunk:
    return Chunk(
        chunk_id=r[0],
        doc_id=r[1],
        seq=r[2],
        breadcrumb=tuple(r[3]),
        start_byte=r[4],
        end_byte=r[5],
        text=r[6],
        token_count=r[7],
        content_hash=r[8],
        acl_class_id=r[9],
        doc_time=_utc_or_none(r[10]),
    )


def _chunk_params(ch: Chunk) -> Row:
    return (
        ch.chunk_id,
        ch.doc_id,
        ch.seq,
        list(ch.breadcrumb),
        ch.start_byte,
        ch.end_byte,
        ch.text,
        ch.token_count,
        ch.content_hash,
        ch.acl_class_id,
        _utc_or_none(ch.doc_time),
    )


def _outcome(r: Row) -> IngestOutcome:
    return IngestOutcome(
        doc_id=r[0],
        status=IngestStatus(r[1]),
        source=r[2] or "",
        uri=r[3] or "",
        error_code=ErrorCode(r[4]) if r[4] else None,
        message=r[5] or "",
        chunks_total=r[6] or 0,
        chunks_embedded=r[7] or 0,
        chunks_removed=r[8] or 0,
        at=_utc(r[9]),
    )
