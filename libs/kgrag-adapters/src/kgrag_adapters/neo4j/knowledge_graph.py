"""The knowledge graph projected into Neo4j: `GraphReader` reads in Cypher, `project` writes from PostgreSQL.

PostgreSQL stays authoritative (`PostgresGraphStore`); this is a read model the graph-writer keeps equal to
it (`kgrag_core.handlers.knowledge_projection`), and it answers every GraphReader call exactly as the SQL
store does (the same contract suite). `kgrag_adapters.postgres.knowledge_source` reads the snapshots it is built from.

Shape (every node carries `ns`, so several projections can share one database; keys are (ns, id)):

    (:KgEntity {entity_id, canonical_id, name, name_doc, type, norm_name, strong_ids, seen_acl[], seen_active[]})
        -[:SEEN_IN]->(:KgDoc {doc_id})            the documents whose chunks name it (scopes a re-projection)
        -[:KNOWN_AS {name, acl, active, doc, uses, strong_ids}]->(:KgName {norm})   surface forms, per reach
                                                                                     and document
    (:KgCanonical {canonical_id})-[:KG_EDGE {relation_id, relation, polarity, modality, valid_from,
        ev_chunk[], ev_acl[], ev_active[], ev_conf[], ev_written[], ev_valid_to[]}]->(:KgCanonical)
    (:KgClaim {claim_id, entity_id, attribute, ..., ev_value[], ev_quote[], ev_*[] per evidence row})
    (:KgHub {entity_id, min_degree}), (:KgOntology {attributes[], cardinalities[]})
    (:KgWatermark {version})   the PostgreSQL graph version last applied (kgrag_runtime.graph_reads)

Edges join canonical entities and are MERGEd by their canonical relation ID (a hash of subject, relation,
object, valid_from, polarity and modality). Each stores, per evidence chunk, the chunk's ACL class and
whether its document is ACTIVE, so visibility is decided inside the query: an edge, entity or claim exists
for a caller only through evidence it may read, and degrees, counts, hub flags, ids, names and strong ids
use that evidence only (docs/security.md, sections 1-3). Absent dates are stored as "" (Neo4j lists hold
no nulls).

Document text is never projected readable (ADR 0008, "Names"): given the cipher PostgreSQL's evidence is
sealed with, names, surface forms, strong identifiers, claim values and quotes are stored sealed under the
key of the document that gave them (base64, `name_doc` / `doc` / `ev_doc` say which), and names are looked
up by their blind index (`norm_name`, `KgName.norm`: HMAC under the installation key, as in PostgreSQL), so
a deleted document leaves Neo4j's store files nothing that opens once its key is destroyed. Without a cipher
(a projection for tests) the same properties hold plaintext.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from typing import Any, LiteralString, TypeVar

from neo4j import (
    Driver,
    GraphDatabase,
    ManagedTransaction,
    NotificationMinimumSeverity,
    Record,
    Session,
    basic_auth,
)

from kgrag_adapters.neo4j.lexical_graph import DEFAULT_NAMESPACE, Neo4jLexicalGraph
from kgrag_adapters.neo4j.write_batches import bounded_batches, entity_cost, row_cost, scope_cost, split_entity_row
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.claims import timeline
from kgrag_core.extraction.identity import normalise_name, relation_id
from kgrag_core.extraction.model import Modality, Polarity, Tier
from kgrag_core.extraction.ontology import Cardinality
from kgrag_core.extraction.records import ClaimRecord
from kgrag_core.graph.clusters import ClusterView, MemberRow, cluster_views, summaries
from kgrag_core.graph.model import Edge, EntityRef, EntitySummary
from kgrag_core.handlers.knowledge_projection import (
    KnowledgeSnapshot,
    ProjectedClaim,
    ProjectedEdge,
    ProjectedEntity,
)
from kgrag_core.shredding import ContentCipher, open_text

_T = TypeVar("_T")

# Units of work (write_batches.py) one projection transaction may hold: a scope over it is written in
# batches. 5,000 edges with their evidence arrays stay far below the dev server's 512 MiB heap.
DEFAULT_WRITE_BATCH = 5000

# --- Cypher: reads ----------------------------------------------------------------------------------------

# Whether list-carrying node or relationship `x` has one evidence entry the caller may read.
_SEEN: LiteralString = (
    "any(i IN range(0, size(x.seen_acl) - 1) WHERE x.seen_active[i] AND ($admin OR x.seen_acl[i] IN $acl))"
)

_CANONICAL: LiteralString = """
UNWIND $ids AS id
OPTIONAL MATCH (e:KgEntity {ns: $ns, entity_id: id})
RETURN id, coalesce(e.canonical_id, id) AS cid
"""

_MEMBERS: LiteralString = """
UNWIND $cids AS cid
MATCH (e:KgEntity {ns: $ns, canonical_id: cid})
RETURN e.entity_id AS entity_id
"""

_IN_DOCUMENT: LiteralString = """
MATCH (:KgDoc {ns: $ns, doc_id: $doc_id})<-[:SEEN_IN]-(e:KgEntity)
RETURN e.entity_id AS entity_id
"""

# Members of each canonical ID (the label's own entity has canonical_id = its ID), visible or not, with the
# strong identifiers of their visible mentions.
_MEMBER_ROWS: LiteralString = (
    """
UNWIND $cids AS cid
MATCH (x:KgEntity {ns: $ns, canonical_id: cid})
OPTIONAL MATCH (x)-[a:KNOWN_AS]->()
WHERE a.active AND ($admin OR a.acl IN $acl)
WITH cid, x, collect({ids: a.strong_ids, doc: a.doc}) AS ids
RETURN cid, x.entity_id AS entity_id, x.name AS name, x.name_doc AS name_doc, x.type AS type, ids, """
    + _SEEN
    + """ AS visible
ORDER BY cid, entity_id
"""
)

# Which of $ids (as given, members or labels) visible evidence names.
_VISIBLE_IDS: LiteralString = (
    """
UNWIND $ids AS id
MATCH (x:KgEntity {ns: $ns, entity_id: id})
WHERE """
    + _SEEN
    + """
