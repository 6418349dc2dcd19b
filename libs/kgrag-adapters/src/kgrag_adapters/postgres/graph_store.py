"""The knowledge graph on PostgreSQL: GraphReader and ResolutionStore over the facts of PostgresExtractionStore.

A subclass of PostgresExtractionStore, so one object (one connection pool) serves every PostgreSQL port: documents,
extraction, resolution state and graph reads.

Facts keep their mention-level entity IDs; canonical entities exist only as the mapping in er_canonical, which
reads apply at query time (0004_resolution.sql). Every read goes through evidence: an entity, edge or claim is
visible to a caller only through evidence chunks whose ACL class the caller holds and whose document is
ACTIVE, and counts, degrees, hub flags, ids, names, types, aliases and strong identifiers use visible
evidence only (docs/security.md, sections 1-3): an id the caller asks for that no visible evidence names
answers exactly as an unknown id does.

An entity counts as visible when any visible chunk names it: a mention, or the evidence of a relation or
claim about it. Extraction creates relation endpoints and claim subjects without a mention row, so "has a
visible mention" alone would hide entities whose facts the caller may read.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, LiteralString

import psycopg
from psycopg.types.json import Jsonb

from kgrag_adapters.postgres.extraction_store import PostgresExtractionStore, _cardinality
from kgrag_adapters.postgres.merge_clusters import lock_merge_log, recluster
from kgrag_adapters.postgres.profile_memo import ProfileMemo, fingerprint
from kgrag_adapters.postgres.senses import kept_apart, split_off
from kgrag_adapters.postgres.store import Row
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.claims import COMPETING_MODALITIES, timeline
from kgrag_core.extraction.identity import name_key, normalise_name, relation_id
from kgrag_core.extraction.model import Modality, Polarity
from kgrag_core.extraction.records import ClaimRecord
from kgrag_core.graph.clusters import ClusterView, MemberRow, cluster_views, summaries
from kgrag_core.graph.model import (
    DecisionKind,
    DocumentProfile,
    Edge,
    EntityProfile,
    EntityRef,
    EntitySummary,
    MergeRecord,
    PairDecision,
    ScopedEvidence,
    SenseSplit,
    document_profile,
)
from kgrag_core.graph.ports import ResolutionScope
from kgrag_core.shredding import open_text

_DECIDERS = frozenset({"auto", "review", "override"})

# The tail of a query that reads through chunk `c`: the document is ACTIVE and the caller holds the class.
_SEES: LiteralString = (
    " JOIN documents d ON d.doc_id = c.doc_id AND d.status = 'ACTIVE'"
    " WHERE (%(admin)s OR c.acl_class_id = ANY(%(acl)s::text[]))"
)

# Whether kg_entities row `e` is named by any chunk the caller may see.
_ENTITY_VISIBLE: LiteralString = (
    "(EXISTS (SELECT 1 FROM kg_mentions m JOIN chunks c ON c.chunk_id = m.chunk_id"
    + _SEES
    + " AND m.entity_id = e.entity_id)"
    " OR EXISTS (SELECT 1 FROM kg_relations r JOIN kg_relation_evidence ev ON ev.relation_id = r.relation_id"
    " JOIN chunks c ON c.chunk_id = ev.chunk_id" + _SEES + " AND r.subject_id = e.entity_id)"
    " OR EXISTS (SELECT 1 FROM kg_relations r JOIN kg_relation_evidence ev ON ev.relation_id = r.relation_id"
    " JOIN chunks c ON c.chunk_id = ev.chunk_id" + _SEES + " AND r.object_id = e.entity_id)"
    " OR EXISTS (SELECT 1 FROM kg_claims cl JOIN kg_claim_evidence cv ON cv.claim_id = cl.claim_id"
    " JOIN chunks c ON c.chunk_id = cv.chunk_id" + _SEES + " AND cl.entity_id = e.entity_id))"
)

# The canonical mapping as this caller may see it: a member whose merge rests on evidence of classes the caller
# does not all hold stands alone (docs/security.md, section 1). Resolution reads er_canonical itself.
_CANON: LiteralString = (
    "(SELECT x.entity_id, x.canonical_id FROM er_canonical x WHERE %(admin)s OR x.requires <@ %(acl)s::text[])"
)

# (canonical id, member id) for every canonical id in %(ids)s: the id itself and what maps to it.
_MEMBERS_CTE: LiteralString = (
    "mb AS (SELECT k.cid, k.cid AS entity_id FROM unnest(%(ids)s::text[]) AS k(cid)"
    " UNION SELECT ec.canonical_id, ec.entity_id FROM " + _CANON + " ec WHERE ec.canonical_id = ANY(%(ids)s::text[]))"
)

# A name visible evidence gives kg_entities row `e`, as {sealed name, its document id}: its most confident
# visible mention (the earliest indexed of equals: the entity's first name, as the entity row used to keep
# it), else (an entity only relation or claim evidence names) the name that evidence gives. Names are sealed
# per document (migration 0010); the entity row has none. COALESCE stops at the first that finds one.
_VISIBLE_NAME: LiteralString = (
    "COALESCE((SELECT ARRAY[m.name, convert_to(c.doc_id, 'UTF8')] FROM kg_mentions m"
    " JOIN chunks c ON c.chunk_id = m.chunk_id" + _SEES + " AND m.entity_id = e.entity_id"
    " ORDER BY m.confidence DESC, c.indexed_at, m.chunk_id, m.name LIMIT 1),"
    " (SELECT ARRAY[ev.subject_name, convert_to(c.doc_id, 'UTF8')] FROM kg_relations r"
    " JOIN kg_relation_evidence ev ON ev.relation_id = r.relation_id JOIN chunks c ON c.chunk_id = ev.chunk_id"
    + _SEES
    + " AND r.subject_id = e.entity_id ORDER BY ev.confidence DESC, c.indexed_at, ev.chunk_id, ev.quote_key LIMIT 1),"
    " (SELECT ARRAY[ev.object_name, convert_to(c.doc_id, 'UTF8')] FROM kg_relations r"
    " JOIN kg_relation_evidence ev ON ev.relation_id = r.relation_id JOIN chunks c ON c.chunk_id = ev.chunk_id"
    + _SEES
    + " AND r.object_id = e.entity_id ORDER BY ev.confidence DESC, c.indexed_at, ev.chunk_id, ev.quote_key LIMIT 1),"
    " (SELECT ARRAY[cv.entity_name, convert_to(c.doc_id, 'UTF8')] FROM kg_claims cl"
    " JOIN kg_claim_evidence cv ON cv.claim_id = cl.claim_id JOIN chunks c ON c.chunk_id = cv.chunk_id"
    + _SEES
    + " AND cl.entity_id = e.entity_id ORDER BY cv.confidence DESC, c.indexed_at, cv.chunk_id, cv.quote_key LIMIT 1))"
)

# Each member with a visible name, the (sealed) strong identifiers of its visible mentions (not the entity
# row's blinded union over every mention) with their documents, and whether visible evidence names it.
_MEMBER_ROWS: LiteralString = (
    "WITH "
    + _MEMBERS_CTE
    + " SELECT mb.cid, e.entity_id, "
    + _VISIBLE_NAME
    + ", e.type, ids.sealed, ids.docs, "
    + _ENTITY_VISIBLE
    + " FROM mb JOIN kg_entities e ON e.entity_id = mb.entity_id"
    " LEFT JOIN LATERAL (SELECT array_agg(m.strong_ids) AS sealed, array_agg(c.doc_id) AS docs FROM kg_mentions m"
    " JOIN chunks c ON c.chunk_id = m.chunk_id" + _SEES + " AND m.entity_id = e.entity_id"
    " AND m.strong_ids IS NOT NULL) ids ON true"
    " ORDER BY mb.cid, e.entity_id"
)

# Each canonical id's members (as the caller sees the mapping) that visible evidence names.
_VISIBLE_MEMBERS: LiteralString = (
    "WITH " + _MEMBERS_CTE + " SELECT mb.cid, e.entity_id FROM mb JOIN kg_entities e ON e.entity_id = mb.entity_id"
    " WHERE " + _ENTITY_VISIBLE + " ORDER BY 1, 2"
)

# Which of %(ids)s (as given, members or labels) visible evidence names.
_VISIBLE_IDS: LiteralString = (
    "SELECT e.entity_id FROM kg_entities e WHERE e.entity_id = ANY(%(ids)s::text[]) AND " + _ENTITY_VISIBLE
)

# Per sealed name and document (names are sealed per document): opened and summed in Python.
_ALIAS_COUNTS: LiteralString = (
    "WITH " + _MEMBERS_CTE + " SELECT mb.cid, m.name, c.doc_id, count(*) FROM mb"
    " JOIN kg_mentions m ON m.entity_id = mb.entity_id"
    " JOIN chunks c ON c.chunk_id = m.chunk_id" + _SEES + " GROUP BY mb.cid, m.name, c.doc_id"
)

# Relations touching any member of the canonical ids, endpoints mapped to canonical ids, visible evidence only,
# grouped into edges (one per canonical subject, relation, canonical object, polarity, modality, valid_from).
_EDGE_GROUPS: LiteralString = (
    "WITH " + _MEMBERS_CTE + ", rel AS (SELECT r.* FROM kg_relations r JOIN mb ON r.subject_id = mb.entity_id"
    " UNION SELECT r.* FROM kg_relations r JOIN mb ON r.object_id = mb.entity_id)"
    " SELECT COALESCE(cs.canonical_id, r.subject_id), r.relation, COALESCE(co.canonical_id, r.object_id),"
    " r.polarity, r.modality, r.valid_from, max(r.valid_to), array_agg(DISTINCT ev.chunk_id),"
    " max(ev.confidence), max((c.doc_time AT TIME ZONE 'UTC')::date), count(DISTINCT ev.chunk_id),"
    " min((c.doc_time AT TIME ZONE 'UTC')::date)"
    " FROM rel r LEFT JOIN "
    + _CANON
    + " cs ON cs.entity_id = r.subject_id LEFT JOIN "
    + _CANON
    + " co ON co.entity_id = r.object_id"
    " JOIN kg_relation_evidence ev ON ev.relation_id = r.relation_id JOIN chunks c ON c.chunk_id = ev.chunk_id"
    + _SEES
    + " AND (%(relations)s::text[] IS NULL OR r.relation = ANY(%(relations)s::text[]))"
    " GROUP BY 1, 2, 3, 4, 5, 6"
)

# The strongest edges first; ties on the SQL keys come back whole, so Python can break them by relation ID.
_NEIGHBOURS: LiteralString = (
    _EDGE_GROUPS + " ORDER BY count(DISTINCT ev.chunk_id) DESC, max(ev.confidence) DESC"
    " FETCH FIRST (%(limit)s) ROWS WITH TIES"
)

# The relations touching any member of the asked clusters, tagged by the asked (canonical) id.
_RELATIONS_OF_ASKED: LiteralString = (
    ", rel AS (SELECT mb.cid AS asked, r.* FROM kg_relations r JOIN mb ON r.subject_id = mb.entity_id"
    " UNION SELECT mb.cid AS asked, r.* FROM kg_relations r JOIN mb ON r.object_id = mb.entity_id),"
)

# `_RELATIONS_OF_ASKED` kept to relations whose other end is also one of the asked clusters' members (as the
# caller sees the mapping, so both ends' canonical ids are asked ones): a hub's thousands of relations to
# entities outside the set are never aggregated, and no end outside it is named.
_RELATIONS_AMONG_ASKED: LiteralString = (
    ", rel AS (SELECT mb.cid AS asked, r.* FROM kg_relations r JOIN mb ON r.subject_id = mb.entity_id"
    " WHERE r.object_id IN (SELECT entity_id FROM mb)"
    " UNION SELECT mb.cid AS asked, r.* FROM kg_relations r JOIN mb ON r.object_id = mb.entity_id"
    " WHERE r.subject_id IN (SELECT entity_id FROM mb)),"
)

_GROUPS_BY_ASKED: LiteralString = (
    " g AS (SELECT COALESCE(cs.canonical_id, r.subject_id) AS s, r.relation AS rel,"
    " COALESCE(co.canonical_id, r.object_id) AS o, r.polarity AS pol, r.modality AS modality, r.valid_from AS vf,"
    " max(r.valid_to) AS vt, array_agg(DISTINCT ev.chunk_id) AS chunks, max(ev.confidence) AS conf,"
    " max((c.doc_time AT TIME ZONE 'UTC')::date) AS latest, count(DISTINCT ev.chunk_id) AS n,"
    " min((c.doc_time AT TIME ZONE 'UTC')::date) AS first, r.asked AS asked"
    " FROM rel r LEFT JOIN "
    + _CANON
    + " cs ON cs.entity_id = r.subject_id LEFT JOIN "
    + _CANON
    + " co ON co.entity_id = r.object_id"
    " JOIN kg_relation_evidence ev ON ev.relation_id = r.relation_id JOIN chunks c ON c.chunk_id = ev.chunk_id"
    + _SEES
    + " AND (%(relations)s::text[] IS NULL OR r.relation = ANY(%(relations)s::text[]))"
    " GROUP BY 1, 2, 3, 4, 5, 6, 13)"
    " SELECT s, rel, o, pol, modality, vf, vt, chunks, conf, latest, n, first, asked FROM"
    " (SELECT g.*, rank() OVER (PARTITION BY g.asked ORDER BY g.n DESC, g.conf DESC) AS rk FROM g"
)
_RANKED_TAIL: LiteralString = ") ranked WHERE rk <= %(limit)s"

# `_NEIGHBOURS` for many canonical ids at once: the same edge groups, tagged by the asked id they touch (an edge
# between two asked ids counts for each), the strongest `limit` per asked id with their ties (rank() <= n is
# FETCH FIRST n ROWS WITH TIES within each partition). Column 12 is the asked id.
_NEIGHBOURS_MANY: LiteralString = "WITH " + _MEMBERS_CTE + _RELATIONS_OF_ASKED + _GROUPS_BY_ASKED + _RANKED_TAIL

# `GraphReader.edges_among`: `_NEIGHBOURS_MANY` over the relations among the asked clusters only, both
# canonical ends asked ones (the relation-level filter already ensures it; the group-level one states it).
_EDGES_AMONG: LiteralString = (
    "WITH "
    + _MEMBERS_CTE
    + _RELATIONS_AMONG_ASKED
    + _GROUPS_BY_ASKED
    + " WHERE g.s = ANY(%(ids)s::text[]) AND g.o = ANY(%(ids)s::text[])"
    + _RANKED_TAIL
)

# Distinct edge keys, counted once per endpoint: a self-loop (left by a merge) counts once.
_DEGREE_TAIL: LiteralString = (
    ", ends AS (SELECT g.s AS cid, g.* FROM g UNION SELECT g.o AS cid, g.* FROM g) SELECT cid, count(*) FROM ends"
)

_EDGE_KEYS: LiteralString = (
    " SELECT DISTINCT COALESCE(cs.canonical_id, r.subject_id) AS s, r.relation, COALESCE(co.canonical_id, r.object_id)"
    " AS o, r.polarity, r.modality, r.valid_from"
    " FROM rel r LEFT JOIN "
    + _CANON
    + " cs ON cs.entity_id = r.subject_id LEFT JOIN "
    + _CANON
    + " co ON co.entity_id = r.object_id"
    " WHERE EXISTS (SELECT 1 FROM kg_relation_evidence ev JOIN chunks c ON c.chunk_id = ev.chunk_id"
    + _SEES
    + " AND ev.relation_id = r.relation_id)"
)

_DEGREES: LiteralString = (
    "WITH " + _MEMBERS_CTE + ", rel AS (SELECT r.* FROM kg_relations r JOIN mb ON r.subject_id = mb.entity_id"
    " UNION SELECT r.* FROM kg_relations r JOIN mb ON r.object_id = mb.entity_id), g AS ("
    + _EDGE_KEYS
    + ")"
    + _DEGREE_TAIL
    + " WHERE cid = ANY(%(ids)s::text[]) GROUP BY cid"
)

_ALL_DEGREES: LiteralString = (
    "WITH rel AS (SELECT * FROM kg_relations), g AS ("
    + _EDGE_KEYS
    + ")"
    + _DEGREE_TAIL
    + " GROUP BY cid HAVING count(*) >= %(min_degree)s"
)

# Names are matched by their blind index (migration 0010). The entity row's counts only for an entity keyed
# by its name: every piece of its evidence names it so. An entity keyed by a strong identifier was indexed
# under the first name any record gave it, perhaps a restricted one.
_NAMED: LiteralString = (
    "SELECT m.name_key, m.entity_id FROM kg_mentions m JOIN chunks c ON c.chunk_id = m.chunk_id"
    + _SEES
    + " AND m.name_key = ANY(%(names)s::text[])"
    " UNION SELECT e.name_key, e.entity_id FROM kg_entities e WHERE e.name_key = ANY(%(names)s::text[])"
    " AND e.strong_ids = '[]'::jsonb AND " + _ENTITY_VISIBLE
)

# One canonical entity's visible relation rows as edge keys, at most %(rows)s of them: no DISTINCT, so the
# scan stops after %(rows)s rows instead of reading every edge of a hub. Several mention-level relations can
# share a key (and a self-loop comes twice), so fewer distinct keys than rows means "count them all".
_VISIBLE_EDGE_ROWS: LiteralString = (
    "WITH " + _MEMBERS_CTE + ", rel AS (SELECT r.* FROM kg_relations r JOIN mb ON r.subject_id = mb.entity_id"
    " UNION ALL SELECT r.* FROM kg_relations r JOIN mb ON r.object_id = mb.entity_id)"
    " SELECT COALESCE(cs.canonical_id, r.subject_id), r.relation, COALESCE(co.canonical_id, r.object_id),"
    " r.polarity, r.modality, r.valid_from"
    " FROM rel r LEFT JOIN "
    + _CANON
    + " cs ON cs.entity_id = r.subject_id LEFT JOIN "
    + _CANON
    + " co ON co.entity_id = r.object_id"
    " WHERE EXISTS (SELECT 1 FROM kg_relation_evidence ev JOIN chunks c ON c.chunk_id = ev.chunk_id"
    + _SEES
    + " AND ev.relation_id = r.relation_id) LIMIT %(rows)s"
)

# The columns PostgresExtractionStore's `_claim` reads.
_CLAIMS_OF: LiteralString = (
    "SELECT cl.claim_id, cl.entity_id, ev.entity_name, e.type, cl.attribute, ev.value, ev.quote, cl.modality,"
    " cl.polarity,"
    " cl.valid_from, cl.valid_to, (c.doc_time AT TIME ZONE 'UTC')::date, ev.chunk_id, c.doc_id, c.acl_class_id,"
    " ev.tier, ev.confidence"
    " FROM kg_claims cl JOIN kg_entities e ON e.entity_id = cl.entity_id"
    " JOIN kg_claim_evidence ev ON ev.claim_id = cl.claim_id JOIN chunks c ON c.chunk_id = ev.chunk_id"
    + _SEES
    + " AND cl.entity_id = ANY(%(members)s::text[])"
)

# --- profiles: the whole store (resolution is global), live evidence only --------------------------------

# Incremental resolution's scope (ResolutionStore.entities_near_documents): the documents' entities, the
# entities sharing a name token (two characters or more) or a strong identifier with them, their clusters.
# Tokens and identifiers are compared by their blind indexes (migration 0010: stored normalised, so plain
# equality is the comparison entity ids make).
_SEED_CTE: LiteralString = """
seed AS (
  SELECT m.entity_id FROM kg_mentions m JOIN chunks c ON c.chunk_id = m.chunk_id
  WHERE c.doc_id = ANY(%(docs)s::text[])
  UNION SELECT r.subject_id FROM kg_relations r JOIN kg_relation_evidence ev ON ev.relation_id = r.relation_id
  JOIN chunks c ON c.chunk_id = ev.chunk_id WHERE c.doc_id = ANY(%(docs)s::text[])
  UNION SELECT r.object_id FROM kg_relations r JOIN kg_relation_evidence ev ON ev.relation_id = r.relation_id
  JOIN chunks c ON c.chunk_id = ev.chunk_id WHERE c.doc_id = ANY(%(docs)s::text[])
  UNION SELECT cl.entity_id FROM kg_claims cl JOIN kg_claim_evidence cv ON cv.claim_id = cl.claim_id
  JOIN chunks c ON c.chunk_id = cv.chunk_id WHERE c.doc_id = ANY(%(docs)s::text[])
), ids AS (
  SELECT DISTINCT p->>0 AS kind, p->>1 AS value
  FROM kg_entities e JOIN seed USING (entity_id), jsonb_array_elements(e.strong_ids) AS p
)"""

_SCOPE_TAIL: LiteralString = """
, clusters AS (
  SELECT DISTINCT COALESCE(ec.canonical_id, n.entity_id) AS cid FROM near n
  LEFT JOIN er_canonical ec ON ec.entity_id = n.entity_id
)
SELECT entity_id FROM near
UNION SELECT ec.entity_id FROM er_canonical ec JOIN clusters ON clusters.cid = ec.canonical_id
UNION SELECT cid FROM clusters
ORDER BY 1
"""

_NEAR_DOCUMENTS: LiteralString = (
    "WITH "
    + _SEED_CTE
    + """, tokens AS (
  SELECT COALESCE(array_agg(DISTINCT t), '{}') AS ts FROM (
    SELECT unnest(e.name_tokens) AS t FROM kg_entities e JOIN seed USING (entity_id)
    UNION SELECT unnest(m.name_tokens) FROM kg_mentions m JOIN seed USING (entity_id)) AS named
), near AS (
  SELECT entity_id FROM seed
  UNION SELECT e.entity_id FROM kg_entities e, tokens WHERE e.name_tokens && tokens.ts
  UNION SELECT m.entity_id FROM kg_mentions m, tokens WHERE m.name_tokens && tokens.ts
  UNION SELECT e.entity_id FROM kg_entities e, jsonb_array_elements(e.strong_ids) AS p
  JOIN ids ON ids.kind = p->>0 AND ids.value = p->>1
)"""
    + _SCOPE_TAIL
)

# ResolutionStore.incremental_scope: as _NEAR_DOCUMENTS, each (type, token) of the seeds followed only while
# at most %(cap)s entities of that type hold it (read up to cap + 1, once: a common token costs cap + 1 rows,
# not its whole posting list, and a kept token's holders are those rows). Blocking skips a block over the
# cap, and blocks are per type, so what these leave out could only have paired through the embedding
# neighbours (which the periodic full pass covers).
_TOKEN_HOLDERS: LiteralString = """
  SELECT e.entity_id FROM kg_entities e WHERE e.type = st.type AND e.name_tokens @> ARRAY[st.t]
  UNION SELECT m.entity_id FROM kg_mentions m JOIN kg_entities e ON e.entity_id = m.entity_id
  WHERE e.type = st.type AND m.name_tokens @> ARRAY[st.t]"""

_INCREMENTAL_SCOPE: LiteralString = (
    "WITH "
    + _SEED_CTE
    + """, seed_tokens AS (
  SELECT e.type, unnest(e.name_tokens) AS t FROM kg_entities e JOIN seed USING (entity_id)
  UNION SELECT e.type, unnest(m.name_tokens) FROM kg_mentions m JOIN seed USING (entity_id)
  JOIN kg_entities e ON e.entity_id = m.entity_id
), held AS (
  SELECT h.ids FROM seed_tokens st, LATERAL (SELECT array_agg(x.entity_id) AS ids FROM ("""
    + _TOKEN_HOLDERS
    + """ LIMIT %(cap)s::int + 1) AS x) AS h
), near AS (
  SELECT entity_id FROM seed
  UNION SELECT unnest(held.ids) FROM held WHERE cardinality(held.ids) <= %(cap)s::int
  UNION SELECT e.entity_id FROM kg_entities e, jsonb_array_elements(e.strong_ids) AS p
  JOIN ids ON ids.kind = p->>0 AND ids.value = p->>1
)"""
    + """, clusters AS (
  SELECT DISTINCT COALESCE(ec.canonical_id, n.entity_id) AS cid FROM near n
  LEFT JOIN er_canonical ec ON ec.entity_id = n.entity_id
), scope AS (
  SELECT entity_id FROM near
  UNION SELECT ec.entity_id FROM er_canonical ec JOIN clusters ON clusters.cid = ec.canonical_id
  UNION SELECT cid FROM clusters
)
SELECT s.entity_id, s.entity_id IN (SELECT entity_id FROM seed) FROM scope s ORDER BY 1
"""
)


_PROFILE_ENTITIES: LiteralString = (
    "SELECT e.entity_id, e.type, " + _VISIBLE_NAME + " FROM kg_entities e"
    " WHERE (%(every)s OR e.entity_id = ANY(%(ids)s::text[])) ORDER BY e.entity_id"
)

# Up to ten quotes per entity (the strongest first); Python keeps the first three distinct ones. Names and
# strong identifiers come sealed with their documents, opened in Python: an entity's identifiers are those
# its live mentions carried (the entity row keeps only their blind indexes, migration 0010).
_PROFILE_MENTIONS: LiteralString = (
    "SELECT m.entity_id, array_agg(m.name ORDER BY m.chunk_id, m.name),"
    " array_agg(c.doc_id ORDER BY m.chunk_id, m.name), count(*),"
    " (array_agg(m.quote ORDER BY m.confidence DESC, m.chunk_id, m.quote))[1:10],"
    # each quote's document: quotes are sealed under its key (ADR 0008)
    " (array_agg(c.doc_id ORDER BY m.confidence DESC, m.chunk_id, m.quote))[1:10],"
    " array_agg(m.strong_ids ORDER BY m.chunk_id, m.name) FILTER (WHERE m.strong_ids IS NOT NULL),"
    " array_agg(c.doc_id ORDER BY m.chunk_id, m.name) FILTER (WHERE m.strong_ids IS NOT NULL)"
    " FROM kg_mentions m JOIN chunks c ON c.chunk_id = m.chunk_id"
    + _SEES
    + " AND (%(every)s OR m.entity_id = ANY(%(ids)s::text[])) GROUP BY m.entity_id"
)

# Values are sealed on the evidence rows (per document): distinct and ordered in Python once opened.
_PROFILE_ATTRIBUTES: LiteralString = (
    "SELECT DISTINCT cl.entity_id, cl.attribute, cv.value, c.doc_id FROM kg_claims cl"
    " JOIN kg_claim_evidence cv ON cv.claim_id = cl.claim_id JOIN chunks c ON c.chunk_id = cv.chunk_id"
    + _SEES
    + " AND (%(every)s OR cl.entity_id = ANY(%(ids)s::text[]))"
    " AND cl.polarity = 'positive' AND cl.modality = ANY(%(modalities)s::text[])"
)

# Neighbours as canonical IDs: two entities linked to different members of one cluster share a neighbour.
# Each side of a live relation is kept to the asked ids before the evidence check, so an incremental pass
# reads the relations of its profiles only, not every relation of the store.
_LIVE_RELATION: LiteralString = (
    " AND EXISTS (SELECT 1 FROM kg_relation_evidence ev JOIN chunks c ON c.chunk_id = ev.chunk_id"
    + _SEES
    + " AND ev.relation_id = r.relation_id)"
)
_PROFILE_NEIGHBOURS: LiteralString = (
    "WITH pairs AS (SELECT r.subject_id AS entity_id, r.object_id AS other FROM kg_relations r"
    " WHERE (%(every)s OR r.subject_id = ANY(%(ids)s::text[]))" + _LIVE_RELATION + " UNION"
    " SELECT r.object_id, r.subject_id FROM kg_relations r"
    " WHERE (%(every)s OR r.object_id = ANY(%(ids)s::text[]))" + _LIVE_RELATION + ")"
    " SELECT p.entity_id, array_agg(DISTINCT COALESCE(ec.canonical_id, p.other) ORDER BY"
    " COALESCE(ec.canonical_id, p.other)) FROM pairs p LEFT JOIN er_canonical ec ON ec.entity_id = p.other"
    " GROUP BY p.entity_id"
)

_CONTEXT_QUOTES = 3
# Per entity and ACL class: the mention names and identifiers that class's chunks give it (sealed, with their
# documents: 0010_sealed_names), and whether only relation or claim evidence names it there (then by the
# profile's name): which reader may be shown a merge.
_PROFILE_SCOPES: LiteralString = (
    "WITH ev AS (SELECT m.entity_id, c.acl_class_id, m.name, m.strong_ids, c.doc_id FROM kg_mentions m"
    " JOIN chunks c ON c.chunk_id = m.chunk_id" + _SEES + " AND (%(every)s OR m.entity_id = ANY(%(ids)s::text[]))"
    " UNION ALL SELECT e.entity_id, c.acl_class_id, NULL::bytea, NULL::bytea, c.doc_id FROM kg_entities e"
    " JOIN kg_relations r ON e.entity_id IN (r.subject_id, r.object_id)"
    " JOIN kg_relation_evidence rv ON rv.relation_id = r.relation_id JOIN chunks c ON c.chunk_id = rv.chunk_id"
    + _SEES
    + " AND (%(every)s OR e.entity_id = ANY(%(ids)s::text[]))"
    " UNION ALL SELECT cl.entity_id, c.acl_class_id, NULL::bytea, NULL::bytea, c.doc_id FROM kg_claims cl"
    " JOIN kg_claim_evidence cv ON cv.claim_id = cl.claim_id JOIN chunks c ON c.chunk_id = cv.chunk_id"
    + _SEES
    + " AND (%(every)s OR cl.entity_id = ANY(%(ids)s::text[])))"
    " SELECT ev.entity_id, ev.acl_class_id,"
    " array_agg(ev.name) FILTER (WHERE ev.name IS NOT NULL), array_agg(ev.doc_id) FILTER (WHERE ev.name IS NOT NULL),"
    " array_agg(ev.strong_ids) FILTER (WHERE ev.strong_ids IS NOT NULL),"
    " array_agg(ev.doc_id) FILTER (WHERE ev.strong_ids IS NOT NULL)"
    " FROM ev GROUP BY ev.entity_id, ev.acl_class_id ORDER BY 1, 2"
)


# Per (entity, document) for entities named in two documents or more: names, mentions, quotes and strong
# identifiers (namesakes), sealed under the document's key and opened in Python (0010_sealed_names).
_DOCUMENT_MENTIONS: LiteralString = (
    "WITH m AS (SELECT m.*, c.doc_id FROM kg_mentions m JOIN chunks c ON c.chunk_id = m.chunk_id"
    + _SEES
    + " AND m.entity_id = ANY(%(ids)s::text[])),"
    " many AS (SELECT entity_id FROM m GROUP BY entity_id HAVING count(DISTINCT doc_id) > 1)"
    " SELECT m.entity_id, m.doc_id, array_agg(DISTINCT m.name), count(*),"
    " (array_agg(m.quote ORDER BY m.confidence DESC, m.chunk_id, m.quote))[1:10],"
    " array_agg(m.strong_ids) FILTER (WHERE m.strong_ids IS NOT NULL)"
    " FROM m JOIN many USING (entity_id) GROUP BY m.entity_id, m.doc_id ORDER BY 1, 2"
)

_DOCUMENT_ATTRIBUTES: LiteralString = (
    "SELECT DISTINCT cl.entity_id, c.doc_id, cl.attribute, cv.value FROM kg_claims cl"
    " JOIN kg_claim_evidence cv ON cv.claim_id = cl.claim_id JOIN chunks c ON c.chunk_id = cv.chunk_id"
    + _SEES
    + " AND cl.entity_id = ANY(%(ids)s::text[])"
    " AND cl.polarity = 'positive' AND cl.modality = ANY(%(modalities)s::text[])"
)

# The chunks whose cached vectors make an entity's context vector: distinct embedding keys (two chunks with
# one text have one vector), ranked like the profile's quotes (its most confident mention first), every
# active document whatever its ACL, as `profiles` reads them; only keys the embedding cache still holds.
_CONTEXT_KEYS: LiteralString = """
SELECT entity_id, array_agg(embedding_key ORDER BY rank) FROM (
  SELECT m.entity_id, c.embedding_key,
         row_number() OVER (PARTITION BY m.entity_id ORDER BY max(m.confidence) DESC, min(c.chunk_id)) AS rank
  FROM kg_mentions m JOIN chunks c ON c.chunk_id = m.chunk_id
  JOIN documents d ON d.doc_id = c.doc_id AND d.status = 'ACTIVE'
  WHERE m.entity_id = ANY(%(ids)s::text[]) AND c.embedding_key IS NOT NULL
    AND EXISTS (SELECT 1 FROM embedding_cache ec WHERE ec.model_id = %(model)s AND ec.content_hash = c.embedding_key)
  GROUP BY m.entity_id, c.embedding_key
) ranked WHERE rank <= %(limit)s GROUP BY entity_id
"""

_MERGE_COLUMNS: LiteralString = (
    "merge_id, canonical_id, members, basis, decided_by, reverted, decided_by_sub, reverted_by_sub"
)


class PostgresGraphStore(PostgresExtractionStore):
    """GraphReader and ResolutionStore (plus everything PostgresExtractionStore is) on one connection pool."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Opened profiles kept between resolution passes, each valid only for the rows it was opened from.
        self.profile_memo: ProfileMemo[EntityProfile] = ProfileMemo()
        self.document_profile_memo: ProfileMemo[DocumentProfile] = ProfileMemo()  # per (entity, document)
        # The chunk vectors the latest pass averaged, by (model, embedding key): a key names one text's vector,
        # so a kept one is the stored one while the cache still holds it (see context_chunk_vectors).
        self._context_vectors: dict[tuple[str, str], tuple[float, ...]] = {}

    # --- GraphReader ----------------------------------------------------------------------------------------

    def _name_keys(self, names: Sequence[str]) -> dict[str, str]:
        """Each asked name's blind index -> the name normalised, in the order asked, once each."""
        key = self._id_key()
        return {name_key(key, n): n for n in dict.fromkeys(normalise_name(n) for n in names)}

    def entities_named(
        self, names: Sequence[str], acl_class_ids: Sequence[str] | None
    ) -> dict[str, list[EntitySummary]]:
        """Every asked name, normalised, with the visible canonical entities known by it (empty if none).

        A name matches a visible mention of it and the stored name of a visible entity. Several entities per
        name are kept (namesakes, or one name for two types), the best connected first.
        """
        norm_of = self._name_keys(names)
        out: dict[str, list[EntitySummary]] = {n: [] for n in norm_of.values()}
        if not out:
            return out
        params = {**_acl(acl_class_ids), "names": list(norm_of)}
        with self._reading() as conn:
            hits = conn.execute(_NAMED, params).fetchall()
            canonical = _canonical(conn, [h[1] for h in hits], acl_class_ids)
            clusters = self._clusters(conn, list(dict.fromkeys(canonical.values())), acl_class_ids)
            summaries = _summarise(conn, clusters, acl_class_ids)
        for blinded, raw in hits:
            summary = summaries.get(canonical[raw])
            norm = norm_of[blinded]
            if summary is not None and summary not in out[norm]:
                out[norm].append(summary)
        for found in out.values():
            found.sort(key=lambda s: (-s.degree, s.entity.name, s.entity.entity_id))
        return out

    def hubs_among(self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None) -> set[str]:
        """The visible ids (as given) whose canonical entity is a hub to this caller: labelled one, and its
        visible edges reach the labelling threshold. Only labelled hubs (few) are counted, and only up to
        the threshold."""
        ids = list(dict.fromkeys(entity_ids))
        if not ids:
            return set()
        acl = _acl(acl_class_ids)
        with self._reading() as conn:
            visible = [r[0] for r in conn.execute(_VISIBLE_IDS, {**acl, "ids": ids})]
            canonical = _canonical(conn, visible, acl_class_ids)
            thresholds = _hub_thresholds(conn, list(set(canonical.values())))
            hubs = {cid for cid, cap in sorted(thresholds.items()) if _visible_degree_reaches(conn, cid, cap, acl)}
        return {given for given, cid in canonical.items() if cid in hubs}

    def entity(self, entity_id: str, acl_class_ids: Sequence[str] | None) -> EntitySummary | None:
        """The entity's cluster as this caller sees it, or None when no visible evidence names `entity_id`
        itself (whatever its cluster's other members), exactly as for an id that does not exist."""
        with self._reading() as conn:
            cid = _canonical(conn, [entity_id], acl_class_ids)[entity_id]
            clusters = self._clusters(conn, [cid], acl_class_ids)
            view = clusters.get(cid)
            if view is None or entity_id not in view.members:
                return None
            return _summarise(conn, clusters, acl_class_ids)[cid]

    def neighbours(
        self,
        entity_id: str,
        acl_class_ids: Sequence[str] | None,
        *,
        relations: Sequence[str] | None = None,
        limit: int = 50,
    ) -> list[Edge]:
        """Visible edges touching any member of the entity's cluster, endpoints as canonical entities.

        Strongest first: more evidence chunks, then higher confidence, then relation ID (a stable tie-break).
        """
        if limit <= 0:
            return []
        with self._reading() as conn:
            if not conn.execute(_VISIBLE_IDS, {**_acl(acl_class_ids), "ids": [entity_id]}).fetchall():
                return []
            cid = _canonical(conn, [entity_id], acl_class_ids)[entity_id]
            params = {
                **_acl(acl_class_ids),
                "ids": [cid],
                "relations": list(relations) if relations is not None else None,
                "limit": limit,
            }
            rows = conn.execute(_NEIGHBOURS, params).fetchall()
            ends = list(dict.fromkeys(e for r in rows for e in (r[0], r[2])))
            clusters = self._clusters(conn, ends, acl_class_ids)
        refs = {c: v.ref for c, v in clusters.items()}
        edges = [e for e in (_edge(r, refs) for r in rows) if e is not None]
        edges.sort(key=lambda e: (-e.evidence_count, -e.confidence, e.relation_id))
        return edges[:limit]

    def claims_of(self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None) -> list[ClaimRecord]:
        """Claims about the canonical entities, with status computed over the whole cluster's visible claims.

        Each record names the canonical entity (ID and display name), so claims made about two members of one
        cluster compete in one timeline.
        """
        return self._claims(entity_ids, acl_class_ids, None)

    def _claims(
        self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None, named: Mapping[str, EntityRef] | None
    ) -> list[ClaimRecord]:
        """`named`: as for `_neighbours_many` (the asked ids' entities, naming each claim's entity)."""
        if not entity_ids:
            return []
        with self._reading() as conn:
            asked = list(dict.fromkeys(entity_ids))
            acl = _acl(acl_class_ids)
            visible = asked if named is not None else [r[0] for r in conn.execute(_VISIBLE_IDS, {**acl, "ids": asked})]
            canonical = _canonical(conn, visible, acl_class_ids)
            cids = list(dict.fromkeys(canonical.values()))
            members = _members(conn, cids, acl_class_ids)
            owner = {m: cid for cid, ms in members.items() for m in ms}
            params = {**_acl(acl_class_ids), "members": list(owner)}
            rows = conn.execute(_CLAIMS_OF, params).fetchall()
            if named is None:
                refs = {c: v.ref for c, v in self._clusters(conn, cids, acl_class_ids).items()}
            else:
                refs = {canonical[i]: named[i] for i in visible}
            body = self._active_ontology_body()
        records: list[ClaimRecord] = []
        for row in rows:
            record = self._claim(row)
            ref = refs.get(owner[record.entity_id])
            if ref is None:  # cannot happen: a visible claim makes its entity visible
                continue
            records.append(
                dataclasses.replace(record, entity_id=ref.entity_id, entity_name=ref.name, entity_type=ref.type)
            )
        return timeline(records, _cardinality(body))

    def entities_by_id(
        self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None
    ) -> dict[str, EntitySummary]:
        """`entity` for each id, in one snapshot and one query per step (a community view reads many)."""
        ids = list(dict.fromkeys(entity_ids))
        if not ids:
            return {}
        with self._reading() as conn:
            clusters, shown = self._visible_clusters(conn, ids, acl_class_ids)
            found = _summarise(conn, {c: clusters[c] for c in dict.fromkeys(shown.values())}, acl_class_ids)
        return {i: found[c] for i, c in shown.items()}

    def neighbours_by_id(
        self,
        entity_ids: Sequence[str],
        acl_class_ids: Sequence[str] | None,
        *,
        relations: Sequence[str] | None = None,
        limit: int = 50,
    ) -> dict[str, list[Edge]]:
        """`neighbours` for each id, in one snapshot: the edges of every asked cluster in one query."""
        return self._neighbours_many(entity_ids, acl_class_ids, relations, limit, _NEIGHBOURS_MANY)

    def _neighbours_many(
        self,
        entity_ids: Sequence[str],
        acl_class_ids: Sequence[str] | None,
        relations: Sequence[str] | None,
        limit: int,
        query: LiteralString,
        named: Mapping[str, EntityRef] | None = None,
    ) -> dict[str, list[Edge]]:
        """`named`: the asked ids' entities as this caller was shown them (their `entity_refs_by_id`), which
        name the ends (every end is an asked one: `_EDGES_AMONG`) instead of naming them again."""
        ids = list(dict.fromkeys(entity_ids))
        out: dict[str, list[Edge]] = {i: [] for i in ids}
        if limit <= 0 or not ids:
            return out
        acl = _acl(acl_class_ids)
        with self._reading() as conn:
            visible = ids if named is not None else [r[0] for r in conn.execute(_VISIBLE_IDS, {**acl, "ids": ids})]
            canonical = _canonical(conn, visible, acl_class_ids)
            cids = list(dict.fromkeys(canonical.values()))
            if not cids:
                return out
            params = {
                **acl,
                "ids": cids,
                "relations": list(relations) if relations is not None else None,
                "limit": limit,
            }
            rows = conn.execute(query, params).fetchall()
            if named is None:
                ends = list(dict.fromkeys(e for r in rows for e in (r[0], r[2])))
                refs = {c: v.ref for c, v in self._clusters(conn, ends, acl_class_ids).items()}
            else:
                refs = {canonical[i]: named[i] for i in ids}
        by_cid: dict[str, list[Edge]] = {c: [] for c in cids}
        for row in rows:
            edge = _edge(row, refs)
            if edge is not None:
                by_cid[row[12]].append(edge)
        for edges in by_cid.values():
            edges.sort(key=lambda e: (-e.evidence_count, -e.confidence, e.relation_id))
            del edges[limit:]
        for given, cid in canonical.items():
            out[given] = list(by_cid[cid])
        return out

    def edges_among(
        self,
        entity_ids: Sequence[str],
        acl_class_ids: Sequence[str] | None,
        *,
        relations: Sequence[str] | None = None,
        limit: int = 50,
    ) -> dict[str, list[Edge]]:
        """`neighbours_by_id` kept to the edges inside the set, in one snapshot and one edge query; only the
        set's own clusters are named."""
        return self._neighbours_many(entity_ids, acl_class_ids, relations, limit, _EDGES_AMONG)

    # --- LightGraphReads (kgrag_core.graph.light): what the GLOBAL route needs, named no more than that --------

    def entity_ids_named(self, names: Sequence[str], acl_class_ids: Sequence[str] | None) -> dict[str, list[str]]:
        """`entities_named`'s entity ids (each cluster's id for this caller), sorted: the same name, mapping
        and visibility reads, without naming the clusters or counting their degree (for a hub, its evidence)."""
        norm_of = self._name_keys(names)
        out: dict[str, list[str]] = {n: [] for n in norm_of.values()}
        if not out:
            return out
        acl = _acl(acl_class_ids)
        with self._reading() as conn:
            hits = conn.execute(_NAMED, {**acl, "names": list(norm_of)}).fetchall()
            canonical = _canonical(conn, [h[1] for h in hits], acl_class_ids)
            cids = list(dict.fromkeys(canonical.values()))
            visible: dict[str, list[str]] = {}
            if cids:
                for cid, member in conn.execute(_VISIBLE_MEMBERS, {**acl, "ids": cids}):
                    visible.setdefault(str(cid), []).append(str(member))
        for blinded, raw in hits:
            members = visible.get(canonical[raw])
            if not members:
                continue
            label = canonical[raw] if canonical[raw] in members else min(members)  # as `cluster_views` labels
            found = out[norm_of[blinded]]
            if label not in found:
                found.append(label)
        return {n: sorted(ids) for n, ids in out.items()}

    def edges_among_named(
        self, named: Mapping[str, EntityRef], acl_class_ids: Sequence[str] | None, *, limit: int = 50
    ) -> dict[str, list[Edge]]:
        """`edges_among(list(named), ...)` for ids this caller was just shown as `named`
        (`entity_refs_by_id`): their names are not read again."""
        return self._neighbours_many(list(named), acl_class_ids, None, limit, _EDGES_AMONG, named)

    def claims_of_named(self, named: Mapping[str, EntityRef], acl_class_ids: Sequence[str] | None) -> list[ClaimRecord]:
        """`claims_of(list(named), ...)`, likewise."""
        return self._claims(list(named), acl_class_ids, named)

    def entity_refs_by_id(self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None) -> dict[str, EntityRef]:
        """`entities_by_id`'s entities (id, name, type) without their degree and hub flag: a hub's degree
        counts every edge its visible evidence gives it."""
        ids = list(dict.fromkeys(entity_ids))
        if not ids:
            return {}
        with self._reading() as conn:
            clusters, shown = self._visible_clusters(conn, ids, acl_class_ids)
        return {i: clusters[c].ref for i, c in shown.items()}

    # --- ResolutionStore ------------------------------------------------------------------------------------

    def profiles(self, entity_ids: Sequence[str] | None = None) -> list[EntityProfile]:
        """Mention-level entities (all when None) as resolution compares them, in entity ID order.

        Resolution is global, so profiles read every ACTIVE document regardless of ACL. Aliases are the other
        surface forms its mentions used; attributes come from its positive fact or reported claims; neighbours
        are the canonical IDs of the entities it shares an edge with; context is up to three of its mention
        quotes, the most confident first.
        """
        if entity_ids is not None and not entity_ids:
            return []
        params: dict[str, Any] = {
            **_acl(None),
            "every": entity_ids is None,
            "ids": list(entity_ids or ()),
            "modalities": sorted(m.value for m in COMPETING_MODALITIES),
        }
        with self._reading() as conn:
            entities = conn.execute(_PROFILE_ENTITIES, params).fetchall()
            mentions = {r[0]: _plain(r) for r in conn.execute(_PROFILE_MENTIONS, params)}
            raw_attributes: dict[str, list[tuple[str, bytes, str]]] = {}
            for ent, attribute, value, doc in conn.execute(_PROFILE_ATTRIBUTES, params):
                raw_attributes.setdefault(ent, []).append((attribute, bytes(value), doc))
            neighbours = {r[0]: tuple(r[1]) for r in conn.execute(_PROFILE_NEIGHBOURS, params)}
            raw_scopes: dict[str, list[tuple[Any, ...]]] = {}
            for row in conn.execute(_PROFILE_SCOPES, params):
                raw_scopes.setdefault(row[0], []).append(_plain(row[1:]))
        out: list[EntityProfile] = []
        memo = self.profile_memo
        for entity_row in entities:
            ent = entity_row[0]
            m = mentions.get(ent)
            attributes = sorted(raw_attributes.get(ent, ()), key=repr)  # DISTINCT rows come in no set order
            scoped = raw_scopes.get(ent, [])
            rows = (_plain(entity_row), m, attributes, neighbours.get(ent, ()), scoped)
            # Rows unchanged since the kept profile was opened: it is this profile (profile_memo.py).
            print_ = fingerprint(rows)
            kept = memo.get(ent, print_)
            if kept is None:
                kept = self._profile(entity_row, m, attributes, neighbours.get(ent, ()), scoped)
                memo.put(ent, kept, print_, _row_documents(entity_row, m, attributes, scoped))
            out.append(kept)
        if entity_ids is None:
            memo.keep_only(p.entity_id for p in out)
        return out

    def _profile(
        self,
        entity_row: Sequence[Any],
        m: Sequence[Any] | None,
        raw_attributes: Sequence[tuple[str, bytes, str]],
        neighbours: Sequence[str],
        raw_scopes: Sequence[tuple[Any, ...]],
    ) -> EntityProfile:
        """One entity's profile opened from its rows (see `profiles`)."""
        ent, entity_type, sealed_name = entity_row
        opened_attributes: set[tuple[str, str]] = set()
        for attribute, value, doc in raw_attributes:
            opened_attributes.add((attribute, self._text(doc, value)))
        scoped: list[tuple[str, list[str], tuple[tuple[str, str], ...]]] = []
        for acl_class, names, name_docs, ids, id_docs in raw_scopes:
            opened_names = {self._text(d, bytes(n)) for n, d in zip(names or (), name_docs or (), strict=True)}
            opened_names.discard("")
            scoped.append((acl_class, sorted(opened_names), self._opened_ids(ids, id_docs)))
        name = self._opened_pair(sealed_name)
        norm = normalise_name(name)
        # Names and quotes are sealed deterministically per document: a repeated one is opened once, and
        # quotes only until three distinct ones are found (a pass reads hundreds of profiles).
        sealed_names = {(bytes(n), doc) for n, doc in zip(m[1], m[2], strict=True)} if m else set()
        names = {self._text(doc, n) for n, doc in sealed_names}
        aliases = tuple(sorted(n for n in names if normalise_name(n) != norm))
        strong_ids = self._opened_ids(m[6], m[7]) if m else ()
        quotes = self._first_distinct(zip(m[4], m[5], strict=True), _CONTEXT_QUOTES) if m else []
        return EntityProfile(
            entity_id=ent,
            type=entity_type,
            name=name,
            aliases=aliases,
            strong_ids=strong_ids,
            attributes=tuple(sorted(opened_attributes)),
            neighbours=tuple(n for n in neighbours if n != ent),
            context=" … ".join(quotes),
            mentions=int(m[3]) if m else 0,
            scopes=tuple(
                ScopedEvidence(acl_class, tuple(sorted(names or [name])), ids) for acl_class, names, ids in scoped
            ),
        )

    def context_chunk_vectors(
        self, entity_ids: Sequence[str], model_id: str, limit: int
    ) -> dict[str, list[tuple[float, ...]]]:
        """Each entity's cached chunk vectors (`ContextVectorSource`): read, never computed."""
        if not entity_ids or limit < 1:
            return {}
        with self._reading() as conn:
            params = {"ids": list(dict.fromkeys(entity_ids)), "model": model_id, "limit": limit}
            keys = {r[0]: list(r[1]) for r in conn.execute(_CONTEXT_KEYS, params)}
            wanted = sorted({k for ks in keys.values() for k in ks})
            # _CONTEXT_KEYS names only keys the cache holds now, and a key's vector never changes: only the
            # vectors not kept from the latest pass are read (float8[]: the exact stored float32 values, see
            # PostgresStore.get_vectors), each once however many entities its chunk mentions.
            kept = self._context_vectors
            vectors = {k: kept[(model_id, k)] for k in wanted if (model_id, k) in kept}
            missing = [k for k in wanted if k not in vectors]
            if missing:
                vectors.update(
                    (r[0], tuple(r[1]))
                    for r in conn.execute(
                        "SELECT content_hash, vector::float8[] FROM embedding_cache"
                        " WHERE model_id = %s AND content_hash = ANY(%s)",
                        (model_id, missing),
                    )
                )
        # Only this pass's vectors are kept: a purged chunk's (its document deleted) is gone after one pass.
        self._context_vectors = {(model_id, k): v for k, v in vectors.items()}
        out = {entity: [vectors[k] for k in ks if k in vectors] for entity, ks in keys.items()}
        return {entity: vs for entity, vs in out.items() if vs}

    def document_profiles(self, entity_ids: Sequence[str]) -> list[DocumentProfile]:
        """One profile per document for each of these entities named in two documents or more (as
        `profiles`, every ACTIVE document whatever its ACL: resolution is global)."""
        if not entity_ids:
            return []
        params: dict[str, Any] = {
            **_acl(None),
            "every": False,
            "ids": list(entity_ids),
            "modalities": sorted(m.value for m in COMPETING_MODALITIES),
        }
        with self._reading() as conn:
            rows = conn.execute(_DOCUMENT_MENTIONS, params).fetchall()
            if not rows:
                return []
            # Every document's profile takes the entity's name as `profiles` gives it (the entity row has
            # none); a document's other surface forms are its aliases.
            named = {**params, "ids": sorted({r[0] for r in rows})}
            entity_rows = {r[0]: _plain(r) for r in conn.execute(_PROFILE_ENTITIES, named)}
            raw_attributes: dict[tuple[str, str], list[tuple[str, bytes]]] = {}
            for ent, doc, attribute, value in conn.execute(_DOCUMENT_ATTRIBUTES, params):
                raw_attributes.setdefault((ent, doc), []).append((attribute, bytes(value)))
        memo = self.document_profile_memo
        kinds: dict[str, tuple[str, str]] = {}
        out: list[DocumentProfile] = []
        for row in rows:
            ent, doc = row[0], row[1]
            if ent not in entity_rows:
                continue
            attributes = sorted(raw_attributes.get((ent, doc), ()))
            print_ = fingerprint((_plain(row), entity_rows[ent], attributes))
            key = f"{ent}\x00{doc}"
            kept = memo.get(key, print_)
            if kept is None:
                if ent not in kinds:
                    kinds[ent] = (entity_rows[ent][1], self._opened_pair(entity_rows[ent][2]))
                kept = self._document_profile(row, kinds[ent], attributes)
                named_by = entity_rows[ent][2]
                memo.put(key, kept, print_, {doc, *([bytes(named_by[1]).decode()] if named_by else [])})
            out.append(kept)
        return out

    def _document_profile(
        self, row: Sequence[Any], kind: tuple[str, str], raw_attributes: Sequence[tuple[str, bytes]]
    ) -> DocumentProfile:
        """One (entity, document) profile opened from its rows (see `document_profiles`)."""
        ent, doc, names, count, quotes, sealed_ids = row
        entity_type, name = kind
        norm = normalise_name(name)
        opened = list(dict.fromkeys(self._text(doc, bytes(q)) for q in quotes))[:_CONTEXT_QUOTES]
        surface = {self._text(doc, bytes(n)) for n in names}
        attributes = sorted({(attribute, self._text(doc, value)) for attribute, value in raw_attributes})
        profile = EntityProfile(
            entity_id=ent,
            type=entity_type,
            name=name,
            aliases=tuple(sorted(n for n in surface if n and normalise_name(n) != norm)),
            strong_ids=self._opened_ids(sealed_ids, [doc] * len(sealed_ids or ())),
            attributes=tuple(attributes),
            context=" … ".join(opened),
            mentions=int(count),
        )
        return document_profile(ent, doc, profile)

    def entities_near_documents(self, doc_ids: Sequence[str]) -> list[str]:
        if not doc_ids:
            return []
        with self._lease:
            return [r[0] for r in self._conn.execute(_NEAR_DOCUMENTS, {"docs": list(doc_ids)})]

    def incremental_scope(self, doc_ids: Sequence[str], max_token_entities: int) -> ResolutionScope:
        if not doc_ids:
            return ResolutionScope((), ())
        # The pass's documents may be deleted ones: no text opened from them stays in memory.
        self.profile_memo.forget_documents(doc_ids)
        self.document_profile_memo.forget_documents(doc_ids)
        with self._lease:
            rows = self._conn.execute(_INCREMENTAL_SCOPE, {"docs": list(doc_ids), "cap": max_token_entities}).fetchall()
        return ResolutionScope(tuple(r[0] for r in rows if r[1]), tuple(r[0] for r in rows))

    def canonical_of(self, entity_ids: Sequence[str]) -> dict[str, str]:
        """Each ID's canonical ID; an ID in no cluster (or unknown) is its own."""
        with self._lease:
            return _canonical(self._conn, list(entity_ids))

    def apply_merge(self, record: MergeRecord) -> None:
        """Log the merge and put its canonical ID and members (with their clusters) in one cluster.

        The cluster takes `record.canonical_id` as its label (the newest merge names a cluster). Applying a
        logged merge again is a no-op, also after it was reverted: a periodic pass re-proposing a split merge
        under the same ID does not undo the split. Reusing an ID for a different merge is a ValueError.
        """
        self.apply_merges([record])

    def apply_merges(self, records: Sequence[MergeRecord]) -> None:
        """`apply_merge` for each record in order, in one transaction and one recluster of what they touched.

        The mapping is derived from the merge log, so it comes out as after applying them one by one (a
        resolution pass applies its merges so: one lock and one recluster, not one per merge). A record that
        `apply_merge` would refuse refuses the whole batch.
        """
        for record in records:
            if not record.members:
                raise ValueError(f"merge {record.merge_id} has no members")
            if record.decided_by not in _DECIDERS:
                raise ValueError(
                    f"merge {record.merge_id}: decided_by is {record.decided_by!r}, not one of {_DECIDERS}"
                )
        if not records:
            return
        with self._lease, self._conn.transaction():
            conn = self._conn
            lock_merge_log(conn)
            ids = [r.merge_id for r in records]
            known = {
                row[0]: (row[1], tuple(row[2]))
                for row in conn.execute(
                    "SELECT merge_id, canonical_id, members FROM er_merge_log WHERE merge_id = ANY(%s)", (ids,)
                )
            }
            touched: dict[str, None] = {}
            rows: list[Row] = []
            for record in records:
                entities = list(dict.fromkeys([record.canonical_id, *record.members]))
                if record.merge_id in known:
                    if known[record.merge_id] == (record.canonical_id, tuple(record.members)):
                        continue
                    raise ValueError(f"merge ID {record.merge_id} is already logged for another merge")
                known[record.merge_id] = (record.canonical_id, tuple(record.members))
                basis = Jsonb([_decision_to_dict(d) for d in record.basis])
                members = list(record.members)
                rows.append(
                    (record.merge_id, record.canonical_id, members, entities, basis, record.decided_by, record.decider)
                )
                touched.update(dict.fromkeys(entities))
            if rows:
                # In the records' order: the log's seq orders merges, and the newest names a cluster.
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO er_merge_log (merge_id, canonical_id, members, entities, basis, decided_by,"
                        " decided_by_sub) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                        rows,
                    )
                recluster(conn, list(touched))

    def revert_merge(self, merge_id: str, *, by: str | None = None) -> MergeRecord:
        """Remove the merge's links and recompute the clusters it touched; return it, marked reverted.

        Reverting the newest merge of a cluster restores the mapping exactly as it was before it. Reverting an
        older one keeps every later merge: a cluster is what the links of the merges still in force connect,
        so a later merge that linked the same entities keeps them together (and whatever the reverted merge
        alone connected falls apart). Reverting twice changes nothing the second time. `by`: who split it.
        """
        with self._lease, self._conn.transaction():
            conn = self._conn
            lock_merge_log(conn)
            row = conn.execute(
                "SELECT " + _MERGE_COLUMNS + ", entities FROM er_merge_log WHERE merge_id = %s", (merge_id,)
            ).fetchone()
            if row is None:
                raise KgragError(
                    ErrorCode.ENTITY_NOT_FOUND,
                    f"no merge {merge_id!r} in the merge log",
                    hint="list merges with the merge log (newest first)",
                )
            if not row[5]:
                conn.execute(
                    "UPDATE er_merge_log SET reverted = true, reverted_at = clock_timestamp(), reverted_by_sub = %s"
                    " WHERE merge_id = %s",
                    (by, merge_id),
                )
                recluster(conn, list(row[8]))
                return dataclasses.replace(_merge(row), reverted=True, reverted_by=by)
        return _merge(row)

    def split_mentions(
        self,
        entity_id: str,
        doc_ids: Sequence[str],
        *,
        decided_by: str = "override",
        reason: str = "",
        basis: Sequence[PairDecision] = (),
    ) -> SenseSplit:
        """Separate the entity's mentions in `doc_ids` into a sense of their own (a namesake), logged.

        ENTITY_NOT_FOUND for an unknown entity; INVALID_QUERY for a document that does not name it, or a split
        that would leave nothing behind. The same split again changes nothing and returns the same sense.
        """
        if decided_by not in ("auto", "override"):
            raise ValueError(f"a split is decided by auto or override, not {decided_by!r}")
        with self._lease, self._conn.transaction():
            split = split_off(
                self._conn,
                self._id_key(),
                self.cipher,
                entity_id,
                doc_ids,
                decided_by=decided_by,
                reason=reason,
                basis_json=[_decision_to_dict(d) for d in basis],
            )
        return dataclasses.replace(split, basis=tuple(basis))

    def kept_apart(self) -> list[tuple[str, str]]:
        """Pairs resolution must not merge on its own: each split's entity and the sense split off it."""
        with self._lease:
            return kept_apart(self._conn)

    def merge_log(self, limit: int = 100) -> list[MergeRecord]:
        """The latest `limit` merges, newest first, reverted ones included."""
        with self._lease:
            rows = self._conn.execute(
                "SELECT " + _MERGE_COLUMNS + " FROM er_merge_log ORDER BY seq DESC LIMIT %s", (limit,)
            ).fetchall()
        return [_merge(r) for r in rows]

    def queue_for_review(self, pairs: Sequence[PairDecision]) -> None:
        """Queue "possibly the same" pairs (in either order). A pending pair is rescored; a decided one stays."""
        rows: dict[tuple[str, str], Row] = {}
        for p in pairs:
            if p.a == p.b:
                raise ValueError(f"a review pair needs two entities, got {p.a} twice")
            a, b = sorted((p.a, p.b))
            rows[(a, b)] = (a, b, p.score, Jsonb([[n, v] for n, v in p.features]), p.rule)
        if not rows:
            return
        with self._lease, self._conn.transaction(), self._conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO er_review_queue (a, b, score, features, rule) VALUES (%s, %s, %s, %s, %s)"
                " ON CONFLICT (a, b) DO UPDATE SET score = EXCLUDED.score, features = EXCLUDED.features,"
                " rule = EXCLUDED.rule WHERE er_review_queue.status = 'pending'",
                list(rows.values()),
            )

    def review_queue(self, limit: int = 100) -> list[PairDecision]:
        """Pending pairs, the highest score first."""
        with self._lease:
            rows = self._conn.execute(
                "SELECT a, b, score, features, rule FROM er_review_queue WHERE status = 'pending'"
                " ORDER BY score DESC, a, b LIMIT %s",
                (limit,),
            ).fetchall()
        return [
            PairDecision(r[0], r[1], DecisionKind.REVIEW, float(r[2]), tuple((n, float(v)) for n, v in r[3]), r[4])
            for r in rows
        ]

    def backlog_counts(self) -> dict[str, int]:
        """What waits on someone: chunks tier 3 still owes a model call, and pairs waiting for review (the
        quality metrics read this at every scrape: two counts, one round trip)."""
        with self._lease:
            row = self._conn.execute(
                "SELECT (SELECT count(*) FROM chunk_extractions WHERE pending_llm),"
                " (SELECT count(*) FROM er_review_queue WHERE status = 'pending')"
            ).fetchone() or (0, 0)
        return {"pending_llm_chunks": int(row[0]), "review_pending": int(row[1])}

    def decide_review(self, a: str, b: str, same: bool) -> None:
        """Record a person's decision on a queued pair (a later decision replaces an earlier one).

        Only the decision: merging a pair decided "same" is the resolver's job (it picks the canonical ID and
        applies the hard constraints), through `apply_merge` with decided_by "review".
        """
        first, second = sorted((a, b))
        with self._lease:
            cur = self._conn.execute(
                "UPDATE er_review_queue SET status = %s, decided_at = now() WHERE a = %s AND b = %s",
                ("same" if same else "different", first, second),
            )
        if cur.rowcount == 0:
            raise KgragError(
                ErrorCode.ENTITY_NOT_FOUND,
                f"the pair {first}, {second} is not in the review queue",
                hint="list the pending pairs with the review queue",
            )

    def label_hubs(self, min_degree: int) -> int:
        """Replace the hub set with the canonical entities that have at least `min_degree` distinct edges.

        Degree here counts every live edge: the label is where traversal looks first. A reader sees the
        label only when the edges they may see reach `min_degree` too (stored with each hub), so edges only
        restricted evidence supports never make an entity a hub to someone who cannot read them.
        """
        if min_degree < 1:
            raise ValueError(f"min_degree must be at least 1, got {min_degree}")
        with self._lease, self._conn.transaction():
            conn = self._conn
            rows = conn.execute(_ALL_DEGREES, {**_acl(None), "min_degree": min_degree}).fetchall()
            conn.execute("DELETE FROM kg_hubs")
            if rows:
                conn.execute(
                    "INSERT INTO kg_hubs (entity_id, degree, min_degree)"
                    " SELECT k.e, k.d, %s FROM unnest(%s::text[], %s::int[]) AS k(e, d)",
                    (min_degree, [r[0] for r in rows], [int(r[1]) for r in rows]),
                )
        return len(rows)

    def graph_version(self) -> int:
        """The graph's current version (migration 0017): what a Neo4j projection's watermark must reach."""
        with self._lease:
            return current_graph_version(self._conn)

    def merges_shown_whole(self, acl_class_ids: Sequence[str] | None) -> bool:
        """Whether every merge's requirement (er_canonical.requires, 0011) is within these classes (None: an
        admin, shown everything): only then may a projection that joins clusters whole answer this caller."""
        if acl_class_ids is None:
            return True
        with self._lease:
            row = self._conn.execute(
                "SELECT NOT EXISTS (SELECT 1 FROM er_canonical WHERE requires <> '{}' AND NOT requires <@ %s::text[])",
                (list(acl_class_ids),),
            ).fetchone()
        return bool(row and row[0])

    # --- helpers (the caller holds the lock) -----------------------------------------------------------------

    def _first_distinct(self, sealed: Iterable[tuple[bytes, str]], limit: int) -> list[str]:
        """The first `limit` distinct texts of (sealed text, document) pairs, in order, each opened once."""
        out: dict[str, None] = {}
        seen: set[tuple[bytes, str]] = set()
        for value, doc in sealed:
            key = (bytes(value), doc)
            if key in seen:
                continue
            seen.add(key)
            out.setdefault(self._text(doc, key[0]), None)
            if len(out) == limit:
                break
        return list(out)

    def _opened_pair(self, pair: Sequence[bytes] | None) -> str:
        """A [sealed name, document id] pair (see _VISIBLE_NAME) opened; "" when there is none."""
        if not pair:
            return ""
        return self._text(bytes(pair[1]).decode(), bytes(pair[0]))

    def _opened_ids(
        self, sealed_ids: Sequence[bytes] | None, docs: Sequence[str] | None
    ) -> tuple[tuple[str, str], ...]:
        """The union of mentions' sealed strong identifiers (JSON [kind, value] pairs), opened, sorted."""
        pairs: set[tuple[str, str]] = set()
        for sealed, doc in zip(sealed_ids or (), docs or (), strict=True):
            pairs.update((str(k), str(v)) for k, v in json.loads(self._text(doc, bytes(sealed)) or "[]"))
        return tuple(sorted(pairs))

    def _visible_clusters(
        self, conn: psycopg.Connection[Row], ids: Sequence[str], acl_class_ids: Sequence[str] | None
    ) -> tuple[dict[str, ClusterView], dict[str, str]]:
        """The caller's clusters of `ids`, and each id the caller may see -> its cluster's id (an id is shown
        only as a visible member of a visible cluster)."""
        canonical = _canonical(conn, ids, acl_class_ids)
        clusters = self._clusters(conn, list(dict.fromkeys(canonical.values())), acl_class_ids)
        return clusters, {i: c for i, c in canonical.items() if c in clusters and i in clusters[c].members}

    def _clusters(
        self, conn: psycopg.Connection[Row], cids: Sequence[str], acl_class_ids: Sequence[str] | None
    ) -> dict[str, ClusterView]:
        """The visible canonical entities among `cids` (an invisible one is left out), names and strong
        identifiers opened under their documents' keys."""
        if not cids:
            return {}
        params = {**_acl(acl_class_ids), "ids": list(dict.fromkeys(cids))}
        members: dict[str, list[MemberRow]] = {}
        for cid, ent, name, type_, sealed_ids, docs, visible in conn.execute(_MEMBER_ROWS, params):
            row = MemberRow(ent, self._opened_pair(name), str(type_), self._opened_ids(sealed_ids, docs), bool(visible))
            members.setdefault(cid, []).append(row)
        aliases: dict[str, dict[str, int]] = {}
        for cid, sealed, doc, uses in conn.execute(_ALIAS_COUNTS, params):
            name = open_text(self.cipher, doc, bytes(sealed))
            if name is not None:
                counts = aliases.setdefault(cid, {})
                counts[name] = counts.get(name, 0) + int(uses)
        return cluster_views(members, aliases)

    @contextmanager
    def _reading(self) -> Iterator[psycopg.Connection[Row]]:
        """The connection, inside one read-only snapshot: a read takes several queries (mapping, edges, names),
        and a merge or a deletion committed between them must not make them disagree."""
        with self._lease, self._conn.transaction():
            conn = self._conn
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield conn


