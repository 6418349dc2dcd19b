// The Neo4j schema of kgrag's graph projection: constraints and indexes.
//
// Applied by kgrag_adapters.neo4j.lexical_graph (Neo4jLexicalGraph.connect / ensure_schema) on every
// connect, so every statement must be idempotent: IF NOT EXISTS (IF EXISTS for a DROP), with an explicit
// name (an existing constraint or index of that name, or an equivalent one, makes the statement a no-op). Statements are
// separated by `;`. Lines starting with `//` are comments; the loader is deliberately simple, so no
// statement may contain `;` or `//` inside a string.
//
// Targets Neo4j 5.x (tested on 5.26 LTS Community). Property existence and type constraints are
// Enterprise-only, so the adapter, not the schema, guarantees that every node has its key properties.
//
// The graph is a navigator, not a store: PostgreSQL holds the documents and the chunk text, and the graph
// is rebuilt from it. Changing a name below is a migration (drop the old one by hand).

// --- lexical graph: (Document)<-[:FROM_DOCUMENT]-(Chunk)-[:NEXT_CHUNK]->(Chunk) ----------------------
//
// Every node carries `ns` (KGRAG_NEO4J_NAMESPACE), so every key is (ns, id): two deployments sharing
// Community Edition's one database never collide or see each other's nodes.

// The rules from before namespaces: a key on doc_id / chunk_id alone would stop a second namespace from
// holding the same IDs. Dropping them is idempotent (IF EXISTS); their nodes lack `ns` and are invisible
// to every namespace (docs/operations.md, "Neo4j namespaces", says how to remove them).
DROP CONSTRAINT document_doc_id_unique IF EXISTS;

DROP CONSTRAINT chunk_chunk_id_unique IF EXISTS;

DROP INDEX chunk_doc_id IF EXISTS;

DROP INDEX document_acl_class_id IF EXISTS;

DROP INDEX chunk_acl_class_id IF EXISTS;

// One node per document and per chunk in a namespace. Each uniqueness constraint is backed by a range
// index, which is what every MERGE and every lookup by ID uses.
CREATE CONSTRAINT document_key IF NOT EXISTS
FOR (d:Document) REQUIRE (d.ns, d.doc_id) IS UNIQUE;

CREATE CONSTRAINT chunk_key IF NOT EXISTS
FOR (c:Chunk) REQUIRE (c.ns, c.chunk_id) IS UNIQUE;

// A document's chunks by property: stale-chunk removal on re-upsert and delete_document.
CREATE INDEX chunk_ns_doc_id IF NOT EXISTS
FOR (c:Chunk) ON (c.ns, c.doc_id);

// ACL filtering of graph traversals (a query sees only the ACL classes its caller may read).
CREATE INDEX document_ns_acl_class_id IF NOT EXISTS
FOR (d:Document) ON (d.ns, d.acl_class_id);

CREATE INDEX chunk_ns_acl_class_id IF NOT EXISTS
FOR (c:Chunk) ON (c.ns, c.acl_class_id);

// --- knowledge graph projection (kgrag_adapters.neo4j.knowledge_graph) -------------------------------
//
// A read model of PostgreSQL's knowledge graph. Every node carries `ns` (the projection's namespace), so
// every key is (ns, id): composite uniqueness constraints, which Community Edition supports.

// Mention-level entities; readers find a cluster's members by canonical_id and names by norm_name.
CREATE CONSTRAINT kg_entity_key IF NOT EXISTS
FOR (e:KgEntity) REQUIRE (e.ns, e.entity_id) IS UNIQUE;

CREATE INDEX kg_entity_canonical_id IF NOT EXISTS
FOR (e:KgEntity) ON (e.ns, e.canonical_id);

CREATE INDEX kg_entity_norm_name IF NOT EXISTS
FOR (e:KgEntity) ON (e.ns, e.norm_name);

// Canonical entities: the endpoints of KG_EDGE relationships (a cluster may outlive its label entity).
CREATE CONSTRAINT kg_canonical_key IF NOT EXISTS
FOR (k:KgCanonical) REQUIRE (k.ns, k.canonical_id) IS UNIQUE;

// Surface forms (normalised) and the documents naming an entity: the alias index and a re-projection's scope.
CREATE CONSTRAINT kg_name_key IF NOT EXISTS
FOR (n:KgName) REQUIRE (n.ns, n.norm) IS UNIQUE;

CREATE CONSTRAINT kg_doc_key IF NOT EXISTS
FOR (d:KgDoc) REQUIRE (d.ns, d.doc_id) IS UNIQUE;

CREATE CONSTRAINT kg_claim_key IF NOT EXISTS
FOR (c:KgClaim) REQUIRE (c.ns, c.claim_id) IS UNIQUE;

CREATE INDEX kg_claim_entity_id IF NOT EXISTS
FOR (c:KgClaim) ON (c.ns, c.entity_id);

CREATE CONSTRAINT kg_hub_key IF NOT EXISTS
FOR (h:KgHub) REQUIRE (h.ns, h.entity_id) IS UNIQUE;

CREATE CONSTRAINT kg_ontology_key IF NOT EXISTS
FOR (o:KgOntology) REQUIRE o.ns IS UNIQUE;

// The graph version the projection has applied (PostgreSQL's kg_graph_version_seq, migration 0017).
CREATE CONSTRAINT kg_watermark_key IF NOT EXISTS
FOR (w:KgWatermark) REQUIRE w.ns IS UNIQUE;

// --- communities projection (kgrag_adapters.neo4j.communities) ---------------------------------------
//
// A read model of PostgreSQL's kg_communities (migration 0027); members are canonical entity ids.
CREATE CONSTRAINT kg_community_key IF NOT EXISTS
FOR (k:KgCommunity) REQUIRE (k.ns, k.community_id) IS UNIQUE;

CREATE CONSTRAINT kg_community_entity_key IF NOT EXISTS
FOR (m:KgCommunityEntity) REQUIRE (m.ns, m.entity_id) IS UNIQUE;

// --- text graph projection (kgrag_adapters.neo4j.text_graph) -----------------------------------------
//
// A read model of PostgreSQL's text graph (migration 0028): passages, nodes (blind keys: no phrase), and
// the weighted edges with their evidence chunk. A document's passages and synonyms are replaced together.
CREATE CONSTRAINT tg_node_key IF NOT EXISTS
FOR (n:TgNode) REQUIRE (n.ns, n.node_key) IS UNIQUE;

CREATE CONSTRAINT tg_passage_key IF NOT EXISTS
FOR (p:TgPassage) REQUIRE (p.ns, p.chunk_id) IS UNIQUE;

CREATE INDEX tg_passage_doc_id IF NOT EXISTS
FOR (p:TgPassage) ON (p.ns, p.doc_id);

CREATE INDEX tg_synonym_doc_id IF NOT EXISTS
FOR ()-[s:TG_SYNONYM]-() ON (s.ns, s.doc_id);
