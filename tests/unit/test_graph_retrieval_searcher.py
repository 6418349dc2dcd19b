from datetime import date

from kgrag_core.acl import Caller
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.records import ClaimStatus
from kgrag_core.graph_retrieval.router import QuestionKind, Route
from kgrag_core.graph_retrieval.searcher import (
    GraphAssistedSearcher,
    GraphSearchSettings,
    agreed_head,
    hybrid_floor,
)
from tests.unit.test_graph_retrieval_doubles import (
    PUBLIC,
    READER,
    SECRET,
    FakeClock,
    FakeStore,
    InMemoryGraph,
    chain_graph,
    hybrid_over,
)

MULTI_HOP = "Which site manager runs the warehouse where Brightwater Foods' stock is stored?"


def _world(*, leads_acl_secret: bool = False) -> tuple[FakeStore, InMemoryGraph]:
    store = FakeStore()
    for chunk_id in ["d_direct", "d2", "d3", "c_served", "c_customer", "c_member", "c_hub_far"]:
        store.add(chunk_id, f"text of {chunk_id}")
    store.add("c_leads", "Oliver Grant runs LEJ-2.", SECRET if leads_acl_secret else PUBLIC)
    # The graph's ACL view may lag the store: it still thinks c_leads is public.
    graph = chain_graph()
    return store, graph


def _searcher(
    store: FakeStore, graph: InMemoryGraph, dense: list[str], bm25: list[str], **kwargs: object
) -> GraphAssistedSearcher:
    return GraphAssistedSearcher(hybrid_over(store, dense, bm25), graph, clock=FakeClock(), **kwargs)  # type: ignore[arg-type]


def test_lookups_go_to_plain_hybrid_without_touching_the_graph() -> None:
    store, graph = _world()
    hybrid = hybrid_over(store, ["d2", "d_direct"], ["d_direct"])
    searcher = GraphAssistedSearcher(hybrid, graph, clock=FakeClock())
    response = searcher.search("What is the standard laptop refresh cycle?", READER, top_k=5)
    assert response.route.kind is QuestionKind.LOOKUP
    assert graph.calls == []
    assert response.mode == "hybrid" and not response.degraded
    assert response.hits == hybrid.search("What is the standard laptop refresh cycle?", READER, top_k=5).hits
    assert response.as_dict()["route"] == {"kind": "lookup", "confidence": response.route.confidence, "signals": []}


def test_multi_hop_links_expands_beyond_one_hop_and_adds_the_far_chunk() -> None:
    store, graph = _world()
    searcher = _searcher(store, graph, ["d_direct", "c_served", "d2"], ["d_direct", "d3"])
    response = searcher.search(MULTI_HOP, READER, top_k=10)
    assert response.route.kind is QuestionKind.MULTI_HOP and response.mode == "hybrid+graph"
    assert not response.degraded
    assert [lm.mention.text for lm in response.links] == ["Brightwater Foods"]
    assert response.traversal is not None
    assert ("c_leads", 2) in {(s.edge.evidence_chunk_ids[0], s.depth) for s in response.traversal.steps}
    ids = [h.chunk_id for h in response.hits]
    assert ids[0] == "d_direct"  # the direct match stays on top
    assert "c_leads" in ids
    assert set(response.hits[ids.index("c_leads")].ranks) == {"graph"}  # only the graph found it
    assert any(line.text.startswith("Oliver Grant LEADS LEJ-2") for line in response.graph_lines)
    # Northwind was reached but not passed through: its other neighbours never appear.
    assert "c_hub_far" not in ids
    assert "hub not passed: Northwind" in response.traversal.truncated
    assert response.as_dict()["traversal"]["truncated"] == response.traversal.truncated  # type: ignore[index]


def test_graph_chunks_pass_the_hybrid_acl_recheck() -> None:
    store, graph = _world(leads_acl_secret=True)
    response = _searcher(store, graph, ["d_direct"], ["d_direct"]).search(MULTI_HOP, READER, top_k=10)
    assert response.mode == "hybrid+graph"
    assert "c_leads" not in [h.chunk_id for h in response.hits]
    admin = _searcher(store, graph, ["d_direct"], ["d_direct"]).search(MULTI_HOP, Caller(admin=True), top_k=10)
    assert "c_leads" in [h.chunk_id for h in admin.hits]