# --- module helpers ---------------------------------------------------------------------------------------

# Drawn values count even uncommitted ones: a reader may fall back once too often, never once too few.
_GRAPH_VERSION: LiteralString = "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM kg_graph_version_seq"


def _plain(value: Any) -> Any:
    """A row with its bytea values as bytes and its arrays as tuples: what `fingerprint` may repr."""
    if isinstance(value, memoryview | bytearray):
        return bytes(value)
    if isinstance(value, list | tuple):
        return tuple(_plain(v) for v in value)
    return value


def _row_documents(
    entity_row: Sequence[Any],
    m: Sequence[Any] | None,
    attributes: Sequence[tuple[str, bytes, str]],
    scopes: Sequence[tuple[Any, ...]],
) -> set[str]:
    """The documents whose sealed texts an entity's profile rows hold (what its kept profile was opened from)."""
    docs: set[str] = {str(a[2]) for a in attributes}
    if entity_row[2]:
        docs.add(bytes(entity_row[2][1]).decode())
    if m:
        docs.update(m[2] or ())
        docs.update(m[5] or ())
        docs.update(m[7] or ())
    for scope in scopes:
        docs.update(scope[2] or ())
        docs.update(scope[4] or ())
    return docs


def current_graph_version(conn: psycopg.Connection[Row]) -> int:
    row = conn.execute(_GRAPH_VERSION).fetchone()
    return int(row[0]) if row is not None else 0


