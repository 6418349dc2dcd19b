"""Claim timelines (two clocks, supersession, conflicts), deterministic fact keys, and the cache's JSON form."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from datetime import date

import pytest

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.claims import as_written_by, current_values, timeline
from kgrag_core.extraction.identity import claim_id, normalise_name, relation_id
from kgrag_core.extraction.identity import entity_id as keyed_entity_id
from kgrag_core.extraction.model import (
    ChunkExtraction,
    ClaimItem,
    DroppedItem,
    DropReason,
    EntityMention,
    ExtractionKey,
    Modality,
    Polarity,
    RelationItem,
    SkipReason,
    Tier,
)
from kgrag_core.extraction.ontology import Cardinality, parse_ontology
from kgrag_core.extraction.records import ClaimRecord, ClaimStatus
from kgrag_core.extraction.serialise import extraction_from_dict, extraction_to_dict

KEY = b"unit-test-entity-id-key"
SITE = keyed_entity_id("Site", "LEJ-2", key=KEY)
SINGLE = {"capacity_pallets": Cardinality.SINGLE, "language": Cardinality.MULTI}
JAN, FEB, MAR = date(2024, 1, 10), date(2024, 2, 10), date(2024, 3, 10)


def claim(
    value: str,
    written_at: date | None,
    *,
    attribute: str = "capacity_pallets",
    entity: str = SITE,
    modality: Modality = Modality.FACT,
    polarity: Polarity = Polarity.POSITIVE,
    valid_from: date | None = None,
    valid_to: date | None = None,
    chunk_id: str = "",
) -> ClaimRecord:
    cid = claim_id(entity, attribute, value, valid_from, polarity, modality)
    return ClaimRecord(
        claim_id=cid, entity_id=entity, entity_name="LEJ-2", entity_type="Site", attribute=attribute, value=value,
        quote=f"holds {value}", modality=modality, polarity=polarity, valid_from=valid_from, valid_to=valid_to,
        written_at=written_at, chunk_id=chunk_id or f"ch_{value}_{written_at}", doc_id="doc", acl_class_id="acl",
        tier=Tier.LLM, confidence=0.9,
    )  # fmt: skip


def statuses(records: list[ClaimRecord]) -> list[tuple[str, ClaimStatus]]:
    return [(r.value, r.status) for r in records]


# --- timeline -----------------------------------------------------------------------------------------


def test_later_written_value_supersedes_whatever_valid_from_says() -> None:
    # The March document says the 24,500 was true from 2025; the February one is still older news.
    old = claim("30,000", FEB)
    new = claim("24,500", MAR, valid_from=date(2023, 1, 1))
    got = timeline([new, old], SINGLE)
    assert statuses(got) == [("30,000", ClaimStatus.SUPERSEDED), ("24,500", ClaimStatus.CURRENT)]
    assert got[0].superseded_by == new.claim_id
    assert got[1].superseded_by is None


def test_a_chain_links_each_claim_to_the_next_value() -> None:
    a, b, c = claim("1", JAN), claim("2", FEB), claim("3", MAR)
    got = timeline([c, a, b], SINGLE)
    assert [r.superseded_by for r in got] == [b.claim_id, c.claim_id, None]
    assert current_values(got) == {(SITE, "capacity_pallets"): ["3"]}


def test_same_value_again_is_not_a_supersession() -> None:
    got = timeline([claim("24,500", JAN), claim("24,500 ", FEB, chunk_id="ch_b"), claim("24,500", MAR)], SINGLE)
    assert [r.status for r in got] == [ClaimStatus.CURRENT] * 3
    assert all(r.superseded_by is None for r in got)


def test_same_day_different_values_conflict() -> None:
    a, b = claim("24,500", FEB), claim("26,000", FEB)
    got = timeline([a, b], SINGLE)
    assert {r.status for r in got} == {ClaimStatus.CONFLICT}
    by_value = {r.value: r for r in got}
    assert by_value["24,500"].conflicts_with == (b.claim_id,)
    assert by_value["26,000"].conflicts_with == (a.claim_id,)


def test_a_later_claim_settles_a_conflict() -> None:
    a, b, c = claim("24,500", FEB), claim("26,000", FEB), claim("24,500", MAR)
    got = {(r.value, r.written_at): r for r in timeline([a, b, c], SINGLE)}
    assert got[("26,000", FEB)].status is ClaimStatus.SUPERSEDED
    assert got[("26,000", FEB)].superseded_by == c.claim_id
    assert got[("24,500", FEB)].status is ClaimStatus.CURRENT  # restated later: the disagreement is over
    assert got[("24,500", FEB)].conflicts_with == (b.claim_id,)  # ...but stays visible
    assert got[("24,500", MAR)].status is ClaimStatus.CURRENT


def test_values_the_text_puts_in_sequence_on_one_day_do_not_conflict() -> None:
    # "99.5% until 31 December 2024; from January 2025 it is 99.9%": one email, two periods.
    old = claim("99.5%", FEB, attribute="sla", valid_to=date(2024, 12, 31))
    new = claim("99.9%", FEB, attribute="sla", valid_from=date(2025, 1, 1))
    got = {r.value: r for r in timeline([new, old], SINGLE)}
    assert got["99.5%"].status is ClaimStatus.SUPERSEDED
    assert got["99.5%"].superseded_by == new.claim_id
    assert got["99.9%"].status is ClaimStatus.CURRENT
    assert got["99.9%"].conflicts_with == ()


def test_a_later_recap_of_a_closed_value_does_not_supersede_the_new_one() -> None:
    new = claim("99.9%", JAN, attribute="sla", valid_from=date(2025, 1, 1))
    recap = claim("99.5%", MAR, attribute="sla", valid_to=date(2024, 12, 31))
    got = {r.value: r for r in timeline([new, recap], SINGLE)}
    assert got["99.9%"].status is ClaimStatus.CURRENT
    assert got["99.5%"].status is ClaimStatus.SUPERSEDED
    assert got["99.5%"].superseded_by == new.claim_id


def test_a_closed_value_without_a_successor_in_its_timeline_stays_current() -> None:
    got = timeline([claim("18,000", FEB, valid_to=date(2024, 6, 14))], SINGLE)
    assert statuses(got) == [("18,000", ClaimStatus.CURRENT)]


def test_plans_opinions_and_negations_are_not_facts_and_do_not_compete() -> None:
    fact = claim("24,500", JAN)
    others = [
        claim("40,000", FEB, modality=Modality.PLAN),
        claim("50,000", FEB, modality=Modality.OPINION),
        claim("60,000", MAR, modality=Modality.AI_SUGGESTION),
        claim("70,000", MAR, modality=Modality.HYPOTHETICAL),
        claim("24,500", MAR, polarity=Polarity.NEGATIVE),
    ]
    got = timeline([fact, *others], SINGLE)
    assert {r.value: r.status for r in got if r.claim_id != fact.claim_id} == {
        "40,000": ClaimStatus.NOT_A_FACT,
        "50,000": ClaimStatus.NOT_A_FACT,
        "60,000": ClaimStatus.NOT_A_FACT,
        "70,000": ClaimStatus.NOT_A_FACT,
        "24,500": ClaimStatus.NOT_A_FACT,
    }
    assert [r.status for r in got if r.claim_id == fact.claim_id] == [ClaimStatus.CURRENT]


def test_reported_claims_compete_like_facts() -> None:
    got = timeline([claim("1", JAN), claim("2", FEB, modality=Modality.REPORTED)], SINGLE)
    assert statuses(got) == [("1", ClaimStatus.SUPERSEDED), ("2", ClaimStatus.CURRENT)]


def test_multi_valued_attributes_never_supersede() -> None:
    got = timeline([claim("Go", JAN, attribute="language"), claim("Rust", FEB, attribute="language")], SINGLE)
    assert statuses(got) == [("Go", ClaimStatus.CURRENT), ("Rust", ClaimStatus.CURRENT)]


def test_the_ontology_gives_the_cardinalities() -> None:
    ontology = parse_ontology(
        {
            "version": "1",
            "entity_types": {"System": {}},
            "relation_types": {"USES": {"subject": ["System"], "object": ["System"]}},
            "attributes": {"language": {"entity_types": ["System"], "cardinality": "multi"}},
        }
    )
    records = [claim("Go", JAN, attribute="language"), claim("Rust", FEB, attribute="language")]
    assert [r.status for r in timeline(records, ontology)] == [ClaimStatus.CURRENT] * 2
    assert [r.status for r in as_written_by(records, FEB, ontology)] == [ClaimStatus.CURRENT] * 2


def test_unknown_attributes_count_as_single_valued() -> None:
    got = timeline([claim("a", JAN, attribute="colour"), claim("b", FEB, attribute="colour")], {})
    assert statuses(got) == [("a", ClaimStatus.SUPERSEDED), ("b", ClaimStatus.CURRENT)]


def test_entities_and_attributes_are_separate_timelines() -> None:
    other = keyed_entity_id("Site", "LEJ-3", key=KEY)
    got = timeline([claim("1", JAN), claim("2", FEB, entity=other), claim("3", MAR, attribute="headcount")], SINGLE)
    assert [r.status for r in got] == [ClaimStatus.CURRENT] * 3


def test_output_is_sorted_by_date_written_and_undated_sources_count_as_oldest() -> None:
    got = timeline([claim("3", MAR), claim("0", None), claim("2", FEB), claim("1", JAN)], SINGLE)
    assert [r.value for r in got] == ["0", "1", "2", "3"]
    assert [r.status for r in got] == [ClaimStatus.SUPERSEDED] * 3 + [ClaimStatus.CURRENT]


def test_stale_status_on_input_is_recomputed() -> None:
    stale = dataclasses.replace(claim("1", JAN), status=ClaimStatus.SUPERSEDED, superseded_by="clm_x")
    [got] = timeline([stale], SINGLE)
    assert (got.status, got.superseded_by, got.conflicts_with) == (ClaimStatus.CURRENT, None, ())


def test_as_written_by_answers_what_the_documents_said_then() -> None:
    records = [claim("24,500", JAN), claim("30,000", MAR)]
    in_february = as_written_by(records, date(2024, 2, 29), SINGLE)
    assert statuses(in_february) == [("24,500", ClaimStatus.CURRENT)]
    now = as_written_by(records, date(2024, 12, 31), SINGLE)
    assert statuses(now) == [("24,500", ClaimStatus.SUPERSEDED), ("30,000", ClaimStatus.CURRENT)]
    assert as_written_by(records, MAR, SINGLE)[-1].value == "30,000"  # on the day itself
    assert as_written_by(records, date(2023, 12, 31), SINGLE) == []


# --- identity -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Priya Raman", "priya raman"),
        ("  Priya\n\tRaman. ", "priya raman"),
        ("«Routing»", "routing"),
        ("STRASSE", "strasse"),
        ("Straße", "strasse"),  # casefold, not lower
        ("AT&T", "at&t"),  # punctuation inside a name is part of it
        ("...", ""),
    ],
)
def test_normalise_name(raw: str, expected: str) -> None:
    assert normalise_name(raw) == expected


def test_entity_id_from_name_or_strong_id() -> None:
    entity_id = functools.partial(keyed_entity_id, key=KEY)
    assert entity_id("Person", "Priya Raman") == entity_id("Person", " priya  raman.")
    assert entity_id("Person", "Priya Raman") != entity_id("Team", "Priya Raman")
    assert entity_id("Person", "Priya Raman").startswith("ent_")
    by_email = entity_id("Person", "Priya", [("email", "priya@x.org")])
    assert by_email == entity_id("Person", "P. Raman", [("email", "PRIYA@x.org ")])  # the strong ID wins
    assert by_email != entity_id("Person", "Priya")
    both = [("user_id", "u1"), ("email", "priya@x.org")]
    assert entity_id("Person", "Priya", both) == entity_id("Person", "x", list(reversed(both)))


def test_entity_ids_are_keyed_by_the_installation_secret() -> None:
    """Nobody without the key computes an id from a name: another key gives other ids, no key none at all."""
    ours = keyed_entity_id("Person", "Dana Lee", key=KEY)
    assert ours == keyed_entity_id("Person", "dana  LEE", key=KEY)  # deterministic within the installation
    assert ours != keyed_entity_id("Person", "Dana Lee", key=b"another installation's key")
    unkeyed = "ent_" + hashlib.sha256(b"Person\x1fdana lee").hexdigest()[:20]  # the old formula
    assert ours != unkeyed
    with pytest.raises(ValueError, match="key"):
        keyed_entity_id("Person", "Dana Lee", key=b"")


def test_relation_and_claim_ids_separate_what_differs() -> None:
    a, b = keyed_entity_id("Person", "A", key=KEY), keyed_entity_id("Team", "B", key=KEY)
    plain = relation_id(a, "LEADS", b, None, Polarity.POSITIVE, Modality.FACT)
    assert plain.startswith("rel_")
    assert plain == relation_id(a, "LEADS", b, None, Polarity.POSITIVE, Modality.FACT)
    assert plain != relation_id(a, "LEADS", b, None, Polarity.NEGATIVE, Modality.FACT)
    assert plain != relation_id(a, "LEADS", b, None, Polarity.POSITIVE, Modality.PLAN)
    assert plain != relation_id(a, "LEADS", b, JAN, Polarity.POSITIVE, Modality.FACT)
    assert plain != relation_id(b, "LEADS", a, None, Polarity.POSITIVE, Modality.FACT)
    fact = claim_id(SITE, "capacity_pallets", "24,500", None, Polarity.POSITIVE, Modality.FACT)
    assert fact.startswith("clm_")
    assert fact == claim_id(SITE, "capacity_pallets", " 24,500 ", None, Polarity.POSITIVE, Modality.FACT)
    assert fact != claim_id(SITE, "capacity_pallets", "24500", None, Polarity.POSITIVE, Modality.FACT)
    assert fact != claim_id(SITE, "capacity_pallets", "24,500", JAN, Polarity.POSITIVE, Modality.FACT)
    assert fact != claim_id(SITE, "headcount", "24,500", None, Polarity.POSITIVE, Modality.FACT)


# --- the cache's JSON form ---------------------------------------------------------------------------------


def full_extraction() -> ChunkExtraction:
    return ChunkExtraction(
        chunk_id="ch_1",
        key=ExtractionKey("sha256:abc", "x1", "1"),
        tier=Tier.LLM,
        entities=(EntityMention("Priya", "Person", "Priya", 0.9, (("email", "p@x.org"),)),),
        relations=(
            RelationItem(
                "Priya",
                "Person",
                "LEADS",
                "Routing",
                "Team",
                "Priya leads Routing",
                0.8,
                Polarity.NEGATIVE,
                Modality.PLAN,
                JAN,
                FEB,
            ),
        ),
        claims=(ClaimItem("LEJ-2", "Site", "capacity_pallets", "24,500", "24,500", 0.7, valid_from=MAR),),
        dropped=(DroppedItem("claim", DropReason.VALUE_TYPE_INVALID, "not an integer"),),
        skip_reason=SkipReason.NEAR_DUPLICATE,
        representative_chunk_id="ch_0",
        pending_llm=True,
    )


def test_extraction_round_trips_through_json() -> None:
    original = full_extraction()
    encoded = json.dumps(extraction_to_dict(original))
    assert extraction_from_dict(json.loads(encoded)) == original
    empty = ChunkExtraction("ch_2", ExtractionKey("h", "x", "o"), Tier.FILTER)
    assert extraction_from_dict(json.loads(json.dumps(extraction_to_dict(empty)))) == empty


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d.update(format=99),
        lambda d: d.pop("key"),
        lambda d: d.update(tier=7),
        lambda d: d["claims"][0].update(modality="rumour"),
        lambda d: d.update(entities="not a list"),
    ],
)
def test_a_damaged_cache_entry_is_reported_not_guessed(damage: object) -> None:
    data = extraction_to_dict(full_extraction())
    assert callable(damage)
    damage(data)
    with pytest.raises(KgragError) as caught:
        extraction_from_dict(data)
    assert caught.value.code is ErrorCode.MALFORMED_JSON
