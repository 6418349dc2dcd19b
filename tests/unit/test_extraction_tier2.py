"""Tier 2's proposals: typed mentions, cued within-sentence relations, narrow claims, all quoting the chunk.

The mentions are written by hand (offsets found in the text), so these tests pin `propose` alone; the spaCy
recognizer feeding it is tested in test_spacy_recognizer.py.
"""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path

import pytest
import yaml

from kgrag_core.answering.quotes import quote_in_text
from kgrag_core.extraction.model import ClaimItem, EntityMention, Modality, Polarity, RelationItem
from kgrag_core.extraction.ontology import Ontology, parse_ontology
from kgrag_core.extraction.tier2 import SOURCE_CONFIDENCE, parse_full_date, propose
from kgrag_core.ports import RecognizedMention

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpora" / "northwind" / "documents.jsonl"

Proposal = tuple[list[EntityMention], list[RelationItem], list[ClaimItem]]


@pytest.fixture(scope="module")
def ontology() -> Ontology:
    return parse_ontology(yaml.safe_load((ROOT / "schemas" / "ontology" / "ontology.yaml").read_text()))


@pytest.fixture(scope="module")
def corpus_text() -> str:
    return "\n".join(json.loads(line)["text"] for line in CORPUS.read_text().splitlines() if line.strip())


def mentions(text: str, *specs: tuple[str, str, str]) -> list[RecognizedMention]:
    """(surface, label, source) -> mentions at the surface's first occurrence; a sentence ends at . ! ? or a
    newline, as a sentence splitter would put it."""
    bounds = [(m.start(), m.end()) for m in re.finditer(r"[^.!?\n]+[.!?]?", text)]
    found = []
    for surface, label, source in specs:
        start = text.index(surface)
        sent = next(b for b in bounds if b[0] <= start < b[1])
        found.append(RecognizedMention(surface, label, start, start + len(surface), sent[0], sent[1], source))
    return found


def run(text: str, ontology: Ontology, *specs: tuple[str, str, str]) -> Proposal:
    return propose(text, mentions(text, *specs), ontology)


def triples(relations: list[RelationItem]) -> set[tuple[str, str, str]]:
    return {(r.subject, r.relation, r.object) for r in relations}


def assert_quotes_verbatim(text: str, proposal: Proposal) -> None:
    quotes = [e.quote for e in proposal[0]] + [r.quote for r in proposal[1]] + [c.quote for c in proposal[2]]
    for quote in quotes:
        assert quote and quote in text and quote_in_text(quote, text)


# --- relations -------------------------------------------------------------------------------------


def test_leads_and_owns_from_corpus_sentence(ontology: Ontology, corpus_text: str) -> None:
    text = "Atlas is owned by the Routing team (engineering manager: Priya Raman)."
    assert text in corpus_text
    proposal = run(text, ontology, ("Atlas", "System", "ruler"), ("Routing", "Team", "ruler"),
                   ("Priya Raman", "Person", "ner"))  # fmt: skip
    assert triples(proposal[1]) == {("Priya Raman", "LEADS", "Routing"), ("Routing", "OWNS", "Atlas")}
    leads = next(r for r in proposal[1] if r.relation == "LEADS")
    assert (leads.subject_type, leads.object_type) == ("Person", "Team")
    assert leads.quote == text
    assert 0.3 <= leads.confidence <= 0.5
    assert leads.polarity is Polarity.POSITIVE and leads.modality is Modality.FACT
    assert_quotes_verbatim(text, proposal)


def test_passive_owner_and_leader_pair_only_neighbours(ontology: Ontology, corpus_text: str) -> None:
    text = "Beacon is owned by the Tracking team, led by Aisha Mensah."
    assert text in corpus_text
    proposal = run(text, ontology, ("Beacon", "System", "ruler"), ("Tracking", "Team", "ruler"),
                   ("Aisha Mensah", "Person", "ner"))  # fmt: skip
    # Aisha leads the team that owns Beacon; she does not own Beacon herself.
    assert triples(proposal[1]) == {("Tracking", "OWNS", "Beacon"), ("Aisha Mensah", "LEADS", "Tracking")}