def _summarise(
    conn: psycopg.Connection[Row], clusters: Mapping[str, ClusterView], acl_class_ids: Sequence[str] | None
) -> dict[str, EntitySummary]:
    """The clusters with their visible degree and this caller's hub flag."""
    if not clusters:
        return {}
    ids = list(clusters)
    degrees = {r[0]: int(r[1]) for r in conn.execute(_DEGREES, {**_acl(acl_class_ids), "ids": ids})}
    return summaries(clusters, degrees, _hub_thresholds(conn, ids))


def _hub_thresholds(conn: psycopg.Connection[Row], cids: Sequence[str]) -> dict[str, int]:
    """The labelled hubs among `cids`, with the degree that labelled them."""
    if not cids:
        return {}
    rows = conn.execute("SELECT entity_id, min_degree FROM kg_hubs WHERE entity_id = ANY(%s)", (sorted(cids),))
    return {str(r[0]): int(r[1]) for r in rows}


def _visible_degree_reaches(conn: psycopg.Connection[Row], cid: str, cap: int, acl: Mapping[str, Any]) -> bool:
    """Whether the canonical entity has at least `cap` distinct edges the caller sees, reading as few as it can."""
    rows = conn.execute(_VISIBLE_EDGE_ROWS, {**acl, "ids": [cid], "rows": cap}).fetchall()
    if len(set(rows)) >= cap:
        return True
    if len(rows) < cap:  # every visible relation row was read
        return False
    degrees = {r[0]: int(r[1]) for r in conn.execute(_DEGREES, {**acl, "ids": [cid]})}
    return degrees.get(cid, 0) >= cap


