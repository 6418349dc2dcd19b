-- 0030_text_graph_counts: each text-graph node's passage count per ACL class, kept by triggers (issue 13).
--
-- A walk weighs a node by how many passages the caller can read name it, and drops nodes named by too many.
-- Counting those at query time read every mention of every first-hop node (a scan that grew with the graph);
-- summed over the caller's classes from here it is one index lookup per node, and still counts only what
-- the caller may read: a passage of a class the caller cannot read adds nothing to their sum.
-- The count is exact because a mention's class is its chunk's: a re-permissioned chunk's mentions take the
-- new class in the same transaction (the trigger on chunks below; the walk still checks both classes).
-- Statement-level triggers fold a whole statement into one upsert per (node, class), in key order, so
-- concurrent writers take the counters' row locks in the same order.
CREATE TABLE text_graph_node_passages (
    node_key      TEXT NOT NULL,
    acl_class_id  TEXT NOT NULL,
    passages      BIGINT NOT NULL,
    PRIMARY KEY (node_key, acl_class_id)
);

INSERT INTO text_graph_node_passages (node_key, acl_class_id, passages)
SELECT node_key, acl_class_id, count(*) FROM text_graph_mentions GROUP BY node_key, acl_class_id;
-- Statistics now, so the first walks after the upgrade look the counts up by key instead of scanning them.
ANALYZE text_graph_node_passages;

CREATE FUNCTION text_graph_mentions_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO text_graph_node_passages AS p (node_key, acl_class_id, passages)
    SELECT node_key, acl_class_id, count(*) FROM added GROUP BY node_key, acl_class_id
    ORDER BY node_key, acl_class_id
    ON CONFLICT (node_key, acl_class_id) DO UPDATE SET passages = p.passages + EXCLUDED.passages;
    RETURN NULL;
END $$;

CREATE FUNCTION text_graph_mentions_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO text_graph_node_passages AS p (node_key, acl_class_id, passages)
    SELECT node_key, acl_class_id, -count(*) FROM removed GROUP BY node_key, acl_class_id
    ORDER BY node_key, acl_class_id
    ON CONFLICT (node_key, acl_class_id) DO UPDATE SET passages = p.passages + EXCLUDED.passages;
    RETURN NULL;
END $$;

CREATE FUNCTION text_graph_mentions_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO text_graph_node_passages AS p (node_key, acl_class_id, passages)
    SELECT node_key, acl_class_id, sum(delta) FROM (
        SELECT node_key, acl_class_id, -1 AS delta FROM removed
        UNION ALL SELECT node_key, acl_class_id, 1 FROM added
    ) d GROUP BY node_key, acl_class_id HAVING sum(delta) <> 0
    ORDER BY node_key, acl_class_id
    ON CONFLICT (node_key, acl_class_id) DO UPDATE SET passages = p.passages + EXCLUDED.passages;
    RETURN NULL;
END $$;

CREATE TRIGGER text_graph_mentions_count_insert AFTER INSERT ON text_graph_mentions
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION text_graph_mentions_added();
-- Also fires for the rows ON DELETE CASCADE removes with their chunk (document deletion, re-chunking).
CREATE TRIGGER text_graph_mentions_count_delete AFTER DELETE ON text_graph_mentions
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION text_graph_mentions_removed();
CREATE TRIGGER text_graph_mentions_count_update AFTER UPDATE ON text_graph_mentions
    REFERENCING OLD TABLE AS removed NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION text_graph_mentions_moved();

CREATE FUNCTION text_graph_chunk_reclassified() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE text_graph_mentions SET acl_class_id = NEW.acl_class_id
    WHERE chunk_id = NEW.chunk_id AND acl_class_id <> NEW.acl_class_id;
    RETURN NULL;
END $$;

-- Per row and only when the class changes: the other updates of chunks (extraction tiers) pay nothing.
CREATE TRIGGER text_graph_chunks_reclassified AFTER UPDATE OF acl_class_id ON chunks
    FOR EACH ROW WHEN (OLD.acl_class_id IS DISTINCT FROM NEW.acl_class_id)
    EXECUTE FUNCTION text_graph_chunk_reclassified();
