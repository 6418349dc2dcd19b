"""The text graph's pure logic: node normal forms, specificity, personalized PageRank, bridge names."""

from __future__ import annotations

import pytest

from kgrag_core.text_graph.builder import word_ngrams
from kgrag_core.text_graph.model import Mention, MentionKind, WalkEdge
from kgrag_core.text_graph.pagerank import personalized_pagerank, specificity
from kgrag_core.text_graph.patterns import PatternPhraseExtractor
from kgrag_core.text_graph.phrases import node_phrases, normalise_phrase
from kgrag_core.text_graph.searcher import bridge_names


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Acme Corp.", "acme"),
        ("acme", "acme"),
        ("Kestrel Pharma's", "kestrel pharma"),
        ("2023", None),
        ("12.5 %", None),
        ("the", None),
        ("of the", None),
        ("a b", None),  # too short to name anything
        ("one two three four five six seven", None),  # longer than a name
    ],
)
def test_normal_form_merges_near_identical_names_and_drops_non_names(text: str, expected: str | None) -> None:
    assert normalise_phrase(text) == expected


def test_a_passage_keeps_the_most_specific_kind_of_each_node() -> None:
    found = node_phrases(
        [
            Mention("Bank of England", MentionKind.PHRASE),
            Mention("bank of England", MentionKind.LINK),
            Mention("2023", MentionKind.ENTITY),
        ]
    )
    assert found == {"bank of england": MentionKind.LINK}


def test_specificity_falls_as_a_node_names_more_passages() -> None:
    rare, common, everywhere = specificity(1, 1000), specificity(50, 1000), specificity(1000, 1000)
    assert rare > common > everywhere > 0
    assert specificity(1, 10) < specificity(1, 1000)  # the same single mention is rarer in a larger corpus


def test_word_ngrams_are_normalised_runs_without_stopword_or_number_runs() -> None:
    grams = word_ngrams("The director of Blue Harbor (2019) was born in Oslo.")
    assert {"director", "blue harbor", "director of blue harbor", "oslo"} <= grams
    assert "2019" not in grams and "of" not in grams and "the" not in grams


def test_pattern_extractor_finds_names_and_links_not_sentence_initial_words() -> None:
    [found] = PatternPhraseExtractor().extract(
        ["Yesterday Kestrel Pharma met [[Northwind Traders|NW]] at https://x.org/wiki/Bank_of_England."]
    )
    texts = {(m.text, m.kind) for m in found}
    assert ("Kestrel Pharma", MentionKind.ENTITY) in texts
    assert ("Northwind Traders", MentionKind.LINK) in texts
    assert ("Bank of England", MentionKind.LINK) in texts
    assert all(m.text != "Yesterday" and "_" not in m.text for m in found)


def test_a_title_line_and_the_paragraph_under_it_are_separate_names() -> None:
    [found] = PatternPhraseExtractor().extract(["# Bastien Roux\n\nBastien Roux joined the Bank of England."])
    texts = [m.text for m in found]
    assert texts.count("Bastien Roux") == 2 and "Bank of England" in texts
    assert all("\n" not in t for t in texts)


def _edge(chunk: str, node: str, df: int = 1, kind: MentionKind = MentionKind.ENTITY, weight: float = 1.0) -> WalkEdge:
    return WalkEdge(chunk, node, df, kind, weight)


def test_pagerank_reaches_the_second_hop_through_a_shared_node_and_ranks_it_above_unrelated_passages() -> None:
    # q names n1; p1 names n1 and n2; p2 names n2 (second hop); p3 names only n3, unconnected to the seed.
    edges = [_edge("p1", "n1"), _edge("p1", "n2"), _edge("p2", "n2"), _edge("p3", "n3"), _edge("p4", "n3")]
    scores = personalized_pagerank(edges, {"n1": 1.0})
    assert list(scores)[:2] == ["p1", "p2"]
    assert scores["p2"] > 0 and scores.get("p3", 0.0) == 0.0
    assert sum(scores.values()) < 1.0  # node mass is not passage mass


def test_pagerank_follows_the_heavier_edge() -> None:
    # From p1 the walk can go to a specific node (weight 3, to p2) or a common one (weight 0.1, to p3).
    edges = [_edge("p1", "rare", weight=3.0), _edge("p2", "rare", weight=3.0)]
    edges += [_edge("p1", "common", weight=0.1), _edge("p3", "common", weight=0.1)]
    scores = personalized_pagerank(edges, {"p1": 1.0})
    assert scores["p2"] > 5 * scores["p3"]


def test_pagerank_without_seeds_in_the_graph_ranks_nothing() -> None:
    assert personalized_pagerank([_edge("p1", "n1")], {"elsewhere": 1.0}) == {}
    assert personalized_pagerank([], {"n1": 1.0}) == {}


def test_bridges_are_names_the_first_hop_adds_most_specific_first_without_their_own_parts() -> None:
    keys = {"bank of england": "k-boe", "england": "k-eng", "oslo": "k-oslo", "director": "k-dir", "river": "k-riv"}
    edges = [
        _edge("hop1", "k-boe", df=2),
        _edge("hop1", "k-eng", df=1),  # inside "bank of england": no bridge of its own
        _edge("hop1", "k-oslo", df=5),
        _edge("hop1", "k-dir", df=1),  # the question names it
        _edge("hop1", "k-riv", df=1, kind=MentionKind.PHRASE),  # a common noun phrase is no bridge
        _edge("other", "k-boe", df=2),
    ]
    bridges = bridge_names(edges, {"hop1"}, keys, {"k-dir"}, passages=100)
    assert bridges == ["bank of england", "oslo"]


def test_bridges_by_rank_take_the_best_first_hop_passage_names_first() -> None:
    # A rarer name in a distractor below the best first-hop passage leads by specificity, not by rank.
    keys = {"calder pharma": "k-cal", "bruno lambert": "k-bru", "riga": "k-riga"}
    edges = [
        _edge("hop1", "k-cal", df=4),
        _edge("hop1", "k-riga", df=2),
        _edge("hop3", "k-bru", df=1),
    ]
    assert bridge_names(edges, {"hop1", "hop3"}, keys, set(), passages=100) == [
        "bruno lambert",
        "riga",
        "calder pharma",
    ]
    # By rank: each first-hop passage's rarest name in turn, the best passage's first.
    ranked = bridge_names(edges, {"hop1", "hop3"}, keys, set(), passages=100, ranks={"hop1": 0, "hop3": 2})
    assert ranked == ["riga", "bruno lambert", "calder pharma"]
    assert bridge_names(edges, {"hop1", "hop3"}, keys, set(), passages=100, ranks={"hop1": 1, "hop3": 0}) == [
        "bruno lambert",
        "riga",
        "calder pharma",
    ]