def _acl(acl_class_ids: Sequence[str] | None) -> dict[str, Any]:
    return {"admin": acl_class_ids is None, "acl": list(acl_class_ids or ())}


def _canonical(
    conn: psycopg.Connection[Row], entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None = None
) -> dict[str, str]:
    """Each id's canonical id as the caller may see it (None: everything, as resolution does)."""
    ids = list(dict.fromkeys(entity_ids))
    out = {i: i for i in ids}
    if ids:
        params = {**_acl(acl_class_ids), "ids": ids}
        for ent, cid in conn.execute(
            "SELECT entity_id, canonical_id FROM " + _CANON + " ec WHERE entity_id = ANY(%(ids)s::text[])", params
        ):
            out[ent] = cid
    return out


def _members(
    conn: psycopg.Connection[Row], cids: Sequence[str], acl_class_ids: Sequence[str] | None
) -> dict[str, list[str]]:
    """Canonical ID -> its member IDs as the caller may see them, the canonical ID itself included (whether
    or not its entity exists)."""
    out: dict[str, list[str]] = {cid: [cid] for cid in cids}
    if cids:
        params = {**_acl(acl_class_ids), "ids": list(cids)}
        for ent, cid in conn.execute(
            "SELECT entity_id, canonical_id FROM " + _CANON + " ec WHERE canonical_id = ANY(%(ids)s::text[])"
            " ORDER BY entity_id",
            params,
        ):
            out[cid].append(ent)
    return out


