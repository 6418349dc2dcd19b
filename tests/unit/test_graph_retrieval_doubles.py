"""In-memory doubles for graph-assisted retrieval tests: a GraphReader (standing in for PostgreSQL/Neo4j)
and the ports a real HybridSearcher reads. The tests at the bottom pin the double's visibility rules, so
the other tests rest on a reader that behaves like the contract says."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime

from kgrag_core.acl import AclClass, Caller
from kgrag_core.documents import Chunk, DocumentStatus, StoredDocument
from kgrag_core.extraction.identity import normalise_name
from kgrag_core.extraction.model import Modality, Polarity, Tier
from kgrag_core.extraction.records import ClaimRecord, ClaimStatus
from kgrag_core.filters import SearchFilters
from kgrag_core.graph.among import edges_among_by_single_reads
from kgrag_core.graph.model import Edge, EntityRef, EntitySummary
from kgrag_core.retrieval.hybrid import HybridSearcher
from kgrag_core.search import RouteHit

PUBLIC = AclClass.of(["public"])
SECRET = AclClass.of(["group:finance"])


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class InMemoryGraph:
    """A GraphReader over hand-built entities, edges and claims; evidence visibility by chunk ACL class."""

    chunk_acl: dict[str, str] = field(default_factory=dict)
    entities: dict[str, EntitySummary] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    claims: list[ClaimRecord] = field(default_factory=list)
    calls: list[tuple[str, str]] = field(default_factory=list)
    fail_with: Exception | None = None
    on_call: Callable[[str], None] | None = None  # e.g. advance a fake clock per call

    def add_entity(
        self, entity_id: str, name: str, type_: str, *, aliases: Sequence[str] = (), hub: bool = False
    ) -> EntityRef:
        ref = EntityRef(entity_id, name, type_)
        self.entities[entity_id] = EntitySummary(ref, tuple(aliases), is_hub=hub)
        return ref

    def add_edge(
        self,
        subject: EntityRef,
        relation: str,
        obj: EntityRef,
        chunks: Sequence[str],
        *,
        confidence: float = 0.9,
        polarity: Polarity = Polarity.POSITIVE,
        modality: Modality = Modality.FACT,
        written: date | None = None,
        first_written: date | None = None,
        acl: str | None = None,
    ) -> Edge:
        for chunk_id in chunks:
            self.chunk_acl.setdefault(chunk_id, acl or PUBLIC.acl_class_id)
        edge = Edge(
            f"rel_{len(self.edges)}_{relation}",
            subject,
            relation,
            obj,
            polarity,
            modality,
            None,
            None,
            tuple(chunks),
            confidence,
            written,
            first_written or written,
        )
        self.edges.append(edge)
        return edge

    def add_claim(
        self,
        entity: EntityRef,
        attribute: str,
        value: str,
        chunk_id: str,
        *,
        written: date,
        status: ClaimStatus = ClaimStatus.CURRENT,
        superseded_by: str | None = None,
        modality: Modality = Modality.FACT,
        claim_id: str | None = None,
    ) -> ClaimRecord:
        self.chunk_acl.setdefault(chunk_id, PUBLIC.acl_class_id)
        claim = ClaimRecord(
            claim_id or f"clm_{len(self.claims)}",
            entity.entity_id,
            entity.name,
            entity.type,
            attribute,
            value,
            f"{attribute} {value}",
            modality,
            Polarity.POSITIVE,
            None,
            None,
            written,
            chunk_id,
            "doc_" + chunk_id,
            self.chunk_acl[chunk_id],
            Tier.LLM,
            0.9,
            status,
            superseded_by,
        )
        self.claims.append(claim)
        return claim

    # -- GraphReader ---------------------------------------------------------------------------------
    def _enter(self, what: str, arg: str) -> None:
        self.calls.append((what, arg))
        if self.on_call is not None:
            self.on_call(what)
        if self.fail_with is not None:
            raise self.fail_with

    def _visible(self, chunk_ids: Sequence[str], acl: Sequence[str] | None) -> tuple[str, ...]:
        return tuple(c for c in chunk_ids if acl is None or self.chunk_acl.get(c) in acl)

    def _visible_edges(self, acl: Sequence[str] | None) -> list[Edge]:
        out = []
        for edge in self.edges:
            seen = self._visible(edge.evidence_chunk_ids, acl)
            if seen:
                out.append(replace(edge, evidence_chunk_ids=seen))
        return out

    def _summary(self, entity_id: str, acl: Sequence[str] | None) -> EntitySummary | None:
        summary = self.entities.get(entity_id)
        if summary is None:
            return None
        degree = sum(entity_id in (e.subject.entity_id, e.object.entity_id) for e in self._visible_edges(acl))
        has_claim = any(c.entity_id == entity_id and self._visible([c.chunk_id], acl) for c in self.claims)
        if degree == 0 and not has_claim:
            return None
        return replace(summary, degree=degree)

    def entities_named(
        self, names: Sequence[str], acl_class_ids: Sequence[str] | None
    ) -> dict[str, list[EntitySummary]]:
        self._enter("entities_named", ",".join(names))
        out: dict[str, list[EntitySummary]] = {}
        for name in names:
            for entity_id, summary in sorted(self.entities.items()):
                forms = {normalise_name(f) for f in (summary.entity.name, *summary.aliases)}
                visible = self._summary(entity_id, acl_class_ids)
                if name in forms and visible is not None:
                    out.setdefault(name, []).append(visible)
        return out

    def hubs_among(self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None) -> set[str]:
        self._enter("hubs_among", ",".join(entity_ids))
        return {e for e in entity_ids if e in self.entities and self.entities[e].is_hub}

    def entity(self, entity_id: str, acl_class_ids: Sequence[str] | None) -> EntitySummary | None:
        self._enter("entity", entity_id)
        return self._summary(entity_id, acl_class_ids)

    def neighbours(
        self,
        entity_id: str,
        acl_class_ids: Sequence[str] | None,
        *,
        relations: Sequence[str] | None = None,
        limit: int = 50,
    ) -> list[Edge]:
        self._enter("neighbours", entity_id)
        found = [
            e
            for e in self._visible_edges(acl_class_ids)
            if entity_id in (e.subject.entity_id, e.object.entity_id) and (relations is None or e.relation in relations)
        ]
        found.sort(key=lambda e: (-e.confidence, -e.evidence_count, e.relation_id))
        return found[:limit]

    # The batched reads are the single ones per id (their calls are recorded as such).
    def entities_by_id(
        self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None
    ) -> dict[str, EntitySummary]:
        found = {e: self.entity(e, acl_class_ids) for e in dict.fromkeys(entity_ids)}
        return {e: s for e, s in found.items() if s is not None}

    def neighbours_by_id(
        self,
        entity_ids: Sequence[str],
        acl_class_ids: Sequence[str] | None,
        *,
        relations: Sequence[str] | None = None,
        limit: int = 50,
    ) -> dict[str, list[Edge]]:
        return {
            e: self.neighbours(e, acl_class_ids, relations=relations, limit=limit) for e in dict.fromkeys(entity_ids)
        }

    def edges_among(
        self,
        entity_ids: Sequence[str],
        acl_class_ids: Sequence[str] | None,
        *,
        relations: Sequence[str] | None = None,
        limit: int = 50,
    ) -> dict[str, list[Edge]]:
        return edges_among_by_single_reads(self, entity_ids, acl_class_ids, relations=relations, limit=limit)

    def claims_of(self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None) -> list[ClaimRecord]:
        self._enter("claims_of", ",".join(entity_ids))
        return [c for c in self.claims if c.entity_id in entity_ids and self._visible([c.chunk_id], acl_class_ids)]


# -- the ports a real HybridSearcher reads -----------------------------------------------------------------
@dataclass
class FakeStore:
    """DocumentStore + AclStore: one document per chunk, so a chunk's ACL is its document's."""

    chunks: dict[str, Chunk] = field(default_factory=dict)
    docs: dict[str, StoredDocument] = field(default_factory=dict)
    classes: list[AclClass] = field(default_factory=lambda: [PUBLIC, SECRET])

    def add(
        self,
        chunk_id: str,
        text: str,
        acl: AclClass = PUBLIC,
        *,
        source: str = "test",
        doc_time: datetime = datetime(2024, 1, 1, tzinfo=UTC),
    ) -> None:
        doc_id = "doc_" + chunk_id
        self.docs[doc_id] = StoredDocument(
            doc_id,
            source,
            f"file:///{doc_id}.md",
            chunk_id.upper(),
            1,
            "h",
            acl.acl_class_id,
            doc_time,
            DocumentStatus.ACTIVE,
        )
        self.chunks[chunk_id] = Chunk(
            chunk_id,
            doc_id,
            0,
            (chunk_id,),
            0,
            len(text.encode()),
            text,
            len(text.split()),
            "h",
            acl.acl_class_id,
            doc_time,
        )

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        return {c: self.chunks[c] for c in chunk_ids if c in self.chunks}

    def get_documents(self, doc_ids: Sequence[str]) -> dict[str, StoredDocument]:
        return {d: self.docs[d] for d in doc_ids if d in self.docs}

    def acl_classes(self) -> list[AclClass]:
        return list(self.classes)


@dataclass
class FakeRoute:
    """A ranked route (dense or BM25) with its answers fixed per test; the ACL filter runs inside it."""

    store: FakeStore
    ranked: list[str] = field(default_factory=list)

    def search(
        self, _query: object, acl_class_ids: Sequence[str], limit: int, *, filters: SearchFilters | None = None
    ) -> list[RouteHit]:
        chunks, docs = self.store.chunks, self.store.docs
        readable = [
            c
            for c in self.ranked
            if c in chunks
            and chunks[c].acl_class_id in acl_class_ids
            and (filters is None or filters.admits(docs[chunks[c].doc_id].source, chunks[c].doc_time))
        ]
        return [RouteHit(c, 1.0 / rank, rank) for rank, c in enumerate(readable[:limit], start=1)]


class FakeEmbedder:
    def embed_query(self, text: str) -> tuple[float, ...]:
        return (float(len(text)),)


def hybrid_over(store: FakeStore, dense: list[str], bm25: list[str]) -> HybridSearcher:
    return HybridSearcher(store, store, FakeRoute(store, dense), FakeRoute(store, bm25), FakeEmbedder())  # type: ignore[arg-type]


READER = Caller(user="ann")


def chain_graph() -> InMemoryGraph:
    """customer -SERVED_AT-> site <-LEADS- manager -MEMBER_OF-> team; the customer also belongs to a hub that
    leads elsewhere. Chunk IDs: c_served, c_leads, c_member, c_customer, c_hub_far (all public)."""
    graph = InMemoryGraph()
    customer = graph.add_entity("org_b", "Brightwater Foods", "Organization")
    site = graph.add_entity("site_lej", "LEJ-2", "Site")
    manager = graph.add_entity("p_og", "Oliver Grant", "Person")
    team = graph.add_entity("team_ops", "Site Ops", "Team")
    hub = graph.add_entity("org_nw", "Northwind", "Organization", hub=True)
    far = graph.add_entity("p_far", "Someone Else", "Person")
    graph.add_edge(customer, "SERVED_AT", site, ["c_served"])
    graph.add_edge(manager, "LEADS", site, ["c_leads"])
    graph.add_edge(manager, "MEMBER_OF", team, ["c_member"])
    graph.add_edge(customer, "CUSTOMER_OF", hub, ["c_customer"])
    graph.add_edge(far, "WORKS_AT", hub, ["c_hub_far"])
    return graph


# -- the double's own contract ---------------------------------------------------------------------------
def test_double_hides_edges_without_visible_evidence_and_counts_visible_degree() -> None:
    graph = InMemoryGraph()
    a = graph.add_entity("a", "Atlas", "System")
    b = graph.add_entity("b", "Routing", "Team")
    graph.add_edge(b, "OWNS", a, ["c_public"])
    graph.add_edge(b, "USES", a, ["c_secret"], acl=SECRET.acl_class_id)
    public_only = [PUBLIC.acl_class_id]
    assert [e.relation for e in graph.neighbours("a", public_only)] == ["OWNS"]
    assert {e.relation for e in graph.neighbours("a", None)} == {"OWNS", "USES"}
    summary = graph.entity("a", public_only)
    assert summary is not None and summary.degree == 1


def test_double_alias_index_keeps_every_visible_namesake() -> None:
    graph = InMemoryGraph()
    one = graph.add_entity("p1", "Tony", "Person")
    two = graph.add_entity("p2", "Tony", "Person")
    team = graph.add_entity("t", "Routing", "Team")
    graph.add_edge(one, "MEMBER_OF", team, ["c1"])
    graph.add_edge(two, "MEMBER_OF", team, ["c2"], acl=SECRET.acl_class_id)
    assert [s.entity.entity_id for s in graph.entities_named(["tony"], None)["tony"]] == ["p1", "p2"]
    assert [s.entity.entity_id for s in graph.entities_named(["tony"], [PUBLIC.acl_class_id])["tony"]] == ["p1"]
