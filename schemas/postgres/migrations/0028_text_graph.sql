-- 0028_text_graph: the text graph (issue 13; docs/knowledge-graph.md, "Text graph").
--
-- Passages (chunks) linked to the entities, noun phrases, titles and links they name. A node is a keyed
-- blind index of the phrase's normal form (kgrag_core.extraction.identity.blind, domain 'text_graph'):
-- nodes store no phrase, so nothing here outlives a shredded document's key (ADR 0008). Every edge keeps
-- its evidence chunk (deleted with it: ON DELETE CASCADE, so document deletion removes its edges) and ACL
-- class; a walk joins `chunks` and reads only edges of chunks whose class the caller may read.
-- Specificity (IDF) is computed at walk time over the caller-visible edges, so it needs no counters here.
CREATE TABLE text_graph_nodes (
    node_key    TEXT PRIMARY KEY,
    -- some document's title normalises to this node: passages naming it link to that document.
    titled      BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE text_graph_mentions (
    chunk_id      TEXT NOT NULL REFERENCES chunks (chunk_id) ON DELETE CASCADE,
    node_key      TEXT NOT NULL REFERENCES text_graph_nodes (node_key) ON DELETE CASCADE,
    doc_id        TEXT NOT NULL,
    acl_class_id  TEXT NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('entity', 'phrase', 'title', 'link')),
    -- salience of the mention in its passage (names above noun phrases); times the node's specificity.
    weight        REAL NOT NULL CHECK (weight > 0),
    PRIMARY KEY (chunk_id, node_key)
);
CREATE INDEX text_graph_mentions_node ON text_graph_mentions (node_key, chunk_id);
CREATE INDEX text_graph_mentions_doc ON text_graph_mentions (doc_id);

-- Near-identical names: embeddings of the two names at or above the threshold, computed once, when the
-- newer name first appeared; the chunk that brought it is the evidence.
CREATE TABLE text_graph_synonyms (
    node_a        TEXT NOT NULL REFERENCES text_graph_nodes (node_key) ON DELETE CASCADE,
    node_b        TEXT NOT NULL REFERENCES text_graph_nodes (node_key) ON DELETE CASCADE,
    chunk_id      TEXT NOT NULL REFERENCES chunks (chunk_id) ON DELETE CASCADE,
    acl_class_id  TEXT NOT NULL,
    similarity    REAL NOT NULL,
    PRIMARY KEY (node_a, node_b, chunk_id)
);
CREATE INDEX text_graph_synonyms_b ON text_graph_synonyms (node_b);