def test_active_voice_leads(ontology: Ontology) -> None:
    text = "Priya Raman leads the Routing team."
    proposal = run(text, ontology, ("Priya Raman", "Person", "ner"), ("Routing", "Team", "ruler"))
    assert triples(proposal[1]) == {("Priya Raman", "LEADS", "Routing")}


def test_confidence_rises_with_known_endpoints(ontology: Ontology) -> None:
    text = "Priya Raman leads the Routing team."
    statistical = run(text, ontology, ("Priya Raman", "Person", "ner"), ("Routing", "Team", "ner"))[1]
    known = run(text, ontology, ("Priya Raman", "Person", "ruler"), ("Routing", "Team", "ruler"))[1]
    assert statistical[0].confidence < known[0].confidence <= 0.5


def test_no_relation_when_the_ontology_refuses_the_type_pair(ontology: Ontology) -> None:
    text = "Priya Raman leads Atlas."
    proposal = run(text, ontology, ("Priya Raman", "Person", "ner"), ("Atlas", "System", "ruler"))
    assert not ontology.allows_triple("Person", "LEADS", "System")
    assert proposal[1] == []
    assert {e.name for e in proposal[0]} == {"Priya Raman", "Atlas"}


def test_no_relation_across_sentences_or_lines(ontology: Ontology) -> None:
    across_sentences = "This quarter Priya Raman leads. The Routing team ships on Fridays."
    assert run(across_sentences, ontology, ("Priya Raman", "Person", "ner"), ("Routing", "Team", "ruler"))[1] == []
    # A sentence splitter may run a heading into the next line; a line break still ends the sentence.
    text = "Priya Raman leads\nRouting releases"
    one_sentence = [
        RecognizedMention("Priya Raman", "Person", 0, 11, 0, len(text), "ner"),
        RecognizedMention("Routing", "Team", 18, 25, 0, len(text), "ruler"),
    ]
    assert propose(text, one_sentence, ontology)[1] == []


def test_direction_comes_from_the_wording_when_types_allow_both(ontology: Ontology) -> None:
    runs_on = "Atlas runs on Cobalt Cloud in the EU region."
    hosts = "Cobalt Cloud hosts Atlas in the EU region."
    specs = (("Atlas", "System", "ruler"), ("Cobalt Cloud", "Organization", "ner"))
    assert triples(run(runs_on, ontology, *specs)[1]) == {("Atlas", "USES", "Cobalt Cloud")}
    assert triples(run(hosts, ontology, *reversed(specs))[1]) == {("Atlas", "USES", "Cobalt Cloud")}
    migrate = "Beacon will migrate to Lodestar next year."
    planned = run(migrate, ontology, ("Beacon", "System", "ruler"), ("Lodestar", "System", "ruler"))[1]
    assert triples(planned) == {("Beacon", "MIGRATES_TO", "Lodestar")}
    assert planned[0].modality is Modality.PLAN


def test_negated_relation_keeps_negative_polarity(ontology: Ontology) -> None:
    text = "LEJ-2 no longer uses Harbor for cycle counts."
    relations = run(text, ontology, ("LEJ-2", "Site", "ruler"), ("Harbor", "System", "ruler"))[1]
    assert triples(relations) == {("LEJ-2", "USES", "Harbor")}
    assert relations[0].polarity is Polarity.NEGATIVE


