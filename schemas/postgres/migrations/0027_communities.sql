-- 0027_communities: hierarchical communities over the resolved entity graph (kgrag_core.communities).
--
-- Built from the graph as resolution sees it (every active document, canonical ids); what a caller sees of
-- one is filtered at read time by the graph reader's visibility, never here. Ids are hashes of the level
-- and the sorted members: they name nothing. `stale` is set when a member loses or gains evidence (a
-- document changed, was deleted or re-scoped) and cleared only by reclustering, which replaces the row.
CREATE TABLE kg_communities (
    community_id  TEXT PRIMARY KEY,
    level         INT NOT NULL CHECK (level >= 0),
    parent_id     TEXT REFERENCES kg_communities (community_id) ON DELETE CASCADE,
    weight        DOUBLE PRECISION NOT NULL,
    size          INT NOT NULL,
    graph_version BIGINT NOT NULL,
    built_at      TIMESTAMPTZ NOT NULL,
    stale         BOOLEAN NOT NULL DEFAULT false,
    stale_since   TIMESTAMPTZ,
    content_hash  TEXT NOT NULL
);

CREATE INDEX kg_communities_level ON kg_communities (level, size DESC, community_id);
CREATE INDEX kg_communities_parent ON kg_communities (parent_id);
CREATE INDEX kg_communities_stale ON kg_communities (community_id) WHERE stale;

CREATE TABLE kg_community_members (
    community_id TEXT NOT NULL REFERENCES kg_communities (community_id) ON DELETE CASCADE,
    entity_id    TEXT NOT NULL,  -- canonical
    PRIMARY KEY (community_id, entity_id)
);

CREATE INDEX kg_community_members_entity ON kg_community_members (entity_id);

-- The communities a deletion or an ACL change made stale, in the deletion's own record.
ALTER TABLE deletion_log ADD COLUMN communities TEXT[] NOT NULL DEFAULT '{}';

-- Marks stale, in the caller's transaction, every community with a member (canonical) that this
-- document's chunks other than `keep` name (a mention, a relation's end, a claim's subject); returns
-- their ids, sorted. Called before those chunks go (a deletion: all of them; a re-ingest: the ones the
-- new version drops; an ACL change: all), so it still sees what they named.
CREATE FUNCTION kg_communities_stale_for_chunks(doc TEXT, keep TEXT[]) RETURNS TEXT[] LANGUAGE sql AS $$
    WITH named AS (
        SELECT m.entity_id FROM kg_mentions m JOIN chunks c ON c.chunk_id = m.chunk_id WHERE c.doc_id = doc AND NOT (c.chunk_id = ANY(keep))
        UNION
        SELECT unnest(ARRAY[r.subject_id, r.object_id]) FROM kg_relation_evidence ev
            JOIN kg_relations r ON r.relation_id = ev.relation_id
            JOIN chunks c ON c.chunk_id = ev.chunk_id WHERE c.doc_id = doc AND NOT (c.chunk_id = ANY(keep))
        UNION
        SELECT cl.entity_id FROM kg_claim_evidence cv JOIN kg_claims cl ON cl.claim_id = cv.claim_id
            JOIN chunks c ON c.chunk_id = cv.chunk_id WHERE c.doc_id = doc AND NOT (c.chunk_id = ANY(keep))
    ), canon AS (
        SELECT COALESCE(x.canonical_id, n.entity_id) AS entity_id FROM named n
            LEFT JOIN er_canonical x ON x.entity_id = n.entity_id
    ), marked AS (
        UPDATE kg_communities k SET stale = true, stale_since = COALESCE(k.stale_since, now())
        WHERE k.community_id IN (SELECT cm.community_id FROM kg_community_members cm
                                 WHERE cm.entity_id IN (SELECT entity_id FROM canon))
        RETURNING k.community_id
    )
    SELECT COALESCE(array_agg(community_id ORDER BY community_id), '{}') FROM marked;
$$;