RETURN x.entity_id AS entity_id
"""
)

_ALIAS_COUNTS: LiteralString = """
UNWIND $cids AS cid
MATCH (:KgEntity {ns: $ns, canonical_id: cid})-[a:KNOWN_AS]->()
WHERE a.active AND ($admin OR a.acl IN $acl)
RETURN cid, a.name AS name, a.doc AS doc, sum(a.uses) AS uses
"""

# The visible evidence of relationship `x` (bound), as lists, plus its aggregates.
_VISIBLE_EVIDENCE: LiteralString = """
CALL (x) {
  UNWIND range(0, size(x.ev_chunk) - 1) AS i
  WITH x, i WHERE x.ev_active[i] AND ($admin OR x.ev_acl[i] IN $acl)
  RETURN collect(x.ev_chunk[i]) AS chunks, max(x.ev_conf[i]) AS conf, max(x.ev_written[i]) AS written,
         min(x.ev_written[i]) AS first_written, max(x.ev_valid_to[i]) AS valid_to
}
"""

_DEGREES: LiteralString = """
UNWIND $cids AS cid
MATCH (:KgCanonical {ns: $ns, canonical_id: cid})-[x:KG_EDGE]-()
WITH DISTINCT cid, x
WHERE any(i IN range(0, size(x.ev_chunk) - 1) WHERE x.ev_active[i] AND ($admin OR x.ev_acl[i] IN $acl))
RETURN cid, count(x) AS degree
"""

# A hub projected before labels carried their threshold counts as none until the next labelling re-projects
# it: no threshold, no way to tell whether the caller's visible edges reach it.
_HUBS: LiteralString = """
UNWIND $cids AS cid
MATCH (h:KgHub {ns: $ns, entity_id: cid})
WHERE h.min_degree IS NOT NULL
RETURN h.entity_id AS entity_id, h.min_degree AS min_degree
"""

# One canonical entity's distinct visible edges, counted up to $cap: whether it reaches a hub threshold.
_DEGREE_AT_LEAST: LiteralString = """
MATCH (:KgCanonical {ns: $ns, canonical_id: $cid})-[x:KG_EDGE]-()
WITH DISTINCT x
WHERE any(i IN range(0, size(x.ev_chunk) - 1) WHERE x.ev_active[i] AND ($admin OR x.ev_acl[i] IN $acl))
WITH x LIMIT $cap
RETURN count(x) AS degree
"""

# Strongest first: more visible evidence chunks, then higher confidence; the first $limit with their ties
# (as the SQL store's FETCH FIRST ... WITH TIES), since the relation ID that breaks ties is the caller's
# (computed from the ids the caller is shown) and is known only once the ends are named.
_NEIGHBOURS: LiteralString = (
    """
MATCH (:KgCanonical {ns: $ns, canonical_id: $cid})-[x:KG_EDGE]-()
WHERE $relations IS NULL OR x.relation IN $relations
WITH DISTINCT x
"""
    + _VISIBLE_EVIDENCE
    + """
WITH x, chunks, conf, written, first_written, valid_to WHERE size(chunks) > 0
WITH x, chunks, conf, written, first_written, valid_to ORDER BY size(chunks) DESC, conf DESC
WITH collect({x: x, chunks: chunks, conf: conf, written: written, first_written: first_written,
              valid_to: valid_to}) AS rows
WITH rows, CASE WHEN size(rows) > $limit THEN rows[$limit - 1] ELSE null END AS last
UNWIND rows AS r
WITH r, last
WHERE last IS NULL OR size(r.chunks) > size(last.chunks) OR (size(r.chunks) = size(last.chunks) AND r.conf >= last.conf)
WITH r.x AS x, r.chunks AS chunks, r.conf AS conf, r.written AS written, r.first_written AS first_written,
     r.valid_to AS valid_to
RETURN startNode(x).canonical_id AS subject, x.relation AS relation,
       endNode(x).canonical_id AS object, x.polarity AS polarity, x.modality AS modality,
       x.valid_from AS valid_from, valid_to, chunks, conf, written, first_written
"""
)

# `_NEIGHBOURS` for many canonical ids in one query: the same body per asked id (its limit and ties apply per id).
_NEIGHBOURS_MANY: LiteralString = (
    """
UNWIND $cids AS asked
CALL (asked) {"""
    + _NEIGHBOURS.replace("$cid", "asked")
    + """}
RETURN asked, subject, relation, object, polarity, modality, valid_from, valid_to, chunks, conf, written,
       first_written
"""
)

# `GraphReader.edges_among`: `_NEIGHBOURS_MANY` over the edges whose other end is an asked canonical entity too
# (no end outside the set is matched, so none is named).
_AMONG_MATCH: LiteralString = """
MATCH (:KgCanonical {ns: $ns, canonical_id: asked})-[x:KG_EDGE]-(other:KgCanonical)
WHERE other.canonical_id IN $cids AND ($relations IS NULL OR x.relation IN $relations)
"""
_NEIGHBOURS_MATCH: LiteralString = """
MATCH (:KgCanonical {ns: $ns, canonical_id: $cid})-[x:KG_EDGE]-()
WHERE $relations IS NULL OR x.relation IN $relations
"""
_EDGES_AMONG: LiteralString = _NEIGHBOURS_MANY.replace(_NEIGHBOURS_MATCH.replace("$cid", "asked"), _AMONG_MATCH)
if _EDGES_AMONG == _NEIGHBOURS_MANY:  # the match above must stay the one `_NEIGHBOURS` opens with
    raise RuntimeError("edges_among query not derived")

# A name matches a visible mention of it, or the stored name of a visible entity (both by blind index).
_NAMED: LiteralString = (
    """
UNWIND $names AS norm
CALL (norm) {
  MATCH (:KgName {ns: $ns, norm: norm})<-[a:KNOWN_AS]-(e:KgEntity)
  WHERE a.active AND ($admin OR a.acl IN $acl)
  RETURN e
  UNION
  MATCH (x:KgEntity {ns: $ns, norm_name: norm})
  WHERE x.strong_ids = '[]' AND """
    + _SEEN
    + """
  RETURN x AS e
}
RETURN norm, e.canonical_id AS cid
"""
)

_CLAIMS_OF: LiteralString = """
UNWIND $members AS member
MATCH (x:KgClaim {ns: $ns, entity_id: member})
UNWIND range(0, size(x.ev_chunk) - 1) AS i
WITH x, i WHERE x.ev_active[i] AND ($admin OR x.ev_acl[i] IN $acl)
RETURN x.claim_id AS claim_id, x.entity_id AS entity_id, x.attribute AS attribute, x.ev_value[i] AS value,
       x.ev_quote[i] AS quote, x.modality AS modality, x.polarity AS polarity, x.valid_from AS valid_from,
       x.valid_to AS valid_to, x.ev_written[i] AS written, x.ev_chunk[i] AS chunk_id, x.ev_doc[i] AS doc_id,
       x.ev_acl[i] AS acl_class_id, x.ev_tier[i] AS tier, x.ev_conf[i] AS confidence
