"""`TextGraphStore` in PostgreSQL (migration 0028): the authoritative text graph.

Node keys are blind indexes under the installation key (the one entity ids use), so the tables hold no
phrase. Every read of edges joins `chunks` and admits only chunks of the caller's ACL classes: the filter
runs in SQL, before anything reaches the walk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from psycopg.types.json import Jsonb

from kgrag_adapters.postgres.pool import ConnectionPool
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.identity import blind
from kgrag_core.shredding import ContentCipher
from kgrag_core.text_graph.model import MentionEdge, MentionKind, SynonymEdge, WalkEdge
from kgrag_core.text_graph.ports import Neighbourhood, NewName

_DOMAIN = "text_graph"
_TOKEN_DOMAIN = "text_graph_word"
_CANDIDATES = 200  # stored names sharing a word that one new name is compared with, at most

# The whole neighbourhood in one round trip (the walk's latency was mostly four statements' round trips
# under load): the caller's passage count, the seeds' synonyms, the first hop and the edges above. The
# passage count rides on every row; the LEFT JOIN keeps it when no edge is found. A node's visible passage
# count is the sum of its per-class counts over the caller's classes (0030: one index lookup per node, not
# a count of its mentions); it is also the number of its visible edges, so the running sum in `df` says
# which nodes, least common first, fill the edge bound: only their edges are read. Nodes over the cap are
# dropped first, and so are nodes only one passage names (other than the seeds): a walk through one leads
# back where it came from.
# Visibility: an edge counts when its own class copy and, now, its chunk's class (authoritative; the copy is
# checked too, never trusted) are both the caller's. The chunk's class is looked up once per distinct chunk
# (`first`, `readable`), not once per edge (~4,000 probes a walk), and each step hands the next its keys as
# an array, so every read is one index scan over those keys instead of a scan of the whole table joined by
# hash (what the planner chose for the joins, and what grows with the corpus). Each CTE is materialised
# once; the statement is planned for its own arrays (never prepared: a generic plan guesses their sizes).
_NEIGHBOURHOOD = """
WITH total AS (SELECT count(*) AS n FROM chunks WHERE acl_class_id = ANY(%(allowed)s)),
seeds AS MATERIALIZED (
    SELECT unnest(%(nodes)s::text[]) AS node_key
    UNION SELECT s.node_b FROM text_graph_synonyms s JOIN chunks c ON c.chunk_id = s.chunk_id
    WHERE s.node_a = ANY(%(nodes)s) AND c.acl_class_id = ANY(%(allowed)s) AND s.acl_class_id = ANY(%(allowed)s)
    UNION SELECT s.node_a FROM text_graph_synonyms s JOIN chunks c ON c.chunk_id = s.chunk_id
    WHERE s.node_b = ANY(%(nodes)s) AND c.acl_class_id = ANY(%(allowed)s) AND s.acl_class_id = ANY(%(allowed)s)
),
first AS MATERIALIZED (
    SELECT c.chunk_id FROM chunks c
    WHERE c.chunk_id = ANY(ARRAY(
        SELECT unnest(%(chunks)s::text[])
        UNION SELECT m.chunk_id FROM text_graph_mentions m
        WHERE m.node_key = ANY(ARRAY(SELECT node_key FROM seeds)) AND m.acl_class_id = ANY(%(allowed)s)
    )) AND c.acl_class_id = ANY(%(allowed)s)
),
n1 AS MATERIALIZED (
    SELECT m.node_key FROM text_graph_mentions m
    WHERE m.chunk_id = ANY(ARRAY(SELECT chunk_id FROM first)) AND m.acl_class_id = ANY(%(allowed)s)
    UNION SELECT node_key FROM seeds
),
counted AS (
    SELECT p.node_key, sum(p.passages)::bigint AS df FROM text_graph_node_passages p
    WHERE p.node_key = ANY(ARRAY(SELECT node_key FROM n1)) AND p.acl_class_id = ANY(%(allowed)s)
    GROUP BY p.node_key
    HAVING sum(p.passages) > 0
    AND sum(p.passages) <= GREATEST(%(min_cap)s, floor(%(share)s * (SELECT n FROM total)))
    AND (sum(p.passages) > 1 OR p.node_key IN (SELECT node_key FROM seeds))
),
df AS MATERIALIZED (
    SELECT node_key, df FROM (
        SELECT node_key, df, sum(df) OVER (ORDER BY df, node_key) AS running FROM counted
    ) r WHERE running - df < %(limit)s
),
cand AS MATERIALIZED (
    SELECT m.chunk_id, m.node_key, m.kind, m.weight FROM text_graph_mentions m
    WHERE m.node_key = ANY(ARRAY(SELECT node_key FROM df)) AND m.acl_class_id = ANY(%(allowed)s)
),
readable AS MATERIALIZED (
    SELECT c.chunk_id FROM chunks c
    WHERE c.chunk_id = ANY(ARRAY(SELECT DISTINCT chunk_id FROM cand)) AND c.acl_class_id = ANY(%(allowed)s)
),
edges AS (
    SELECT e.chunk_id, e.node_key, df.df, e.kind, e.weight FROM cand e JOIN df ON df.node_key = e.node_key
    WHERE e.chunk_id IN (SELECT chunk_id FROM readable)
    ORDER BY df.df, e.node_key, e.chunk_id
    LIMIT %(limit)s
)
SELECT total.n, e.chunk_id, e.node_key, e.df, e.kind, e.weight
FROM total LEFT JOIN edges e ON TRUE
ORDER BY e.df, e.node_key, e.chunk_id
"""
_KINDS = {kind.value: kind for kind in MentionKind}
# The stored names sharing a word with each new name (`[{"k": node_key, "t": [word tokens]}, ...]`), the
# first `_CANDIDATES` by key for each, in one statement.
_CANDIDATES_OF_ALL = """
SELECT n.ord - 1, v.node_key, v.doc_id, v.vector
FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS n(name, ord)
CROSS JOIN LATERAL (
    SELECT node_key, doc_id, vector FROM text_graph_name_vectors
    WHERE tokens && ARRAY(SELECT jsonb_array_elements_text(n.name->'t')) AND node_key <> n.name->>'k'
    ORDER BY node_key LIMIT %s
) v
"""
# Every counter row a replacement will touch (its documents' old edges and its new ones), locked in one
# pass in key order before the DELETE and the INSERT, whose triggers (0030) each take their rows in key order
# but one after the other: two passes interleaved with another writer's one (a deletion's cascade) locked
# the same hot rows in opposite orders and deadlocked. A row not there yet is made with 0 (and locked).
_LOCK_COUNTERS = """
INSERT INTO text_graph_node_passages AS p (node_key, acl_class_id, passages)
SELECT node_key, acl_class_id, 0 FROM (
    SELECT node_key, acl_class_id FROM text_graph_mentions WHERE doc_id = ANY(%s)
    UNION SELECT * FROM unnest(%s::text[], %s::text[])
) k ORDER BY node_key, acl_class_id
ON CONFLICT (node_key, acl_class_id) DO UPDATE SET passages = p.passages
"""


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
            doc_ids = [doc_id for doc_id, _, _ in documents]
            pairs = sorted({(e.node_key, e.acl_class_id) for e in edges})
            conn.execute(_LOCK_COUNTERS, (doc_ids, [k for k, _ in pairs], [a for _, a in pairs]))
            conn.execute("DELETE FROM text_graph_mentions WHERE doc_id = ANY(%s)", (doc_ids,))
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
        """Each name against the stored names sharing a word with it and the names before it in `names`, as
        if stored one by one; the stored candidates of all names come in one statement and the new vectors
        go in one (per name, two statements and a key lookup were most of a batch's synonym time)."""
        if not names:
            return []
        key = self._key()
        tokens = [sorted({blind(key, _TOKEN_DOMAIN, w) for w in name.words}) for name in names]
        found: list[tuple[str, str, float]] = []
        with self._pool as conn, conn.transaction():
            rows = conn.execute(
                _CANDIDATES_OF_ALL,
                (Jsonb([{"k": n.node_key, "t": t} for n, t in zip(names, tokens, strict=True)]), _CANDIDATES),
            ).fetchall()
            stored: dict[int, list[tuple[str, np.ndarray]]] = {}
            for i, other, doc_id, sealed in rows:
                plain = self._cipher.open(str(doc_id), bytes(sealed))
                if plain is not None:  # None: its document was shredded, the name is gone with it
                    stored.setdefault(int(i), []).append((str(other), np.frombuffer(plain, dtype=np.float32)))
            sealers: dict[str, Callable[[bytes], bytes] | None] = {}
            kept: list[tuple[NewName, list[str], np.ndarray, bytes]] = []  # stored by the names before
            for i, (name, mine_tokens) in enumerate(zip(names, tokens, strict=True)):
                mine = np.asarray(name.vector, dtype=np.float32)
                earlier = [
                    (k.node_key, v) for k, t, v, _ in kept if k.node_key != name.node_key and set(t) & set(mine_tokens)
                ]
                for other, theirs in stored.get(i, []) + earlier:
                    norm = float(np.linalg.norm(mine) * np.linalg.norm(theirs))
                    cosine = float(mine @ theirs) / norm if norm else 0.0
                    if cosine >= threshold:
                        found.append((name.node_key, other, cosine))
                if name.doc_id not in sealers:
                    try:
                        sealers[name.doc_id] = self._cipher.sealer(name.doc_id, create=False)
                    except KgragError as err:
                        if err.code is not ErrorCode.CONTENT_SHREDDED:
                            raise
                        sealers[name.doc_id] = None  # deleted while being built: nothing of it is kept
                seal = sealers[name.doc_id]
                if seal is not None:
                    kept.append((name, mine_tokens, mine, seal(mine.tobytes())))
            if kept:
                conn.execute(
                    """
                    INSERT INTO text_graph_name_vectors (node_key, chunk_id, doc_id, tokens, vector)
                    SELECT v.node_key, v.chunk_id, v.doc_id, ARRAY(SELECT jsonb_array_elements_text(v.tokens)), v.vector
                    FROM unnest(%s::text[], %s::text[], %s::text[], %s::jsonb[], %s::bytea[])
                         AS v(node_key, chunk_id, doc_id, tokens, vector)
                    WHERE EXISTS (SELECT 1 FROM chunks c WHERE c.chunk_id = v.chunk_id)
                    ON CONFLICT (node_key) DO NOTHING
                    """,
                    (
                        [n.node_key for n, _, _, _ in kept],
                        [n.chunk_id for n, _, _, _ in kept],
                        [n.doc_id for n, _, _, _ in kept],
                        [Jsonb(t) for _, t, _, _ in kept],
                        [sealed for _, _, _, sealed in kept],
                    ),
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
            all_rows = conn.execute(_NEIGHBOURHOOD, params, prepare=False).fetchall()
        passages = int(all_rows[0][0]) if all_rows else 0
        # psycopg already returns text, bigint and real as str, int and float: one pass, no conversions.
        edges = tuple(WalkEdge(r[1], r[2], r[3], _KINDS[r[4]], r[5]) for r in all_rows if r[1] is not None)
        return Neighbourhood(edges[:max_edges], passages, truncated=len(edges) > max_edges)
