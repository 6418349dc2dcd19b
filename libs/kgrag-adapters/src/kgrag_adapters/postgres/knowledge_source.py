"""The PostgreSQL side of the knowledge-graph projection: what a document's facts are now, read for Neo4j.

Read-only, on its own autocommit connection (the graph-writer's); `kgrag_core.handlers.knowledge_projection`
compares it with what Neo4j holds and projects the difference.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import LiteralString, TypeVar

import psycopg

from kgrag_adapters.crypto.envelope import EnvelopeCipher
from kgrag_adapters.crypto.kek import ephemeral_key_ring
from kgrag_adapters.postgres.extraction_store import _cardinality
from kgrag_adapters.postgres.graph_store import current_graph_version
from kgrag_adapters.postgres.keys import PostgresKeyStore
from kgrag_adapters.postgres.store import Row
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.identity import blind, normalise_name
from kgrag_core.extraction.model import Modality, Polarity, Tier
from kgrag_core.handlers.knowledge_projection import (
    AliasUse,
    ClaimEvidence,
    KnowledgeSnapshot,
    ProjectedClaim,
    ProjectedEntity,
    Reach,
    RelationEvidenceRow,
    group_edges,
)
from kgrag_core.shredding import ContentCipher, KeyEncryptionKey, open_text

_T = TypeVar("_T")

# --- the PostgreSQL side ----------------------------------------------------------------------------------

# Chunk `c` (joined) -> its reach: the ACL class, and whether its document is ACTIVE.
_ACTIVE: LiteralString = "COALESCE(d.status = 'ACTIVE', false)"
_DOC: LiteralString = " LEFT JOIN documents d ON d.doc_id = c.doc_id"

_PG_IN_DOCUMENT: LiteralString = (
    "SELECT m.entity_id FROM kg_mentions m JOIN chunks c ON c.chunk_id = m.chunk_id WHERE c.doc_id = %(doc)s"
    " UNION SELECT r.subject_id FROM kg_relations r JOIN kg_relation_evidence ev ON ev.relation_id = r.relation_id"
    " JOIN chunks c ON c.chunk_id = ev.chunk_id WHERE c.doc_id = %(doc)s"
    " UNION SELECT r.object_id FROM kg_relations r JOIN kg_relation_evidence ev ON ev.relation_id = r.relation_id"
    " JOIN chunks c ON c.chunk_id = ev.chunk_id WHERE c.doc_id = %(doc)s"
    " UNION SELECT cl.entity_id FROM kg_claims cl JOIN kg_claim_evidence cv ON cv.claim_id = cl.claim_id"
    " JOIN chunks c ON c.chunk_id = cv.chunk_id WHERE c.doc_id = %(doc)s"
)

_PG_MEMBERS: LiteralString = (
    "SELECT e.entity_id, COALESCE(ec.canonical_id, e.entity_id) FROM kg_entities e"
    " LEFT JOIN er_canonical ec ON ec.entity_id = e.entity_id"
    " WHERE COALESCE(ec.canonical_id, e.entity_id) = ANY(%(cids)s::text[]) ORDER BY e.entity_id"
)

# The entity row holds no name (migration 0010): its name is the one its evidence gives, as {sealed name,
# document id}: its most confident mention, else the name a relation or claim gives it.
_PG_ENTITIES: LiteralString = (
    "SELECT e.entity_id, e.type, COALESCE("
    "(SELECT ARRAY[m.name, convert_to(c.doc_id, 'UTF8')] FROM kg_mentions m JOIN chunks c ON c.chunk_id = m.chunk_id"
    " WHERE m.entity_id = e.entity_id ORDER BY m.confidence DESC, c.indexed_at, m.chunk_id, m.name LIMIT 1),"
    " (SELECT ARRAY[ev.subject_name, convert_to(c.doc_id, 'UTF8')] FROM kg_relations r"
    " JOIN kg_relation_evidence ev ON ev.relation_id = r.relation_id JOIN chunks c ON c.chunk_id = ev.chunk_id"
    " WHERE r.subject_id = e.entity_id ORDER BY ev.confidence DESC, c.indexed_at, ev.chunk_id, ev.quote_key LIMIT 1),"
    " (SELECT ARRAY[ev.object_name, convert_to(c.doc_id, 'UTF8')] FROM kg_relations r"
    " JOIN kg_relation_evidence ev ON ev.relation_id = r.relation_id JOIN chunks c ON c.chunk_id = ev.chunk_id"
    " WHERE r.object_id = e.entity_id ORDER BY ev.confidence DESC, c.indexed_at, ev.chunk_id, ev.quote_key LIMIT 1),"
    " (SELECT ARRAY[cv.entity_name, convert_to(c.doc_id, 'UTF8')] FROM kg_claims cl"
    " JOIN kg_claim_evidence cv ON cv.claim_id = cl.claim_id JOIN chunks c ON c.chunk_id = cv.chunk_id"
    " WHERE cl.entity_id = e.entity_id ORDER BY cv.confidence DESC, c.indexed_at, cv.chunk_id, cv.quote_key LIMIT 1)),"
    " e.strong_ids FROM kg_entities e WHERE e.entity_id = ANY(%(ids)s::text[])"
)

_PG_SIGHTINGS: LiteralString = (
    "WITH s AS (SELECT m.entity_id, m.chunk_id FROM kg_mentions m WHERE m.entity_id = ANY(%(ids)s::text[])"
    " UNION SELECT r.subject_id, ev.chunk_id FROM kg_relations r"
    " JOIN kg_relation_evidence ev ON ev.relation_id = r.relation_id WHERE r.subject_id = ANY(%(ids)s::text[])"
    " UNION SELECT r.object_id, ev.chunk_id FROM kg_relations r"
    " JOIN kg_relation_evidence ev ON ev.relation_id = r.relation_id WHERE r.object_id = ANY(%(ids)s::text[])"
    " UNION SELECT cl.entity_id, cv.chunk_id FROM kg_claims cl JOIN kg_claim_evidence cv ON cv.claim_id = cl.claim_id"
    " WHERE cl.entity_id = ANY(%(ids)s::text[]))"
    " SELECT DISTINCT s.entity_id, c.doc_id, c.acl_class_id, " + _ACTIVE + " FROM s"
    " JOIN chunks c ON c.chunk_id = s.chunk_id" + _DOC + " ORDER BY 1, 2, 3, 4"
)

# Per sealed name and document (names and identifiers are sealed per document): opened and merged in Python.
_PG_ALIASES: LiteralString = (
    "SELECT m.entity_id, m.name, c.doc_id, c.acl_class_id, " + _ACTIVE + ", count(*),"
    " array_remove(array_agg(m.strong_ids), NULL)"
    " FROM kg_mentions m JOIN chunks c ON c.chunk_id = m.chunk_id" + _DOC + " WHERE m.entity_id = ANY(%(ids)s::text[])"
    " GROUP BY 1, 2, 3, 4, 5"
)

_PG_RELATIONS: LiteralString = (
    "SELECT COALESCE(cs.canonical_id, r.subject_id), r.relation, COALESCE(co.canonical_id, r.object_id),"
    " r.polarity, r.modality, r.valid_from, r.valid_to, ev.chunk_id, c.acl_class_id, " + _ACTIVE + ","
    " ev.confidence, (c.doc_time AT TIME ZONE 'UTC')::date"
    " FROM kg_relations r LEFT JOIN er_canonical cs ON cs.entity_id = r.subject_id"
    " LEFT JOIN er_canonical co ON co.entity_id = r.object_id"
    " JOIN kg_relation_evidence ev ON ev.relation_id = r.relation_id JOIN chunks c ON c.chunk_id = ev.chunk_id"
    + _DOC
    + " WHERE r.subject_id = ANY(%(ids)s::text[]) OR r.object_id = ANY(%(ids)s::text[])"
)

_PG_CLAIMS: LiteralString = (
    "SELECT cl.claim_id, cl.entity_id, cl.attribute, ev.value, cl.polarity, cl.modality, cl.valid_from,"
    " cl.valid_to, ev.chunk_id, c.doc_id, c.acl_class_id, " + _ACTIVE + ", (c.doc_time AT TIME ZONE 'UTC')::date,"
    " ev.quote, ev.tier, ev.confidence"
    " FROM kg_claims cl JOIN kg_claim_evidence ev ON ev.claim_id = cl.claim_id"
    " JOIN chunks c ON c.chunk_id = ev.chunk_id" + _DOC + " WHERE cl.entity_id = ANY(%(ids)s::text[])"
    " ORDER BY cl.claim_id, ev.chunk_id, ev.quote"
)


class PostgresKnowledgeSource:
    """`KnowledgeSource` on PostgreSQL: what the projection is built from, every document regardless of ACL.

    Its own autocommit connection; each snapshot is read in one REPEATABLE READ transaction.
    """

    def __init__(self, conn: psycopg.Connection[Row], *, kek: KeyEncryptionKey | None = None) -> None:
        if not conn.autocommit:
            raise ValueError("PostgresKnowledgeSource needs an autocommit connection")
        self._conn = conn
        self._lock = threading.RLock()
        # Evidence quotes are sealed per document (ADR 0008); the projection carries them opened.
        self._cipher = EnvelopeCipher(PostgresKeyStore(lambda: self._conn, self._lock), kek or ephemeral_key_ring())
        self._held: dict[str, int] = {}  # advisory locks this object holds, by name, with their depth
        self._id_key: bytes | None = None

    @classmethod
    def connect(cls, dsn: str, *, kek: KeyEncryptionKey | None = None) -> PostgresKnowledgeSource:
        return cls(psycopg.connect(dsn, autocommit=True), kek=kek)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> PostgresKnowledgeSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def cipher(self) -> ContentCipher:
        """The cipher this source opens evidence with: a projection seals its copies with the same one."""
        return self._cipher

    def name_index(self, norm: str) -> str:
        """The blind index of a normalised name under the installation key (what the projection looks
        names up by, as PostgreSQL does: migration 0010)."""
        if self._id_key is None:
            with self._lock:
                row = self._conn.execute("SELECT entity_id_key FROM kg_installation").fetchone()
            if row is None:  # cannot happen: the migration inserts it
                raise KgragError(ErrorCode.CONFIGURATION_INVALID, "kg_installation holds no entity-id key")
            self._id_key = bytes(row[0])
        return blind(self._id_key, "name", norm)

    def entities_in_document(self, doc_id: str) -> list[str]:
        with self._lock:
            return sorted(r[0] for r in self._conn.execute(_PG_IN_DOCUMENT, {"doc": doc_id}))

    def canonical_of(self, entity_ids: Sequence[str]) -> dict[str, str]:
        ids = list(dict.fromkeys(entity_ids))
        out = {i: i for i in ids}
        with self._lock:
            for ent, cid in self._conn.execute(
                "SELECT entity_id, canonical_id FROM er_canonical WHERE entity_id = ANY(%s)", (ids,)
            ):
                out[ent] = cid
        return out

    def members_of(self, canonical_ids: Sequence[str]) -> list[str]:
        with self._lock:
            return [r[0] for r in self._conn.execute(_PG_MEMBERS, {"cids": list(canonical_ids)})]

    def graph_version(self) -> int:
        with self._lock:
            return current_graph_version(self._conn)

    def hubs(self) -> dict[str, int]:
        with self._lock:
            rows = self._conn.execute("SELECT entity_id, min_degree FROM kg_hubs ORDER BY entity_id")
            return {str(r[0]): int(r[1]) for r in rows}

    def snapshot(self, canonical_ids: Sequence[str], entity_ids: Sequence[str]) -> KnowledgeSnapshot:
        cids = sorted(set(canonical_ids))
        with self._reading() as conn:
            canonical = {r[0]: r[1] for r in conn.execute(_PG_MEMBERS, {"cids": cids})}
            params = {"ids": sorted(canonical)}
            entity_rows = conn.execute(_PG_ENTITIES, params).fetchall()
            sightings = conn.execute(_PG_SIGHTINGS, params).fetchall()
            alias_rows = conn.execute(_PG_ALIASES, params).fetchall()
            relation_rows = conn.execute(_PG_RELATIONS, params).fetchall()
            claim_rows = conn.execute(_PG_CLAIMS, params).fetchall()
            body = conn.execute("SELECT body FROM ontology_versions WHERE active").fetchone()
        reaches: dict[str, set[Reach]] = {}
        docs: dict[str, set[str]] = {}
        for ent, doc_id, acl, active in sightings:
            reaches.setdefault(ent, set()).add(Reach(acl, bool(active)))
            docs.setdefault(ent, set()).add(doc_id)
        # One alias use per name, reach and document: a projection seals each under its document's key.
        uses_of: list[tuple[str, AliasUse]] = []
        for ent, sealed, doc_id, acl, active, uses, ids in alias_rows:
            name = open_text(self._cipher, doc_id, bytes(sealed))
            if name is None:
                continue
            pairs: set[tuple[str, str]] = set()
            for sealed_ids in ids:
                opened = open_text(self._cipher, doc_id, bytes(sealed_ids)) or "[]"
                pairs |= {(str(k), str(v)) for k, v in json.loads(opened)}
            use = AliasUse(
                name, normalise_name(name), Reach(acl, bool(active)), int(uses), tuple(sorted(pairs)), doc_id
            )
            uses_of.append((ent, use))
        aliases: dict[str, list[AliasUse]] = {}
        for ent, use in sorted(
            uses_of, key=lambda u: (u[0], u[1].name, u[1].reach.acl_class_id, u[1].reach.active, u[1].doc_id)
        ):
            aliases.setdefault(ent, []).append(use)
        entities = tuple(
            ProjectedEntity(
                entity_id=ent,
                canonical_id=canonical[ent],
                type=entity_type,
                name=self._name(pair),
                norm_name=normalise_name(self._name(pair)),
                strong_ids=tuple((str(k), str(v)) for k, v in strong_ids),
                reaches=tuple(sorted(reaches.get(ent, ()), key=lambda r: (r.acl_class_id, r.active))),
                doc_ids=tuple(sorted(docs.get(ent, ()))),
                aliases=tuple(aliases.get(ent, ())),
                name_doc_id=bytes(pair[1]).decode() if pair else "",
            )
            for ent, entity_type, pair, strong_ids in sorted(entity_rows)
        )
        edges = group_edges(
            RelationEvidenceRow(
                subject_id=r[0],
                relation=r[1],
                object_id=r[2],
                polarity=Polarity(r[3]),
                modality=Modality(r[4]),
                valid_from=r[5],
                valid_to=r[6],
                chunk_id=r[7],
                reach=Reach(r[8], bool(r[9])),
                confidence=float(r[10]),
                written=r[11],
            )
            for r in relation_rows
        )
        cardinality = _cardinality(dict(body[0]) if body is not None else None)
        return KnowledgeSnapshot(
            canonical_ids=tuple(cids),
            entity_ids=tuple(sorted(set(entity_ids) | set(canonical))),
            entities=entities,
            edges=tuple(edges),
            claims=_claims(claim_rows, self._cipher),
            cardinality=tuple(sorted(cardinality.items())),
        )

    def _name(self, pair: Sequence[bytes] | None) -> str:
        """A [sealed name, document id] pair opened; "" when there is none or its key is gone."""
        if not pair:
            return ""
        return open_text(self._cipher, bytes(pair[1]).decode(), bytes(pair[0])) or ""

    @contextmanager
    def exclusive(self, name: str) -> Iterator[None]:
        """A session-level advisory lock named by `name`, re-entrant within this object (a document's
        projection holds it while projecting its entities). Other connections asking for it wait."""
        with self._lock:
            if self._held.get(name, 0) == 0:
                self._conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (name,))
            self._held[name] = self._held.get(name, 0) + 1
            try:
                yield
            finally:
                self._held[name] -= 1
                if self._held[name] == 0:
                    self._conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (name,))

    @contextmanager
    def _reading(self) -> Iterator[psycopg.Connection[Row]]:
        with self._lock, self._conn.transaction():
            self._conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield self._conn


def _claims(rows: Sequence[Row], cipher: ContentCipher) -> tuple[ProjectedClaim, ...]:
    grouped: dict[str, tuple[Row, list[ClaimEvidence]]] = {}
    for r in rows:
        quote = open_text(cipher, r[9], bytes(r[13])) or ""
        value = open_text(cipher, r[9], bytes(r[3])) or ""
        evidence = ClaimEvidence(
            r[8], r[9], Reach(r[10], bool(r[11])), r[12], quote, Tier(r[14]), float(r[15]), value=value
        )
        grouped.setdefault(r[0], ((*r[:3], value, *r[4:]), []))[1].append(evidence)
    return tuple(
        ProjectedClaim(
            claim_id=claim_id,
            entity_id=r[1],
            attribute=r[2],
            value=r[3],
            polarity=Polarity(r[4]),
            modality=Modality(r[5]),
            valid_from=r[6],
            valid_to=r[7],
            evidence=tuple(evidence),
        )
        for claim_id, (r, evidence) in grouped.items()
    )