"""

_CARDINALITY: LiteralString = """
MATCH (o:KgOntology {ns: $ns})
RETURN o.attributes AS attributes, o.cardinalities AS cardinalities
"""

# --- Cypher: writes ---------------------------------------------------------------------------------------

# What a projection replaces: the entities named or filed under the scope, with their names and documents.
_SCOPE_ENTITIES: LiteralString = """
CALL () {
  UNWIND $ids AS id
  MATCH (e:KgEntity {ns: $ns, entity_id: id})
  RETURN e
  UNION
  UNWIND $cids AS cid
  MATCH (e:KgEntity {ns: $ns, canonical_id: cid})
  RETURN e
}
OPTIONAL MATCH (e)-[:KNOWN_AS]->(n:KgName)
OPTIONAL MATCH (e)-[:SEEN_IN]->(d:KgDoc)
RETURN e.entity_id AS entity_id, collect(DISTINCT n.norm) AS norms, collect(DISTINCT d.doc_id) AS docs
"""

_DROP_ENTITIES: LiteralString = """
UNWIND $ids AS id
MATCH (e:KgEntity {ns: $ns, entity_id: id})
DETACH DELETE e
"""

_DROP_CLAIMS: LiteralString = """
UNWIND $ids AS id
MATCH (c:KgClaim {ns: $ns, entity_id: id})
DELETE c
"""

# Edges touching the scope go with its canonical nodes; the far ends are returned to sweep afterwards.
_DROP_CANONICAL: LiteralString = """
UNWIND $cids AS cid
MATCH (k:KgCanonical {ns: $ns, canonical_id: cid})
OPTIONAL MATCH (k)-[:KG_EDGE]-(far:KgCanonical)
WITH k, collect(DISTINCT far.canonical_id) AS fars
DETACH DELETE k
WITH fars
UNWIND fars AS far
RETURN DISTINCT far
"""

_PUT_ENTITIES: LiteralString = """
UNWIND $rows AS row
MERGE (e:KgEntity {ns: $ns, entity_id: row.entity_id})
SET e.canonical_id = row.canonical_id, e.name = row.name, e.name_doc = row.name_doc, e.type = row.type,
    e.norm_name = row.norm_name,
    e.strong_ids = row.strong_ids, e.seen_acl = row.seen_acl, e.seen_active = row.seen_active
WITH e, row
CALL (e, row) {
  UNWIND row.docs AS doc_id
  MERGE (d:KgDoc {ns: $ns, doc_id: doc_id})
  MERGE (e)-[:SEEN_IN]->(d)
}
CALL (e, row) {
  UNWIND row.aliases AS a
  MERGE (n:KgName {ns: $ns, norm: a.norm})
  MERGE (e)-[k:KNOWN_AS {name: a.name, acl: a.acl, active: a.active, doc: a.doc}]->(n)
  SET k.uses = a.uses, k.strong_ids = a.strong_ids
}
"""

_PUT_EDGES: LiteralString = """
UNWIND $rows AS row
MERGE (s:KgCanonical {ns: $ns, canonical_id: row.subject_id})
MERGE (o:KgCanonical {ns: $ns, canonical_id: row.object_id})
MERGE (s)-[x:KG_EDGE {relation_id: row.relation_id}]->(o)
SET x += row.props
"""

_PUT_CLAIMS: LiteralString = """
UNWIND $rows AS row
MERGE (c:KgClaim {ns: $ns, claim_id: row.claim_id})
SET c += row.props
"""

_PUT_ONTOLOGY: LiteralString = """
MERGE (o:KgOntology {ns: $ns})
SET o.attributes = $attributes, o.cardinalities = $cardinalities
"""

# Nodes left with nothing attached once the scope was replaced.
_SWEEP: LiteralString = """
CALL () {
  UNWIND $norms AS norm
  MATCH (n:KgName {ns: $ns, norm: norm}) WHERE NOT EXISTS { (n)--() }
  DELETE n
}
CALL () {
  UNWIND $docs AS doc_id
  MATCH (d:KgDoc {ns: $ns, doc_id: doc_id}) WHERE NOT EXISTS { (d)--() }
  DELETE d
}
CALL () {
  UNWIND $cids AS cid
  MATCH (k:KgCanonical {ns: $ns, canonical_id: cid}) WHERE NOT EXISTS { (k)--() }
  DELETE k
}
"""

# --- Cypher: a scope written in bounded batches (write_batches.py) ----------------------------------------
# Each batch upserts its rows stamped with the projection's generation ($gen); once every row is written,
# whatever in the scope carries another stamp (or none: written whole) is stale and is deleted, again in
# bounded batches. At every step the scope holds the old state, the new one, or rows of both: never less
# than the new state, and a reader falls back to PostgreSQL meanwhile (the watermark moves after the batch).

_SCOPE_ENTITY_IDS: LiteralString = """
CALL () {
  UNWIND $ids AS id
  MATCH (e:KgEntity {ns: $ns, entity_id: id})
  RETURN e
  UNION
  UNWIND $cids AS cid
  MATCH (e:KgEntity {ns: $ns, canonical_id: cid})
  RETURN e
}
RETURN e.entity_id AS entity_id
"""

_STAMP_ENTITIES: LiteralString = """
UNWIND $rows AS row
MERGE (e:KgEntity {ns: $ns, entity_id: row.entity_id})
SET e.canonical_id = row.canonical_id, e.name = row.name, e.name_doc = row.name_doc, e.type = row.type,
    e.norm_name = row.norm_name,
    e.strong_ids = row.strong_ids, e.seen_acl = row.seen_acl, e.seen_active = row.seen_active, e.gen = $gen
