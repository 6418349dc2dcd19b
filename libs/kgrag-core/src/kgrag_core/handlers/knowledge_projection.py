"""Keep a projection of the knowledge graph (Neo4j in distributed mode) equal to PostgreSQL.

PostgreSQL is authoritative; the projection is rebuilt from it one scope at a time. A scope is a set of
canonical entity IDs, closed under both stores' views of the mapping: every canonical ID either store gives
any entity of the scope, and every entity either store files under such an ID. Projecting a scope replaces
everything the projection holds about it (its entities, their claims, the edges touching it) with what
PostgreSQL says now, so replays converge, late events remove rather than resurrect, and a merge or split is
just one more scope to re-project.

Triggers: `graph.changed` names a document whose facts changed (or went): its scope starts from the entities
PostgreSQL says its chunks name now AND those the projection recorded as seen in it (a deleted document's
evidence is gone from PostgreSQL, so only the projection remembers whom it touched). A merge, split or
review decision starts from the merge's entities; a hub labelling replaces the projected hub set.

Watermark: each batch reads PostgreSQL's graph version before projecting anything and records it on the
projection once the batch is applied, so a reader can tell whether the projection is behind
(`kgrag_runtime.graph_reads`). The version is read first: a change committed while the batch runs leaves
the watermark below the current version, and readers fall back until a later batch catches up.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import date
from typing import Protocol, runtime_checkable

from kgrag_core.errors import ErrorCode
from kgrag_core.events import GRAPH_CHANGED
from kgrag_core.extraction.identity import relation_id
from kgrag_core.extraction.model import Modality, Polarity, Tier
from kgrag_core.extraction.ontology import Cardinality
from kgrag_core.handlers.protocol import DeadLetter, HandlerResult
from kgrag_core.ingest import IngestOutcome, IngestStatus

# A scope that keeps growing means the two stores disagree about a giant component; stop rather than loop.
MAX_CLOSURE_ROUNDS = 16


# --- what a projection holds ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reach:
    """Who may read a chunk: visibility needs nothing else, so sightings are kept once per reach."""

    acl_class_id: str
    active: bool  # the chunk's document is ACTIVE


@dataclass(frozen=True, slots=True)
class AliasUse:
    """How often an entity is mentioned under one surface form in chunks of one reach, and the strong
    identifiers those mentions carried (a reader is shown only those of mentions it may read)."""

    name: str
    norm_name: str
    reach: Reach
    uses: int
    strong_ids: tuple[tuple[str, str], ...] = ()
    doc_id: str = ""  # the document of those mentions: a projection seals the name under its key


@dataclass(frozen=True, slots=True)
class ProjectedEntity:
    """A mention-level entity as the projection stores it: identity, canonical ID and where it is named."""

    entity_id: str
    canonical_id: str
    type: str
    name: str
    norm_name: str
    strong_ids: tuple[tuple[str, str], ...]
    reaches: tuple[Reach, ...]  # of every chunk naming it: mention, relation evidence or claim evidence
    doc_ids: tuple[str, ...]  # the documents of those chunks, ACTIVE or not
    aliases: tuple[AliasUse, ...]
    name_doc_id: str = ""  # the document whose evidence gave `name` (whose key a projection seals it under)


@dataclass(frozen=True, slots=True)
class EdgeEvidence:
    """One evidence chunk of a canonical edge, aggregated over the mention-level relations it supports."""

    chunk_id: str
    reach: Reach
    confidence: float  # the highest over the chunk's evidence rows
    written: date | None
    valid_to: date | None  # the latest valid_to among the relations this chunk supports


@dataclass(frozen=True, slots=True)
class ProjectedEdge:
    """A relation between canonical entities, keyed like `Edge.relation_id`, with ALL its evidence."""

    relation_id: str
    subject_id: str
    relation: str
    object_id: str
    polarity: Polarity
    modality: Modality
    valid_from: date | None
    evidence: tuple[EdgeEvidence, ...]


@dataclass(frozen=True, slots=True)
class RelationEvidenceRow:
    """One mention-level relation with one evidence row, its endpoints already mapped to canonical IDs."""

    subject_id: str
    relation: str
    object_id: str
    polarity: Polarity
    modality: Modality
    valid_from: date | None
    valid_to: date | None
    chunk_id: str
    reach: Reach
    confidence: float
    written: date | None


@dataclass(frozen=True, slots=True)
class ClaimEvidence:
    chunk_id: str
    doc_id: str
    reach: Reach
    written: date | None
    quote: str
    tier: Tier
    confidence: float
    value: str = ""  # the claim's value as this evidence row states it


@dataclass(frozen=True, slots=True)
class ProjectedClaim:
    """A mention-level claim with every evidence row (readers map its entity to the cluster)."""

    claim_id: str
    entity_id: str
    attribute: str
    value: str
    polarity: Polarity
    modality: Modality
    valid_from: date | None
    valid_to: date | None
    evidence: tuple[ClaimEvidence, ...]


@dataclass(frozen=True, slots=True)
class KnowledgeSnapshot:
    """PostgreSQL's state of one scope. Projecting it replaces whatever the projection held about:
    every entity in `entity_ids` or filed under a canonical ID in `canonical_ids`, their claims, and every
    edge touching one of `canonical_ids`."""

    canonical_ids: tuple[str, ...]
    entity_ids: tuple[str, ...]
    entities: tuple[ProjectedEntity, ...]
    edges: tuple[ProjectedEdge, ...]
    claims: tuple[ProjectedClaim, ...]
    cardinality: tuple[tuple[str, Cardinality], ...]  # of the active ontology, for claim timelines


def group_edges(rows: Iterable[RelationEvidenceRow]) -> list[ProjectedEdge]:
    """Canonical edges, grouped as PostgreSQL readers group them: one per (subject, relation, object,
    polarity, modality, valid_from), evidence per distinct chunk. Sorted by relation ID."""
    groups: dict[tuple[str, str, str, Polarity, Modality, date | None], dict[str, EdgeEvidence]] = {}
    for r in rows:
        key = (r.subject_id, r.relation, r.object_id, r.polarity, r.modality, r.valid_from)
        chunks = groups.setdefault(key, {})
        seen = chunks.get(r.chunk_id)
        if seen is None:
            chunks[r.chunk_id] = EdgeEvidence(r.chunk_id, r.reach, r.confidence, r.written, r.valid_to)
        else:
            chunks[r.chunk_id] = EdgeEvidence(
                r.chunk_id,
                seen.reach,
                max(seen.confidence, r.confidence),
                seen.written,
                _latest(seen.valid_to, r.valid_to),
            )
    edges = [
        ProjectedEdge(
            relation_id=relation_id(s, rel, o, vf, pol, mod),
            subject_id=s,
            relation=rel,
            object_id=o,
            polarity=pol,
            modality=mod,
            valid_from=vf,
            evidence=tuple(chunks[c] for c in sorted(chunks)),
        )
        for (s, rel, o, pol, mod, vf), chunks in groups.items()
    ]
    return sorted(edges, key=lambda e: e.relation_id)


def _latest(a: date | None, b: date | None) -> date | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


# --- ports ------------------------------------------------------------------------------------------------


@runtime_checkable
class KnowledgeSource(Protocol):
    """The authoritative graph (PostgreSQL), read for projection: every document, whatever its ACL."""

    def entities_in_document(self, doc_id: str) -> list[str]:
        """Mention-level entities the document's chunks name now (mentions, relation ends, claim subjects)."""
        ...

    def canonical_of(self, entity_ids: Sequence[str]) -> dict[str, str]: ...

    def members_of(self, canonical_ids: Sequence[str]) -> list[str]:
        """Existing mention-level entities whose canonical ID is one of these."""
        ...

    def snapshot(self, canonical_ids: Sequence[str], entity_ids: Sequence[str]) -> KnowledgeSnapshot:
        """The state of a closed scope, read in one consistent transaction."""
        ...

    def hubs(self) -> dict[str, int]:
        """The labelled hubs, each with the degree that labelled it."""
        ...

    def graph_version(self) -> int:
        """The current graph version: it grows with every change a graph reader could see."""
        ...

    def exclusive(self, name: str) -> AbstractContextManager[None]:
        """Hold the lock called `name` while the block runs; every replica asking for it waits. Projecting
        reads the source and then writes the projection: two writers of overlapping scopes could otherwise
        each read, and the one that read first could write last, leaving the projection stale."""
        ...


