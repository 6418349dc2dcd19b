-- 0011_namesakes: mentions of one name in different documents may be different entities ("senses").
--
-- Extraction keys a mention by type + normalised name (or strong identifier): every mention of "Acme" the
-- Organization lands on one entity row, the name's group. A split names documents whose mentions of the
-- group stand for another entity (a namesake: "Acme" the customer, "Acme" the vendor); their facts move to
-- that sense's own keyed id (kgrag_core.extraction.identity.sense_entity_id), and extraction keys those
-- documents' mentions into it again on every later save (a re-ingest, an ACL change, a re-extraction), so a
-- split, by a curator or by resolution, outlives the facts it is about. The split log is the truth; a split
-- is undone by merging the sense back (an ordinary, logged merge).

CREATE TABLE er_split_log (
    split_id   TEXT PRIMARY KEY,
    -- the entity whose mentions in doc_ids were split off, and the name group they belong to
    from_id    TEXT NOT NULL,
    group_id   TEXT NOT NULL,
    -- the sense the mentions moved to
    entity_id  TEXT NOT NULL,
    doc_ids    TEXT[] NOT NULL,
    -- the PairDecision that decided it (resolution) or the curator's reason
    basis      JSONB NOT NULL DEFAULT '[]',
    reason     TEXT NOT NULL DEFAULT '',
    decided_by TEXT NOT NULL CHECK (decided_by IN ('auto', 'override')),
    seq        BIGINT GENERATED ALWAYS AS IDENTITY,
    created_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    CHECK (cardinality(doc_ids) > 0),
    CHECK (from_id <> entity_id)
);

CREATE INDEX er_split_log_entity_id ON er_split_log (entity_id);

-- Which sense a document's mentions of a group stand for (the newest split naming the document wins). Rows
-- name documents, not chunks: chunk ids change when a document is re-chunked, its id does not. A deleted
-- document's rows stay, so ingesting it again puts its mentions back in their sense.
CREATE TABLE er_senses (
    group_id  TEXT NOT NULL,
    doc_id    TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    split_id  TEXT NOT NULL REFERENCES er_split_log (split_id),
    PRIMARY KEY (group_id, doc_id)
);

CREATE INDEX er_senses_doc_id ON er_senses (doc_id);

-- Merges resting on restricted evidence (docs/security.md, section 1): the ACL classes a reader must hold,
-- all of them, to be shown that this member belongs to its cluster; to anyone else it stands alone. Derived
-- with the rest of the mapping from the merge log (each pair decision's `requires`), by recluster.
ALTER TABLE er_canonical ADD COLUMN requires TEXT[] NOT NULL DEFAULT '{}';
