"""`TextGraphSource` in PostgreSQL: what the text-graph projection (kgrag_core.handlers.text_graph_projection)
is built from. Read-only over migration 0028's tables, one document at a time, in one snapshot."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import LiteralString

from kgrag_adapters.postgres.pool import ConnectionPool
from kgrag_core.handlers.text_graph_projection import ProjectedMention, ProjectedSynonym, TextGraphDocument
from kgrag_core.text_graph.model import MentionKind

_MENTIONS: LiteralString = (
    "SELECT chunk_id, node_key, acl_class_id, kind, weight FROM text_graph_mentions WHERE doc_id = %s"
    " ORDER BY chunk_id, node_key"
)
_SYNONYMS: LiteralString = (
    "SELECT s.node_a, s.node_b, s.chunk_id, s.acl_class_id, s.similarity FROM text_graph_synonyms s"
    " JOIN chunks c ON c.chunk_id = s.chunk_id WHERE c.doc_id = %s ORDER BY s.chunk_id, s.node_a, s.node_b"
)
_TITLED: LiteralString = "SELECT node_key FROM text_graph_nodes WHERE titled AND node_key = ANY(%s)"
_DOCUMENTS: LiteralString = (
    "SELECT doc_id FROM text_graph_mentions UNION"
    " SELECT c.doc_id FROM text_graph_synonyms s JOIN chunks c ON c.chunk_id = s.chunk_id ORDER BY 1"
)


class PostgresTextGraphSource:
    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool

    def text_graph_of(self, doc_id: str) -> TextGraphDocument:
        with self._pool as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            mentions = tuple(
                ProjectedMention(str(r[0]), str(r[1]), str(r[2]), MentionKind(r[3]), float(r[4]))
                for r in conn.execute(_MENTIONS, (doc_id,)).fetchall()
            )
            synonyms = tuple(
                ProjectedSynonym(str(r[0]), str(r[1]), str(r[2]), str(r[3]), float(r[4]))
                for r in conn.execute(_SYNONYMS, (doc_id,)).fetchall()
            )
            nodes = sorted({m.node_key for m in mentions} | {n for s in synonyms for n in (s.node_a, s.node_b)})
            titled = frozenset(str(r[0]) for r in conn.execute(_TITLED, (nodes,)).fetchall()) if nodes else frozenset()
        return TextGraphDocument(doc_id, mentions, synonyms, titled)

    def text_graph_documents(self) -> list[str]:
        with self._pool as conn:
            return [str(r[0]) for r in conn.execute(_DOCUMENTS).fetchall()]

    @contextmanager
    def exclusive(self, name: str) -> Iterator[None]:
        """A session-level advisory lock on this thread's leased connection for the block (session-level, not
        transaction-level: the snapshot read inside it runs a transaction of its own on the same connection)."""
        with self._pool as conn:
            conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (name,))
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (name,))
