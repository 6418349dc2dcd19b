-- 0006_visibility_by_evidence: what a graph read shows comes from evidence the caller may read (issue 9,
-- docs/security.md sections 1-3).

-- A per-installation secret keys entity ids (kgrag_core.extraction.identity.entity_id), so nobody outside
-- can compute the id of a name and probe whether it exists. Generated once, here, from the server's strong
-- random source (gen_random_uuid draws 122 random bits; two of them make the key); KGRAG_ENTITY_ID_KEY may
-- set it instead before the first entity is stored. One row.
CREATE TABLE kg_installation (
    singleton     BOOLEAN PRIMARY KEY DEFAULT true CHECK (singleton),
    entity_id_key BYTEA NOT NULL
);
INSERT INTO kg_installation (entity_id_key)
VALUES (decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));

-- The strong identifiers a mention carried, so a reader is shown only the identifiers of mentions it may
-- read (the entity row keeps the union over every mention, for resolution). Rows written before this
-- migration carry none until their chunk is extracted again: hidden rather than shown to the wrong reader.
ALTER TABLE kg_mentions ADD COLUMN strong_ids JSONB NOT NULL DEFAULT '[]';

-- The degree that labelled each hub: a reader sees a hub only when the edges they may see reach it too.
ALTER TABLE kg_hubs ADD COLUMN min_degree INT NOT NULL DEFAULT 1;
