"""The authoritative store on PostgreSQL: documents, ACL classes, chunks, ingest log, embedding cache.

Autocommit connections from a small pool, one leased per thread for each operation: every multi-statement
write opens an explicit transaction, and reads see committed data without holding a transaction open.
Threads share the object and run their queries in parallel (`ConnectionPool`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, LiteralString, Self

import psycopg
from psycopg.types.json import Jsonb

from kgrag_adapters.crypto.envelope import EnvelopeCipher, PlaintextCipher
from kgrag_adapters.crypto.kek import ephemeral_key_ring
from kgrag_adapters.lifecycle import Closeable
from kgrag_adapters.postgres.eval_runs import PostgresEvalRuns
from kgrag_adapters.postgres.keys import PostgresKeyStore
from kgrag_adapters.postgres.migrate import apply_migrations
from kgrag_adapters.postgres.pool import ConnectionPool
from kgrag_core.acl import AclClass
from kgrag_core.documents import Chunk, DocumentStatus, StoredDocument
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.ingest import DeletionRecord, IngestOutcome, IngestStatus
from kgrag_core.ports import StoreStats
from kgrag_core.shredding import ContentCipher, KeyEncryptionKey, PurgeStatus, StorePurge, open_text, seal_text

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

# The ID is an injective hash of the principals, so an existing row should say the same thing; the row
# that is there is checked (never trusted) so a collision can't hand one reader set's documents to another.
# DO NOTHING (unlike DO UPDATE) also takes no row lock: concurrent commits sharing a class (most documents
# share PUBLIC) do not queue behind each other on it.
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
# indexed_at still says when it was really indexed). The text is compared by its hash (the chunk ID
# already names it; sealing is randomised, so two seals of one text differ) and by its first byte, so a
# row from before migration 0009 (0x00, unencrypted) is sealed the next time its document is committed.
_UPSERT_CHUNK = """
INSERT INTO chunks AS c (chunk_id, doc_id, seq, section_path, start_byte, end_byte, text, token_count,
                         content_hash, acl_class_id, doc_time, embedding_key)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (chunk_id) DO UPDATE SET
    seq = EXCLUDED.seq, section_path = EXCLUDED.section_path, start_byte = EXCLUDED.start_byte,
    end_byte = EXCLUDED.end_byte, text = EXCLUDED.text, token_count = EXCLUDED.token_count,
    content_hash = EXCLUDED.content_hash, acl_class_id = EXCLUDED.acl_class_id,
    doc_time = EXCLUDED.doc_time, indexed_at = now(),
    embedding_key = COALESCE(EXCLUDED.embedding_key, c.embedding_key)
WHERE (c.seq, c.section_path, c.start_byte, c.end_byte, get_byte(c.text, 0), c.token_count, c.content_hash,
       c.acl_class_id, c.doc_time, c.embedding_key)
      IS DISTINCT FROM
      (EXCLUDED.seq, EXCLUDED.section_path, EXCLUDED.start_byte, EXCLUDED.end_byte, get_byte(EXCLUDED.text, 0),
       EXCLUDED.token_count, EXCLUDED.content_hash, EXCLUDED.acl_class_id, EXCLUDED.doc_time,
       COALESCE(EXCLUDED.embedding_key, c.embedding_key))
