-- 0007_visibility_by_evidence: what a graph read shows comes from evidence the caller may read (issue 9,
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
-- read (the entity row keeps the union over every mention, for resolution).
ALTER TABLE kg_mentions ADD COLUMN strong_ids JSONB NOT NULL DEFAULT '[]';

-- Rows written before: every mention of an entity keyed by a strong identifier carried that identifier (it
-- is how the mention found the entity), so it gets that one back; which one it is, the unkeyed id of the
-- time tells (ent_ + sha256 of type, US, kind:value, casefolded). Nothing else is known per mention: other
-- identifiers stay hidden until the chunk is extracted again, rather than shown to the wrong reader.
UPDATE kg_mentions m SET strong_ids = jsonb_build_array(k.pair)
FROM (
    SELECT e.entity_id, p.pair
    FROM kg_entities e, jsonb_array_elements(e.strong_ids) AS p(pair)
    WHERE e.entity_id = 'ent_' || left(encode(sha256(convert_to(
        e.type || E'\x1f' || lower(btrim(p.pair->>0)) || ':' || lower(btrim(p.pair->>1)), 'UTF8')), 'hex'), 20)
) AS k
WHERE m.entity_id = k.entity_id;

-- The degree that labelled each hub: a reader sees a hub only when the edges they may see reach it too.
ALTER TABLE kg_hubs ADD COLUMN min_degree INT NOT NULL DEFAULT 1;