def test_on_call_owner_reads_past_owner_and_possessives_correctly(ontology: Ontology, corpus_text: str) -> None:
    handover = "Effective 2 September 2024, Kenji Watanabe is the Atlas on-call owner, taking over from José Núñez."
    assert handover in corpus_text
    # The model's DATE span leaves out the day; the day written before it still counts.
    relations = run(handover, ontology, ("September 2024", "DATE", "ner"), ("Kenji Watanabe", "Person", "ner"),
                    ("Atlas", "System", "ruler"), ("José Núñez", "Person", "ner"))[1]  # fmt: skip
    assert triples(relations) == {("Kenji Watanabe", "ON_CALL_FOR", "Atlas")}
    assert relations[0].valid_from == date(2024, 9, 2)

    possessive = (
        "The Beacon on-call owner is Aisha's senior engineer on rotation; "
        "see Lighthouse service `beacon-prod` for the live schedule."
    )
    assert possessive in corpus_text
    specs = (("Beacon", "System", "ruler"), ("Aisha", "Person", "ner"), ("Lighthouse", "System", "ruler"))
    assert run(possessive, ontology, *specs)[1] == []


def test_left_in_a_month_ends_validity(ontology: Ontology, corpus_text: str) -> None:
    text = "- Harbor's on-call owner, Tomasz Nowak, left in November 2024."
    assert text in corpus_text
    relations = run(text, ontology, ("Harbor", "System", "ruler"), ("Tomasz Nowak", "Person", "ner"),
                    ("November 2024", "DATE", "ner"))[1]  # fmt: skip
    assert triples(relations) == {("Tomasz Nowak", "ON_CALL_FOR", "Harbor")}
    assert (relations[0].valid_from, relations[0].valid_to) == (None, date(2024, 11, 1))
    # The list marker is not part of the sentence.
    assert relations[0].quote == text[2:]


def test_new_clause_stops_a_relation(ontology: Ontology, corpus_text: str) -> None:
    text = "We store goods for them from RTM-1 in Rotterdam, and their US subsidiary uses Beacon to track imports."
    proposal = run(text, ontology, ("RTM-1", "Site", "ruler"), ("Rotterdam", "Site", "ner"),
                   ("Beacon", "System", "ruler"))  # fmt: skip
    assert triples(proposal[1]) == {("RTM-1", "LOCATED_IN", "Rotterdam")}


def test_cue_must_lead_up_to_the_later_mention(ontology: Ontology, corpus_text: str) -> None:
    text = (
        "Beacon now runs on PostgreSQL 16, with a new read replica in the US region serving Halden Outdoor "
        "and other US customers."
    )
    assert text in corpus_text
    specs = (("Beacon", "System", "ruler"), ("Halden Outdoor", "Organization", "ruler"))
    assert run(text, ontology, *specs)[1] == []


def test_conversation_mechanics_and_questions_are_not_relations(ontology: Ontology) -> None:
    replied = "Aisha Mensah replied that she owns Beacon."
    assert run(replied, ontology, ("Aisha Mensah", "Person", "ner"), ("Beacon", "System", "ruler"))[1] == []
    question = "Does Atlas use Beacon for its ETAs?"
    assert run(question, ontology, ("Atlas", "System", "ruler"), ("Beacon", "System", "ruler"))[1] == []
    asked = "Kenji asked whether Atlas uses Beacon for ETAs."
    assert run(asked, ontology, ("Atlas", "System", "ruler"), ("Beacon", "System", "ruler"))[1] == []
    assistant = "ChatGPT uses Atlas data in its answer."
    assert run(assistant, ontology, ("ChatGPT", "System", "ner"), ("Atlas", "System", "ruler"))[1] == []


def test_table_rows_and_metadata_fields_propose_no_relations(ontology: Ontology) -> None:
    row = "| Atlas | Route planning engine | Routing | Priya Raman leads |"
    entities, relations, _ = run(row, ontology, ("Routing", "Team", "ruler"), ("Priya Raman", "Person", "ner"))
    assert relations == []
    assert {e.quote for e in entities} == {row}  # the row is the sentence of a table
    fields = "**Owner:** Routing · **Sponsor:** Priya Raman leads"
    proposal = run(fields, ontology, ("Routing", "Team", "ruler"), ("Priya Raman", "Person", "ner"))
    assert proposal[1] == []
    assert {e.quote for e in proposal[0]} == {"**Owner:** Routing", "**Sponsor:** Priya Raman leads"}