def test_graph_failure_degrades_to_hybrid_with_the_reason() -> None:
    store, graph = _world()
    graph.fail_with = RuntimeError("graph store unreachable")
    hybrid = hybrid_over(store, ["d_direct", "c_served"], ["d_direct"])
    response = GraphAssistedSearcher(hybrid, graph, clock=FakeClock()).search(MULTI_HOP, READER, top_k=3)
    assert response.degraded and response.degraded_reason == "RuntimeError: graph store unreachable"
    assert response.mode == "hybrid" and response.route.kind is QuestionKind.MULTI_HOP
    assert response.hits == hybrid.search(MULTI_HOP, READER, top_k=3).hits
    graph.fail_with = KgragError(ErrorCode.ENTITY_NOT_FOUND, "gone")
    coded = GraphAssistedSearcher(hybrid, graph, clock=FakeClock()).search(MULTI_HOP, READER, top_k=3)
    assert coded.degraded_reason == "ENTITY_NOT_FOUND: gone"


def test_graph_timeout_degrades_to_hybrid() -> None:
    store, graph = _world()
    clock = FakeClock()

    def slow(_what: str) -> None:
        clock.now += 0.3

    graph.on_call = slow
    hybrid = hybrid_over(store, ["d_direct"], ["d_direct"])
    settings = GraphSearchSettings(graph_timeout_s=0.5)
    response = GraphAssistedSearcher(hybrid, graph, settings=settings, clock=clock).search(MULTI_HOP, READER)
    assert response.degraded and (response.degraded_reason or "").startswith("timeout: graph layer took")
    assert [h.chunk_id for h in response.hits] == ["d_direct"]


def test_truncation_is_reported_in_the_response_without_degrading() -> None:
    store, graph = _world()
    clock = FakeClock()

    def tick(what: str) -> None:
        if what == "neighbours":
            clock.now += 0.2

    graph.on_call = tick
    response = GraphAssistedSearcher(hybrid_over(store, ["d_direct"], []), graph, clock=clock).search(MULTI_HOP, READER)
    assert not response.degraded and response.traversal is not None
    assert any(t.startswith("time budget") for t in response.traversal.truncated)
    assert "c_served" in [h.chunk_id for h in response.hits]  # what it found before the budget ran out


def test_weighted_rrf_keeps_a_direct_top_hit_above_graph_only_chunks() -> None:
    store = FakeStore()
    for chunk_id in ["z_direct", "a_graph", "b_graph"]:
        store.add(chunk_id, chunk_id)
    graph = InMemoryGraph()
    team = graph.add_entity("t", "Routing", "Team")
    atlas = graph.add_entity("s", "Atlas", "System")
    graph.add_edge(team, "OWNS", atlas, ["a_graph", "b_graph"])
    question = "Tell me about Atlas."
    down_weighted = _searcher(store, graph, ["z_direct"], []).search(question, READER)
    assert down_weighted.hits[0].chunk_id == "z_direct"
    assert {h.chunk_id for h in down_weighted.hits} == {"z_direct", "a_graph", "b_graph"}
    # With equal weights (seed 000's round 1) the graph-only chunk would take the top place.
    equal = _searcher(
        store,
        graph,
        ["z_direct"],
        [],
        settings=GraphSearchSettings(route_weights={"dense": 1.0, "bm25": 1.0, "graph": 1.0}),
    )
    assert equal.search(question, READER).hits[0].chunk_id == "a_graph"


