"""PostgresCommunityStore against the CommunityStore contract (a fresh database per test), and the
incremental refresh over it: only the communities a change touches are rewritten."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

import pytest

from kgrag_adapters.communities.leiden import LeidenDetector
from kgrag_adapters.postgres.communities import PostgresCommunityStore
from kgrag_adapters.postgres.graph_store import PostgresGraphStore
from kgrag_adapters.postgres.store import PostgresStore
from kgrag_core.communities.building import BuildSettings
from kgrag_core.communities.model import GraphEdge
from kgrag_core.communities.service import CommunityService
from kgrag_core.communities.visible import visible_community
from kgrag_core.events import ENTITIES_CHANGED, GRAPH_CHANGED
from kgrag_core.handlers.community_builder import CommunityBuilderHandler
from kgrag_core.ingest import DeletionRecord
from kgrag_testing.contracts.community_store import CommunityStoreContract
from kgrag_testing.contracts.document_store import ENG
from kgrag_testing.contracts.entity_ids import CONTRACT_ENTITY_KEY, contract_entity_id
from kgrag_testing.contracts.extraction_store import HR, Stores, commit_doc, leads, mention, result


@pytest.fixture
def pg_communities(pg_dsn: str) -> Iterator[PostgresCommunityStore]:
    store = PostgresStore.connect(pg_dsn)
    try:
        yield PostgresCommunityStore(store.pool)
    finally:
        store.close()


class TestPostgresCommunityStore(CommunityStoreContract):
    @pytest.fixture
    def communities(self, pg_communities: PostgresCommunityStore) -> PostgresCommunityStore:
        return pg_communities


class _Graph:
    """A fixed entity graph as the graph source reports it (the input to clustering, not an engine)."""

    def __init__(self, edges: list[GraphEdge]) -> None:
        self.edges = edges
        self.version = 1

    def graph_version(self) -> int:
        return self.version

    def community_edges(self, entity_ids: Sequence[str] | None = None) -> list[GraphEdge]:
        keep = None if entity_ids is None else set(entity_ids)
        return [e for e in self.edges if keep is None or (e.a in keep and e.b in keep)]

    def community_entities(self, entity_ids: Sequence[str] | None = None) -> list[str]:
        nodes = sorted({n for e in self.edges for n in (e.a, e.b)})
        return nodes if entity_ids is None else [n for n in nodes if n in set(entity_ids)]

    def hub_entities(self) -> set[str]:
        return set()

    def entities_of_documents(self, doc_ids: Sequence[str]) -> list[str]:
        return []


def _clique(prefix: str, n: int) -> list[GraphEdge]:
    names = [f"{prefix}{i}" for i in range(n)]
    return [GraphEdge(a, b, 2.0) for i, a in enumerate(names) for b in names[i + 1 :]]


def test_refresh_rewrites_only_the_affected_community(pg_communities: PostgresCommunityStore) -> None:
    graph = _Graph(_clique("a", 5) + _clique("b", 5) + _clique("c", 5) + [GraphEdge("a0", "b0", 0.1)])
    clock = iter(datetime(2026, 12, 2, h, tzinfo=UTC) for h in range(24))
    service = CommunityService(pg_communities, graph, LeidenDetector(), BuildSettings(), clock=lambda: next(clock))
    full = service.rebuild()
    before = {c.community_id: c for c in pg_communities.communities()}
    assert full.full and len(before) == 3
    # A document adds c5, tied to c0 and c1: only c's community is reclustered.
    graph.edges = [*graph.edges, GraphEdge("c0", "c5", 1.0), GraphEdge("c1", "c5", 1.0)]
    graph.version = 2
    report = service.refresh(["c5", "c0", "c1"])
    assert not report.full and report.communities_removed == 1 and report.entities == 6
    after = {c.community_id: c for c in pg_communities.communities()}
    untouched = [c for c in before.values() if not c.member_ids[0].startswith("c")]
    assert all(after[c.community_id] == c for c in untouched)  # same row, same build time
    grown = pg_communities.communities_of(["c5"])
    assert [c.member_ids for c in grown] == [("c0", "c1", "c2", "c3", "c4", "c5")]
    assert grown[0].graph_version == 2 and grown[0].built_at > untouched[0].built_at


def test_stale_communities_are_refreshed_and_cleared(pg_communities: PostgresCommunityStore) -> None:
    graph = _Graph(_clique("a", 4) + _clique("b", 4))
    service = CommunityService(pg_communities, graph, LeidenDetector())
    service.rebuild()
    assert pg_communities.mark_stale(["b2"]) != []
    graph.edges = [e for e in graph.edges if "b3" not in (e.a, e.b)]  # b3 lost its evidence
    plan = service.plan(full=False)
    assert (plan.full, plan.communities, plan.stale) == (False, 1, 1)
    assert pg_communities.stale() != []  # planning wrote nothing
    report = service.refresh_stale()
    assert report.communities_removed == 1 and pg_communities.stale() == []
    assert [c.member_ids for c in pg_communities.communities_of(["b0"])] == [("b0", "b1", "b2")]
    assert [c.member_ids for c in pg_communities.communities_of(["a0"])] == [("a0", "a1", "a2", "a3")]


def _team_doc(store: PostgresGraphStore, doc_id: str, people: Sequence[str], team: str) -> None:
    text = " ".join(f"{p} leads the {team} team." for p in people)
    [chunk] = commit_doc(Stores(store, store), doc_id, [text])
    relations = [leads(p, team, f"{p} leads the {team} team") for p in people]
    mentions = [mention(p, "Person") for p in people] + [mention(team, "Team")]
    store.save([result(chunk, entities=mentions, relations=relations)])


def test_graph_source_and_deletion_over_extracted_facts(pg_dsn: str) -> None:
    with PostgresGraphStore.connect(pg_dsn) as store:
        store.use_entity_id_key(CONTRACT_ENTITY_KEY)
        communities = PostgresCommunityStore(store.pool)
        _team_doc(store, "doc-routing", ["Priya Raman", "Omar Diaz"], "Routing")
        _team_doc(store, "doc-billing", ["Lena Vogt", "Ken Ito"], "Billing")
        routing, billing = contract_entity_id("Team", "Routing"), contract_entity_id("Team", "Billing")
        priya, lena = contract_entity_id("Person", "Priya Raman"), contract_entity_id("Person", "Lena Vogt")
        edges = communities.community_edges()
        assert len(edges) == 4 and all(e.a < e.b and e.weight == pytest.approx(0.8) for e in edges)
        assert communities.community_edges([priya, routing]) == [e for e in edges if {e.a, e.b} == {priya, routing}]
        assert len(communities.community_entities()) == 6
        assert communities.entities_of_documents(["doc-billing"]) == sorted(
            [billing, lena, contract_entity_id("Person", "Ken Ito")]
        )
        service = CommunityService(communities, communities, LeidenDetector())
        assert service.rebuild().communities_written == 2
        [billing_community] = communities.communities_of([billing])

        store.mark_deleted("doc-billing", DeletionRecord("doc-billing", (), (), ("postgres",)))
        # The deletion's own transaction marked the community stale and listed it in its record.
        [record] = store.deletion_records("doc-billing")
        assert record.communities == (billing_community.community_id,)
        assert [c.community_id for c in communities.stale()] == [billing_community.community_id]
        assert communities.community_entities([billing, priya]) == [priya]  # no live evidence names billing
        service.refresh_stale()
        assert communities.communities_of([billing]) == [] and communities.stale() == []
        assert len(communities.communities_of([priya, routing])) == 1


def test_the_builder_handler_builds_once_then_refreshes_and_refuses_malformed_events(
    pg_communities: PostgresCommunityStore,
) -> None:
    graph = _Graph(_clique("a", 4) + _clique("b", 4))
    handler = CommunityBuilderHandler(CommunityService(pg_communities, graph, LeidenDetector()))
    first = handler.handle(ENTITIES_CHANGED, [("a0", {"entity_ids": ["a0"]}), ("x", {"entity_ids": "a0"})])
    assert [d.error_code for d in first.dead_letters] == ["MALFORMED_EVENT"]
    assert handler.last_report is not None and handler.last_report.full  # an empty store: a full build
    assert len(pg_communities.communities()) == 2
    graph.edges = [*graph.edges, GraphEdge("b0", "b9", 1.0)]
    handler.handle(ENTITIES_CHANGED, [("b9", {"entity_ids": ["b9", "b0"], "reason": "merge"})])
    assert not handler.last_report.full and handler.last_report.communities_removed == 1
    assert [c.size for c in pg_communities.communities_of(["b9"])] == [5]
    nothing = handler.handle(GRAPH_CHANGED, [("d", {"items": 1})])
    assert [d.reason for d in nothing.dead_letters] == ["the event has no doc_id"]


def test_membership_resting_on_restricted_edges_only_is_not_shown(pg_dsn: str) -> None:
    with PostgresGraphStore.connect(pg_dsn) as store:
        store.use_entity_id_key(CONTRACT_ENTITY_KEY)
        both = Stores(store, store)
        # Both entities are named in an engineering page; only an HR page says one leads the other.
        [public] = commit_doc(both, "doc-public", ["Ann Lee and the Cygnus team met."])
        store.save([result(public, entities=[mention("Ann Lee", "Person"), mention("Cygnus", "Team")])])
        [secret] = commit_doc(both, "doc-hr", ["Ann Lee leads the Cygnus team."], acl=HR)
        store.save([result(secret, relations=[leads("Ann Lee", "Cygnus", "Ann Lee leads the Cygnus team")])])
        communities = PostgresCommunityStore(store.pool)
        CommunityService(communities, communities, LeidenDetector()).rebuild()
        [community] = communities.communities()
        ann = contract_entity_id("Person", "Ann Lee")
        assert ann in community.member_ids and store.entity(ann, [ENG.acl_class_id]) is not None
        assert visible_community(community, store, [ENG.acl_class_id]) is None  # like an unknown id
        hr_view = visible_community(community, store, [HR.acl_class_id])  # the positive control
        assert hr_view is not None and {m.entity_id for m in hr_view.members} == set(community.member_ids)
        assert hr_view.weight is None and hr_view.content_hash is None  # administrators only
        admin = visible_community(community, store, None)
        assert admin is not None and admin.size == 2 and admin.content_hash == community.content_hash
