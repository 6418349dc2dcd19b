from datetime import date

from kgrag_core.extraction.model import Modality, Polarity
from kgrag_core.graph.model import EntitySummary
from kgrag_core.graph_retrieval.expansion import (
    ExpansionSettings,
    edge_labels,
    edge_score,
    expand,
    question_date,
    relation_relevance,
)
from kgrag_core.graph_retrieval.router import QuestionKind
from tests.unit.test_graph_retrieval_doubles import PUBLIC, FakeClock, InMemoryGraph, chain_graph

VISIBLE = [PUBLIC.acl_class_id]


def _seed(graph: InMemoryGraph, entity_id: str, score: float = 1.0) -> list[tuple[EntitySummary, float]]:
    summary = graph.entity(entity_id, VISIBLE)
    assert summary is not None
    return [(summary, score)]


def test_depth_follows_the_route() -> None:
    question = "Which site manager runs the warehouse where Brightwater Foods' stock is stored?"
    for kind, depth in [(QuestionKind.LOOKUP, 0), (QuestionKind.ENTITY, 1), (QuestionKind.MULTI_HOP, 3)]:
        graph = chain_graph()
        traversal = expand(_seed(graph, "org_b"), graph, VISIBLE, question=question, kind=kind, clock=FakeClock())
        assert max((s.depth for s in traversal.steps), default=0) == depth
    graph = chain_graph()
    two = expand(
        _seed(graph, "org_b"), graph, VISIBLE, question=question, kind=QuestionKind.MULTI_HOP, clock=FakeClock()
    )
    assert ("c_leads", 2) in {(s.edge.evidence_chunk_ids[0], s.depth) for s in two.steps}


def test_a_hub_reached_on_the_way_is_never_passed_through() -> None:
    graph = chain_graph()
    traversal = expand(
        _seed(graph, "org_b"),
        graph,
        VISIBLE,
        question="Who works with Brightwater Foods?",
        kind=QuestionKind.MULTI_HOP,
        clock=FakeClock(),
    )
    assert ("neighbours", "org_nw") not in graph.calls
    assert "c_hub_far" not in {c for s in traversal.steps for c in s.edge.evidence_chunk_ids}
    assert "c_customer" in {c for s in traversal.steps for c in s.edge.evidence_chunk_ids}  # the edge to it is kept
    assert "hub not passed: Northwind" in traversal.truncated


def test_a_hub_may_start_the_search_along_the_relations_asked_about() -> None:
    graph = chain_graph()
    traversal = expand(
        _seed(graph, "org_nw"),
        graph,
        VISIBLE,
        question="Which customers does Northwind have?",
        kind=QuestionKind.ENTITY,
        clock=FakeClock(),
    )
    assert [s.edge.relation for s in traversal.steps] == ["CUSTOMER_OF"]  # WORKS_AT is not what was asked


def test_fan_out_and_beam_cuts_are_reported() -> None:
    graph = InMemoryGraph()
    centre = graph.add_entity("sys", "Atlas", "System")
    for n in range(12):
        user = graph.add_entity(f"t{n:02d}", f"Team {n}", "Team")
        graph.add_edge(user, "USES", centre, [f"c{n:02d}"], confidence=0.5 + n / 100)
    settings = ExpansionSettings(fan_out=5, beam_width=3, fetch_per_entity=10)
    traversal = expand(
        _seed(graph, "sys"),
        graph,
        VISIBLE,
        question="Who uses Atlas?",
        kind=QuestionKind.MULTI_HOP,
        settings=settings,
        clock=FakeClock(),
    )
    assert "fan-out: Atlas has more than 10 edges" in traversal.truncated
    assert "fan-out: kept 5 of 10 edges of Atlas" in traversal.truncated
    assert "beam: 2 entities beyond width 3 at depth 1" in traversal.truncated
    assert len([s for s in traversal.steps if s.depth == 1]) == 5
    # Strongest edges first: the kept five are the five most confident.
    assert {s.edge.subject.entity_id for s in traversal.steps if s.depth == 1} == {"t11", "t10", "t09", "t08", "t07"}


def test_time_budget_stops_the_search_with_what_it_has() -> None:
    graph = chain_graph()
    clock = FakeClock()

    def tick(what: str) -> None:
        if what == "neighbours":
            clock.now += 0.2

    graph.on_call = tick
    settings = ExpansionSettings(time_budget_s=0.25)
    traversal = expand(
        _seed(graph, "org_b"),
        graph,
        VISIBLE,
        question="Who leads the site Brightwater Foods uses?",
        kind=QuestionKind.MULTI_HOP,
        settings=settings,
        clock=clock,
    )
    assert traversal.steps and all(s.depth == 1 for s in traversal.steps)
    assert any(t.startswith("time budget: stopped at depth 2") for t in traversal.truncated)


