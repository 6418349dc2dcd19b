"""The text graph's spaCy phrase extractor: noun phrases from the parser, or from the tagger and a Matcher."""

from __future__ import annotations

import pytest

from kgrag_adapters.spacy_ner.phrases import SpacyPhraseExtractor
from kgrag_core.text_graph.model import MentionKind
from kgrag_core.text_graph.patterns import PatternPhraseExtractor
from kgrag_core.text_graph.phrases import node_phrases
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.text_graph import phrase_extractor

TEXTS = [
    "Pavel Horvat, born in Trieste, did his work in materials science in Seville before he joined Brightwater.",
    "Since 2000 Brightwater Museum has had a second site in Vilnius. Its principal conductor has been Mirela Jensen.",
    "The [[Atlas pipeline]] feeds the routing service.",
]


@pytest.fixture(scope="module")
def tagger() -> SpacyPhraseExtractor:
    return SpacyPhraseExtractor(noun_phrases="tagger")


def _phrases(extractor: SpacyPhraseExtractor) -> list[set[str]]:
    return [{m.text for m in found if m.kind is MentionKind.PHRASE} for found in extractor.extract(TEXTS)]


def test_tagger_noun_phrases_are_base_noun_phrases(tagger: SpacyPhraseExtractor) -> None:
    first, second, third = _phrases(tagger)
    assert {"materials science", "Pavel Horvat", "Trieste"} <= first
    assert {"second site", "principal conductor"} <= second
    # Numbers, participles and determiners start no phrase.
    assert not {p for p in second if p.split()[0] in {"2000", "been", "Its", "a"}}
    assert "routing service" in third


def test_tagger_keeps_names_and_links(tagger: SpacyPhraseExtractor) -> None:
    found = tagger.extract(TEXTS)
    assert {"Pavel Horvat", "Trieste"} <= {m.text for m in found[0] if m.kind is MentionKind.ENTITY}
    assert ("Atlas pipeline", MentionKind.LINK) in {(m.text, m.kind) for m in found[2]}
    assert tagger.version.endswith(":tnp")


def test_tagger_and_parser_name_mostly_the_same_nodes(tagger: SpacyPhraseExtractor) -> None:
    parser = SpacyPhraseExtractor(noun_phrases="parser")
    for mine, theirs in zip(tagger.extract(TEXTS), parser.extract(TEXTS), strict=True):
        a, b = set(node_phrases(mine)), set(node_phrases(theirs))
        assert len(a & b) >= 0.7 * len(a | b), (a, b)
    assert parser.version.endswith(":np")
    assert SpacyPhraseExtractor(noun_chunks=False).version.endswith(":ner")


def test_the_setting_picks_the_extractor() -> None:
    assert isinstance(phrase_extractor(KgragSettings()), PatternPhraseExtractor)  # the default needs no model
    assert phrase_extractor(KgragSettings(text_graph_extractor="tagger")).version.endswith(":tnp")
    assert phrase_extractor(KgragSettings(text_graph_extractor="parser")).version.endswith(":np")
    no_phrases = KgragSettings(text_graph_extractor="parser", text_graph_noun_phrases=False)
    assert phrase_extractor(no_phrases).version.endswith(":ner")
