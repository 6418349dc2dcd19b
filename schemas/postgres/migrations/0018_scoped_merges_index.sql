-- 0018_scoped_merges_index: the query API asks on every graph read whether a merge exists that the caller
-- may not be shown (er_canonical.requires, 0011; kgrag_core.graph.routing): only then does PostgreSQL answer
-- instead of the Neo4j projection, which joins clusters whole. Such merges are few; this keeps the check an
-- index scan over them however large the mapping grows.
CREATE INDEX er_canonical_scoped ON er_canonical (entity_id) WHERE requires <> '{}';
