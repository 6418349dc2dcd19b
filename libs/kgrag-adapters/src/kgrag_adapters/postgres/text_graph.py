"""`TextGraphStore` in PostgreSQL (migration 0028): the authoritative text graph.

Node keys are blind indexes under the installation key (the one entity ids use), so the tables hold no
phrase. Every read of edges joins `chunks` and admits only chunks of the caller's ACL classes: the filter
runs in SQL, before anything reaches the walk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from kgrag_adapters.postgres.pool import ConnectionPool
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.identity import blind
from kgrag_core.shredding import ContentCipher
from kgrag_core.text_graph.model import MentionEdge, MentionKind, SynonymEdge, WalkEdge
from kgrag_core.text_graph.ports import Neighbourhood, NewName

_DOMAIN = "text_graph"
_TOKEN_DOMAIN = "text_graph_word"
_CANDIDATES = 200  # stored names sharing a word that one new name is compared with, at most

# Each hop is one indexed query over visible edges only: an edge counts when its chunk, now, is of a class
# the caller may read (the chunk's class is authoritative; the edge's copy is checked too, never trusted).
_VISIBLE = (
    "JOIN chunks c ON c.chunk_id = m.chunk_id"
    " AND c.acl_class_id = ANY(%(allowed)s) AND m.acl_class_id = ANY(%(allowed)s)"
)
# The whole neighbourhood in one round trip (the walk's latency was mostly four statements' round trips
# under load): the caller's passage count, the seeds' synonyms, the first hop and the edges above. The
# passage count rides on every row; the LEFT JOIN keeps it when no edge is found. A node's visible passage
# count is the sum of its per-class counts over the caller's classes (0030: one index lookup per node, not
# a count of its mentions); it is also the number of its visible edges, so the running sum in `df` says
# which nodes, least common first, fill the edge bound: only their edges are read. Nodes over the cap are
# dropped first, and so are nodes only one passage names (other than the seeds): a walk through one leads
# back where it came from.
_NEIGHBOURHOOD = f"""
WITH total AS (SELECT count(*) AS n FROM chunks WHERE acl_class_id = ANY(%(allowed)s)),
seeds AS (
    SELECT unnest(%(nodes)s::text[]) AS node_key
    UNION SELECT s.node_b FROM text_graph_synonyms s JOIN chunks c ON c.chunk_id = s.chunk_id
    WHERE s.node_a = ANY(%(nodes)s) AND c.acl_class_id = ANY(%(allowed)s) AND s.acl_class_id = ANY(%(allowed)s)
    UNION SELECT s.node_a FROM text_graph_synonyms s JOIN chunks c ON c.chunk_id = s.chunk_id
    WHERE s.node_b = ANY(%(nodes)s) AND c.acl_class_id = ANY(%(allowed)s) AND s.acl_class_id = ANY(%(allowed)s)
),
first AS (
    SELECT unnest(%(chunks)s::text[]) AS chunk_id
    UNION SELECT m.chunk_id FROM text_graph_mentions m {_VISIBLE} WHERE m.node_key IN (SELECT node_key FROM seeds)
),
n1 AS (
    SELECT m.node_key FROM text_graph_mentions m {_VISIBLE} WHERE m.chunk_id IN (SELECT chunk_id FROM first)
    UNION SELECT node_key FROM seeds
),
counted AS (
    SELECT p.node_key, sum(p.passages)::bigint AS df FROM text_graph_node_passages p
    WHERE p.node_key IN (SELECT node_key FROM n1) AND p.acl_class_id = ANY(%(allowed)s)
    GROUP BY p.node_key
    HAVING sum(p.passages) > 0
    AND sum(p.passages) <= GREATEST(%(min_cap)s, floor(%(share)s * (SELECT n FROM total)))
    AND (sum(p.passages) > 1 OR p.node_key IN (SELECT node_key FROM seeds))
),
df AS (
    SELECT node_key, df FROM (
        SELECT node_key, df, sum(df) OVER (ORDER BY df, node_key) AS running FROM counted
    ) r WHERE running - df < %(limit)s
),
edges AS (
    SELECT m.chunk_id, m.node_key, df.df, m.kind, m.weight
    FROM df JOIN text_graph_mentions m ON m.node_key = df.node_key {_VISIBLE}
    ORDER BY df.df, m.node_key, m.chunk_id
    LIMIT %(limit)s
)
SELECT total.n, e.chunk_id, e.node_key, e.df, e.kind, e.weight
FROM total LEFT JOIN edges e ON TRUE
ORDER BY e.df, e.node_key, e.chunk_id
"""
_KINDS = {kind.value: kind for kind in MentionKind}


class PostgresTextGraph:
    def __init__(self, pool: ConnectionPool, installation_key: Callable[[], bytes], cipher: ContentCipher) -> None:
        self._pool = pool
        self._key = installation_key
        self._cipher = cipher  # name vectors are sealed under their document's data key (ADR 0008)

    def node_keys(self, phrases: Sequence[str]) -> dict[str, str]:
        key = self._key()
        return {p: blind(key, _DOMAIN, p) for p in phrases}

    def replace_document(
        self,
        doc_id: str,
        edges: Sequence[MentionEdge],
        *,
        titled: Sequence[str] = (),
    ) -> list[str]:
        """Exactly `edges` for the document's passages, in one transaction; edges of a chunk deleted in the
        meantime are skipped (the chunk's deletion already took its edges)."""
        return self.replace_documents([(doc_id, edges, titled)])[0]

    def replace_documents(
        self, documents: Sequence[tuple[str, Sequence[MentionEdge], Sequence[str]]]
    ) -> list[list[str]]:
        """`replace_document` for each (doc_id, edges, titled) in one transaction (a bus batch: one commit,
        four statements, instead of per document); a node new to the graph is new to the first document
        that has it."""
        if not documents:
            return []
        edges = [e for _, doc_edges, _ in documents for e in doc_edges]
        nodes = sorted({e.node_key for e in edges})
        titled = sorted({t for _, _, doc_titled in documents for t in doc_titled})
        with self._pool as conn, conn.transaction():
            new = {
                str(r[0])
                for r in conn.execute(
                    "INSERT INTO text_graph_nodes (node_key) SELECT unnest(%s::text[])"
                    " ON CONFLICT (node_key) DO NOTHING RETURNING node_key",
                    (nodes,),
                ).fetchall()
            }
            if titled:
                conn.execute("UPDATE text_graph_nodes SET titled = TRUE WHERE node_key = ANY(%s)", (titled,))
            conn.execute(
                "DELETE FROM text_graph_mentions WHERE doc_id = ANY(%s)", ([doc_id for doc_id, _, _ in documents],)
            )
            conn.execute(
                """
                INSERT INTO text_graph_mentions (chunk_id, node_key, doc_id, acl_class_id, kind, weight)
                SELECT e.chunk_id, e.node_key, e.doc_id, e.acl, e.kind, e.weight
                FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::real[])
                     AS e(chunk_id, node_key, doc_id, acl, kind, weight)
                WHERE EXISTS (SELECT 1 FROM chunks c WHERE c.chunk_id = e.chunk_id AND c.doc_id = e.doc_id)
                ON CONFLICT (chunk_id, node_key) DO UPDATE SET weight = EXCLUDED.weight, kind = EXCLUDED.kind,
                    acl_class_id = EXCLUDED.acl_class_id
                """,
                (
                    [e.chunk_id for e in edges],
                    [e.node_key for e in edges],
                    [doc_id for doc_id, doc_edges, _ in documents for _ in doc_edges],
                    [e.acl_class_id for e in edges],
                    [e.kind.value for e in edges],
                    [e.weight for e in edges],
                ),
            )
        out: list[list[str]] = []
        for _, doc_edges, _ in documents:
            mine = sorted(new & {e.node_key for e in doc_edges})
            new.difference_update(mine)
            out.append(mine)
        return out

    def add_synonyms(self, synonyms: Sequence[SynonymEdge]) -> None:
        if not synonyms:
            return
        with self._pool as conn:
            conn.execute(
                """
                INSERT INTO text_graph_synonyms (node_a, node_b, chunk_id, acl_class_id, similarity)
                SELECT s.a, s.b, s.chunk_id, s.acl, s.sim
                FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::real[]) AS s(a, b, chunk_id, acl, sim)
                WHERE EXISTS (SELECT 1 FROM chunks c WHERE c.chunk_id = s.chunk_id)
                ON CONFLICT DO NOTHING
                """,
                (
                    [s.node_a for s in synonyms],
                    [s.node_b for s in synonyms],
                    [s.chunk_id for s in synonyms],
                    [s.acl_class_id for s in synonyms],
                    [s.similarity for s in synonyms],
                ),
            )

    def similar_names(self, names: Sequence[NewName], threshold: float) -> list[tuple[str, str, float]]:
        if not names:
            return []
        key = self._key()
        found: list[tuple[str, str, float]] = []
        with self._pool as conn, conn.transaction():
            for name in names:
                tokens = sorted({blind(key, _TOKEN_DOMAIN, w) for w in name.words})
                rows = conn.execute(
                    "SELECT node_key, doc_id, vector FROM text_graph_name_vectors"
                    " WHERE tokens && %s::text[] AND node_key <> %s ORDER BY node_key LIMIT %s",
                    (tokens, name.node_key, _CANDIDATES),
                ).fetchall()
                mine = np.asarray(name.vector, dtype=np.float32)
                for other, doc_id, sealed in rows:
                    plain = self._cipher.open(str(doc_id), bytes(sealed))
                    if plain is None:  # its document was shredded: the name is gone with it
                        continue
                    theirs = np.frombuffer(plain, dtype=np.float32)
                    norm = float(np.linalg.norm(mine) * np.linalg.norm(theirs))
                    cosine = float(mine @ theirs) / norm if norm else 0.0
                    if cosine >= threshold:
                        found.append((name.node_key, str(other), cosine))
                try:
                    sealed_vector = self._cipher.sealer(name.doc_id, create=False)(mine.tobytes())
                except KgragError as err:
                    if err.code is not ErrorCode.CONTENT_SHREDDED:
                        raise
                    continue  # deleted while being built: nothing of it is kept
                conn.execute(
                    "INSERT INTO text_graph_name_vectors (node_key, chunk_id, doc_id, tokens, vector)"
                    " SELECT %s, %s, %s, %s, %s WHERE EXISTS (SELECT 1 FROM chunks WHERE chunk_id = %s)"
                    " ON CONFLICT (node_key) DO NOTHING",
                    (name.node_key, name.chunk_id, name.doc_id, tokens, sealed_vector, name.chunk_id),
                )
        return found

    def delete_document(self, doc_id: str) -> None:
        with self._pool as conn, conn.transaction():
            conn.execute("DELETE FROM text_graph_mentions WHERE doc_id = %s", (doc_id,))
            conn.execute(
                "DELETE FROM text_graph_synonyms s USING chunks c WHERE c.chunk_id = s.chunk_id AND c.doc_id = %s",
                (doc_id,),
            )

    def titled(self, node_keys: Sequence[str]) -> set[str]:
        """Which of these nodes are some document's title."""
        if not node_keys:
            return set()
        with self._pool as conn:
            rows = conn.execute(
                "SELECT node_key FROM text_graph_nodes WHERE titled AND node_key = ANY(%s)", (list(node_keys),)
            ).fetchall()
        return {str(r[0]) for r in rows}

    def neighbourhood(
        self,
        node_keys: Sequence[str],
        chunk_ids: Sequence[str],
        allowed: Sequence[str],
        *,
        max_share: float,
        min_cap: int,
        max_edges: int,
    ) -> Neighbourhood:
        if not allowed or not (node_keys or chunk_ids):
            return Neighbourhood((), 0)
        params: dict[str, object] = {
            "allowed": list(allowed),
            "nodes": list(node_keys),
            "chunks": list(chunk_ids),
            "min_cap": min_cap,
            "share": max_share,
            "limit": max_edges + 1,
        }
        with self._pool as conn:
            all_rows = conn.execute(_NEIGHBOURHOOD, params).fetchall()
        passages = int(all_rows[0][0]) if all_rows else 0
        # psycopg already returns text, bigint and real as str, int and float: one pass, no conversions.
        edges = tuple(WalkEdge(r[1], r[2], r[3], _KINDS[r[4]], r[5]) for r in all_rows if r[1] is not None)
        return Neighbourhood(edges[:max_edges], passages, truncated=len(edges) > max_edges)
