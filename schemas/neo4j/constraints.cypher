// The Neo4j schema of kgrag's graph projection: constraints and indexes.
//
// Applied by kgrag_adapters.neo4j.lexical_graph (Neo4jLexicalGraph.connect / ensure_schema) on every
// connect, so every statement must be idempotent: IF NOT EXISTS, with an explicit name (an existing
// constraint or index of that name, or an equivalent one, makes the statement a no-op). Statements are
// separated by `;`. Lines starting with `//` are comments; the loader is deliberately simple, so no
// statement may contain `;` or `//` inside a string.
//
// Targets Neo4j 5.x (tested on 5.26 LTS Community). Property existence and type constraints are
// Enterprise-only, so the adapter, not the schema, guarantees that every node has its key properties.
//
// The graph is a navigator, not a store: PostgreSQL holds the documents and the chunk text, and the graph
// is rebuilt from it. Changing a name below is a migration (drop the old one by hand).

// --- lexical graph: (Document)<-[:FROM_DOCUMENT]-(Chunk)-[:NEXT_CHUNK]->(Chunk) ----------------------

// One node per document and per chunk. Each uniqueness constraint is backed by a range index, which is
// what every MERGE and every lookup by ID uses.
CREATE CONSTRAINT document_doc_id_unique IF NOT EXISTS
FOR (d:Document) REQUIRE d.doc_id IS UNIQUE;

CREATE CONSTRAINT chunk_chunk_id_unique IF NOT EXISTS
FOR (c:Chunk) REQUIRE c.chunk_id IS UNIQUE;

// A document's chunks by property: stale-chunk removal on re-upsert and delete_document.
CREATE INDEX chunk_doc_id IF NOT EXISTS
FOR (c:Chunk) ON (c.doc_id);

// ACL filtering of graph traversals (a query sees only the ACL classes its caller may read).
CREATE INDEX document_acl_class_id IF NOT EXISTS
FOR (d:Document) ON (d.acl_class_id);

CREATE INDEX chunk_acl_class_id IF NOT EXISTS
FOR (c:Chunk) ON (c.acl_class_id);

// --- knowledge graph: entities (reserved) -------------------------------------------------------------
//
// The knowledge-graph work adds its constraints here, in the same style, e.g.:
//   CREATE CONSTRAINT entity_entity_id_unique IF NOT EXISTS FOR (e:Entity) REQUIRE e.entity_id IS UNIQUE;
// plus the indexes its resolution and traversal need (name / type lookups). Entities link to the chunks
// that mention them, so DETACH DELETE of a chunk drops its mentions with it.
