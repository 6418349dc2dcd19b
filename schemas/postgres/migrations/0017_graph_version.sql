-- 0017_graph_version: the graph's version, so a reader of the Neo4j projection knows whether it is behind.
--
-- Every change PostgreSQL makes to what a graph reader may answer (a document's status, ACL or date, its
-- chunks, the extracted graph, the entity mapping, the hub labels) draws the next value of this sequence.
-- The graph-writer stores in Neo4j the value it read before projecting a batch (its watermark); a reader
-- routes to Neo4j only while that watermark has reached the current value (docs/operations.md, "Graph
-- reads"). A sequence, not a counter row: drawing takes no lock (writers never queue or deadlock on it),
-- and a value drawn by a transaction that rolls back only makes readers fall back to PostgreSQL once more.
CREATE SEQUENCE kg_graph_version_seq;

CREATE FUNCTION kg_bump_graph_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM nextval('kg_graph_version_seq');
    RETURN NULL;
END;
$$;

-- Per row, so a statement that changes nothing (an upsert of what is there) draws nothing.
CREATE TRIGGER documents_graph_version AFTER INSERT OR DELETE ON documents
    FOR EACH ROW EXECUTE FUNCTION kg_bump_graph_version();
CREATE TRIGGER documents_graph_version_update AFTER UPDATE ON documents
    FOR EACH ROW WHEN ((OLD.status, OLD.acl_class_id, OLD.modified_at) IS DISTINCT FROM
                       (NEW.status, NEW.acl_class_id, NEW.modified_at))
    EXECUTE FUNCTION kg_bump_graph_version();
CREATE TRIGGER chunks_graph_version AFTER INSERT OR DELETE ON chunks
    FOR EACH ROW EXECUTE FUNCTION kg_bump_graph_version();
CREATE TRIGGER chunks_graph_version_update AFTER UPDATE ON chunks
    FOR EACH ROW WHEN ((OLD.doc_id, OLD.acl_class_id, OLD.doc_time) IS DISTINCT FROM
                       (NEW.doc_id, NEW.acl_class_id, NEW.doc_time))
    EXECUTE FUNCTION kg_bump_graph_version();

DO $$
DECLARE
    t TEXT;
BEGIN
    FOREACH t IN ARRAY ARRAY['kg_entities', 'kg_mentions', 'kg_relations', 'kg_relation_evidence', 'kg_claims',
                             'kg_claim_evidence', 'er_canonical', 'kg_hubs'] LOOP
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT OR DELETE ON %I FOR EACH ROW '
                       'EXECUTE FUNCTION kg_bump_graph_version()', t || '_graph_version', t);
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %I FOR EACH ROW WHEN (OLD.* IS DISTINCT FROM NEW.*) '
                       'EXECUTE FUNCTION kg_bump_graph_version()', t || '_graph_version_update', t);
        EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON %I FOR EACH STATEMENT '
                       'EXECUTE FUNCTION kg_bump_graph_version()', t || '_graph_version_truncate', t);
    END LOOP;
END;
$$;
