"""The themes page's reading of community answers, the admin merge log's reasons, the rebuild preview, the
namesakes page's documents."""

from kgrag_query_api.ui.admin import documents_naming, merge_reason, rebuild_plan
from kgrag_query_api.ui.themes import theme_view, themes_of


def test_a_theme_reads_summary_sentences_citations_and_members() -> None:
    theme = theme_view(
        {
            "community_id": "com_1",
            "level": 1,
            "members": [{"entity_id": "e1", "name": "Atlas", "type": "System"}, "e2"],
            "summary": {
                "sentences": [{"text": "Atlas pages the routing team.", "citations": [1]}],
                "citations": [{"doc_id": "wiki-a", "title": "A", "quote": "pages", "span": [4, 9]}],
            },
            "stale": True,
            "parent_id": "com_0",
        }
    )
    assert (theme.community_id, theme.level, theme.size, theme.stale) == ("com_1", 1, 2, True)
    assert theme.title == "Atlas, e2"  # no title field: its first members name it
    assert theme.summary == ("Atlas pages the routing team.",)
    assert [(c.doc_id, c.start, c.end) for c in theme.citations] == [("wiki-a", 4, 9)]
    assert [m.name for m in theme.members] == ["Atlas", "e2"] and theme.parent_id == "com_0"


def test_a_theme_reads_the_communities_api_summary_of_points_and_citations() -> None:
    summary = {
        "title": "Atlas and the routing team",
        "summary": [{"text": "Atlas pages the routing team.", "citations": ["c1"]}],
        "citations": [{"citation_id": "c1", "doc_id": "wiki-a", "title": "A", "quote": "pages", "span": [4, 9]}],
    }
    theme = theme_view({"community_id": "com_2", "members": ["e1"], "summary": summary})
    assert theme.title == "Atlas and the routing team"
    assert theme.summary == ("Atlas pages the routing team.",)
    assert [(c.doc_id, c.quote, c.start) for c in theme.citations] == [("wiki-a", "pages", 4)]
    assert theme_view({"community_id": "com_3", "members": ["e1"], "summary": None}).summary == ()


def test_themes_of_an_empty_or_odd_answer_is_empty() -> None:
    assert themes_of({"communities": []}) == []
    assert themes_of(None) == []
    assert [t.title for t in themes_of({"communities": [{"community_id": "c", "title": "Outages", "size": 7}]})] == [
        "Outages"
    ]


def test_merge_reason_comes_from_a_hand_merge_basis_rule() -> None:
    hand = {"basis": [{"rule": "hand merge: same company, two spellings"}]}
    auto = {"basis": [{"rule": "strong id: vat"}]}
    assert merge_reason(hand) == "same company, two spellings"
    assert merge_reason(auto) == "strong id: vat"
    assert merge_reason({"basis": []}) == ""


def test_a_rebuild_preview_names_its_summary_cost_like_a_reextraction_preview() -> None:
    dry = {"dry_run": True, "full": True, "communities": 4, "entities": 30, "edges": 41, "stale": 1}
    priced = {"llm": True, "per_scope": True, "calls": 4, "input_tokens": 6240, "output_tokens": 1200}
    plan = rebuild_plan({**dry, "summaries": {**priced, "cost": 0.03, "currency": "USD", "seconds": 32.0}})
    assert (plan["communities"], plan["entities"], plan["stale"]) == (4, 30, 1)
    assert (plan["calls"], plan["estimated_cost"], plan["estimated_seconds"], plan["currency"]) == (
        4,
        0.03,
        32.0,
        "USD",
    )
    assert "calls" not in rebuild_plan(dry)  # no preview hook: the counts only, no invented cost


def test_the_namesakes_page_offers_each_document_its_claims_quote_once() -> None:
    entity = {
        "attributes": [
            {"attribute": "sla", "doc_id": "rec-b"},
            {"attribute": "sites", "doc_id": "rec-a"},
            {"attribute": "sla", "doc_id": "rec-a"},
            {"attribute": "note", "doc_id": None},
        ]
    }
    assert documents_naming(entity) == ["rec-a", "rec-b"]
    assert documents_naming({"attributes": []}) == [] and documents_naming({}) == []