WITH e, row
CALL (e, row) {
  UNWIND row.docs AS doc_id
  MERGE (d:KgDoc {ns: $ns, doc_id: doc_id})
  MERGE (e)-[s:SEEN_IN]->(d)
  SET s.gen = $gen
}
CALL (e, row) {
  UNWIND row.aliases AS a
  MERGE (n:KgName {ns: $ns, norm: a.norm})
  MERGE (e)-[k:KNOWN_AS {name: a.name, acl: a.acl, active: a.active, doc: a.doc}]->(n)
  SET k.uses = a.uses, k.strong_ids = a.strong_ids, k.gen = $gen
}
"""

# SET x = ...: an edge re-written in place keeps no property of its old version.
_STAMP_EDGES: LiteralString = """
UNWIND $rows AS row
MERGE (s:KgCanonical {ns: $ns, canonical_id: row.subject_id})
MERGE (o:KgCanonical {ns: $ns, canonical_id: row.object_id})
MERGE (s)-[x:KG_EDGE {relation_id: row.relation_id}]->(o)
SET x = row.props, x.relation_id = row.relation_id, x.gen = $gen
"""

_STAMP_CLAIMS: LiteralString = """
UNWIND $rows AS row
MERGE (c:KgClaim {ns: $ns, claim_id: row.claim_id})
SET c = row.props, c.ns = $ns, c.claim_id = row.claim_id, c.gen = $gen
"""

_STALE_EDGES: LiteralString = """
UNWIND $cids AS cid
MATCH (:KgCanonical {ns: $ns, canonical_id: cid})-[x:KG_EDGE]-(far:KgCanonical)
WHERE x.gen IS NULL OR x.gen <> $gen
WITH DISTINCT x, far LIMIT $limit
DELETE x
RETURN collect(DISTINCT far.canonical_id) AS fars, count(*) AS deleted
"""

_STALE_LINKS: LiteralString = """
UNWIND $ids AS id
MATCH (:KgEntity {ns: $ns, entity_id: id})-[r:SEEN_IN|KNOWN_AS]->(n)
WHERE r.gen IS NULL OR r.gen <> $gen
WITH r, n LIMIT $limit
DELETE r
RETURN collect(DISTINCT n.doc_id) AS docs, collect(DISTINCT n.norm) AS norms, count(*) AS deleted
"""

_STALE_NODES: LiteralString = """
CALL () {
  UNWIND $ids AS id
  MATCH (c:KgClaim {ns: $ns, entity_id: id}) WHERE c.gen IS NULL OR c.gen <> $gen
  RETURN c AS x
  UNION
  UNWIND $ids AS id
  MATCH (e:KgEntity {ns: $ns, entity_id: id}) WHERE e.gen IS NULL OR e.gen <> $gen
  RETURN e AS x
}
WITH x LIMIT $limit
DETACH DELETE x
RETURN count(*) AS deleted
"""

_DROP_HUBS: LiteralString = "MATCH (h:KgHub {ns: $ns}) WHERE NOT h.entity_id IN $ids DELETE h"

_PUT_HUBS: LiteralString = """
UNWIND $hubs AS hub
MERGE (h:KgHub {ns: $ns, entity_id: hub.entity_id})
SET h.min_degree = hub.min_degree
"""

# Only forward: a writer replica that read an older version finishing last must not move it back.
_PUT_WATERMARK: LiteralString = """
MERGE (w:KgWatermark {ns: $ns})
SET w.version = CASE WHEN w.version IS NULL OR w.version < $version THEN $version ELSE w.version END
"""

_WATERMARK: LiteralString = "MATCH (w:KgWatermark {ns: $ns}) RETURN w.version AS version"

_DROP_NAMESPACE: LiteralString = """
MATCH (n {ns: $ns})
WHERE n:KgEntity OR n:KgDoc OR n:KgName OR n:KgCanonical OR n:KgClaim OR n:KgHub OR n:KgOntology
      OR n:KgWatermark