def _pairs(strong_ids: Iterable[Sequence[str]]) -> tuple[tuple[str, str], ...]:
    return tuple((str(k), str(v)) for k, v in strong_ids)


def _edge(row: Row, refs: Mapping[str, EntityRef]) -> Edge | None:
    subject, relation, obj = row[0], row[1], row[2]
    if subject not in refs or obj not in refs:  # cannot happen: visible evidence shows both ends
        return None
    polarity, modality = Polarity(row[3]), Modality(row[4])
    s_ref, o_ref = refs[subject], refs[obj]
    return Edge(
        # Keyed by the ids this caller is shown: one keyed by a label they may not see would tell them (the
        # formula is public) that the cluster has a member they cannot read.
        relation_id=relation_id(s_ref.entity_id, relation, o_ref.entity_id, row[5], polarity, modality),
        subject=s_ref,
        relation=relation,
        object=o_ref,
        polarity=polarity,
        modality=modality,
        valid_from=row[5],
        valid_to=row[6],
        evidence_chunk_ids=tuple(sorted(row[7])),
        confidence=float(row[8]),
        latest_written=row[9],
        first_written=row[11],
    )


def _decision_to_dict(d: PairDecision) -> dict[str, Any]:
    return {
        "a": d.a,
        "b": d.b,
        "kind": d.kind.value,
        "score": d.score,
        "features": [[n, v] for n, v in d.features],
        "rule": d.rule,
        **({"requires": list(d.requires)} if d.requires else {}),
    }


def _decision_from_dict(d: Mapping[str, Any]) -> PairDecision:
    return PairDecision(
        a=d["a"],
        b=d["b"],
        kind=DecisionKind(d["kind"]),
        score=float(d["score"]),
        features=tuple((str(n), float(v)) for n, v in d["features"]),
        rule=d["rule"],
        requires=tuple(str(c) for c in d.get("requires", ())),
    )


def _merge(row: Row) -> MergeRecord:
    return MergeRecord(
        merge_id=row[0],
        canonical_id=row[1],
        members=tuple(row[2]),
        basis=tuple(_decision_from_dict(d) for d in row[3]),
        decided_by=row[4],
        reverted=bool(row[5]),
        decider=row[6],
        reverted_by=row[7],
    )
