"""The themes page's reading of community answers, and the admin merge log's reasons."""

from kgrag_query_api.ui.admin import merge_reason
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