def test_temporal_search_puts_the_current_chunk_above_the_superseded_one() -> None:
    store = FakeStore()
    for chunk_id in ["c_old", "c_new", "d_x"]:
        store.add(chunk_id, chunk_id)
    graph = InMemoryGraph()
    site = graph.add_entity("site_lej", "LEJ-2", "Site")
    graph.add_claim(
        site,
        "capacity_pallets",
        "18,000",
        "c_old",
        written=date(2023, 3, 1),
        status=ClaimStatus.SUPERSEDED,
        superseded_by="clm_new",
    )
    graph.add_claim(site, "capacity_pallets", "24,500", "c_new", written=date(2024, 6, 3), claim_id="clm_new")
    question = "What is the current pallet capacity of LEJ-2?"
    hybrid_only = hybrid_over(store, ["c_old", "d_x", "c_new"], ["c_old", "c_new"]).search(question, READER)
    assert [h.chunk_id for h in hybrid_only.hits].index("c_old") == 0  # the outdated document wins on words
    response = _searcher(store, graph, ["c_old", "d_x", "c_new"], ["c_old", "c_new"]).search(question, READER)
    assert response.route.kind is QuestionKind.TEMPORAL
    ids = [h.chunk_id for h in response.hits]
    assert ids.index("c_new") < ids.index("c_old")
    assert [line.chunk_ids[0] for line in response.graph_lines] == ["c_new", "c_old"]
    assert "superseded" in response.graph_lines[1].marks


class WordCounter:
    def count_tokens(self, text: str) -> int:
        return len(text.split())


def test_graph_lines_and_chunks_share_one_budget() -> None:
    store, graph = _world()
    for n in range(8):
        graph.add_claim(graph.entities["org_b"].entity, f"note_{n}", "x " * 30, "c_served", written=date(2024, 1, 1))
    settings = GraphSearchSettings(budget_tokens=200, line_share=0.25)
    searcher = _searcher(
        store, graph, ["d_direct", "c_served"], ["d_direct"], settings=settings, token_counter=WordCounter()
    )
    response = searcher.search(MULTI_HOP, READER)
    assert response.context is not None
    assert response.context.line_tokens <= 50 and response.context.lines_left_out > 0
    assert response.graph_lines == response.context.lines
    assert response.context.line_tokens + response.context.chunk_tokens <= 200
    assert len(response.context.hits) > 0


def test_no_linked_entity_falls_back_to_hybrid_without_degrading() -> None:
    store, graph = _world()
    response = _searcher(store, graph, ["d_direct"], []).search("What were the recurring causes of outages?", READER)
    assert response.route.kind is QuestionKind.GLOBAL
    assert not response.degraded and response.mode == "hybrid"
    assert response.limits["graph"] == {"used": False, "reason": "no entity linked"}


def test_a_multi_hop_question_naming_no_entity_is_anchored_on_the_best_passages() -> None:
    store, graph = _world()
    store.add("d_incident", "The LEJ-2 picking outage stopped all outbound shipments.")
    question = "Who runs the site where the picking outage happened, and which team is he in?"
    searcher = _searcher(store, graph, ["d_incident", "d2"], ["d_incident"])
    response = searcher.search(question, READER, top_k=10)
    assert response.route.kind is QuestionKind.MULTI_HOP and response.mode == "hybrid+graph"
    assert response.links == ()  # the question itself names nothing the graph knows
    assert response.traversal is not None
    assert [e.name for e in response.traversal.seeds] == ["LEJ-2"]
    assert "c_leads" in [h.chunk_id for h in response.hits]


def test_a_question_naming_no_entity_falls_back_to_passages_and_to_hybrid_when_they_name_none() -> None:
    store, graph = _world()
    store.add("d_status", "LEJ-2 is shipping again.")
    question = "What is the current status of the picking outage?"
    anchored = _searcher(store, graph, ["d_status"], ["d_status"]).search(question, READER, top_k=5)
    assert anchored.route.kind is QuestionKind.TEMPORAL and anchored.mode == "hybrid+graph"
    assert anchored.traversal is not None and [e.name for e in anchored.traversal.seeds] == ["LEJ-2"]
    plain = _searcher(store, graph, ["d2"], ["d3"]).search(question, READER, top_k=5)
    assert plain.mode == "hybrid" and plain.limits["graph"] == {"used": False, "reason": "no entity linked"}


