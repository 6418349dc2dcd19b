-- 0001_init: the authoritative store.
--
-- PostgreSQL is the source of truth; the vector and keyword indexes are projections rebuilt from
-- `documents` + `chunks`. Plain SQL for PostgreSQL 15+ (the embedded server is 18, CI may run Debian's 15).
-- The runner (kgrag_adapters.postgres.migrate) applies this file inside one transaction and records it in
-- `schema_migrations`, so no statement here needs IF NOT EXISTS.

-- One row per distinct set of principals (see kgrag_core.acl). Documents and chunks carry only the class
-- ID, so a search filters on a short list of class IDs instead of on principals.
CREATE TABLE acl_classes (
    acl_class_id TEXT PRIMARY KEY,
    principals   TEXT[] NOT NULL,
    -- true when the source's ACL could not be parsed: the class is then private (admin only), and this
    -- flag says why, for operators.
    malformed    BOOLEAN NOT NULL DEFAULT false,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- "Which classes may principal X read?" is `principals && ARRAY[...]`, which GIN answers.
CREATE INDEX acl_classes_principals_gin ON acl_classes USING GIN (principals);

CREATE TABLE documents (
    doc_id       TEXT PRIMARY KEY,
    source       TEXT NOT NULL,
    uri          TEXT NOT NULL,
    title        TEXT NOT NULL,
    version      BIGINT NOT NULL,
    -- hash of the raw body: an event whose hash matches is UNCHANGED and skips chunking and embedding.
    content_hash TEXT NOT NULL,
    acl_class_id TEXT NOT NULL REFERENCES acl_classes (acl_class_id),
    modified_at  TIMESTAMPTZ,
    ingested_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- a deleted document keeps its row (tombstone) so replays and audits can see it was deleted;
    -- its chunks are removed.
    status       TEXT NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'DELETED')),
    media_type   TEXT NOT NULL,
    byte_length  INT NOT NULL CHECK (byte_length >= 0)
);

CREATE TABLE chunks (
    chunk_id        TEXT PRIMARY KEY,
    doc_id          TEXT NOT NULL REFERENCES documents (doc_id) ON DELETE CASCADE,
    seq             INT NOT NULL,
    -- the heading breadcrumb, outermost first.
    section_path    TEXT[] NOT NULL,
    -- [start_byte, end_byte) of the document's UTF-8 body; `text` is exactly those bytes (invariant 1).
    start_byte      INT NOT NULL CHECK (start_byte >= 0),
    end_byte        INT NOT NULL CHECK (end_byte > start_byte),
    text            TEXT NOT NULL,
    token_count     INT NOT NULL,
    -- hash of the chunk text: the embedding cache key, so an unchanged chunk is never embedded twice.
    content_hash    TEXT NOT NULL,
    -- denormalised from the document so projections can be rebuilt from this table alone.
    acl_class_id    TEXT NOT NULL REFERENCES acl_classes (acl_class_id),
    doc_time        TIMESTAMPTZ,
    -- which extraction pass produced the chunk's graph facts; NULL until one ran.
    extraction_tier INT,
    indexed_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- Deferred because a re-commit renumbers kept chunks: while the new set is upserted row by row, two
    -- rows may briefly share a seq. The check still runs, at commit.
    CONSTRAINT chunks_doc_id_seq_key UNIQUE (doc_id, seq) DEFERRABLE INITIALLY DEFERRED
);

-- (The unique index behind chunks_doc_id_seq_key also serves "chunks of doc X" and the cascade from
-- documents: a deferrable index still answers scans, it only cannot arbitrate ON CONFLICT.)
-- Finding chunks (across documents) that share a text, e.g. for embedding reuse and duplicate reports.
CREATE INDEX chunks_content_hash ON chunks (content_hash);

-- Vectors by (model, chunk text hash). REAL[] stores float32, the precision the embedding models emit.
CREATE TABLE embedding_cache (
    model_id     TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    dimension    INT NOT NULL CHECK (dimension > 0),
    vector       REAL[] NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (model_id, content_hash),
    CONSTRAINT embedding_cache_dimension_matches CHECK (cardinality(vector) = dimension)
);

-- Append-only: one row per document event, including rejected ones (with their stable error code).
CREATE TABLE ingest_log (
    id              BIGSERIAL PRIMARY KEY,
    doc_id          TEXT NOT NULL,
    status          TEXT NOT NULL,
    source          TEXT,
    uri             TEXT,
    error_code      TEXT,
    message         TEXT,
    chunks_total    INT,
    chunks_embedded INT,
    chunks_removed  INT,
    at              TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX ingest_log_doc_id ON ingest_log (doc_id);
-- Partial: most events succeed, and error reports only ever look at rows that carry a code.
CREATE INDEX ingest_log_error_code ON ingest_log (error_code) WHERE error_code IS NOT NULL;

-- Audit of every deletion (invariant 3): what was removed, from which stores. No foreign key to
-- `documents`, so the record outlives anything that happens to the document row later.
CREATE TABLE deletion_log (
    id          BIGSERIAL PRIMARY KEY,
    doc_id      TEXT NOT NULL,
    chunk_ids   TEXT[] NOT NULL,
    object_keys TEXT[] NOT NULL,
    stores      TEXT[] NOT NULL,
    at          TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX deletion_log_doc_id ON deletion_log (doc_id);
