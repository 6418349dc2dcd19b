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

-- Documents and chunks: per row, and only when a column a reader's answer depends on changed (a re-ingest
-- of an unchanged document draws nothing).
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

-- The extracted graph is written in bulk (thousands of rows a statement): once per statement that changed
-- a row, seen through its transition table, rather than once per row.
CREATE FUNCTION kg_bump_graph_version_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM new_rows) THEN
        PERFORM nextval('kg_graph_version_seq');
    END IF;
    RETURN NULL;
END;
$$;

CREATE FUNCTION kg_bump_graph_version_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM old_rows) THEN
        PERFORM nextval('kg_graph_version_seq');
    END IF;
    RETURN NULL;
END;
$$;

CREATE FUNCTION kg_bump_graph_version_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT * FROM new_rows EXCEPT ALL SELECT * FROM old_rows) THEN
        PERFORM nextval('kg_graph_version_seq');
    END IF;
    RETURN NULL;
END;
$$;

DO $$
DECLARE
    t TEXT;
BEGIN
    FOREACH t IN ARRAY ARRAY['kg_entities', 'kg_mentions', 'kg_relations', 'kg_relation_evidence', 'kg_claims',
                             'kg_claim_evidence', 'er_canonical', 'kg_hubs'] LOOP
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %I REFERENCING NEW TABLE AS new_rows '
                       'FOR EACH STATEMENT EXECUTE FUNCTION kg_bump_graph_version_inserted()',
                       t || '_graph_version_insert', t);
        EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %I REFERENCING OLD TABLE AS old_rows '
                       'FOR EACH STATEMENT EXECUTE FUNCTION kg_bump_graph_version_deleted()',
                       t || '_graph_version_delete', t);
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %I REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows '
                       'FOR EACH STATEMENT EXECUTE FUNCTION kg_bump_graph_version_updated()',
                       t || '_graph_version_update', t);
        EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON %I FOR EACH STATEMENT '
                       'EXECUTE FUNCTION kg_bump_graph_version()', t || '_graph_version_truncate', t);
    END LOOP;
END;
$$;
