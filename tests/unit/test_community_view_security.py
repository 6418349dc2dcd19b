"""Adversarial tests of community views and the GLOBAL route (ADR 0009), each with a positive control.

The community's strongest facts are restricted (finance only); an outsider reads half of it. The outsider's
view and themes must be exactly what they would be had the restricted documents never existed (no member
name, count, sentence, title or ranking effect), while a finance reader sees the restricted facts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from kgrag_core.acl import Caller, readable_classes
from kgrag_core.communities.global_route import GlobalSettings, global_themes
from kgrag_core.communities.model import Community, community_id
from kgrag_core.communities.view import CommunityView, community_view
from kgrag_core.retrieval.fusion import FusedCandidate
from kgrag_core.search import SearchHit
from tests.unit.test_graph_retrieval_doubles import SECRET, FakeStore, InMemoryGraph, hybrid_over

OUTSIDER = Caller(user="sam")
FINANCE = Caller(user="fay", groups=("finance",))
BUILT = datetime(2026, 12, 1, tzinfo=UTC)

PUBLIC_TEXTS = {
    "c_owns": "The Routing team owns Atlas and runs it from Leipzig.",
    "c_delay": "Atlas delays came from late carrier scans at the Leipzig hub.",
    "c_fleet": "The Fleet team operates Vega for the Berlin depot.",
}
SECRET_TEXTS = {
    "c_quartz": "Jordan Blake leads Project Quartz to replace Atlas after the delays.",
    "c_quartz2": "Project Quartz will replace Atlas because delays cost the Routing team a key customer.",
    "c_vault": "Vault Ledger delays were caused by the Orion audit.",
}


def _world(*, with_secret: bool) -> tuple[InMemoryGraph, FakeStore, list[Community]]:
    graph, store = InMemoryGraph(), FakeStore()
    for chunk, text in PUBLIC_TEXTS.items():
        store.add(chunk, text)
    atlas = graph.add_entity("e_atlas", "Atlas", "System")
    routing = graph.add_entity("e_routing", "Routing", "Team")
    leipzig = graph.add_entity("e_leipzig", "Leipzig", "Site")
    jordan = graph.add_entity("e_jordan", "Jordan Blake", "Person")
    quartz = graph.add_entity("e_quartz", "Project Quartz", "Project")
    fleet = graph.add_entity("e_fleet", "Fleet", "Team")
    vega = graph.add_entity("e_vega", "Vega", "System")
    vault = graph.add_entity("e_vault", "Vault Ledger", "System")
    orion = graph.add_entity("e_orion", "Orion", "Project")
    graph.add_edge(routing, "OWNS", atlas, ["c_owns"], confidence=0.6)
    graph.add_edge(atlas, "LOCATED_AT", leipzig, ["c_delay"], confidence=0.5)
    graph.add_edge(fleet, "OPERATES", vega, ["c_fleet"], confidence=0.6)
    if with_secret:
        for chunk, text in SECRET_TEXTS.items():
            store.add(chunk, text, SECRET)
        # The community's strongest facts: more evidence, higher confidence than anything public.
        graph.add_edge(jordan, "LEADS", quartz, ["c_quartz"], confidence=0.99, acl=SECRET.acl_class_id)
        graph.add_edge(quartz, "REPLACES", atlas, ["c_quartz", "c_quartz2"], confidence=0.99, acl=SECRET.acl_class_id)
        graph.add_edge(orion, "AUDITS", vault, ["c_vault"], confidence=0.99, acl=SECRET.acl_class_id)
    members = [
        ("e_atlas", "e_jordan", "e_leipzig", "e_quartz", "e_routing"),  # half readable by the outsider
        ("e_fleet", "e_vega"),  # wholly public
        ("e_orion", "e_vault"),  # wholly restricted, and about delays
    ]
    communities = [
        Community(community_id(1, m), 1, None, m, float(len(m)), 1, BUILT, content_hash="h") for m in members
    ]
    return graph, store, sorted(communities, key=lambda c: c.community_id)


def _view_fn(graph: InMemoryGraph, store: FakeStore, caller: Caller):  # type: ignore[no-untyped-def]
    hybrid = hybrid_over(store, [], [])
    allowed = readable_classes(store.acl_classes(), caller)

    def load(chunk_ids: Sequence[str]) -> Mapping[str, SearchHit]:
        loaded = hybrid.hydrate([FusedCandidate(c, 0.0) for c in chunk_ids], set(allowed), len(chunk_ids) or 1)
        return {h.chunk_id: h for _, h in loaded}

    def view_of(community: Community) -> CommunityView | None:
        return community_view(community, graph, allowed, load)

    return view_of


def _views(caller: Caller, *, with_secret: bool) -> list[CommunityView | None]:
    graph, store, communities = _world(with_secret=with_secret)
    view_of = _view_fn(graph, store, caller)
    return [view_of(c) for c in communities]


def _dump(obj: object) -> str:
    return json.dumps(obj, sort_keys=True)


def test_outsider_view_of_a_half_restricted_community_is_as_if_the_restricted_documents_never_existed() -> None:
    seen = _views(OUTSIDER, with_secret=True)
    never = _views(OUTSIDER, with_secret=False)
    assert _dump([v.as_dict() if v else None for v in seen]) == _dump([v.as_dict() if v else None for v in never])
    mixed = next(v for v in seen if v is not None and v.size > 2)
    assert {m.name for m in mixed.members} == {"Atlas", "Routing", "Leipzig"}
    assert mixed.size == 3
    text = _dump(mixed.as_dict())
    for leaked in ("Jordan", "Quartz", "customer", "c_quartz", "doc_c_quartz"):
        assert leaked not in text
    assert all(c.doc_id in {"doc_c_owns", "doc_c_delay"} for c in mixed.citations)
    # Positive control: the finance reader sees the restricted members, their sentences and their weight.
    reader = next(v for v in _views(FINANCE, with_secret=True) if v is not None and v.size > 3)
    assert {m.name for m in reader.members} >= {"Jordan Blake", "Project Quartz"}
    assert reader.size == 5
    assert any("Project Quartz" in p.text for p in reader.points)
    assert "Project Quartz" in reader.title


def test_a_wholly_restricted_community_is_none_for_the_outsider_and_whole_for_its_reader() -> None:
    graph, store, communities = _world(with_secret=True)
    restricted = next(c for c in communities if "e_vault" in c.member_ids)
    assert _view_fn(graph, store, OUTSIDER)(restricted) is None
    view = _view_fn(graph, store, FINANCE)(restricted)
    assert view is not None and {m.name for m in view.members} == {"Vault Ledger", "Orion"}


def test_citations_are_byte_exact_quotes_of_readable_chunks() -> None:
    graph, store, communities = _world(with_secret=True)
    for caller in (OUTSIDER, FINANCE):
        for view in filter(None, map(_view_fn(graph, store, caller), communities)):
            for citation in view.citations:
                raw = store.chunks[citation.chunk_id].text.encode()
                assert raw[citation.start_byte : citation.end_byte].decode() == citation.quote
            assert {p.citation_id for p in view.points} == {c.id for c in view.citations}


def _themes(caller: Caller, *, with_secret: bool, question: str) -> dict[str, object]:
    graph, store, communities = _world(with_secret=with_secret)
    result = global_themes(question, communities, _view_fn(graph, store, caller), settings=GlobalSettings())
    return {**result.as_dict(), "citations": [c.as_dict() for c in result.citations]}


def test_outsider_global_themes_have_no_theme_sentence_or_ranking_effect_from_restricted_documents() -> None:
    question = "What are the recurring causes of delays?"
    seen = _themes(OUTSIDER, with_secret=True, question=question)
    assert seen == _themes(OUTSIDER, with_secret=False, question=question)
    themes = seen["themes"]
    assert isinstance(themes, list) and themes  # the outsider does get the public delay theme
    text = _dump(seen)
    assert "Leipzig" in text
    for leaked in ("Vault", "Orion", "Quartz", "Jordan"):
        assert leaked not in text
    # Positive control: the finance reader's themes include the restricted-only theme and its document.
    reader = _themes(FINANCE, with_secret=True, question=question)
    reader_text = _dump(reader)
    assert "Vault Ledger" in reader_text and "doc_c_vault" in reader_text
    assert len(reader["themes"]) > len(themes)  # type: ignore[arg-type]


def test_global_route_reports_what_the_bounds_skipped() -> None:
    graph, store, communities = _world(with_secret=True)
    ticks = iter([0.0, 0.0, 5.0])  # start, first view, then over budget
    result = global_themes(
        "Which teams run which systems?",
        communities,
        _view_fn(graph, store, FINANCE),
        settings=GlobalSettings(max_communities=2, time_budget_s=1.0),
        clock=lambda: next(ticks),
    )
    assert result.skipped["over_limit"] == 1
    assert result.skipped["time_budget"] == 1
    assert result.communities_read == 1


def test_themes_merge_communities_that_cite_one_sentence_and_number_citations_once() -> None:
    graph, store, communities = _world(with_secret=False)
    atlas = next(c for c in communities if "e_atlas" in c.member_ids)
    twin = Community(community_id(2, atlas.member_ids), 2, atlas.community_id, atlas.member_ids, 1.0, 1, BUILT)
    result = global_themes("Who owns Atlas?", [atlas, twin], _view_fn(graph, store, OUTSIDER))
    assert len(result.themes) == 1
    assert set(result.themes[0].community_ids) == {atlas.community_id, twin.community_id}
    assert [c.id for c in result.citations] == list(range(1, len(result.citations) + 1))
    answer = result.answer()
    assert answer.answered and all(s.citation_ids for s in answer.sentences)


def test_a_question_focus_prefers_the_facts_it_asks_about_over_the_strongest_ones() -> None:
    graph, store, communities = _world(with_secret=True)
    atlas = next(c for c in communities if "e_atlas" in c.member_ids)
    hybrid = hybrid_over(store, [], [])
    allowed = readable_classes(store.acl_classes(), FINANCE)

    def load(chunk_ids: Sequence[str]) -> Mapping[str, SearchHit]:
        return {h.chunk_id: h for _, h in hybrid.hydrate([FusedCandidate(c, 0.0) for c in chunk_ids], set(allowed), 9)}

    plain = community_view(atlas, graph, allowed, load)
    focused = community_view(atlas, graph, allowed, load, focus="Who owns Atlas and runs it?")
    assert plain is not None and focused is not None
    assert "Project Quartz" in plain.points[0].text  # the strongest facts lead without a question
    assert focused.points[0].text == PUBLIC_TEXTS["c_owns"]
    assert {m.entity_id for m in focused.members} == {m.entity_id for m in plain.members}
