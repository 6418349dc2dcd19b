"""The TraceStore and CurationSource ports on PostgreSQL (tables query_traces and query_feedback, migration
0013; the graph tables of 0003/0004 for the curation reads).

Runs on a store's connection pool (`PostgresStore.pool`), so traces share the process's connections: a
batch of traces is one multi-row INSERT on one leased connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, LiteralString

from psycopg.types.json import Jsonb

from kgrag_adapters.postgres.pool import ConnectionPool
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.shredding import ContentCipher, open_text
from kgrag_core.tracing.curation import WeakEdge
from kgrag_core.tracing.model import Feedback, FeedbackIssue, FeedbackStatus, Trace, TraceKind, trace_not_found

Row = tuple[Any, ...]

# One statement per batch, its rows in one JSON parameter: parsed once by the server (an array of jsonb
# values, `unnest(%s::jsonb[])`, was five times slower: every element is quoted into an array literal).
_INSERT_TRACES: LiteralString = """
INSERT INTO query_traces (trace_id, kind, owner, created_at, body)
SELECT t ->> 'trace_id', t ->> 'kind', t ->> 'owner', (t ->> 'created_at')::timestamptz, t -> 'body'
FROM jsonb_array_elements(%s::jsonb) AS t
ON CONFLICT (trace_id) DO NOTHING
"""

_PURGE: LiteralString = """
DELETE FROM query_traces t WHERE t.created_at < %s
  AND NOT EXISTS (SELECT 1 FROM query_feedback f WHERE f.trace_id = t.trace_id AND f.status = 'open')
"""

_FEEDBACK_COLUMNS: LiteralString = (
    "feedback_id, trace_id, author, rating, issue, comment, created_at, status, resolved_by, resolved_at, resolution"
)

# Same attribute, same day written, more than one claim (a claim's id keys its normalised value; values
# are sealed on the evidence rows, migration 0010) among the claims that can be "the value" (positive
# facts and reports): a superset of the conflicts (values that only differ in case or spacing are one value
# to the timeline), which the timeline then decides.
_CONFLICTED: LiteralString = """
SELECT DISTINCT COALESCE(k.canonical_id, cl.entity_id) AS entity_id
FROM kg_claims cl
JOIN kg_claim_evidence ev ON ev.claim_id = cl.claim_id
JOIN chunks c ON c.chunk_id = ev.chunk_id
JOIN documents d ON d.doc_id = c.doc_id AND d.status = 'ACTIVE'
LEFT JOIN er_canonical k ON k.entity_id = cl.entity_id
WHERE cl.polarity = 'positive' AND cl.modality IN ('fact', 'reported')
GROUP BY COALESCE(k.canonical_id, cl.entity_id), cl.attribute, (c.doc_time AT TIME ZONE 'UTC')::date
HAVING count(DISTINCT cl.claim_id) > 1
ORDER BY 1
LIMIT %s
"""

# The names an edge is shown with are those its most confident evidence row gives (sealed under that
# row's document key, migration 0010): the queue is an admin view, and this needs no join to entity names.
_WEAK_EDGES: LiteralString = """
SELECT r.relation_id, COALESCE(ks.canonical_id, r.subject_id), r.relation,
       COALESCE(ko.canonical_id, r.object_id), r.modality, r.polarity,
       max(ev.confidence), array_agg(DISTINCT ev.chunk_id ORDER BY ev.chunk_id),
       (array_agg(ev.subject_name ORDER BY ev.confidence DESC, ev.chunk_id, ev.quote_key))[1],
       (array_agg(ev.object_name ORDER BY ev.confidence DESC, ev.chunk_id, ev.quote_key))[1],
       (array_agg(c.doc_id ORDER BY ev.confidence DESC, ev.chunk_id, ev.quote_key))[1]
