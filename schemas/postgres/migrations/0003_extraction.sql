-- 0003_extraction: extraction results and the facts they support (entities, relations, claims).
--
-- Facts are authoritative here, like documents and chunks; a graph database is a projection of them. Every
-- fact is bound to evidence: one row per supporting chunk with the verbatim quote. The invariant this file
-- keeps is that a fact never outlives its evidence. When a chunk row goes (PostgresStore deletes chunks
-- that a re-committed document no longer has, and every chunk of a deleted document), its evidence rows
-- cascade, and the statement-level triggers below remove, in the same transaction, the facts and entities
-- left with no evidence or mention. Statement-level with transition tables, so a commit that drops a
-- thousand chunks checks only the facts those chunks supported, once, and PostgresStore needs no change.
--
-- ACL class and the date written are deliberately NOT copied onto evidence rows: they are read from the
-- chunk row (`chunks.acl_class_id`, `chunks.doc_time`) at query time. PostgresStore.update_acl rewrites
-- `chunks.acl_class_id` and a re-commit may move `chunks.doc_time` without changing the chunk ID; a copy
-- would need a trigger to follow both and could still drift, a join through the chunk primary key cannot.

-- One row per ontology version; versions are immutable (the fingerprint tells two bodies apart).
CREATE TABLE ontology_versions (
    version     TEXT PRIMARY KEY,
    body        JSONB NOT NULL,
    fingerprint TEXT NOT NULL,
    active      BOOLEAN NOT NULL DEFAULT false,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
);

-- Every indexed row has active = true, so uniqueness means at most one active version.
CREATE UNIQUE INDEX ontology_versions_one_active ON ontology_versions (active) WHERE active;

-- Validated results by what determines them: the chunk text, the extractor and the ontology. An unchanged
-- chunk never costs a second model call. Keyed by text, not chunk: identical texts share one entry. The
-- entry holds quotes of the text, so a compliance deletion purges entries no live chunk has any more
-- (PostgresExtractionStore.purge_content).
CREATE TABLE extraction_cache (
    content_hash      TEXT NOT NULL,
    extractor_version TEXT NOT NULL,
    ontology_version  TEXT NOT NULL,
    tier              INT NOT NULL,
    result            JSONB NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (content_hash, extractor_version, ontology_version)
);

