"""A caller's view of one community: only what that caller's evidence says (ADR 0009).

The stored community is structure (member ids, name-free); everything shown here is read again through the
GraphReader's ACL-filtered reads and the chunk loader's ACL recheck. The visible members, the size, the title,
the points and their order come from that view alone, so a restricted document can change none of them; a
community with nothing visible is None, exactly like one that does not exist.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache

from kgrag_core.answering.extractive import is_prose
from kgrag_core.answering.model import Citation, cite
from kgrag_core.answering.quotes import normalise_for_quote
from kgrag_core.answering.sentences import SentenceSpan, split_sentences
from kgrag_core.communities.model import Community
from kgrag_core.extraction.model import Modality
from kgrag_core.extraction.records import ClaimRecord, ClaimStatus
from kgrag_core.graph.light import claims_of_named, edges_among_named, refs_by_id
from kgrag_core.graph.model import Edge, EntityRef
from kgrag_core.graph.ports import GraphReader
from kgrag_core.search import SearchHit
from kgrag_core.text_terms import content_terms

# Loads chunks by id through the ACL recheck (the hybrid searcher's `hydrate`): a chunk the caller may not
# read is simply absent from the result.
ChunkLoader = Callable[[Sequence[str]], Mapping[str, SearchHit]]


@dataclass(frozen=True, slots=True)
class ViewSettings:
    max_members_read: int = 60  # members whose visibility is checked (a community can be large)
    edges_per_member: int = 20
    edge_members: int = 15  # the most connected visible members whose edges are read (`among=False`)
    # The edges among the visible members, read as such (`GraphReader.edges_among`: no far end outside the
    # community is read or named). False: the strongest edges of the `edge_members` most connected members,
    # kept to those inside (as views read before; every far end named, a hub's name read from its evidence).
    among: bool = True
    # The members read once, without their degree, and their edges and claims named by that read
    # (`kgrag_core.graph.light`). False: every read names them again, degrees counted (the benchmark's
    # same-run baseline of the reads before).
    light: bool = True
    focus_weight: float = 2.0  # with a question: how much its terms count against a fact's strength
    facts_quoted: int = 24  # the strongest facts whose evidence is loaded and quoted
    max_points: int = 6  # key sentences kept, chosen for coverage
    title_members: int = 3


@dataclass(frozen=True, slots=True)
class CommunityPoint:
    """One key sentence: a quote of a chunk the caller may read, stating a fact about visible members."""

    text: str
    citation_id: int
    entity_ids: tuple[str, ...]
    kind: str  # claim | relation | summary
    score: float
    # Every citation the sentence rests on, when more than `citation_id` (an abstractive summary's sentence
    # can cite several quotes); empty: `citation_id` alone.
    citation_ids: tuple[int, ...] = ()

    @property
    def cited(self) -> tuple[int, ...]:
        return self.citation_ids or (self.citation_id,)


@dataclass(frozen=True, slots=True)
class CommunityView:
    community_id: str
    level: int
    title: str
    members: tuple[EntityRef, ...]  # visible members, most connected (in the caller's view) first
    points: tuple[CommunityPoint, ...]
    citations: tuple[Citation, ...]
    stale: bool
    built_at: datetime

    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def doc_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.doc_id for c in self.citations))

    def text(self) -> str:
        """What a question is matched against: title, member names and key sentences (all visible)."""
        return " ".join([self.title, *(m.name for m in self.members), *(p.text for p in self.points)])

    def as_dict(self) -> dict[str, object]:
        return {
            "community_id": self.community_id,
            "level": self.level,
            "title": self.title,
            "size": self.size,
            "members": [{"entity_id": m.entity_id, "name": m.name, "type": m.type} for m in self.members],
            "summary": [{"text": p.text, "citations": list(p.cited)} for p in self.points],
            "citations": [c.as_dict() for c in self.citations],
            "doc_ids": list(self.doc_ids),
            "stale": self.stale,
            "built_at": self.built_at.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class _Fact:
    kind: str
    entity_ids: tuple[str, ...]
    chunk_ids: tuple[str, ...]
    score: float
    quote: str = ""  # a claim's extractor quote
    ends: tuple[str, ...] = ()  # a relation's end names, one of which its sentence must name
    words: str = ""  # what the fact says, for matching a question before its sentence is loaded


@dataclass(frozen=True, slots=True)
class CommunityReads:
    """What one set of ACL classes sees of a community: the graph reads a view is built from. Holds nothing
    another scope may see, so it may be reused for the same classes while the corpus and ACLs are unchanged
    (the GLOBAL route caches it per question-independent key)."""

    members: Mapping[str, EntityRef]
    edges: tuple[Edge, ...]
    claims: tuple[ClaimRecord, ...]


def read_visible(
    community: Community, graph: GraphReader, acl_class_ids: Sequence[str] | None, settings: ViewSettings | None = None
) -> CommunityReads | None:
    """The visible members, the visible edges among them and their current claims; None if none is visible."""
    cfg = settings or ViewSettings()
    visible: dict[str, EntityRef] = {}
    degree: dict[str, int] = {}
    read = community.member_ids[: cfg.max_members_read]
    found = _members(graph, read, acl_class_ids, cfg)  # one batched read, exactly `entity` per member
    for member_id in read:
        if member_id in found:
            ref, seen = found[member_id]
            visible.setdefault(ref.entity_id, ref)
            degree[ref.entity_id] = max(degree.get(ref.entity_id, 0), seen)
    if not visible:
        return None
    readers = _readers(visible, degree, cfg)
    edges = _inside(visible, readers, _edges_of(graph, readers, acl_class_ids, cfg, visible))
    claims = [c for c in _claims(graph, sorted(visible), visible, acl_class_ids, cfg) if _current(c)]
    return CommunityReads(visible, tuple(edges), tuple(claims))


def read_visible_many(
    communities: Sequence[Community],
    graph: GraphReader,
    acl_class_ids: Sequence[str] | None,
    settings: ViewSettings | None = None,
) -> dict[str, CommunityReads | None]:
    """`read_visible` of each community (by id): their members, the edges among each community's visible
    members (`_own_edges`; with `among=False`, the edges of every community's most connected members) and
    the claims of every visible member, in one batched read each (and one more per community whose own
    edges that read cannot prove complete). Each community's reads are exactly its own `read_visible`
    (every read is per id, and claim status is per entity)."""
    cfg = settings or ViewSettings()
    asked = {c.community_id: c.member_ids[: cfg.max_members_read] for c in communities}
    found = _members(graph, list(dict.fromkeys(m for ms in asked.values() for m in ms)), acl_class_ids, cfg)
    visible_of: dict[str, dict[str, EntityRef]] = {}
    readers_of: dict[str, list[str]] = {}
    for community_id, read in asked.items():
        visible: dict[str, EntityRef] = {}
        degree: dict[str, int] = {}
        for member_id in read:
            if member_id in found:
                ref, seen = found[member_id]
                visible.setdefault(ref.entity_id, ref)
                degree[ref.entity_id] = max(degree.get(ref.entity_id, 0), seen)
        if visible:
            visible_of[community_id] = visible
            readers_of[community_id] = _readers(visible, degree, cfg)
    named = {m: ref for v in visible_of.values() for m, ref in v.items()}
    if cfg.among:
        own = _own_edges(graph, visible_of, readers_of, acl_class_ids, cfg, named)
    else:
        readers = list(dict.fromkeys(r for rs in readers_of.values() for r in rs))
        batched = _edges_of(graph, readers, acl_class_ids, cfg, named) if readers else {}
        own = dict.fromkeys(readers_of, batched)
    members = sorted(named)
    claims = [c for c in _claims(graph, members, named, acl_class_ids, cfg) if _current(c)] if members else []
    out: dict[str, CommunityReads | None] = dict.fromkeys(asked)
    for community_id, visible in visible_of.items():
        edges = _inside(visible, readers_of[community_id], own[community_id])
        mine = tuple(c for c in claims if c.entity_id in visible)
        out[community_id] = CommunityReads(visible, tuple(edges), mine)
    return out


def community_view(
    community: Community,
    graph: GraphReader,
    acl_class_ids: Sequence[str] | None,
    load: ChunkLoader,
    settings: ViewSettings | None = None,
    *,
    focus: str | None = None,
    seen: CommunityReads | None = None,
) -> CommunityView | None:
    """The community as this caller sees it; None when no member is visible or nothing visible is quotable.
    With `focus` (a question), the facts and key sentences that bear on it are preferred: the map step of
    the GLOBAL route reads each community this way. `seen`: this caller's `read_visible`, already read."""
    cfg = settings or ViewSettings()
    seen = seen or read_visible(community, graph, acl_class_ids, cfg)
    if seen is None:
        return None
    return view_of_visible(community, seen, load, cfg, focus=focus)


def view_of_visible(
    community: Community,
    seen: CommunityReads,
    load: ChunkLoader,
    settings: ViewSettings | None = None,
    *,
    focus: str | None = None,
) -> CommunityView | None:
    """`community_view` from what the caller sees of the community."""
    cfg = settings or ViewSettings()
    visible, edges, claims = seen.members, seen.edges, seen.claims
    asked = set(content_terms(focus)) if focus else set()
    weight = cfg.focus_weight if asked else 0.0

    def strength(fact: _Fact) -> float:
        return fact.score + weight * _fit(asked, fact.words)

    facts = sorted(
        [*_edge_facts(edges, visible), *_claim_facts(claims)], key=lambda f: (-strength(f), f.chunk_ids, f.entity_ids)
    )[: cfg.facts_quoted]
    hits = load(sorted({c for f in facts for c in f.chunk_ids}))
    quoted = [q for q in (_quote(f, hits) for f in facts) if q is not None]
    points, citations = _cover(quoted, cfg.max_points, asked, weight)
    if not points:
        return None
    members = _ranked_members(visible, edges, claims)
    title = " / ".join(m.name for m in members[: cfg.title_members])
    return CommunityView(
        community.community_id,
        community.level,
        title,
        tuple(members),
        tuple(points),
        tuple(citations),
        community.stale,
        community.built_at,
    )


def _members(
    graph: GraphReader, ids: Sequence[str], acl: Sequence[str] | None, cfg: ViewSettings
) -> dict[str, tuple[EntityRef, int]]:
    """The visible members' entities with their visible degree, which only ranks whose edges are read when
    a few are (`among=False`): with `among`, every visible member's are, so no degree is counted (0)."""
    if cfg.among and cfg.light:
        return {i: (ref, 0) for i, ref in refs_by_id(graph, ids, acl).items()}
    return {i: (s.entity, s.degree) for i, s in graph.entities_by_id(ids, acl).items()}


def _current(claim: ClaimRecord) -> bool:
    return claim.status is ClaimStatus.CURRENT and claim.modality is Modality.FACT


def _fit(asked: set[str], text: str) -> float:
    """Share of the question's terms the text holds (0 without a question)."""
    return len(asked & set(content_terms(text))) / len(asked) if asked else 0.0


def _own_edges(
    graph: GraphReader,
    visible_of: Mapping[str, Mapping[str, EntityRef]],
    readers_of: Mapping[str, Sequence[str]],
    acl: Sequence[str] | None,
    cfg: ViewSettings,
    named: Mapping[str, EntityRef],
) -> dict[str, Mapping[str, Sequence[Edge]]]:
    """Each community's `edges_among` its own readers, from one read of all of them together, with twice
    the limit. That read also counts the edges tying two communities' members against each member's limit,
    so a member's own edges are taken from it only when provably complete: the read returned fewer than its
    limit (every edge it has inside the set), or at least `edges_per_member` of them are inside the
    member's community (its strongest ones, as the read is ordered as `neighbours`). A community with a
    member neither holds is read alone."""
    limit = cfg.edges_per_member
    wide = 2 * limit
    readers = list(dict.fromkeys(r for rs in readers_of.values() for r in rs))
    found = _among(graph, readers, named, acl, wide, cfg) if readers else {}
    out: dict[str, Mapping[str, Sequence[Edge]]] = {}
    for community_id, rs in readers_of.items():
        visible = visible_of[community_id]
        own: dict[str, Sequence[Edge]] = {}
        for reader in rs:
            edges = found.get(reader, [])
            kept = [e for e in edges if e.subject.entity_id in visible and e.object.entity_id in visible]
            if len(kept) < limit and len(edges) >= wide:
                break  # cut short by edges to other communities: not provably this member's own
            own[reader] = kept[:limit]
        out[community_id] = own if len(own) == len(rs) else _edges_of(graph, rs, acl, cfg, named)
    return out


def _readers(visible: Mapping[str, EntityRef], degree: Mapping[str, int], cfg: ViewSettings) -> list[str]:
    """The members whose edges are read: every visible one (among), else the most connected few."""
    ranked = sorted(visible, key=lambda e: (-degree[e], e))
    return ranked if cfg.among else ranked[: cfg.edge_members]


def _edges_of(
    graph: GraphReader,
    readers: Sequence[str],
    acl: Sequence[str] | None,
    cfg: ViewSettings,
    named: Mapping[str, EntityRef],
) -> Mapping[str, Sequence[Edge]]:
    if cfg.among:
        return _among(graph, readers, named, acl, cfg.edges_per_member, cfg)
    return graph.neighbours_by_id(readers, acl, limit=cfg.edges_per_member)


def _among(
    graph: GraphReader,
    ids: Sequence[str],
    named: Mapping[str, EntityRef],
    acl: Sequence[str] | None,
    limit: int,
    cfg: ViewSettings,
) -> Mapping[str, Sequence[Edge]]:
    """`edges_among` the ids, their ends named by the members' entities already read (`light`)."""
    if cfg.light:
        return edges_among_named(graph, {i: named[i] for i in ids}, acl, limit=limit)
    return graph.edges_among(ids, acl, limit=limit)


def _claims(
    graph: GraphReader,
    ids: Sequence[str],
    named: Mapping[str, EntityRef],
    acl: Sequence[str] | None,
    cfg: ViewSettings,
) -> list[ClaimRecord]:
    if cfg.light:
        return claims_of_named(graph, {i: named[i] for i in ids}, acl)
    return graph.claims_of(ids, acl)


def _inside(
    visible: Mapping[str, EntityRef], readers: Sequence[str], found: Mapping[str, Sequence[Edge]]
) -> list[Edge]:
    out: dict[str, Edge] = {}
    for member_id in readers:
        for edge in found.get(member_id, ()):
            if edge.subject.entity_id in visible and edge.object.entity_id in visible:
                out.setdefault(edge.relation_id, edge)
    return [out[k] for k in sorted(out)]


def _edge_facts(edges: Sequence[Edge], visible: Mapping[str, EntityRef]) -> list[_Fact]:
    return [
        _Fact(
            "relation",
            (e.subject.entity_id, e.object.entity_id),
            e.evidence_chunk_ids[:3],
            e.confidence * math.log1p(e.evidence_count) + 0.5,
            ends=(e.subject.name, e.object.name),
            words=f"{e.subject.name} {e.relation.replace('_', ' ')} {e.object.name}",
        )
        for e in edges
    ]


def _claim_facts(claims: Sequence[ClaimRecord]) -> list[_Fact]:
    return [
        _Fact(
            "claim",
            (c.entity_id,),
            (c.chunk_id,),
            c.confidence * math.log1p(1),
            quote=c.quote,
            words=f"{c.entity_name} {c.attribute.replace('_', ' ')} {c.value} {c.quote}",
        )
        for c in claims
    ]


@dataclass(frozen=True, slots=True)
class _Quoted:
    fact: _Fact
    hit: SearchHit
    start_byte: int
    end_byte: int
    text: str


@dataclass(frozen=True, slots=True)
class _ProseKey:
    """What `is_prose` reads of a hit (its text, title and breadcrumb); the hit rides along uncompared."""

    text: str
    title: str
    breadcrumb: tuple[str, ...]
    hit: SearchHit = field(compare=False, hash=False)


@lru_cache(maxsize=4096)
def _prose_of(key: _ProseKey) -> tuple[SentenceSpan, ...]:
    """A chunk's prose sentences, cut once per text: the facts of many views and asks quote the same chunks.
    Keyed by the text itself, so only a caller who loaded that text can reach its entry."""
    return tuple(x for x in split_sentences(key.text) if is_prose(key.hit, x))


def _prose(hit: SearchHit) -> tuple[SentenceSpan, ...]:
    return _prose_of(_ProseKey(hit.text, hit.title, tuple(hit.breadcrumb), hit))


def _quote(fact: _Fact, hits: Mapping[str, SearchHit]) -> _Quoted | None:
    """The fact's sentence in the first of its evidence chunks the caller could load (byte-exact)."""
    for chunk_id in fact.chunk_ids:
        hit = hits.get(chunk_id)
        if hit is None:
            continue
        wanted = normalise_for_quote(fact.quote) if fact.kind == "claim" else ""
        ends = [e.casefold() for e in fact.ends]
        for sentence in _prose(hit):
            if fact.kind == "claim" and not (wanted and wanted in normalise_for_quote(sentence.text)):
                continue
            if fact.kind == "relation" and not all(e in sentence.text.casefold() for e in ends):
                continue
            start = hit.start_byte + sentence.start_byte
            return _Quoted(fact, hit, start, hit.start_byte + sentence.end_byte, sentence.text)
    return None


def _cover(
    quoted: Sequence[_Quoted], limit: int, asked: set[str], weight: float
) -> tuple[list[CommunityPoint], list[Citation]]:
    """Key sentences chosen greedily for coverage: each next one the strongest, with a bonus for members
    and documents no chosen sentence names yet; one sentence is never chosen twice."""
    points: list[CommunityPoint] = []
    citations: list[Citation] = []
    seen_members: set[str] = set()
    seen_docs: set[str] = set()
    seen_spans: set[tuple[str, int]] = set()
    fits = [weight * _fit(asked, q.text) for q in quoted]  # what the question adds to each never changes
    pool = list(range(len(quoted)))
    while pool and len(points) < limit:

        def gain(i: int) -> float:
            q = quoted[i]
            new_members = len(set(q.fact.entity_ids) - seen_members)
            novelty = 0.5 * new_members + (0.5 if q.hit.doc_id not in seen_docs else 0.0)
            return q.fact.score + novelty + fits[i]

        at = max(pool, key=gain)  # max keeps the first of equals: the pool's order is deterministic
        pool.remove(at)
        best = quoted[at]
        span = (best.hit.chunk_id, best.start_byte)
        if span in seen_spans:
            continue
        seen_spans.add(span)
        score = gain(at)
        seen_members.update(best.fact.entity_ids)
        seen_docs.add(best.hit.doc_id)
        citation = cite(len(citations) + 1, best.hit, best.start_byte, best.end_byte, best.text)
        citations.append(citation)
        points.append(CommunityPoint(best.text, citation.id, best.fact.entity_ids, best.fact.kind, score))
    return points, citations


def _ranked_members(
    visible: Mapping[str, EntityRef], edges: Sequence[Edge], claims: Sequence[ClaimRecord]
) -> list[EntityRef]:
    """Members by their visible facts inside the community (edges count twice), then by name."""
    weight = dict.fromkeys(visible, 0.0)
    for edge in edges:
        for end in (edge.subject.entity_id, edge.object.entity_id):
            weight[end] += 2 * edge.confidence
    for claim in claims:
        if claim.entity_id in weight:
            weight[claim.entity_id] += claim.confidence
    return sorted(visible.values(), key=lambda m: (-weight[m.entity_id], m.name.casefold(), m.entity_id))
