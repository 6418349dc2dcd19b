"""SearchFilters: checked on build, admitted inside every route (the graph's included), part of cache keys;
graph paths show only hops whose evidence the caller may read."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from kgrag_core.acl import Caller
from kgrag_core.ask_modes import AskMode, ModePlan, plan_mode
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.records import ClaimStatus
from kgrag_core.filters import SearchFilters
from kgrag_core.graph.model import Traversal, TraversalStep
from kgrag_core.graph_retrieval.paths import graph_paths
from kgrag_core.graph_retrieval.router import QuestionKind
from kgrag_core.graph_retrieval.searcher import GraphAssistedSearcher
from tests.unit.test_graph_retrieval_doubles import (
    READER,
    SECRET,
    FakeClock,
    FakeStore,
    InMemoryGraph,
    chain_graph,
    hybrid_over,
)

MULTI_HOP = "Which site manager runs the warehouse where Brightwater Foods' stock is stored?"


def test_an_inverted_range_is_refused_with_a_stable_code() -> None:
    with pytest.raises(KgragError) as err:
        SearchFilters.build(date_from=date(2024, 12, 31), date_to=date(2024, 1, 1))
    assert err.value.code is ErrorCode.INVALID_FILTER
    with pytest.raises(KgragError) as before:
        SearchFilters.build(date_from=date(2024, 6, 1), as_of=date(2024, 5, 1))
    assert before.value.code is ErrorCode.INVALID_FILTER
    with pytest.raises(KgragError) as blank:
        SearchFilters.build(sources=["wiki", " "])
    assert blank.value.code is ErrorCode.INVALID_FILTER
    assert SearchFilters.build(date_from=date(2024, 1, 1), date_to=date(2024, 1, 1)).date_to == date(2024, 1, 1)


def test_bounds_include_both_days_and_as_of_caps_the_range() -> None:
    f = SearchFilters.build(date_from=date(2024, 1, 1), date_to=date(2024, 12, 31), as_of=date(2024, 6, 30))
    assert f.time_bounds() == (datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 7, 1, tzinfo=UTC))
    assert f.admits("any", datetime(2024, 6, 30, 23, 59, tzinfo=UTC))
    assert not f.admits("any", datetime(2024, 7, 1, tzinfo=UTC))
    assert not f.admits("any", None)  # an undated document has no place in a dated range
    assert SearchFilters().admits("any", None)
    wiki = SearchFilters.build(sources=["wiki"])
    assert wiki.admits("wiki", None) and not wiki.admits("tickets", None)


def test_cache_key_tells_filters_apart_and_is_stable() -> None:
    a = SearchFilters.build(sources=["wiki", "tickets"], date_from=date(2024, 1, 1))
    b = SearchFilters.build(sources=["tickets", "wiki"], date_from=date(2024, 1, 1))
    assert a.key() == b.key() != SearchFilters().key()
    assert a.key() != SearchFilters.build(sources=["wiki"], date_from=date(2024, 1, 1)).key()
    assert SearchFilters.build(as_of=date(2024, 1, 1)).key() != SearchFilters.build(date_to=date(2024, 1, 1)).key()


def _dated_world() -> tuple[FakeStore, InMemoryGraph]:
    store = FakeStore()
    for chunk_id in ["d_direct", "c_served", "c_customer", "c_member", "c_hub_far"]:
        store.add(chunk_id, f"text of {chunk_id}")
    # The chain's second hop is told only by a 2025 ticket.
    store.add("c_leads", "Oliver Grant runs LEJ-2.", source="tickets", doc_time=datetime(2025, 3, 1, tzinfo=UTC))
    return store, chain_graph()


def test_filters_change_the_graph_route_candidates_not_just_the_output() -> None:
    store, graph = _dated_world()
    searcher = GraphAssistedSearcher(hybrid_over(store, ["d_direct"], ["d_direct"]), graph, clock=FakeClock())
    unfiltered = searcher.search(MULTI_HOP, READER, top_k=10)
    assert "c_leads" in [h.chunk_id for h in unfiltered.hits]  # the positive control
    assert any(s.edge.relation == "LEADS" for s in unfiltered.traversal.steps)  # type: ignore[union-attr]
    for filters in (SearchFilters.build(as_of=date(2024, 12, 31)), SearchFilters.build(sources=["test"])):
        filtered = searcher.search(MULTI_HOP, READER, top_k=10, filters=filters)
        assert "c_leads" not in [h.chunk_id for h in filtered.hits]
        # Inside the walk: the edge resting only on the excluded document was never a step.
        assert filtered.traversal is not None
        assert all(s.edge.relation != "LEADS" for s in filtered.traversal.steps)
        assert not any("LEADS" in line.text for line in filtered.graph_lines)


def test_as_of_reads_claims_as_they_stood_that_day() -> None:
    store = FakeStore()
    store.add("d_direct", "Atlas runbook")
    store.add("c_old", "Atlas uptime 99.5%", doc_time=datetime(2024, 1, 10, tzinfo=UTC))
    store.add("c_new", "Atlas uptime 99.9%", doc_time=datetime(2024, 9, 1, tzinfo=UTC))
    graph = InMemoryGraph()
    atlas = graph.add_entity("s_atlas", "Atlas", "System")
    other = graph.add_entity("t_routing", "Routing", "Team")
    graph.add_edge(other, "OWNS", atlas, ["d_direct"])
    graph.add_claim(
        atlas,
        "uptime",
        "99.5%",
        "c_old",
        written=date(2024, 1, 10),
        status=ClaimStatus.SUPERSEDED,
        superseded_by="clm_new",
    )
    graph.add_claim(atlas, "uptime", "99.9%", "c_new", written=date(2024, 9, 1), claim_id="clm_new")
    searcher = GraphAssistedSearcher(hybrid_over(store, ["d_direct"], []), graph, clock=FakeClock())
    question = "What is the current uptime of Atlas?"
    now = searcher.search(question, READER, filters=SearchFilters())
    assert any("99.9%" in line.text and not line.marks for line in now.graph_lines)  # the positive control
    then = searcher.search(question, READER, filters=SearchFilters.build(as_of=date(2024, 3, 1)))
    lines = [line for line in then.graph_lines if "uptime" in line.text]
    assert lines and all("99.9%" not in line.text for line in lines)
    assert any("99.5%" in line.text and "superseded" not in line.marks for line in lines)


def test_requested_kind_and_max_hops_bound_the_walk() -> None:
    store, graph = _dated_world()
    searcher = GraphAssistedSearcher(hybrid_over(store, ["d_direct"], ["d_direct"]), graph, clock=FakeClock())
    one_hop = searcher.search(MULTI_HOP, READER, kind=QuestionKind.MULTI_HOP, max_hops=1)
    assert one_hop.route.kind is QuestionKind.MULTI_HOP and one_hop.route.signals == ("mode:multi_hop",)
    assert one_hop.traversal is not None and {s.depth for s in one_hop.traversal.steps} == {1}
    two = searcher.search(MULTI_HOP, READER, kind=QuestionKind.MULTI_HOP, max_hops=2)
    assert two.traversal is not None and max(s.depth for s in two.traversal.steps) == 2
    lookup = searcher.search(MULTI_HOP, READER, kind=QuestionKind.LOOKUP)
    assert lookup.route.kind is QuestionKind.LOOKUP and lookup.traversal is None


def test_graph_paths_show_only_readable_hops_with_a_positive_control() -> None:
    store = FakeStore()
    for chunk_id in ["d_direct", "c_served", "c_customer", "c_member", "c_hub_far"]:
        store.add(chunk_id, f"text of {chunk_id}")
    # The store says the LEADS evidence is finance-only; the graph's ACL view lags and still shows it.
    store.add("c_leads", "Oliver Grant runs LEJ-2.", SECRET)
    graph = chain_graph()
    searcher = GraphAssistedSearcher(hybrid_over(store, ["d_direct"], ["d_direct"]), graph, clock=FakeClock())

    finance = Caller(user="fay", groups=frozenset({"finance"}))
    allowed = searcher.search(MULTI_HOP, finance, top_k=10, include_paths=True)
    chains = [p.as_dict()["path"] for p in allowed.paths]
    assert ["Brightwater Foods", "SERVED_AT", "LEJ-2", "<-LEADS-", "Oliver Grant"] in chains  # positive control
    leads = next(p for p in allowed.paths if len(p.hops) == 2 and p.hops[1].relation == "LEADS")
    hop = leads.as_dict()["hops"][1]  # type: ignore[index]
    assert hop["supporting_chunks"] == ["c_leads"] and hop["direction"] == "inverse" and hop["confidence"] == 0.9
    assert leads.as_dict()["confidence"] == pytest.approx(0.81)

    outsider = searcher.search(MULTI_HOP, READER, top_k=10, include_paths=True)
    assert outsider.paths  # the readable first hop is still shown
    for path in outsider.paths:
        body = path.as_dict()
        assert "Oliver Grant" not in body["path"] and "Site Ops" not in body["path"]  # type: ignore[operator]
        assert "c_leads" not in body["supporting_chunks"]  # type: ignore[operator]
    assert searcher.search(MULTI_HOP, READER, top_k=10).paths == ()  # only when asked for


def test_the_ends_of_the_calendar_do_not_overflow() -> None:
    widest = SearchFilters.build(date_from=date.min, date_to=date.max, as_of=date.max)
    assert widest.time_bounds() == (datetime(1, 1, 1, tzinfo=UTC), None)
    assert widest.admits("any", datetime(2024, 1, 1, tzinfo=UTC)) and not widest.admits("any", None)
    assert SearchFilters.build(date_to=date.max).time_bounds() == (None, None)
    assert SearchFilters.build(date_to=date.max).admits("any", None)


def test_a_chain_through_several_named_entities_is_one_path() -> None:
    graph = InMemoryGraph()
    kim = graph.add_entity("p_kim", "Kim Lee", "Person")
    falcon = graph.add_entity("t_falcon", "Falcon", "Team")
    jordan = graph.add_entity("p_jordan", "Jordan Blake", "Person")
    member = graph.add_edge(kim, "MEMBER_OF", falcon, ["c_member"], confidence=0.8)
    leads = graph.add_edge(jordan, "LEADS", falcon, ["c_leads"], confidence=0.5)
    traversal = Traversal(
        seeds=[kim, falcon, jordan],  # all three named; the LEADS step happens to score higher
        steps=[TraversalStep(leads, 1, 0.9), TraversalStep(member, 1, 0.4)],
    )
    chains = [p.as_dict()["path"] for p in graph_paths(traversal, {"c_member", "c_leads"})]
    assert ["Kim Lee", "MEMBER_OF", "Falcon", "<-LEADS-", "Jordan Blake"] in chains
    assert graph_paths(traversal, {"c_member", "c_leads"})[0].confidence == pytest.approx(0.4)
    # Without the LEADS evidence Jordan Blake is reached by nothing the caller may read.
    assert [p.as_dict()["path"] for p in graph_paths(traversal, {"c_member"})] == [["Kim Lee", "MEMBER_OF", "Falcon"]]


def test_requested_modes_plan_their_strategy() -> None:
    assert plan_mode(AskMode.AUTO, graph_default=True, graph_available=True) == ModePlan(True, None)
    assert plan_mode(AskMode.VECTOR, graph_default=True, graph_available=True) == ModePlan(False, None)
    assert plan_mode(AskMode.MULTI_HOP, graph_default=False, graph_available=True).kind is QuestionKind.MULTI_HOP
    assert plan_mode(AskMode.GRAPH_ASSISTED, graph_default=False, graph_available=True).lookup_as_entity
    assert plan_mode(AskMode.GLOBAL, graph_default=True, graph_available=True) == ModePlan(False, None, True)
    # Without a graph layer every mode is hybrid search, and GLOBAL still says it fell back.
    assert not plan_mode(AskMode.MULTI_HOP, graph_default=True, graph_available=False).use_graph
    assert plan_mode(AskMode.GLOBAL, graph_default=True, graph_available=False).global_fallback