@runtime_checkable
class KnowledgeProjection(Protocol):
    """The projected graph (Neo4j): the same questions about what it holds, and the two writes."""

    def entities_in_document(self, doc_id: str) -> list[str]:
        """Mention-level entities the projection recorded as named by the document's chunks."""
        ...

    def canonical_of(self, entity_ids: Sequence[str]) -> dict[str, str]: ...

    def members_of(self, canonical_ids: Sequence[str]) -> list[str]: ...

    @property
    def namespace(self) -> str:
        """Which projection this is; writers of one namespace take turns (`KnowledgeSource.exclusive`)."""
        ...

    def project(self, snapshot: KnowledgeSnapshot) -> None: ...

    def project_hubs(self, hubs: Mapping[str, int]) -> None:
        """Replace the hub set (canonical id -> the degree that labelled it)."""
        ...

    def record_watermark(self, version: int) -> None:
        """Every source change up to `version` is applied; a lower value than the one held is ignored."""
        ...


# --- projecting -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProjectionReceipt:
    canonical_ids: int
    entities: int
    edges: int
    claims: int


def closed_scope(
    seeds: Iterable[str], source: KnowledgeSource, target: KnowledgeProjection
) -> tuple[list[str], list[str]]:
    """(canonical IDs, entity IDs) of the smallest scope holding `seeds` that both stores agree is closed."""
    entities: set[str] = set(seeds)
    canonical: set[str] = set()
    for _ in range(MAX_CLOSURE_ROUNDS):
        ordered = sorted(entities)
        grown = canonical | entities | set(source.canonical_of(ordered).values())
        grown |= set(target.canonical_of(ordered).values())
        cids = sorted(grown)
        more = entities | set(source.members_of(cids)) | set(target.members_of(cids))
        if grown == canonical and more == entities:
            return cids, sorted(entities)
        canonical, entities = grown, more
    raise RuntimeError(f"the projection scope of {sorted(seeds)[:5]} did not close in {MAX_CLOSURE_ROUNDS} rounds")