# --- entities --------------------------------------------------------------------------------------


def test_entities_are_typed_quoted_and_deduplicated(ontology: Ontology) -> None:
    text = "Atlas pages José Núñez. Atlas runs on Cobalt Cloud since May 2023. Atlas is a Widget."
    proposal = run(text, ontology, ("Atlas", "System", "ner"), ("José Núñez", "Person", "ner"),
                   ("May 2023", "DATE", "ner"), ("Widget", "Gadget", "ner"))  # fmt: skip
    by_name = {e.name: e for e in proposal[0]}
    assert set(by_name) == {"Atlas", "José Núñez"}  # no DATE, no type outside the ontology
    assert by_name["José Núñez"].quote == "Atlas pages José Núñez."
    assert by_name["José Núñez"].confidence == SOURCE_CONFIDENCE["ner"]
    known = run("Atlas pages José Núñez.", ontology, ("Atlas", "System", "ruler"))[0]
    assert known[0].confidence == SOURCE_CONFIDENCE["ruler"] > SOURCE_CONFIDENCE["ner"]
    assert_quotes_verbatim(text, proposal)


def test_a_mention_outside_its_sentence_is_ignored(ontology: Ontology) -> None:
    text = "Atlas pages\nthe team."
    broken = [RecognizedMention("pages\nthe", "System", 6, 15, 0, len(text), "ner")]
    assert propose(text, broken, ontology) == ([], [], [])


# --- claims ----------------------------------------------------------------------------------------


def test_capacity_claim_only_when_the_site_owns_the_number(ontology: Ontology, corpus_text: str) -> None:
    text = "Leipzig now has 24,500 pallet positions, up from 18,000, and 3,200 chilled positions."
    assert text in corpus_text
    claims = run(text, ontology, ("Leipzig", "Site", "ner"))[2]
    assert [(c.entity, c.attribute, c.value) for c in claims] == [("Leipzig", "capacity_pallets", "24,500")]
    assert claims[0].quote == text

    planned = "The expansion would raise LEJ-2 from 18,000 to 24,500 pallet positions, of which 3,200 chilled."
    claims = run(planned, ontology, ("LEJ-2", "Site", "ruler"))[2]
    assert [(c.value, c.modality) for c in claims] == [("24,500", Modality.HYPOTHETICAL)]

    cage = "- The high-value cage at LEJ-2 holds about 400 pallet positions and is covered by its own camera system."
    assert cage in corpus_text
    assert run(cage, ontology, ("LEJ-2", "Site", "ruler"))[2] == []
    request = "Halden asks for 4,000 extra pallet positions for Q4 peak"
    assert run(request, ontology, ("Halden", "Organization", "ner"))[2] == []


# --- dates -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2 September 2024", date(2024, 9, 2)),
        ("June 2024", date(2024, 6, 1)),
        ("2024-03-12", date(2024, 3, 12)),
        ("May", None),
        ("2023", None),
        ("Q4 2024", None),
        ("Monday", None),
        ("10:00 CEST", None),
        ("2 September 2024, 10:00 CEST", date(2024, 9, 2)),  # a zone name is ignored, never a warning
        ("the end of August", None),
    ],
)
def test_parse_full_date_needs_month_and_year(text: str, expected: date | None) -> None:
    assert parse_full_date(text) == expected


def test_two_different_dates_give_no_valid_from(ontology: Ontology) -> None:
    text = "Kenji Watanabe joined the Routing team in April 2024, not in March 2024."
    relations = run(text, ontology, ("Kenji Watanabe", "Person", "ner"), ("Routing", "Team", "ruler"),
                    ("April 2024", "DATE", "ner"), ("March 2024", "DATE", "ner"))[1]  # fmt: skip
    assert triples(relations) == {("Kenji Watanabe", "MEMBER_OF", "Routing")}
    assert relations[0].valid_from is None
