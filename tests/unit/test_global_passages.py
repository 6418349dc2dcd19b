"""The GLOBAL route's themes fused with the caller's hybrid answer (`with_passages`, issue 12): every passage
that answer cites stays cited, joins its document's theme or becomes a theme of its own, and themes are
ordered by reciprocal rank fusion of the community ranking and the hybrid ranking of their documents."""

from __future__ import annotations

from kgrag_core.answering.model import Citation
from kgrag_core.answering.verification import verify_answer
from kgrag_core.communities.global_route import GlobalResult, Theme, ThemePoint, with_passages


def cite(n: int, doc: str, quote: str, start: int = 0) -> Citation:
    return Citation(n, f"ch-{doc}", doc, doc.title(), f"file:{doc}", start, start + len(quote), quote)


def themes_result() -> GlobalResult:
    """Two community themes: Atlas (ranked first, document `atlas`) and Relay (document `relay`)."""
    atlas = cite(1, "atlas", "Atlas delays came from late scans.")
    relay = cite(2, "relay", "Relay dropped scans at night.")
    themes = (
        Theme("Atlas", (ThemePoint(atlas.quote, (1,)),), ("com_a",), ("atlas",), 2.0),
        Theme("Relay", (ThemePoint(relay.quote, (2,)),), ("com_r",), ("relay",), 1.0),
    )
    return GlobalResult("What causes delays?", themes, (atlas, relay), ("com_a", "com_r"), 2)


def test_every_hybrid_passage_stays_cited_joining_its_documents_theme_or_making_its_own() -> None:
    found = themes_result()
    passages = (
        cite(1, "relay", "Relay was patched in May.", start=40),  # joins the Relay theme
        cite(2, "atlas", "Atlas delays came from late scans."),  # already quoted: not repeated
        cite(3, "carrier", "Carrier strikes held trailers for days."),  # no theme covers it: a theme of its own
    )
    fused = with_passages(found, passages, ["relay", "carrier", "atlas"])

    cited_docs = {c.doc_id for c in fused.citations}
    assert {p.doc_id for p in passages} <= cited_docs  # by construction: never cites less than hybrid
    assert [c.id for c in fused.citations] == list(range(1, len(fused.citations) + 1))
    assert len({(c.chunk_id, c.start_byte) for c in fused.citations}) == len(fused.citations) == 4
    by_title = {t.title: t for t in fused.themes}
    assert [p.text for p in by_title["Relay"].points] == ["Relay dropped scans at night.", "Relay was patched in May."]
    assert by_title["Relay"].passages == 1 and by_title["Relay"].community_ids == ("com_r",)
    own = by_title["Carrier"]
    assert own.community_ids == () and own.doc_ids == ("carrier",) and own.as_dict()["source"] == "passages"
    assert fused.passages == 2 and fused.communities_used == ("com_a", "com_r")
    # Every point is a quote of its citation, so verification keeps every sentence of the fused answer.
    quotes = {c.id: c.quote for c in fused.citations}
    for theme in fused.themes:
        for point in theme.points:
            assert [quotes[i] for i in point.citation_ids] == [point.text]
    answer = verify_answer(fused.answer(), ())
    assert answer.removed_sentences == 0 and {c.doc_id for c in answer.citations} == cited_docs


def test_themes_are_ordered_by_rrf_of_community_rank_and_hybrid_rank() -> None:
    found = themes_result()
    fused = with_passages(found, (cite(1, "carrier", "Carrier strikes held trailers."),), ["relay", "carrier"])
    # Relay: community rank 2 + hybrid rank 1 beats Atlas (community rank 1 only), which beats Carrier
    # (hybrid rank 2 only); the control without passages keeps the community order.
    assert [t.title for t in fused.themes] == ["Relay", "Atlas", "Carrier"]
    assert fused.themes[0].score > fused.themes[1].score > fused.themes[2].score
    assert [t.title for t in with_passages(found, (), []).themes] == ["Atlas", "Relay"]


def test_without_community_themes_the_result_is_left_to_the_hybrid_answer() -> None:
    empty = GlobalResult("q", (), (), (), 3)
    assert with_passages(empty, (cite(1, "atlas", "Atlas delays."),), ["atlas"]) == empty