FROM kg_relations r
JOIN kg_relation_evidence ev ON ev.relation_id = r.relation_id
JOIN chunks c ON c.chunk_id = ev.chunk_id
JOIN documents d ON d.doc_id = c.doc_id AND d.status = 'ACTIVE'
LEFT JOIN er_canonical ks ON ks.entity_id = r.subject_id
LEFT JOIN er_canonical ko ON ko.entity_id = r.object_id
GROUP BY r.relation_id, ks.canonical_id, ko.canonical_id
HAVING max(ev.confidence) < %s
ORDER BY max(ev.confidence), r.relation_id
LIMIT %s
"""


class PostgresTraceStore:
    """TraceStore and CurationSource on a pool of autocommit connections."""

    def __init__(self, pool: ConnectionPool, *, cipher: ContentCipher | None = None) -> None:
        self._pool = pool
        self._cipher = cipher  # opens the sealed names of the curation queue's edges; traces hold none

    # --- traces --------------------------------------------------------------------------------------------

    def save_traces(self, traces: Sequence[Trace]) -> None:
        if not traces:
            return
        rows = [
            {
                "trace_id": t.trace_id,
                "kind": t.kind.value,
                "owner": t.owner,
                "created_at": t.created_at.isoformat(),
                "body": dict(t.body),
            }
            for t in traces
        ]
        with self._pool as conn:
            conn.execute(_INSERT_TRACES, (Jsonb(rows),))

    def get_trace(self, trace_id: str) -> Trace | None:
        with self._pool as conn:
            row = conn.execute(
                "SELECT trace_id, kind, owner, created_at, body FROM query_traces WHERE trace_id = %s", (trace_id,)
            ).fetchone()
        if row is None:
            return None
        return Trace(str(row[0]), TraceKind(row[1]), str(row[2]), row[3], row[4])

    def purge_traces(self, older_than: datetime) -> int:
        with self._pool as conn:
            return conn.execute(_PURGE, (older_than,)).rowcount

    # --- feedback ------------------------------------------------------------------------------------------

    def add_feedback(self, feedback: Feedback) -> None:
        with self._pool as conn:
            row = conn.execute(
                "INSERT INTO query_feedback (feedback_id, trace_id, author, rating, issue, comment, created_at)"
                " SELECT %s, trace_id, %s, %s, %s, %s, %s FROM query_traces WHERE trace_id = %s"
                " ON CONFLICT (feedback_id) DO NOTHING RETURNING feedback_id",
                (
                    feedback.feedback_id,
                    feedback.author,
                    feedback.rating,
                    feedback.issue.value if feedback.issue else None,
                    feedback.comment,
                    feedback.created_at,
                    feedback.trace_id,
                ),
            ).fetchone()
        if row is None:
            exists = self._feedback_row(feedback.feedback_id)
            if exists is None:  # the trace was purged (or never stored)
                raise trace_not_found(feedback.trace_id)

    def list_feedback(self, *, status: FeedbackStatus | None = None, limit: int = 100) -> list[Feedback]:
        with self._pool as conn:
            rows = conn.execute(
                "SELECT " + _FEEDBACK_COLUMNS + " FROM query_feedback WHERE %(status)s::text IS NULL"
                " OR status = %(status)s ORDER BY created_at DESC, feedback_id LIMIT %(limit)s",
                {"status": status.value if status else None, "limit": limit},
            ).fetchall()
        return [_feedback(r) for r in rows]

    def resolve_feedback(self, feedback_id: str, *, by: str, resolution: str, at: datetime) -> Feedback | None:
        with self._pool as conn:
            row = conn.execute(
                "UPDATE query_feedback SET status = 'resolved', resolved_by = %s, resolved_at = %s, resolution = %s"
                " WHERE feedback_id = %s RETURNING " + _FEEDBACK_COLUMNS,
                (by, at, resolution, feedback_id),
            ).fetchone()
        return _feedback(row) if row else None

    def _feedback_row(self, feedback_id: str) -> Row | None:
        with self._pool as conn:
            row: Row | None = conn.execute(
                "SELECT " + _FEEDBACK_COLUMNS + " FROM query_feedback WHERE feedback_id = %s", (feedback_id,)
            ).fetchone()
        return row

    # --- CurationSource ------------------------------------------------------------------------------------

    def conflicted_entities(self, limit: int) -> list[str]:
        _positive(limit)
        with self._pool as conn:
            return [str(r[0]) for r in conn.execute(_CONFLICTED, (limit,)).fetchall()]

    def weak_edges(self, below: float, limit: int) -> list[WeakEdge]:
        _positive(limit)
        with self._pool as conn:
            rows = conn.execute(_WEAK_EDGES, (below, limit)).fetchall()
        if rows and self._cipher is None:
            raise KgragError(ErrorCode.CONFIGURATION_INVALID, "weak edges need the store's cipher to name them")
        return [_weak_edge(r, self._cipher) for r in rows if self._cipher is not None]


def _positive(limit: int) -> None:
    if limit < 1:
        raise KgragError(ErrorCode.INVALID_QUERY, f"limit must be at least 1, got {limit}")


def _weak_edge(r: Row, cipher: ContentCipher) -> WeakEdge:
    relation_id, subject_id, relation, object_id, modality, polarity = map(str, r[:6])
    doc_id = str(r[10])
    # A name whose document key is gone (deleted meanwhile) shows as empty, never as ciphertext.
    subject_name = open_text(cipher, doc_id, bytes(r[8])) or ""
    object_name = open_text(cipher, doc_id, bytes(r[9])) or ""
    return WeakEdge(
        relation_id, subject_id, subject_name, relation, object_id, object_name, modality, polarity,
        float(r[6]), tuple(r[7]),
    )  # fmt: skip


def _feedback(r: Row) -> Feedback:
    return Feedback(
        feedback_id=str(r[0]),
        trace_id=str(r[1]),
        author=str(r[2]),
        rating=int(r[3]),
        issue=FeedbackIssue(r[4]) if r[4] else None,
        comment=str(r[5]),
        created_at=r[6],
        status=FeedbackStatus(r[7]),
        resolved_by=r[8],
        resolved_at=r[9],
        resolution=str(r[10]),
    )
