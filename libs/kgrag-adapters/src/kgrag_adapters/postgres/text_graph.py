"""`TextGraphStore` in PostgreSQL (migration 0028): the authoritative text graph.

Node keys are blind indexes under the installation key (the one entity ids use), so the tables hold no
phrase. Every read of edges joins `chunks` and admits only chunks of the caller's ACL classes: the filter
runs in SQL, before anything reaches the walk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kgrag_adapters.postgres.pool import ConnectionPool
from kgrag_core.extraction.identity import blind
from kgrag_core.text_graph.model import MentionEdge, MentionKind, SynonymEdge, WalkEdge
from kgrag_core.text_graph.ports import Neighbourhood

_DOMAIN = "text_graph"

# Two hops from the seeds over visible edges only (NOT MATERIALIZED: the view is filtered, never scanned
# whole). Nodes whose visible passage count is over the cap are dropped before their edges are read.
_NEIGHBOURHOOD = """
WITH vis AS NOT MATERIALIZED (
    SELECT m.chunk_id, m.node_key, m.weight, m.kind
    FROM text_graph_mentions m JOIN chunks c ON c.chunk_id = m.chunk_id
    WHERE c.acl_class_id = ANY(%(allowed)s) AND m.acl_class_id = ANY(%(allowed)s)
),
syn AS (
    SELECT s.node_b AS node_key FROM text_graph_synonyms s JOIN chunks c ON c.chunk_id = s.chunk_id
    WHERE s.node_a = ANY(%(nodes)s) AND c.acl_class_id = ANY(%(allowed)s)
    UNION SELECT s.node_a FROM text_graph_synonyms s JOIN chunks c ON c.chunk_id = s.chunk_id
    WHERE s.node_b = ANY(%(nodes)s) AND c.acl_class_id = ANY(%(allowed)s)
),
seed_nodes AS (SELECT unnest(%(nodes)s::text[]) AS node_key UNION SELECT node_key FROM syn),
p1 AS (
    SELECT DISTINCT chunk_id FROM vis WHERE node_key IN (SELECT node_key FROM seed_nodes)
    UNION SELECT chunk_id FROM vis WHERE chunk_id = ANY(%(chunks)s)
),
n1 AS (SELECT DISTINCT node_key FROM vis WHERE chunk_id IN (SELECT chunk_id FROM p1)
       UNION SELECT node_key FROM seed_nodes),
df AS (
    SELECT node_key, count(*) AS df FROM vis WHERE node_key IN (SELECT node_key FROM n1)
    GROUP BY node_key HAVING count(*) <= %(cap)s
)
SELECT v.chunk_id, v.node_key, df.df, v.kind, v.weight FROM vis v JOIN df ON df.node_key = v.node_key
ORDER BY df.df, v.node_key, v.chunk_id
LIMIT %(limit)s
"""


class PostgresTextGraph:
    def __init__(self, pool: ConnectionPool, installation_key: Callable[[], bytes]) -> None:
        self._pool = pool
        self._key = installation_key

    def node_keys(self, phrases: Sequence[str]) -> dict[str, str]:
        key = self._key()
        return {p: blind(key, _DOMAIN, p) for p in phrases}

    def replace_document(
        self,
        doc_id: str,
        edges: Sequence[MentionEdge],
        synonyms: Sequence[SynonymEdge] = (),
        *,
        titled: Sequence[str] = (),
    ) -> list[str]:
        """Exactly `edges` for the document's passages, in one transaction; edges of a chunk deleted in the
        meantime are skipped (the chunk's deletion already took its edges)."""
        nodes = sorted({e.node_key for e in edges})
        with self._pool as conn, conn.transaction():
            new = conn.execute(
                "INSERT INTO text_graph_nodes (node_key) SELECT unnest(%s::text[])"
                " ON CONFLICT (node_key) DO NOTHING RETURNING node_key",
                (nodes,),
            ).fetchall()
            if titled:
                conn.execute("UPDATE text_graph_nodes SET titled = TRUE WHERE node_key = ANY(%s)", (list(titled),))
            conn.execute("DELETE FROM text_graph_mentions WHERE doc_id = %s", (doc_id,))
            conn.execute(
                """
                INSERT INTO text_graph_mentions (chunk_id, node_key, doc_id, acl_class_id, kind, weight)
                SELECT e.chunk_id, e.node_key, %s, e.acl, e.kind, e.weight
                FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::real[])
                     AS e(chunk_id, node_key, acl, kind, weight)
                WHERE EXISTS (SELECT 1 FROM chunks c WHERE c.chunk_id = e.chunk_id AND c.doc_id = %s)
                ON CONFLICT (chunk_id, node_key) DO UPDATE SET weight = EXCLUDED.weight, kind = EXCLUDED.kind,
                    acl_class_id = EXCLUDED.acl_class_id
                """,
                (
                    doc_id,
                    [e.chunk_id for e in edges],
                    [e.node_key for e in edges],
                    [e.acl_class_id for e in edges],
                    [e.kind.value for e in edges],
                    [e.weight for e in edges],
                    doc_id,
                ),
            )
            if synonyms:
                conn.execute(
                    """
                    INSERT INTO text_graph_synonyms (node_a, node_b, chunk_id, acl_class_id, similarity)
                    SELECT s.a, s.b, s.chunk_id, s.acl, s.sim
                    FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::real[])
                         AS s(a, b, chunk_id, acl, sim)
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
        return sorted(str(r[0]) for r in new)

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
        with self._pool as conn:
            # The passages the caller can read: specificity's denominator, over what they see only.
            row = conn.execute("SELECT count(*) FROM chunks WHERE acl_class_id = ANY(%s)", (list(allowed),)).fetchone()
            passages = int(row[0]) if row else 0
            cap = max(min_cap, int(max_share * passages))
            rows = conn.execute(
                _NEIGHBOURHOOD,
                {
                    "allowed": list(allowed),
                    "nodes": list(node_keys),
                    "chunks": list(chunk_ids),
                    "cap": cap,
                    "limit": max_edges + 1,
                },
            ).fetchall()
        edges = tuple(
            WalkEdge(str(r[0]), str(r[1]), int(r[2]), MentionKind(r[3]), float(r[4])) for r in rows[:max_edges]
        )
        return Neighbourhood(edges, passages, truncated=len(rows) > max_edges)