"""

_SELECT_OUTCOMES = (
    "SELECT doc_id, status, source, uri, error_code, message, chunks_total, chunks_embedded,"
    " chunks_removed, at FROM ingest_log"
)
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
    """DocumentStore, AclStore, IngestLog, EmbeddingCache, KeyStore and StatsSource on one connection.

    Document titles, URIs and chunk texts are sealed under the document's data key (`cipher`); the
    data keys live in this database, wrapped by `kek`. Without a `kek` the store uses a key ring that
    lives only as long as this process (tests and one-process tools; the runtimes always pass theirs).
    """

    def __init__(
        self,
        conn: psycopg.Connection[Row],
        *,
        dsn: str | None = None,
        pool_size: int = 1,
        kek: KeyEncryptionKey | None = None,
        encrypt: bool = True,
    ) -> None:
        """Wrap an open autocommit connection (prefer `connect`); the store closes it on `close`. With a DSN
        the store opens up to `pool_size` connections, one per thread in a call, and replaces broken ones."""
        if not conn.autocommit:
            raise ValueError("PostgresStore needs an autocommit connection; it opens its own transactions")
        # `with self._lease:` gives this thread a connection for one operation (re-entrant); `_conn` is it.
        self._lease = ConnectionPool(conn, dsn=dsn, max_size=pool_size)
        self.keys = PostgresKeyStore(lambda: self._conn, self._lease)
        self.eval_runs = PostgresEvalRuns(lambda: self._conn, self._lease)
        self.cipher: ContentCipher = (
            EnvelopeCipher(self.keys, kek or ephemeral_key_ring()) if encrypt else PlaintextCipher(self.keys)
        )

    @classmethod
    def connect(
        cls, dsn: str, *, pool_size: int = 4, kek: KeyEncryptionKey | None = None, encrypt: bool = True
    ) -> Self:
        """Open a connection, bring the schema up to date, and return the store.

        A store opened this way reconnects by itself when a connection breaks (a server restart or
        failover); the failing call still raises, and the caller's retry finds a fresh connection.
        """
        conn = psycopg.connect(dsn, autocommit=True)
        try:
            apply_migrations(conn)
        except BaseException:
            conn.close()
            raise
        return cls(conn, dsn=dsn, pool_size=pool_size, kek=kek, encrypt=encrypt)

    def _text(self, doc_id: str, sealed: bytes) -> str:
        """A sealed column's text; "" once the document's key is destroyed (a tombstone's title)."""
        return open_text(self.cipher, doc_id, sealed) or ""

    @property
    def _conn(self) -> psycopg.Connection[Row]:
        return self._lease.connection

    @property
    def pool(self) -> ConnectionPool:
        """The store's connections, for the adapters of other ports that share them (traces)."""
        return self._lease

    def close(self) -> None:
        self._lease.close()

    # --- DocumentStore ----------------------------------------------------------------------------

    def get_document(self, doc_id: str) -> StoredDocument | None:
        with self._lease:
            row = self._conn.execute(
                "SELECT " + _DOC_COLUMNS + " FROM documents WHERE doc_id = %s", (doc_id,)
            ).fetchone()
        return self._document(row) if row else None

    def get_documents(self, doc_ids: Sequence[str]) -> dict[str, StoredDocument]:
        if not doc_ids:
            return {}
        with self._lease:
            rows = self._conn.execute(
                "SELECT " + _DOC_COLUMNS + " FROM documents WHERE doc_id = ANY(%s)", (list(doc_ids),)
            ).fetchall()
        return {doc.doc_id: doc for doc in map(self._document, rows)}

    def list_documents(self, *, include_deleted: bool = False) -> list[StoredDocument]:
        with self._lease:
            rows = self._conn.execute(
                "SELECT " + _DOC_COLUMNS + " FROM documents WHERE %s OR status = 'ACTIVE' ORDER BY doc_id",
                (include_deleted,),
            ).fetchall()
        return [self._document(r) for r in rows]

    def known_sources(self, sources: Sequence[str], acl_class_ids: Sequence[str]) -> set[str]:
        """Which of `sources` name at least one active document of these ACL classes (the caller's)."""
        if not sources or not acl_class_ids:
            return set()
        with self._lease:
            rows = self._conn.execute(
                "SELECT s FROM unnest(%s::text[]) AS s WHERE EXISTS (SELECT 1 FROM documents d"
                " WHERE d.source = s AND d.status = 'ACTIVE' AND d.acl_class_id = ANY(%s))",
                (list(sources), list(acl_class_ids)),
            ).fetchall()
        return {r[0] for r in rows}

    def chunks_of(self, doc_id: str) -> list[Chunk]:
        with self._lease:
            rows = self._conn.execute(
                "SELECT " + _CHUNK_COLUMNS + " FROM chunks c JOIN documents d USING (doc_id)"
                " WHERE c.doc_id = %s AND d.status = 'ACTIVE' ORDER BY c.seq",
                (doc_id,),
            ).fetchall()
        return [self._chunk(r) for r in rows]

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        if not chunk_ids:
            return {}
        with self._lease:
            rows = self._conn.execute(
                "SELECT " + _CHUNK_COLUMNS + " FROM chunks c JOIN documents d USING (doc_id)"
                " WHERE c.chunk_id = ANY(%s) AND d.status = 'ACTIVE'",
                (list(chunk_ids),),
            ).fetchall()
        return {r[0]: self._chunk(r) for r in rows}

    def commit_document(
        self,
        doc: StoredDocument,
        acl: AclClass,
        chunks: Sequence[Chunk],
        *,
        embedding_keys: Mapping[str, str] | None = None,
    ) -> None:
        if doc.acl_class_id != acl.acl_class_id:
            raise ValueError(f"document {doc.doc_id} names ACL class {doc.acl_class_id}, not {acl.acl_class_id}")
        for ch in chunks:
            if ch.doc_id != doc.doc_id:
                raise ValueError(f"chunk {ch.chunk_id} belongs to {ch.doc_id}, not {doc.doc_id}")
        keep = [ch.chunk_id for ch in chunks]
        with self._lease, self._conn.transaction():
            # Inside the transaction: the key row and the rows sealed under it commit together.
            seal = self.cipher.sealer(doc.doc_id)
            seal_same = self.cipher.sealer(doc.doc_id, deterministic=True)
            # A concurrent deletion that destroyed the key after `sealer` read it makes this commit fail
            # (and its retry start over with a new key) instead of storing text nobody can open.
            self._lock_key(doc.doc_id)
            _store_acl_class(self._conn, acl)
            self._conn.execute(
                _UPSERT_DOC,
                (
                    doc.doc_id,
                    doc.source,
                    seal_text(seal, doc.uri),
                    seal_text(seal, doc.title),
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
            # Communities naming what the dropped chunks named go stale with them (0027).
            self._conn.execute("SELECT kg_communities_stale_for_chunks(%s, %s)", (doc.doc_id, keep))
            self._conn.execute("DELETE FROM chunks WHERE doc_id = %s AND NOT (chunk_id = ANY(%s))", (doc.doc_id, keep))
            if chunks:
                with self._conn.cursor() as cur:
                    cur.executemany(
                        _UPSERT_CHUNK,
                        [
                            _chunk_params(
                                ch,
                                seal_text(seal_same, json.dumps(list(ch.breadcrumb))),
                                seal_text(seal, ch.text),
                                (embedding_keys or {}).get(ch.chunk_id),
                            )
                            for ch in chunks
                        ],
                    )

    def commit_documents(
        self, items: Sequence[tuple[StoredDocument, AclClass, Sequence[Chunk], Mapping[str, str]]]
    ) -> None:
        # Each document's own transaction nests as a savepoint: one commit (one WAL flush) per batch.
        with self._lease, self._conn.transaction():
            for doc, acl, chunks, keys in items:
                self.commit_document(doc, acl, chunks, embedding_keys=keys)

    def _lock_key(self, doc_id: str) -> None:
        if isinstance(self.cipher, PlaintextCipher):
            return
        row = self._conn.execute("SELECT 1 FROM document_keys WHERE doc_id = %s FOR SHARE", (doc_id,)).fetchone()
        if row is None:
            raise RuntimeError(f"the data key of {doc_id!r} was destroyed by a concurrent deletion; retry")

    def update_acl(self, doc_id: str, acl: AclClass) -> bool:
        with self._lease, self._conn.transaction():
            _store_acl_class(self._conn, acl)
            found = self._conn.execute(
                "UPDATE documents SET acl_class_id = %s WHERE doc_id = %s AND status = 'ACTIVE' RETURNING doc_id",
                (acl.acl_class_id, doc_id),
            ).fetchone()
            if found is None:
                return False
            # Re-scoped evidence: the communities it supports go stale in this transaction (0027).
            self._conn.execute("SELECT kg_communities_stale_for_chunks(%s, '{}')", (doc_id,))
            # The text graph's edges first, in one statement: its trigger moves their counts in one key-ordered
            # pass (0030), where the per-chunk trigger below would take them chunk by chunk, in any order, and
            # could deadlock with a deletion or re-ingest sharing hot nodes; that trigger then finds nothing.
            self._conn.execute(
                "UPDATE text_graph_mentions SET acl_class_id = %s WHERE doc_id = %s AND acl_class_id <> %s",
                (acl.acl_class_id, doc_id, acl.acl_class_id),
            )
            self._conn.execute("UPDATE chunks SET acl_class_id = %s WHERE doc_id = %s", (acl.acl_class_id, doc_id))
        return True

    def mark_deleted(self, doc_id: str, record: DeletionRecord) -> None:
        if record.doc_id != doc_id:
            raise ValueError(f"deletion record is for {record.doc_id}, not {doc_id}")
        with self._lease, self._conn.transaction():
            # The tombstone keeps IDs, hashes and times; its title and URI become empty (unsealed), and
            # the earlier sealed values left in dead tuples lose their key below.
            found = self._conn.execute(
                "UPDATE documents SET status = 'DELETED', deleted_at = COALESCE(%s::timestamptz, now()),"
                " title = '\\x00'::bytea, uri = '\\x00'::bytea WHERE doc_id = %s RETURNING doc_id",
                (_utc_or_none(record.at), doc_id),
            ).fetchone()
            if found is None:
                # Raising rolls the transaction back: no audit row for a document that never existed.
                raise KgragError(ErrorCode.DOCUMENT_NOT_FOUND, f"no document {doc_id!r} to delete")
            # Before the chunks go, while they still name their entities (0027); listed in the record.
            stale = self._conn.execute("SELECT kg_communities_stale_for_chunks(%s, '{}')", (doc_id,)).fetchone()
            communities = sorted(set(record.communities) | set(stale[0] if stale else ()))
            self._conn.execute("DELETE FROM chunks WHERE doc_id = %s", (doc_id,))
            # Same transaction: the key goes exactly when the tombstone commits, never before.
            shredded = self.cipher.shred(doc_id)
            purges = [p for p in record.purges if p.store != "postgres"]
            purges.append(
                StorePurge(
                    "postgres",
                    PurgeStatus.SHREDDED if shredded else PurgeStatus.DELETED,
                    record.at,
                    "data key destroyed; dead tuples, WAL and backups hold only its ciphertext"
                    if shredded
                    else "no data key (written unencrypted): rows deleted, dead tuples remain until vacuumed",
                )
            )
            self._conn.execute(
                "INSERT INTO deletion_log (doc_id, chunk_ids, object_keys, stores, at, purges, communities)"
                " VALUES (%s, %s, %s, %s, COALESCE(%s::timestamptz, now()), %s, %s)",
                (
                    doc_id,
                    list(record.chunk_ids),
                    list(record.object_keys),
                    list(record.stores),
                    _utc_or_none(record.at),
                    Jsonb([p.as_dict() for p in purges]),
                    communities,
                ),
            )

    def deletion_records(self, doc_id: str) -> list[DeletionRecord]:
        with self._lease:
            rows = self._conn.execute(
                "SELECT doc_id, chunk_ids, object_keys, stores, at, purges, communities FROM deletion_log"
                " WHERE doc_id = %s ORDER BY id",
                (doc_id,),
            ).fetchall()
        return [
            DeletionRecord(
                r[0], tuple(r[1]), tuple(r[2]), tuple(r[3]), _utc(r[4]), tuple(map(_purge, r[5])), tuple(r[6])
            )
            for r in rows
        ]

    # --- AclStore -------------------------------------------------------------------------------------

    def acl_classes(self) -> list[AclClass]:
        with self._lease:
            rows = self._conn.execute(
                "SELECT acl_class_id, principals, malformed FROM acl_classes ORDER BY acl_class_id"
            ).fetchall()
        return [AclClass(r[0], tuple(r[1]), r[2]) for r in rows]

    # --- IngestLog ------------------------------------------------------------------------------------

    def record_outcomes(self, outcomes: Sequence[IngestOutcome]) -> None:
        if not outcomes:
            return
        with self._lease, self._conn.transaction():
            # The URI (often a file path that names the content) is sealed under the document's key, so a
            # deletion shreds the log's copies too; an empty one is stored as it is.
            sealers = {o.doc_id: self.cipher.sealer(o.doc_id) for o in outcomes if o.uri}
            params = [
                (
                    o.doc_id,
                    o.status.value,
                    o.source,
                    seal_text(sealers[o.doc_id], o.uri) if o.uri else b"\x00",
                    o.error_code.value if o.error_code else None,
                    o.message,
                    o.chunks_total,
                    o.chunks_embedded,
                    o.chunks_removed,
                    _utc_or_none(o.at),
                )
                for o in outcomes
            ]
            with self._conn.cursor() as cur:
                cur.executemany(_INSERT_OUTCOME, params)

    def recent_outcomes(self, limit: int = 100) -> list[IngestOutcome]:
        """The latest `limit` outcomes, newest first."""
        with self._lease:
            rows = self._conn.execute(_SELECT_OUTCOMES + " ORDER BY id DESC LIMIT %s", (limit,)).fetchall()
        return self._outcomes(rows)

    def outcomes_for(self, doc_id: str, limit: int = 20) -> list[IngestOutcome]:
        with self._lease:
            rows = self._conn.execute(
                _SELECT_OUTCOMES + " WHERE doc_id = %s ORDER BY id DESC LIMIT %s", (doc_id, limit)
            ).fetchall()
        return self._outcomes(rows)

    def _outcomes(self, rows: Sequence[Row]) -> list[IngestOutcome]:
        # The URI is sealed under its document's key: a deleted document's log rows read with an empty one.
        return [_outcome(r, self._text(r[0], bytes(r[3])) if r[3] is not None else "") for r in rows]

    def recent_errors(self, limit: int = 20) -> list[IngestOutcome]:
        """The latest `limit` rejected outcomes, newest first, however many successes came after them."""
        with self._lease:
            rows = self._conn.execute(
                _SELECT_OUTCOMES + " WHERE error_code IS NOT NULL ORDER BY id DESC LIMIT %s", (limit,)
            ).fetchall()
        return self._outcomes(rows)

    # --- EmbeddingCache ---------------------------------------------------------------------------------

    def get_vectors(self, model_id: str, hashes: Sequence[str]) -> dict[str, tuple[float, ...]]:
        if not hashes:
            return {}
        with self._lease:
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
        with self._lease, self._conn.transaction(), self._conn.cursor() as cur:
            # executemany pipelines the statements: one round trip per batch, not per vector.
            cur.executemany(
                "INSERT INTO embedding_cache (model_id, content_hash, dimension, vector)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                params,
            )

    def delete_vectors(self, model_id: str, hashes: Sequence[str]) -> int:
        if not hashes:
            return 0
        with self._lease:
            cur = self._conn.execute(
                "DELETE FROM embedding_cache WHERE model_id = %s AND content_hash = ANY(%s)", (model_id, list(hashes))
            )
        return cur.rowcount

    # --- sealed rows -> dataclasses ------------------------------------------------------------------

    def _document(self, r: Row) -> StoredDocument:
        return _document(r, self._text(r[0], r[2]), self._text(r[0], r[3]))

    def _chunk(self, r: Row) -> Chunk:
        text = open_text(self.cipher, r[1], r[6])
        crumb = open_text(self.cipher, r[1], r[3])
        if text is None or crumb is None:  # only chunks of active documents are read, and those have their key
            raise RuntimeError(f"chunk {r[0]} of {r[1]!r} is sealed under a key that is gone")
        return _chunk(r, tuple(json.loads(crumb)), text)

    # --- StatsSource ------------------------------------------------------------------------------------

    def stats(self) -> StoreStats:
        with self._lease:
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


def _purge(d: dict[str, str | None]) -> StorePurge:
    at = d.get("at")
    return StorePurge(
        store=str(d["store"]),
        status=PurgeStatus(str(d["status"])),
        at=_utc(datetime.fromisoformat(at)) if at else None,
        detail=str(d.get("detail") or ""),
    )


def _document(r: Row, uri: str, title: str) -> StoredDocument:
    return StoredDocument(
        doc_id=r[0],
        source=r[1],
        uri=uri,
        title=title,
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


def _chunk(r: Row, breadcrumb: tuple[str, ...], text: str) -> Chunk:
    return Chunk(
        chunk_id=r[0],
        doc_id=r[1],
        seq=r[2],
        breadcrumb=breadcrumb,
        start_byte=r[4],
        end_byte=r[5],
        text=text,
        token_count=r[7],
        content_hash=r[8],
        acl_class_id=r[9],
        doc_time=_utc_or_none(r[10]),
    )


def _chunk_params(ch: Chunk, sealed_breadcrumb: bytes, sealed_text: bytes, embedding_key: str | None) -> Row:
    return (
        ch.chunk_id,
        ch.doc_id,
        ch.seq,
        sealed_breadcrumb,
        ch.start_byte,
        ch.end_byte,
        sealed_text,
        ch.token_count,
        ch.content_hash,
        ch.acl_class_id,
        _utc_or_none(ch.doc_time),
        embedding_key,
    )


def _outcome(r: Row, uri: str) -> IngestOutcome:
    return IngestOutcome(
        doc_id=r[0],
        status=IngestStatus(r[1]),
        source=r[2] or "",
        uri=uri,
        error_code=ErrorCode(r[4]) if r[4] else None,
        message=r[5] or "",
        chunks_total=r[6] or 0,
        chunks_embedded=r[7] or 0,
        chunks_removed=r[8] or 0,
        at=_utc(r[9]),
    )


def _store_acl_class(conn: psycopg.Connection[Row], acl: AclClass) -> None:
    """Record an ACL class, or check that the stored row with its ID names exactly the same principals.

    Raising inside the caller's transaction rolls the whole commit back: the document is refused
    (ACL_CLASS_CONFLICT), never filed under another reader set.
    """
    inserted = conn.execute(_UPSERT_ACL, (acl.acl_class_id, list(acl.principals), acl.malformed)).rowcount
    if inserted:
        return
    row = conn.execute("SELECT principals FROM acl_classes WHERE acl_class_id = %s", (acl.acl_class_id,)).fetchone()
    if row is None or sorted(row[0]) != sorted(acl.principals):
        raise KgragError(
            ErrorCode.ACL_CLASS_CONFLICT,
            f"ACL class {acl.acl_class_id} is already stored for a different set of principals.",
            hint="Nothing was written. Report this: class IDs are meant to be collision-free.",
        )