DETACH DELETE n
"""


class Neo4jKnowledgeGraph:
    """GraphReader over a projection in Neo4j 5, and the projection's writes (`KnowledgeProjection`).

    `namespace` separates projections sharing one database (tests use one each). The driver passed in stays
    the caller's: `close()` closes only a driver that `connect()` opened. Safe to share between threads.
    """

    def __init__(
        self,
        driver: Driver,
        database: str | None = None,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        cipher: ContentCipher | None = None,
        name_index: Callable[[str], str] | None = None,
        write_batch: int = DEFAULT_WRITE_BATCH,
    ) -> None:
        if not namespace:
            raise ValueError("namespace must be a non-empty string")
        if (cipher is None) != (name_index is None):
            raise ValueError("pass both cipher and name_index (a sealed projection), or neither")
        self._cipher = cipher
        self._name_index = name_index
        self._driver: Driver | None = driver
        self._database = database
        self._ns = namespace
        self._owns_driver = False
        if write_batch < 2:
            raise ValueError(f"write_batch must be at least 2, got {write_batch}")
        self._write_batch = write_batch

    @classmethod
    def connect(
        cls,
        uri: str,
        *,
        user: str | None = None,
        password: str | None = None,
        database: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        cipher: ContentCipher | None = None,
        name_index: Callable[[str], str] | None = None,
        write_batch: int | None = None,
    ) -> Neo4jKnowledgeGraph:
        """A projection on the server at `uri` with the schema applied (schemas/neo4j/constraints.cypher)."""
        if (user is None) != (password is None):
            raise ValueError("pass both user and password, or neither (a server with auth disabled)")
        auth = basic_auth(user, password) if user is not None and password is not None else None
        driver = GraphDatabase.driver(uri, auth=auth)
        try:
            driver.verify_connectivity()
            # One schema file serves both graphs; the lexical graph's loader applies it (races absorbed).
            Neo4jLexicalGraph(driver, database).ensure_schema()
            batch = DEFAULT_WRITE_BATCH if write_batch is None else write_batch
            graph = cls(driver, database, namespace=namespace, cipher=cipher, name_index=name_index, write_batch=batch)
        except BaseException:
            driver.close()
            raise
        graph._owns_driver = True
        return graph

    @property
    def namespace(self) -> str:
        return self._ns

    def close(self) -> None:
        driver, self._driver = self._driver, None
        if driver is not None and self._owns_driver:
            driver.close()

    def __enter__(self) -> Neo4jKnowledgeGraph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- GraphReader ----------------------------------------------------------------------------------------

    def entities_named(
        self, names: Sequence[str], acl_class_ids: Sequence[str] | None
    ) -> dict[str, list[EntitySummary]]:
        wanted = list(dict.fromkeys(normalise_name(n) for n in names))
        out: dict[str, list[EntitySummary]] = {n: [] for n in wanted}
        if not wanted:
            return out

        norm_of = {self._norm(n): n for n in wanted}

        def work(tx: ManagedTransaction) -> tuple[list[tuple[str, str]], dict[str, EntitySummary]]:
            params = self._params(acl_class_ids, names=list(norm_of))
            hits = [(norm_of[r["norm"]], r["cid"]) for r in tx.run(_NAMED, params)]
            return hits, self._summaries(tx, list(dict.fromkeys(c for _, c in hits)), acl_class_ids)

        hits, found_summaries = self._read(work)
        for norm, cid in hits:
            summary = found_summaries.get(cid)
            if summary is not None and summary not in out[norm]:
                out[norm].append(summary)
        for found in out.values():
            found.sort(key=lambda s: (-s.degree, s.entity.name, s.entity.entity_id))
        return out

    def hubs_among(self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None) -> set[str]:
        """The visible ids (as given) whose canonical entity is a hub to this caller (as PostgresGraphStore)."""
        ids = list(dict.fromkeys(entity_ids))
        if not ids:
            return set()

        def work(tx: ManagedTransaction) -> set[str]:
            canonical = self._canonical(tx, self._visible_ids(tx, ids, acl_class_ids))
            thresholds = self._hub_thresholds(tx, sorted(set(canonical.values())))
            hubs = set()
            for cid, cap in sorted(thresholds.items()):
                record = tx.run(_DEGREE_AT_LEAST, self._params(acl_class_ids, cid=cid, cap=cap)).single()
                if record is not None and int(record["degree"]) >= cap:
                    hubs.add(cid)
            return {given for given, cid in canonical.items() if cid in hubs}

        return self._read(work)

    def entity(self, entity_id: str, acl_class_ids: Sequence[str] | None) -> EntitySummary | None:
        def work(tx: ManagedTransaction) -> EntitySummary | None:
            cid = self._canonical(tx, [entity_id])[entity_id]
            clusters = self._clusters(tx, [cid], acl_class_ids)
            view = clusters.get(cid)
            if view is None or entity_id not in view.members:  # as for an unknown id (section 1, security.md)
                return None
            return self._summarise(tx, clusters, acl_class_ids)[cid]

        return self._read(work)

    def neighbours(
        self,
        entity_id: str,
        acl_class_ids: Sequence[str] | None,
        *,
        relations: Sequence[str] | None = None,
        limit: int = 50,
    ) -> list[Edge]:
        if limit <= 0:
            return []

        def work(tx: ManagedTransaction) -> list[Edge]:
            if not self._visible_ids(tx, [entity_id], acl_class_ids):
                return []
            cid = self._canonical(tx, [entity_id])[entity_id]
            params = self._params(
                acl_class_ids, cid=cid, relations=list(relations) if relations is not None else None, limit=limit
            )
            rows = [r.data() for r in tx.run(_NEIGHBOURS, params)]
            ends = list(dict.fromkeys(e for r in rows for e in (r["subject"], r["object"])))
            clusters = self._clusters(tx, ends, acl_class_ids)
            edges = [e for e in (_edge(r, clusters) for r in rows) if e is not None]
            edges.sort(key=lambda e: (-e.evidence_count, -e.confidence, e.relation_id))
            return edges[:limit]

        return self._read(work)

    def claims_of(self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None) -> list[ClaimRecord]:
        if not entity_ids:
            return []

        def work(tx: ManagedTransaction) -> tuple[list[ClaimRecord], Mapping[str, Cardinality]]:
            canonical = self._canonical(tx, self._visible_ids(tx, list(entity_ids), acl_class_ids))
            cids = list(dict.fromkeys(canonical.values()))
            owner = {cid: cid for cid in cids}
            for member in tx.run(_MEMBER_ROWS, self._params(acl_class_ids, cids=cids)):
                owner[member["entity_id"]] = member["cid"]
            rows = [r.data() for r in tx.run(_CLAIMS_OF, self._params(acl_class_ids, members=list(owner)))]
            clusters = self._clusters(tx, cids, acl_class_ids)
            records: list[ClaimRecord] = []
            for row in rows:
                cluster = clusters.get(owner[row["entity_id"]])
                if cluster is not None:  # always: a visible claim makes its entity visible
                    opened = {**row, "value": self._open(row["doc_id"], row["value"])}
                    records.append(_claim({**opened, "quote": self._open(row["doc_id"], row["quote"])}, cluster.ref))
            return records, self._cardinality(tx)

        records, cardinality = self._read(work)
        return timeline(records, cardinality)

    def entities_by_id(
        self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None
    ) -> dict[str, EntitySummary]:
        ids = list(dict.fromkeys(entity_ids))
        if not ids:
            return {}

        def work(tx: ManagedTransaction) -> dict[str, EntitySummary]:
            canonical = self._canonical(tx, ids)
            clusters = self._clusters(tx, list(dict.fromkeys(canonical.values())), acl_class_ids)
            shown = {i: c for i, c in canonical.items() if c in clusters and i in clusters[c].members}
            found = self._summarise(tx, {c: clusters[c] for c in dict.fromkeys(shown.values())}, acl_class_ids)
            return {i: found[c] for i, c in shown.items()}

        return self._read(work)

    def neighbours_by_id(
        self,
        entity_ids: Sequence[str],
        acl_class_ids: Sequence[str] | None,
        *,
        relations: Sequence[str] | None = None,
        limit: int = 50,
    ) -> dict[str, list[Edge]]:
        return self._neighbours_many(entity_ids, acl_class_ids, relations, limit, _NEIGHBOURS_MANY)

    def _neighbours_many(
        self,
        entity_ids: Sequence[str],
        acl_class_ids: Sequence[str] | None,
        relations: Sequence[str] | None,
        limit: int,
        query: LiteralString,
    ) -> dict[str, list[Edge]]:
        ids = list(dict.fromkeys(entity_ids))
        out: dict[str, list[Edge]] = {i: [] for i in ids}
        if limit <= 0 or not ids:
            return out

        def work(tx: ManagedTransaction) -> dict[str, list[Edge]]:
            canonical = self._canonical(tx, self._visible_ids(tx, ids, acl_class_ids))
            cids = list(dict.fromkeys(canonical.values()))
            if not cids:
                return out
            params = self._params(
                acl_class_ids, cids=cids, relations=list(relations) if relations is not None else None, limit=limit
            )
            rows = [r.data() for r in tx.run(query, params)]
            ends = list(dict.fromkeys(e for r in rows for e in (r["subject"], r["object"])))
            clusters = self._clusters(tx, ends, acl_class_ids)
            by_cid: dict[str, list[Edge]] = {c: [] for c in cids}
            for row in rows:
                edge = _edge(row, clusters)
                if edge is not None:
                    by_cid[row["asked"]].append(edge)
            for edges in by_cid.values():
                edges.sort(key=lambda e: (-e.evidence_count, -e.confidence, e.relation_id))
                del edges[limit:]
            return {**out, **{given: list(by_cid[cid]) for given, cid in canonical.items()}}

        return self._read(work)

    def edges_among(
        self,
        entity_ids: Sequence[str],
        acl_class_ids: Sequence[str] | None,
        *,
        relations: Sequence[str] | None = None,
        limit: int = 50,
    ) -> dict[str, list[Edge]]:
        return self._neighbours_many(entity_ids, acl_class_ids, relations, limit, _EDGES_AMONG)

    # --- KnowledgeProjection --------------------------------------------------------------------------------

    def entities_in_document(self, doc_id: str) -> list[str]:
        def work(tx: ManagedTransaction) -> list[str]:
            return sorted(r["entity_id"] for r in tx.run(_IN_DOCUMENT, ns=self._ns, doc_id=doc_id))

        return self._read(work)

    def canonical_of(self, entity_ids: Sequence[str]) -> dict[str, str]:
        return self._read(lambda tx: self._canonical(tx, list(entity_ids)))

    def members_of(self, canonical_ids: Sequence[str]) -> list[str]:
        def work(tx: ManagedTransaction) -> list[str]:
            return sorted(r["entity_id"] for r in tx.run(_MEMBERS, ns=self._ns, cids=list(canonical_ids)))

        return self._read(work)

    def project(self, snapshot: KnowledgeSnapshot) -> None:
        """Replace the projection's state of the snapshot's scope with the snapshot: in one transaction, or for
        a scope over `write_batch` units of work (a hub's) in bounded batches (`_project_in_batches`)."""
        ns = self._ns
        cids = list(snapshot.canonical_ids)
        entity_rows = [self._entity_row(e) for e in snapshot.entities]
        edge_rows = [_edge_row(e) for e in snapshot.edges]
        claim_rows = [self._claim_row(c) for c in snapshot.claims]
        attributes = [a for a, _ in snapshot.cardinality]
        cardinalities = [c.value for _, c in snapshot.cardinality]
        if scope_cost(entity_rows, edge_rows, claim_rows) > self._write_batch:
            self._project_in_batches(snapshot, entity_rows, edge_rows, claim_rows)
            return

        def work(tx: ManagedTransaction) -> None:
            old = [r.data() for r in tx.run(_SCOPE_ENTITIES, ns=ns, ids=list(snapshot.entity_ids), cids=cids)]
            gone = sorted({r["entity_id"] for r in old} | set(snapshot.entity_ids))
            tx.run(_DROP_CLAIMS, ns=ns, ids=gone).consume()
            tx.run(_DROP_ENTITIES, ns=ns, ids=gone).consume()
            fars = [r["far"] for r in tx.run(_DROP_CANONICAL, ns=ns, cids=cids)]
            tx.run(_PUT_ENTITIES, ns=ns, rows=entity_rows).consume()
            tx.run(_PUT_EDGES, ns=ns, rows=edge_rows).consume()
            tx.run(_PUT_CLAIMS, ns=ns, rows=claim_rows).consume()
            tx.run(_PUT_ONTOLOGY, ns=ns, attributes=attributes, cardinalities=cardinalities).consume()
            norms = sorted({n for r in old for n in r["norms"]})
            docs = sorted({d for r in old for d in r["docs"]})
            tx.run(_SWEEP, ns=ns, norms=norms, docs=docs, cids=sorted(set(fars) | set(cids))).consume()

        with self._session() as session:
            session.execute_write(work)

    def _project_in_batches(
        self,
        snapshot: KnowledgeSnapshot,
        entity_rows: Sequence[dict[str, Any]],
        edge_rows: Sequence[dict[str, Any]],
        claim_rows: Sequence[dict[str, Any]],
    ) -> None:
        """Upsert every row stamped with a fresh generation, then delete what of the scope is stale, each in
        transactions of at most `write_batch` units. Idempotent: interrupted anywhere, projecting the scope
        again converges (the caller holds the namespace's writer lock throughout)."""
        limit = self._write_batch
        params: dict[str, Any] = {"ns": self._ns, "gen": uuid.uuid4().hex, "limit": limit}
        cids = list(snapshot.canonical_ids)
        with self._session() as session:

            def write(query: LiteralString, **more: Any) -> Record | None:
                def work(tx: ManagedTransaction) -> Record | None:
                    return tx.run(query, {**params, **more}).single()

                return session.execute_write(work)

            def read_ids(tx: ManagedTransaction) -> list[str]:
                found = tx.run(_SCOPE_ENTITY_IDS, ns=self._ns, ids=list(snapshot.entity_ids), cids=cids)
                return [r["entity_id"] for r in found]

            ids = sorted(set(session.execute_read(read_ids)) | set(snapshot.entity_ids))
            pieces = [piece for row in entity_rows for piece in split_entity_row(row, limit)]
            for batch in bounded_batches(pieces, entity_cost, limit):
                write(_STAMP_ENTITIES, rows=batch)
            for query, rows in ((_STAMP_EDGES, edge_rows), (_STAMP_CLAIMS, claim_rows)):
                for batch in bounded_batches(rows, row_cost, limit):
                    write(query, rows=batch)
            attributes = [a for a, _ in snapshot.cardinality]
            write(_PUT_ONTOLOGY, attributes=attributes, cardinalities=[c.value for _, c in snapshot.cardinality])
            fars: set[str] = set()
            docs: set[str] = set()
            norms: set[str] = set()
            while (found := write(_STALE_EDGES, cids=cids)) is not None and found["deleted"]:
                fars.update(found["fars"])
            while (found := write(_STALE_LINKS, ids=ids)) is not None and found["deleted"]:
                docs.update(found["docs"])
                norms.update(found["norms"])
            while (found := write(_STALE_NODES, ids=ids)) is not None and found["deleted"]:
                pass  # each round deletes up to `limit` stale claims and entities
            sweep = {"norms": sorted(norms), "docs": sorted(docs), "cids": sorted(fars | set(cids))}
            for start in range(0, max(len(v) for v in sweep.values()), limit):
                write(_SWEEP, **{k: v[start : start + limit] for k, v in sweep.items()})

    def project_hubs(self, hubs: Mapping[str, int]) -> None:
        ids = sorted(hubs)
        rows = [{"entity_id": i, "min_degree": int(hubs[i])} for i in ids]

        def work(tx: ManagedTransaction) -> None:
            tx.run(_DROP_HUBS, ns=self._ns, ids=ids).consume()
            tx.run(_PUT_HUBS, ns=self._ns, hubs=rows).consume()

        with self._session() as session:
            session.execute_write(work)

    def record_watermark(self, version: int) -> None:
        """Every PostgreSQL graph change up to `version` is applied (never moves back)."""
        with self._session() as session:
            session.execute_write(lambda tx: tx.run(_PUT_WATERMARK, ns=self._ns, version=int(version)).consume())

    def watermark(self) -> int | None:
        """The graph version last recorded as applied; None before the first."""

        def work(tx: ManagedTransaction) -> int | None:
            record = tx.run(_WATERMARK, ns=self._ns).single()
            return None if record is None or record["version"] is None else int(record["version"])

        return self._read(work)

    def drop_namespace(self) -> None:
        """Delete everything this projection holds (its namespace only; other namespaces and the lexical
        graph stay)."""
        with self._session() as session:
            session.execute_write(lambda tx: tx.run(_DROP_NAMESPACE, ns=self._ns).consume())

    # --- helpers --------------------------------------------------------------------------------------------

    def _seal(self, doc_id: str, text: str) -> str:
        """`text` as the projection stores it: sealed under the document's key (base64), or as it is without
        a cipher. A document whose key is gone (deleted since the snapshot was read) is stored as "": its
        deletion re-projects the scope anyway, and a fresh key must never be made for it."""
        if self._cipher is None:
            return text
        try:
            sealed = self._cipher.sealer(doc_id, deterministic=True, create=False)(text.encode("utf-8"))
        except KgragError as err:
            if err.code is not ErrorCode.CONTENT_SHREDDED:
                raise
            return ""
        return base64.b64encode(sealed).decode("ascii")

    def _open(self, doc_id: str, stored: str) -> str:
        """What `_seal` stored, opened; "" once the document's key is destroyed."""
        if self._cipher is None:
            return stored
        if not stored:
            return ""
        return open_text(self._cipher, doc_id, base64.b64decode(stored)) or ""

    def _norm(self, norm: str) -> str:
        """A normalised name as stored: its blind index, or itself without a cipher."""
        return norm if self._name_index is None else self._name_index(norm)

    def _entity_row(self, e: ProjectedEntity) -> dict[str, Any]:
        return {
            "entity_id": e.entity_id,
            "canonical_id": e.canonical_id,
            "name": self._seal(e.name_doc_id, e.name),
            "name_doc": e.name_doc_id,
            "type": e.type,
            "norm_name": self._norm(e.norm_name),
            # the entity row's identifiers: blind indexes already (PostgreSQL keeps no other form)
            "strong_ids": json.dumps([list(p) for p in e.strong_ids]),
            "seen_acl": [r.acl_class_id for r in e.reaches],
            "seen_active": [r.active for r in e.reaches],
            "docs": list(e.doc_ids),
            "aliases": [
                {
                    "name": self._seal(a.doc_id, a.name),
                    "norm": self._norm(a.norm_name),
                    "acl": a.reach.acl_class_id,
                    "active": a.reach.active,
                    "doc": a.doc_id,
                    "uses": a.uses,
                    "strong_ids": self._seal(a.doc_id, json.dumps([list(p) for p in a.strong_ids])),
                }
                for a in e.aliases
            ],
        }

    def _claim_row(self, c: ProjectedClaim) -> dict[str, Any]:
        ev = c.evidence
        return {
            "claim_id": c.claim_id,
            "props": {
                "entity_id": c.entity_id,
                "attribute": c.attribute,
                "polarity": c.polarity.value,
                "modality": c.modality.value,
                "valid_from": _day(c.valid_from),
                "valid_to": _day(c.valid_to),
                "ev_value": [self._seal(x.doc_id, x.value or c.value) for x in ev],
                "ev_quote": [self._seal(x.doc_id, x.quote) for x in ev],
                "ev_chunk": [x.chunk_id for x in ev],
                "ev_doc": [x.doc_id for x in ev],
                "ev_acl": [x.reach.acl_class_id for x in ev],
                "ev_active": [x.reach.active for x in ev],
                "ev_tier": [int(x.tier) for x in ev],
                "ev_conf": [float(x.confidence) for x in ev],
                "ev_written": [_day(x.written) for x in ev],
            },
        }

    def _params(self, acl_class_ids: Sequence[str] | None, **more: Any) -> dict[str, Any]:
        return {"ns": self._ns, "admin": acl_class_ids is None, "acl": list(acl_class_ids or ()), **more}

    def _session(self) -> Session:
        if self._driver is None:
            raise RuntimeError("Neo4jKnowledgeGraph is closed")
        return self._driver.session(database=self._database, notifications_min_severity=NotificationMinimumSeverity.OFF)

    def _read(self, work: Callable[[ManagedTransaction], _T]) -> _T:
        # One read transaction per reader call: mapping, edges and names come from one snapshot.
        with self._session() as session:
            return session.execute_read(work)

    def _canonical(self, tx: ManagedTransaction, entity_ids: Sequence[str]) -> dict[str, str]:
        ids = list(dict.fromkeys(entity_ids))
        out = {i: i for i in ids}
        for r in tx.run(_CANONICAL, ns=self._ns, ids=ids):
            out[r["id"]] = r["cid"]
        return out

    def _visible_ids(
        self, tx: ManagedTransaction, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None
    ) -> list[str]:
        params = self._params(acl_class_ids, ids=list(dict.fromkeys(entity_ids)))
        return [r["entity_id"] for r in tx.run(_VISIBLE_IDS, params)]

    def _hub_thresholds(self, tx: ManagedTransaction, cids: Sequence[str]) -> dict[str, int]:
        return {r["entity_id"]: int(r["min_degree"]) for r in tx.run(_HUBS, {"ns": self._ns, "cids": list(cids)})}

    def _cardinality(self, tx: ManagedTransaction) -> dict[str, Cardinality]:
        record = tx.run(_CARDINALITY, ns=self._ns).single()
        if record is None:
            return {}
        return {a: Cardinality(c) for a, c in zip(record["attributes"], record["cardinalities"], strict=True)}

    def _clusters(
        self, tx: ManagedTransaction, cids: Sequence[str], acl_class_ids: Sequence[str] | None
    ) -> dict[str, ClusterView]:
        """The visible canonical entities among `cids`, named as PostgresGraphStore names them."""
        if not cids:
            return {}
        params = self._params(acl_class_ids, cids=list(dict.fromkeys(cids)))
        members: dict[str, list[MemberRow]] = {}
        for r in tx.run(_MEMBER_ROWS, params):
            ids = tuple(
                sorted(
                    {
                        pair
                        for stored in r["ids"]
                        if stored["ids"] is not None
                        for pair in _strong_ids(self._open(stored["doc"] or "", stored["ids"]) or "[]")
                    }
                )
            )
            name = self._open(r["name_doc"] or "", str(r["name"]))
            members.setdefault(r["cid"], []).append(MemberRow(r["entity_id"], name, str(r["type"]), ids, r["visible"]))
        aliases: dict[str, dict[str, int]] = {}
        for record in tx.run(_ALIAS_COUNTS, params):
            counts = aliases.setdefault(record["cid"], {})
            alias = self._open(record["doc"] or "", record["name"])
            if alias:
                counts[alias] = counts.get(alias, 0) + int(record["uses"])
        return cluster_views(members, aliases)

    def _summaries(
        self, tx: ManagedTransaction, cids: Sequence[str], acl_class_ids: Sequence[str] | None
    ) -> dict[str, EntitySummary]:
        return self._summarise(tx, self._clusters(tx, cids, acl_class_ids), acl_class_ids)

    def _summarise(
        self, tx: ManagedTransaction, clusters: Mapping[str, ClusterView], acl_class_ids: Sequence[str] | None
    ) -> dict[str, EntitySummary]:
        if not clusters:
            return {}
        params = self._params(acl_class_ids, cids=list(clusters))
        degrees = {r["cid"]: int(r["degree"]) for r in tx.run(_DEGREES, params)}
        return summaries(clusters, degrees, self._hub_thresholds(tx, list(clusters)))


# --- rows and records -------------------------------------------------------------------------------------


def _day(value: date | None) -> str:
    return value.isoformat() if value is not None else ""


def _date(value: object) -> date | None:
    return date.fromisoformat(value) if isinstance(value, str) and value else None


def _strong_ids(stored: str) -> tuple[tuple[str, str], ...]:
    return tuple((str(k), str(v)) for k, v in json.loads(stored))


def _edge(row: Mapping[str, Any], clusters: Mapping[str, ClusterView]) -> Edge | None:
    subject, obj = row["subject"], row["object"]
    if subject not in clusters or obj not in clusters:  # only while the far end awaits its projection
        return None
    s_ref, o_ref = clusters[subject].ref, clusters[obj].ref
    polarity, modality, valid_from = Polarity(row["polarity"]), Modality(row["modality"]), _date(row["valid_from"])
    return Edge(
        # Keyed by the ids this caller is shown, as PostgresGraphStore keys it.
        relation_id=relation_id(s_ref.entity_id, row["relation"], o_ref.entity_id, valid_from, polarity, modality),
        subject=s_ref,
        relation=row["relation"],
        object=o_ref,
        polarity=polarity,
        modality=modality,
        valid_from=valid_from,
        valid_to=_date(row["valid_to"]),
        evidence_chunk_ids=tuple(sorted(row["chunks"])),
        confidence=float(row["conf"]),
        latest_written=_date(row["written"]),
        first_written=_date(row["first_written"]),
    )


def _claim(row: Mapping[str, Any], ref: EntityRef) -> ClaimRecord:
    return ClaimRecord(
        claim_id=row["claim_id"],
        entity_id=ref.entity_id,
        entity_name=ref.name,
        entity_type=ref.type,
        attribute=row["attribute"],
        value=row["value"],
        quote=row["quote"],
        modality=Modality(row["modality"]),
        polarity=Polarity(row["polarity"]),
        valid_from=_date(row["valid_from"]),
        valid_to=_date(row["valid_to"]),
        written_at=_date(row["written"]),
        chunk_id=row["chunk_id"],
        doc_id=row["doc_id"],
        acl_class_id=row["acl_class_id"],
        tier=Tier(row["tier"]),
        confidence=float(row["confidence"]),
    )


def _edge_row(e: ProjectedEdge) -> dict[str, Any]:
    ev = e.evidence
    return {
        "relation_id": e.relation_id,
        "subject_id": e.subject_id,
        "object_id": e.object_id,
        "props": {
            "relation": e.relation,
            "polarity": e.polarity.value,
            "modality": e.modality.value,
            "valid_from": _day(e.valid_from),
            "ev_chunk": [x.chunk_id for x in ev],
            "ev_acl": [x.reach.acl_class_id for x in ev],
            "ev_active": [x.reach.active for x in ev],
            "ev_conf": [float(x.confidence) for x in ev],
            "ev_written": [_day(x.written) for x in ev],
            "ev_valid_to": [_day(x.valid_to) for x in ev],
        },
    }
