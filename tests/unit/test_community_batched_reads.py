"""Community views read through the batched graph reads: a few reads for many communities, and exactly what
the per-community reads give each caller (ADR 0009's properties are the security suite's; here: same result,
fewer reads, and the outsider/reader split with a positive control)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime

from kgrag_core.acl import readable_classes
from kgrag_core.communities.model import Community, community_id
from kgrag_core.communities.view import ViewSettings, read_visible, read_visible_many
from kgrag_core.communities.visible import visible_communities, visible_community
from kgrag_core.extraction.records import ClaimRecord
from kgrag_core.filters import SearchFilters
from kgrag_core.graph.model import Edge, EntitySummary
from kgrag_core.graph_retrieval.filtered import FilteredGraphReader
from tests.unit.test_community_view_security import FINANCE, OUTSIDER, _world
from tests.unit.test_graph_retrieval_doubles import InMemoryGraph


class CountingGraph:
    """The in-memory graph, counting the reads made of it."""

    def __init__(self, graph: InMemoryGraph) -> None:
        self.graph = graph
        self.reads: Counter[str] = Counter()

    def entities_by_id(self, ids: Sequence[str], acl: Sequence[str] | None) -> dict[str, EntitySummary]:
        self.reads["entities_by_id"] += 1
        return self.graph.entities_by_id(ids, acl)

    def neighbours_by_id(
        self, ids: Sequence[str], acl: Sequence[str] | None, *, relations: Sequence[str] | None = None, limit: int = 50
    ) -> dict[str, list[Edge]]:
        self.reads["neighbours_by_id"] += 1
        return self.graph.neighbours_by_id(ids, acl, relations=relations, limit=limit)

    def edges_among(
        self, ids: Sequence[str], acl: Sequence[str] | None, *, relations: Sequence[str] | None = None, limit: int = 50
    ) -> dict[str, list[Edge]]:
        self.reads["edges_among"] += 1
        return self.graph.edges_among(ids, acl, relations=relations, limit=limit)

    def claims_of(self, ids: Sequence[str], acl: Sequence[str] | None) -> list[ClaimRecord]:
        self.reads["claims_of"] += 1
        return self.graph.claims_of(ids, acl)


def test_reading_many_communities_at_once_is_each_community_read_alone() -> None:
    graph, store, communities = _world(with_secret=True)
    for caller in (OUTSIDER, FINANCE):
        allowed = readable_classes(store.acl_classes(), caller)
        counting = CountingGraph(graph)
        many = read_visible_many(communities, counting, allowed)  # type: ignore[arg-type]
        assert many == {c.community_id: read_visible(c, graph, allowed) for c in communities}
        assert counting.reads == {"entities_by_id": 1, "edges_among": 1, "claims_of": 1}
        # One edge per member: the joint read (two per member) cannot prove every community's own edges
        # complete, and those communities are read alone; the result is still each community's own.
        tight = ViewSettings(edges_per_member=1)
        counting = CountingGraph(graph)
        many = read_visible_many(communities, counting, allowed, tight)  # type: ignore[arg-type]
        assert many == {c.community_id: read_visible(c, graph, allowed, tight) for c in communities}
        assert counting.reads["edges_among"] >= 1
    outsider = read_visible_many(communities, graph, readable_classes(store.acl_classes(), OUTSIDER))
    finance = read_visible_many(communities, graph, readable_classes(store.acl_classes(), FINANCE))
    names = {cid: {m.name for m in r.members.values()} if r else set() for cid, r in outsider.items()}
    assert not any("Jordan Blake" in n or "Vault Ledger" in n for n in names.values())
    assert sum(r is None for r in outsider.values()) == 1  # the wholly restricted community
    # Positive control: the finance reader's reads hold the restricted members and their edge.
    seen = {m.name for r in finance.values() if r for m in r.members.values()}
    assert {"Jordan Blake", "Project Quartz", "Vault Ledger"} <= seen
    assert any(e.relation == "LEADS" for r in finance.values() if r for e in r.edges)


def test_the_listing_reads_members_in_one_batch_and_edges_per_community_and_shows_what_each_alone_shows() -> None:
    graph, store, communities = _world(with_secret=True)
    for caller in (OUTSIDER, FINANCE):
        allowed = readable_classes(store.acl_classes(), caller)
        counting = CountingGraph(graph)
        listed = visible_communities(communities, counting, allowed, limit=10)  # type: ignore[arg-type]
        with_members = sum(bool(graph.entities_by_id(c.member_ids, allowed)) for c in communities)
        assert counting.reads == {"entities_by_id": 1, "edges_among": with_members}
        alone = [v for c in communities if (v := visible_community(c, graph, allowed)) is not None]
        assert sorted(v.community_id for v in listed) == sorted(v.community_id for v in alone)
        by_id = {v.community_id: v for v in alone}
        assert all(v == by_id[v.community_id] for v in listed)
    outsider = visible_communities(communities, graph, readable_classes(store.acl_classes(), OUTSIDER), limit=10)
    finance = visible_communities(communities, graph, readable_classes(store.acl_classes(), FINANCE), limit=10)
    assert "Jordan Blake" not in {m.name for v in outsider for m in v.members}
    assert "Jordan Blake" in {m.name for v in finance for m in v.members}  # positive control
    assert len(finance) == len(outsider) + 1  # the wholly restricted community exists for its reader only


def test_the_filtered_reader_filters_batched_reads_exactly_as_single_reads() -> None:
    graph, store, _ = _world(with_secret=True)
    allowed = readable_classes(store.acl_classes(), FINANCE)
    # The search's filters admit every chunk but one: its edges lose that evidence, or vanish.
    filtered = FilteredGraphReader(graph, SearchFilters(), lambda ids: [c for c in ids if c != "c_quartz"])
    ids = ["e_atlas", "e_jordan", "e_quartz", "e_routing", "e_unknown"]
    batched = filtered.neighbours_by_id(ids, allowed)
    assert batched == {i: filtered.neighbours(i, allowed) for i in ids}
    assert not any("c_quartz" in e.evidence_chunk_ids for es in batched.values() for e in es)
    # Control: unfiltered, the same reads carry that chunk.
    assert any("c_quartz" in e.evidence_chunk_ids for es in graph.neighbours_by_id(ids, allowed).values() for e in es)
    assert filtered.entities_by_id(ids, allowed) == graph.entities_by_id(ids, allowed)


def test_a_community_whose_edges_the_joint_read_cannot_prove_complete_is_read_alone() -> None:
    """Two communities read together: a member's strongest edges go to the other community's members, so the
    joint read (twice the limit) holds none of its own; that community is read alone and keeps its edge."""
    graph = InMemoryGraph()
    a1, a2 = graph.add_entity("e_a1", "Alpha", "Team"), graph.add_entity("e_a2", "Apex", "System")
    b1, b2 = graph.add_entity("e_b1", "Beta", "Team"), graph.add_entity("e_b2", "Bravo", "System")
    graph.add_edge(a1, "USES", b1, ["c1", "c2", "c3"], confidence=0.9)  # cross-community, strongest
    graph.add_edge(a1, "USES", b2, ["c4", "c5"], confidence=0.9)  # cross-community
    graph.add_edge(a1, "OWNS", a2, ["c6"], confidence=0.5)  # a1's only edge inside its community
    graph.add_edge(b1, "RUNS", b2, ["c7"], confidence=0.5)
    built = datetime(2026, 12, 1, tzinfo=UTC)
    communities = [
        Community(community_id(0, m), 0, None, m, 2.0, 1, built, content_hash="h")
        for m in (("e_a1", "e_a2"), ("e_b1", "e_b2"))
    ]
    tight = ViewSettings(edges_per_member=1)
    counting = CountingGraph(graph)
    many = read_visible_many(communities, counting, None, tight)  # type: ignore[arg-type]
    assert many == {c.community_id: read_visible(c, graph, None, tight) for c in communities}
    assert counting.reads["edges_among"] == 2  # the joint read, then community A alone
    alpha = (
        many[communities[0].community_id] if "e_a1" in communities[0].member_ids else many[communities[1].community_id]
    )
    assert alpha is not None and [e.relation for e in alpha.edges] == ["OWNS"]
