-- 0004_resolution: entity resolution state (canonical mapping, merge log, review queue) and hub labels.
--
-- Resolution never rewrites a fact: kg_entities, kg_relations and kg_claims keep their mention-level entity
-- IDs, and readers map them through er_canonical at query time. So a split (a reverted merge) restores
-- exactly what was there: it only changes mapping rows.
--
-- The merge log is the truth; er_canonical is derived from it. Each merge that is not reverted links its
-- canonical ID to each of its members, and a cluster is a connected component of those links. Its label
-- (the canonical ID readers see) is the canonical ID of the newest merge in it. Reverting a merge removes
-- its links and recomputes the components it touched, so reverting the newest merge restores the mapping
-- as it was before it, and reverting an older one keeps every later merge (PostgresGraphStore.revert_merge).
--
-- The label is only a name for the cluster: when the label's own entity loses its last evidence and the
-- 0003 clean-up deletes it, the members keep their rows (and their label), and readers take the cluster's
-- display name from its visible mentions. A deleted member's row cascades; the links in the log still
-- connect the others.

CREATE TABLE er_merge_log (
    merge_id     TEXT PRIMARY KEY,
    canonical_id TEXT NOT NULL,
    members      TEXT[] NOT NULL,
    -- canonical_id || members: what the GIN index finds the merges touching a set of entities by.
    entities     TEXT[] NOT NULL,
    -- the PairDecisions that decided it: [{a, b, kind, score, features: [[name, value]...], rule}, ...]
    basis        JSONB NOT NULL DEFAULT '[]',
    decided_by   TEXT NOT NULL CHECK (decided_by IN ('auto', 'review', 'override')),
    reverted     BOOLEAN NOT NULL DEFAULT false,
    -- orders merges: the newest merge of a cluster names it.
    seq          BIGINT GENERATED ALWAYS AS IDENTITY,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    reverted_at  TIMESTAMPTZ,
    CHECK (cardinality(members) > 0),
    CHECK (reverted = (reverted_at IS NOT NULL))
);

CREATE INDEX er_merge_log_entities ON er_merge_log USING GIN (entities);
CREATE INDEX er_merge_log_seq ON er_merge_log (seq);

-- One row per mention-level entity that belongs to a cluster other than itself; no row = its own canonical.
-- merge_id names the merge whose canonical ID labels the cluster.
CREATE TABLE er_canonical (
    entity_id    TEXT PRIMARY KEY REFERENCES kg_entities (entity_id) ON DELETE CASCADE,
    canonical_id TEXT NOT NULL,
    merge_id     TEXT NOT NULL REFERENCES er_merge_log (merge_id),
    CHECK (entity_id <> canonical_id)
);

CREATE INDEX er_canonical_canonical_id ON er_canonical (canonical_id);

-- "Possibly the same": pairs scored between the thresholds, for a person to decide. A decided pair stays,
-- so queueing it again does not ask twice.
CREATE TABLE er_review_queue (
    a          TEXT NOT NULL,
    b          TEXT NOT NULL,
    score      DOUBLE PRECISION NOT NULL,
    -- [[name, value], ...] in the order the scorer gave them
    features   JSONB NOT NULL DEFAULT '[]',
    rule       TEXT NOT NULL,
    status     TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'same', 'different')),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    decided_at TIMESTAMPTZ,
    PRIMARY KEY (a, b),
    CHECK (a < b)
);

CREATE INDEX er_review_queue_pending ON er_review_queue (score DESC, a, b) WHERE status = 'pending';

-- Canonical entities with at least the hub threshold of distinct edges when last labelled. Traversal may
-- start at a hub but never pass through one. Replaced as a whole by each labelling.
CREATE TABLE kg_hubs (
    entity_id   TEXT PRIMARY KEY,
    degree      INT NOT NULL,
    labelled_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
