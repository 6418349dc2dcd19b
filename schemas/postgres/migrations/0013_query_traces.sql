-- 0013_query_traces: a trace per search and ask, and the feedback that feeds the curation queue.
--
-- A trace's body holds ids, hashes, ranks, scores, counts and timings, never document text (the query only
-- as its SHA-256; kgrag_core.tracing.build): a deletion leaves nothing of a document's content here but
-- its chunk ids, which are hashes. `owner` is the principal that ran the query ('user:NAME' or
-- 'anonymous'); only it and admins may read the trace. Traces older than KGRAG_TRACE_RETENTION_DAYS are
-- purged, except while feedback on them is open (a curator still needs what produced the answer).
CREATE TABLE query_traces (
    trace_id   TEXT PRIMARY KEY,
    kind       TEXT NOT NULL CHECK (kind IN ('search', 'ask')),
    owner      TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    body       JSONB NOT NULL
);

-- The purge deletes by age.
CREATE INDEX query_traces_created_at ON query_traces (created_at);

-- Feedback goes with its trace (a purge only takes a trace once its feedback is resolved).
CREATE TABLE query_feedback (
    feedback_id TEXT PRIMARY KEY,
    trace_id    TEXT NOT NULL REFERENCES query_traces (trace_id) ON DELETE CASCADE,
    author      TEXT NOT NULL,
    rating      INT NOT NULL CHECK (rating BETWEEN 1 AND 5),
    issue       TEXT CHECK (issue IN ('WRONG_ENTITY', 'MISSING_SOURCE', 'UNSUPPORTED_CLAIM', 'OUTDATED', 'OTHER')),
    comment     TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')),
    created_at  TIMESTAMPTZ NOT NULL,
    resolved_by TEXT,
    resolved_at TIMESTAMPTZ,
    resolution  TEXT NOT NULL DEFAULT ''
);

CREATE INDEX query_feedback_trace_id ON query_feedback (trace_id);
CREATE INDEX query_feedback_open ON query_feedback (created_at DESC) WHERE status = 'open';