def test_edge_scores_use_relation_fit_recency_and_demote_negated_or_planned_edges() -> None:
    graph = InMemoryGraph()
    a = graph.add_entity("a", "Routing", "Team")
    b = graph.add_entity("b", "Atlas", "System")
    owns = graph.add_edge(a, "OWNS", b, ["c1"], written=date(2024, 6, 1))
    uses = graph.add_edge(a, "USES", b, ["c2"], written=date(2024, 6, 1))
    old = graph.add_edge(a, "OWNS", b, ["c3"], written=date(2021, 6, 1))
    planned = graph.add_edge(a, "OWNS", b, ["c4"], modality=Modality.PLAN, written=date(2024, 6, 1))
    negated = graph.add_edge(a, "OWNS", b, ["c5"], polarity=Polarity.NEGATIVE, written=date(2024, 6, 1))
    asked = relation_relevance("Who owns Atlas?")
    assert asked.relevant == {"OWNS"}
    newest = date(2024, 6, 1)
    assert edge_score(owns, asked, newest) > edge_score(uses, asked, newest)
    assert edge_score(owns, asked, newest) > edge_score(old, asked, newest)
    assert edge_score(owns, asked, newest) > edge_score(planned, asked, newest) > 0
    assert edge_score(owns, asked, newest) > edge_score(negated, asked, newest) > 0
    assert edge_labels(planned) == ("plan",) and edge_labels(negated) == ("negated",) and edge_labels(owns) == ()
    traversal = expand(
        _seed(graph, "a"), graph, VISIBLE, question="Who owns Atlas?", kind=QuestionKind.ENTITY, clock=FakeClock()
    )
    assert {s.edge.relation_id for s in traversal.steps} >= {planned.relation_id, negated.relation_id}  # kept


def test_a_question_about_a_given_month_prefers_evidence_from_then_over_the_latest() -> None:
    assert question_date("the October 2023 order-picking outage") == date(2023, 10, 1)
    assert question_date("caused the 4 June 2024 sign-in outage") == date(2024, 6, 4)
    assert question_date("since early 2023") is None and question_date("31 February 2024 outage") is None
    graph = InMemoryGraph()
    customer = graph.add_entity("org_b", "Brightwater Foods", "Organization")
    old = graph.add_entity("inc_old", "INC-2023-019", "Incident")
    new = graph.add_entity("inc_new", "INC-2025-004", "Incident")
    graph.add_edge(old, "AFFECTED", customer, ["c_old"], written=date(2023, 10, 20))
    graph.add_edge(new, "AFFECTED", customer, ["c_new"], written=date(2025, 3, 10))
    seed = _seed(graph, "org_b")
    about = "Who leads the team that owns the system behind Brightwater Foods' October 2023 outage?"
    dated = expand(seed, graph, VISIBLE, question=about, kind=QuestionKind.MULTI_HOP, clock=FakeClock())
    assert dated.steps[0].edge.evidence_chunk_ids == ("c_old",)
    latest = expand(seed, graph, VISIBLE, question=about, kind=QuestionKind.TEMPORAL, clock=FakeClock())
    assert latest.steps[0].edge.evidence_chunk_ids == ("c_new",)  # a temporal question wants the latest


def test_relation_fit_multiplies_an_edges_standing() -> None:
    graph = InMemoryGraph()
    team = graph.add_entity("t", "Routing", "Team")
    atlas = graph.add_entity("a", "Atlas", "System")
    person = graph.add_entity("p", "Tom Becker", "Person")
    owns = graph.add_edge(team, "OWNS", atlas, ["c1"], confidence=0.6)
    reported = graph.add_edge(person, "REPORTED", atlas, ["c2", "c3", "c4", "c5"], confidence=1.0)
    asked = relation_relevance("Which team owns Atlas?")
    assert edge_score(owns, asked, None) > edge_score(reported, asked, None)


def test_every_frontier_entity_keeps_a_place_in_the_beam_for_its_best_neighbour() -> None:
    # The strong seed has more well-supported neighbours than the beam holds; the weak seed (a passage named
    # it) has one, and the chain runs through it: Harbor <-OWNS- Warehouse Systems <-LEADS- Zoë.
    graph = InMemoryGraph()
    strong = graph.add_entity("org_b", "Brightwater Foods", "Organization")
    for i in range(8):
        ticket = graph.add_entity(f"t{i}", f"NW-{i}", "Ticket")
        graph.add_edge(ticket, "ABOUT", strong, [f"c_t{i}a", f"c_t{i}b"], confidence=0.95)
    harbor = graph.add_entity("sys_h", "Harbor", "System")
    team = graph.add_entity("team_w", "Warehouse Systems", "Team")
    lead = graph.add_entity("p_z", "Zoë Müller", "Person")
    graph.add_edge(team, "OWNS", harbor, ["c_owns"], confidence=0.6)
    graph.add_edge(lead, "LEADS", team, ["c_leads"], confidence=0.9)
    seeds = [*_seed(graph, "org_b", 0.9), *_seed(graph, "sys_h", 0.3)]
    question = "Which tickets are about Brightwater Foods, and who owns and leads the system behind them?"
    traversal = expand(seeds, graph, VISIBLE, question=question, kind=QuestionKind.MULTI_HOP, clock=FakeClock())
    reached = {(s.edge.evidence_chunk_ids[0], s.depth) for s in traversal.steps}
    assert ("c_owns", 1) in reached and ("c_leads", 2) in reached
    assert any(t.startswith("beam:") for t in traversal.truncated)  # the beam was full: the place was kept