def project_entities(
    entity_ids: Iterable[str], source: KnowledgeSource, target: KnowledgeProjection
) -> ProjectionReceipt:
    """Re-project the clusters these entities belong to, on either side (after a merge, split or change)."""
    seeds = list(entity_ids)
    if not seeds:
        return ProjectionReceipt(0, 0, 0, 0)
    with source.exclusive(_lock_name(target)):
        cids, ids = closed_scope(seeds, source, target)
        snap = source.snapshot(cids, ids)
        target.project(snap)
    return ProjectionReceipt(len(snap.canonical_ids), len(snap.entities), len(snap.edges), len(snap.claims))


def _lock_name(target: KnowledgeProjection) -> str:
    return f"kgrag-knowledge-projection:{target.namespace}"


def project_document(doc_id: str, source: KnowledgeSource, target: KnowledgeProjection) -> ProjectionReceipt:
    """Re-project every cluster the document's facts touch now or touched when last projected."""
    with source.exclusive(_lock_name(target)):
        seeds = set(source.entities_in_document(doc_id)) | set(target.entities_in_document(doc_id))
        return project_entities(sorted(seeds), source, target)


def project_hubs(source: KnowledgeSource, target: KnowledgeProjection) -> int:
    with source.exclusive(_lock_name(target)):
        hubs = source.hubs()
        target.project_hubs(hubs)
    return len(hubs)


@dataclass(slots=True)
class KnowledgeProjectionHandler:
    """Events -> projection. A payload with `doc_id` re-projects that document's scope; one with
    `entity_ids` (a merge, split or review decision) re-projects their clusters; `hubs: true` the hub set."""

    source: KnowledgeSource
    target: KnowledgeProjection
    name: str = "knowledge-projection"
    topics: tuple[str, ...] = (GRAPH_CHANGED,)
    receipts: list[ProjectionReceipt] = field(default_factory=list)

    def handle(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> HandlerResult:
        result = HandlerResult()
        version = self.source.graph_version()  # before any read of the source: see the module docstring
        for key, payload in batch:
            doc_id = payload.get("doc_id")
            entity_ids = payload.get("entity_ids")
            if isinstance(doc_id, str) and doc_id:
                receipt = project_document(doc_id, self.source, self.target)
                result.outcomes.append(_outcome(doc_id, receipt))
            elif isinstance(entity_ids, list) and entity_ids and all(isinstance(e, str) for e in entity_ids):
                receipt = project_entities([str(e) for e in entity_ids], self.source, self.target)
            elif payload.get("hubs") is True:
                project_hubs(self.source, self.target)
                continue
            else:
                reason = "the event names no doc_id, entity_ids or hubs"
                result.dead_letters.append(DeadLetter(key, payload, ErrorCode.MALFORMED_EVENT.value, reason))
                continue
            self.receipts.append(receipt)
        self.target.record_watermark(version)
        return result


def _outcome(doc_id: str, receipt: ProjectionReceipt) -> IngestOutcome:
    message = (
        f"knowledge graph: {receipt.canonical_ids} clusters, {receipt.edges} edges, {receipt.claims} claims projected"
    )
    return IngestOutcome(doc_id, IngestStatus.UPDATED, message=message)