def test_on_multi_hop_the_asked_hops_re_rank_hybrid_hits_but_not_on_other_questions() -> None:
    # Hybrid returned the LEADS evidence deep down; the chain the question asks about lifts it.
    store, graph = _world()
    filler = [f"f{i}" for i in range(12)]
    for chunk_id in filler:
        store.add(chunk_id, f"text of {chunk_id}")
    dense = ["d_direct", *filler, "c_leads"]
    multi = _searcher(store, graph, dense, ["d_direct"]).search(MULTI_HOP, READER, top_k=20)
    lifted = [h.chunk_id for h in multi.hits]
    assert "graph" in multi.hits[lifted.index("c_leads")].ranks
    assert lifted[:3] == ["d_direct", "f0", "f1"]  # hybrid's head keeps its places above the chain
    assert lifted.index("c_leads") == 3
    plain = _searcher(store, graph, dense, ["d_direct"]).search("Tell me about Brightwater Foods.", READER, top_k=20)
    assert plain.route.kind is QuestionKind.ENTITY
    kept = [h.chunk_id for h in plain.hits]
    assert "graph" not in plain.hits[kept.index("c_leads")].ranks
    assert lifted.index("c_leads") < kept.index("c_leads")


def _atlas_world() -> tuple[FakeStore, InMemoryGraph]:
    store = FakeStore()
    for chunk_id in ["z1", "z2", "a_graph", "b_graph"]:
        store.add(chunk_id, chunk_id)
    graph = InMemoryGraph()
    team = graph.add_entity("t", "Routing", "Team")
    atlas = graph.add_entity("s", "Atlas", "System")
    graph.add_edge(team, "OWNS", atlas, ["a_graph", "b_graph"])
    return store, graph


def test_an_entity_floor_keeps_hybrids_head_in_place_and_the_graph_below_it() -> None:
    store, graph = _atlas_world()
    question = "Tell me about Atlas."
    loud = {"dense": 1.0, "bm25": 1.0, "graph": 2.0}  # the graph's chunks would outrank hybrid's
    unfloored = _searcher(store, graph, ["z1", "z2"], [], settings=GraphSearchSettings(route_weights=loud))
    response = unfloored.search(question, READER)
    assert response.route.kind is QuestionKind.ENTITY
    assert response.hits[0].chunk_id == "a_graph"  # positive control: no floor, graph on top
    floored = _searcher(
        store, graph, ["z1", "z2"], [], settings=GraphSearchSettings(route_weights=loud, entity_keep_head=2)
    ).search(question, READER)
    ids = [h.chunk_id for h in floored.hits]
    assert ids[:2] == ["z1", "z2"] and set(ids[2:]) == {"a_graph", "b_graph"}


def test_a_low_confidence_fusion_keeps_the_largest_floor_of_its_strategies() -> None:
    store, graph = _atlas_world()
    settings = GraphSearchSettings(route_weights={"dense": 1.0, "bm25": 1.0, "graph": 2.0}, lookup_keep_head=1)
    searcher = _searcher(store, graph, ["z1", "z2"], [], settings=settings)
    fused = Route(QuestionKind.LOOKUP, 0.4, (), alternative=QuestionKind.ENTITY)
    ids = [h.chunk_id for h in searcher.search("Tell me about Atlas.", READER, chosen=fused).hits]
    assert ids[0] == "z1" and ids[1] in {"a_graph", "b_graph"}  # hybrid's first hit held, the graph below it
    assert hybrid_floor(settings, (QuestionKind.ENTITY, QuestionKind.MULTI_HOP)) == settings.keep_head
    assert hybrid_floor(settings, fused.strategies) == 1
    assert hybrid_floor(settings, (QuestionKind.TEMPORAL,)) == 0


def test_an_agreed_head_counts_the_leading_hits_both_routes_rank_high() -> None:
    store, _ = _atlas_world()
    hits = hybrid_over(store, ["z1", "z2", "a_graph"], ["z1", "z2"]).search("Atlas", READER).hits
    assert [h.chunk_id for h in hits] == ["z1", "z2", "a_graph"]
    assert agreed_head(hits, 1) == 1  # z1 is first in both routes; z2 second in both
    assert agreed_head(hits, 2) == 2
    assert agreed_head(hits, 3) == 2 and agreed_head(hits, 0) == 0  # BM25 never found a_graph
    settings = GraphSearchSettings(entity_agreed_rank=1)
    assert hybrid_floor(settings, (QuestionKind.ENTITY,), hits) == 1
    assert hybrid_floor(settings, (QuestionKind.TEMPORAL,), hits) == 0