-- What happened to each live chunk: which tier handled it, under which versions, why it was skipped.
CREATE TABLE chunk_extractions (
    chunk_id                TEXT PRIMARY KEY REFERENCES chunks (chunk_id) ON DELETE CASCADE,
    content_hash            TEXT NOT NULL,
    tier                    INT NOT NULL,
    extractor_version       TEXT NOT NULL,
    ontology_version        TEXT NOT NULL,
    skip_reason             TEXT,
    -- no foreign key: a duplicate keeps its own evidence when its representative goes.
    representative_chunk_id TEXT,
    -- tier 3 wanted this chunk but could not run; a later run picks these up.
    pending_llm             BOOLEAN NOT NULL DEFAULT false,
    items                   INT NOT NULL,
    -- dropped items by reason, e.g. {"quote_not_found": 2}
    dropped                 JSONB NOT NULL DEFAULT '{}',
    extracted_at            TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX chunk_extractions_pending ON chunk_extractions (chunk_id) WHERE pending_llm;

-- Tier 0 near-duplicate detection: a MinHash signature per chunk text and its LSH band keys. `seq` orders
-- chunks by when they were first seen: the oldest copy is the representative.
CREATE TABLE chunk_minhash (
    chunk_id     TEXT PRIMARY KEY REFERENCES chunks (chunk_id) ON DELETE CASCADE,
    content_hash TEXT NOT NULL,
    doc_id       TEXT NOT NULL,
    -- unsigned 64-bit hash values stored two's-complement (BIGINT is signed); the adapter maps them back.
    signature    BIGINT[] NOT NULL,
    seq          BIGINT GENERATED ALWAYS AS IDENTITY,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Bands hang off the signature row (and so off the chunk): no band outlives its signature.
CREATE TABLE chunk_lsh_bands (
    band_key TEXT NOT NULL,
    chunk_id TEXT NOT NULL REFERENCES chunk_minhash (chunk_id) ON DELETE CASCADE,
    PRIMARY KEY (band_key, chunk_id)
);

-- The primary key serves band lookups; this one serves the cascade and the re-put of one chunk.
CREATE INDEX chunk_lsh_bands_chunk_id ON chunk_lsh_bands (chunk_id);

-- Entities by deterministic key (kgrag_core.extraction.identity): type + strong ID, else type + normalised
-- name. Entity resolution may merge them later; this table only dedupes exact repeats.
CREATE TABLE kg_entities (
    entity_id  TEXT PRIMARY KEY,
    type       TEXT NOT NULL,
    name       TEXT NOT NULL,
    norm_name  TEXT NOT NULL,
    -- [[kind, value], ...] sorted, distinct
    strong_ids JSONB NOT NULL DEFAULT '[]',
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX kg_entities_norm_name ON kg_entities (norm_name);

-- Where an entity is named: the surface form and the quote, per chunk.
CREATE TABLE kg_mentions (
    chunk_id   TEXT NOT NULL REFERENCES chunks (chunk_id) ON DELETE CASCADE,
    entity_id  TEXT NOT NULL REFERENCES kg_entities (entity_id),
    name       TEXT NOT NULL,
    norm_name  TEXT NOT NULL,
    tier       INT NOT NULL,
    quote      TEXT NOT NULL,
    -- keys hold the quote's hash: a quote may be longer than a btree entry may be (about 2.7 kB).
    quote_key  TEXT GENERATED ALWAYS AS (md5(quote)) STORED,
    confidence DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (chunk_id, entity_id, name, quote_key)
);

CREATE INDEX kg_mentions_entity_id ON kg_mentions (entity_id);
CREATE INDEX kg_mentions_norm_name ON kg_mentions (norm_name);

-- A relation is a fact; polarity, modality and valid_from are part of its identity (a negated or planned
-- edge is a different fact from the plain one).
CREATE TABLE kg_relations (
    relation_id TEXT PRIMARY KEY,
    subject_id  TEXT NOT NULL REFERENCES kg_entities (entity_id),
    relation    TEXT NOT NULL,
    object_id   TEXT NOT NULL REFERENCES kg_entities (entity_id),
    polarity    TEXT NOT NULL,
    modality    TEXT NOT NULL,
    valid_from  DATE,
    valid_to    DATE
);

CREATE INDEX kg_relations_subject_id ON kg_relations (subject_id);
CREATE INDEX kg_relations_object_id ON kg_relations (object_id);

CREATE TABLE kg_relation_evidence (
    relation_id TEXT NOT NULL REFERENCES kg_relations (relation_id) ON DELETE CASCADE,
    chunk_id    TEXT NOT NULL REFERENCES chunks (chunk_id) ON DELETE CASCADE,
    quote       TEXT NOT NULL,
    quote_key   TEXT GENERATED ALWAYS AS (md5(quote)) STORED,
    tier        INT NOT NULL,
    confidence  DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (relation_id, chunk_id, quote_key)
);

CREATE INDEX kg_relation_evidence_chunk_id ON kg_relation_evidence (chunk_id);

-- A claim: one value of one attribute of one entity. The date it was written is the evidence chunk's
-- doc_time (read through the join, see the header); status (current, superseded, conflict) is computed at
-- read time over the claims the reader may see, never stored.
CREATE TABLE kg_claims (
    claim_id   TEXT PRIMARY KEY,
    entity_id  TEXT NOT NULL REFERENCES kg_entities (entity_id),
    attribute  TEXT NOT NULL,
    value      TEXT NOT NULL,
    polarity   TEXT NOT NULL,
    modality   TEXT NOT NULL,
    valid_from DATE,
    valid_to   DATE
);

CREATE INDEX kg_claims_entity_attribute ON kg_claims (entity_id, attribute);

CREATE TABLE kg_claim_evidence (
    claim_id   TEXT NOT NULL REFERENCES kg_claims (claim_id) ON DELETE CASCADE,
    chunk_id   TEXT NOT NULL REFERENCES chunks (chunk_id) ON DELETE CASCADE,
    quote      TEXT NOT NULL,
    quote_key  TEXT GENERATED ALWAYS AS (md5(quote)) STORED,
    tier       INT NOT NULL,
    confidence DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (claim_id, chunk_id, quote_key)
);

CREATE INDEX kg_claim_evidence_chunk_id ON kg_claim_evidence (chunk_id);

-- Model replies that never became data, with the reason. The reply may quote chunk text, so a row goes
-- when any chunk it names goes (trigger below).
CREATE TABLE extraction_quarantine (
    id                BIGSERIAL PRIMARY KEY,
    chunk_ids         TEXT[] NOT NULL,
    reason            TEXT NOT NULL,
    reply             TEXT NOT NULL,
    extractor_version TEXT NOT NULL,
    at                TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX extraction_quarantine_chunk_ids ON extraction_quarantine USING GIN (chunk_ids);

-- Re-extraction runs: the dry run's preview and the real run's receipt side by side; done_chunk_ids makes
-- a real run resumable.
CREATE TABLE extraction_runs (
    run_id            TEXT PRIMARY KEY,
    scope             JSONB NOT NULL,
    extractor_version TEXT NOT NULL,
    ontology_version  TEXT NOT NULL,
    dry_run           BOOLEAN NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('planned', 'running', 'interrupted', 'completed')),
    preview           JSONB NOT NULL,
    receipt           JSONB,
    done_chunk_ids    TEXT[] NOT NULL DEFAULT '{}',
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    finished_at       TIMESTAMPTZ
);

-- --- a fact never outlives its evidence ---------------------------------------------------------------

-- Why SKIP LOCKED in the clean-ups below: PostgresExtractionStore.save upserts every fact and entity it is
-- about to refer to with DO UPDATE, which locks the row until it commits. A row locked by a concurrent save
-- is about to gain evidence, so the clean-up leaves it alone instead of waiting for the save and then
-- deleting a row the save's new evidence refers to (which would fail the document's commit with a foreign
-- key violation). The cost: if that save rolls back, the row stays without evidence until the next
-- clean-up that names it; readers never see it, since every read joins evidence.

-- Entities named by `candidates` that nothing refers to any more: no mention, no relation, no claim.
CREATE FUNCTION kg_drop_orphan_entities(candidates TEXT[]) RETURNS void LANGUAGE sql AS $$
    DELETE FROM kg_entities
    WHERE entity_id IN (
        SELECT e.entity_id FROM kg_entities e
        WHERE e.entity_id = ANY (candidates)
          AND NOT EXISTS (SELECT 1 FROM kg_mentions m WHERE m.entity_id = e.entity_id)
          AND NOT EXISTS (SELECT 1 FROM kg_relations r WHERE r.subject_id = e.entity_id)
          AND NOT EXISTS (SELECT 1 FROM kg_relations r WHERE r.object_id = e.entity_id)
          AND NOT EXISTS (SELECT 1 FROM kg_claims c WHERE c.entity_id = e.entity_id)
        FOR UPDATE SKIP LOCKED
    )
$$;

CREATE FUNCTION kg_relation_evidence_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM kg_relations
    WHERE relation_id IN (
        SELECT r.relation_id FROM kg_relations r
        WHERE r.relation_id IN (SELECT g.relation_id FROM gone g)
          AND NOT EXISTS (SELECT 1 FROM kg_relation_evidence e WHERE e.relation_id = r.relation_id)
        FOR UPDATE SKIP LOCKED
    );
    RETURN NULL;
END
$$;

CREATE TRIGGER kg_relation_evidence_gone AFTER DELETE ON kg_relation_evidence
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION kg_relation_evidence_gone();

CREATE FUNCTION kg_claim_evidence_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM kg_claims
    WHERE claim_id IN (
        SELECT c.claim_id FROM kg_claims c
        WHERE c.claim_id IN (SELECT g.claim_id FROM gone g)
          AND NOT EXISTS (SELECT 1 FROM kg_claim_evidence e WHERE e.claim_id = c.claim_id)
        FOR UPDATE SKIP LOCKED
    );
    RETURN NULL;
END
$$;

CREATE TRIGGER kg_claim_evidence_gone AFTER DELETE ON kg_claim_evidence
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION kg_claim_evidence_gone();

CREATE FUNCTION kg_mentions_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM kg_drop_orphan_entities(ARRAY(SELECT DISTINCT g.entity_id FROM gone g));
    RETURN NULL;
END
$$;

CREATE TRIGGER kg_mentions_gone AFTER DELETE ON kg_mentions
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION kg_mentions_gone();

CREATE FUNCTION kg_relations_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM kg_drop_orphan_entities(
        ARRAY(SELECT g.subject_id FROM gone g UNION SELECT g.object_id FROM gone g)
    );
    RETURN NULL;
END
$$;

CREATE TRIGGER kg_relations_gone AFTER DELETE ON kg_relations
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION kg_relations_gone();

CREATE FUNCTION kg_claims_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM kg_drop_orphan_entities(ARRAY(SELECT DISTINCT g.entity_id FROM gone g));
    RETURN NULL;
END
$$;

CREATE TRIGGER kg_claims_gone AFTER DELETE ON kg_claims
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION kg_claims_gone();

-- A quarantined reply may quote the text of any chunk it names: it goes with the first of them to go.
CREATE FUNCTION extraction_quarantine_chunks_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM extraction_quarantine q WHERE q.chunk_ids && ARRAY(SELECT g.chunk_id FROM gone g);
    RETURN NULL;
END
$$;

CREATE TRIGGER chunks_gone_quarantine AFTER DELETE ON chunks
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION extraction_quarantine_chunks_gone();
