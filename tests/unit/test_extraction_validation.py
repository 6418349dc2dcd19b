"""Validation every extraction tier passes: quotes, ontology, value types, qualifiers, conversation mechanics."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kgrag_core.extraction.model import (
    ClaimItem,
    DropReason,
    EntityMention,
    Modality,
    Polarity,
    RelationItem,
)
from kgrag_core.extraction.ontology import Ontology, ValueType, parse_ontology
from kgrag_core.extraction.policy import Tier3Policy
from kgrag_core.extraction.qualifiers import detect_qualifiers, scoped_modality, scoped_polarity
from kgrag_core.extraction.validation import validate
from kgrag_core.extraction.values import check_value, to_date

ONTOLOGY_FILE = Path(__file__).resolve().parents[2] / "schemas" / "ontology" / "ontology.yaml"


@pytest.fixture(scope="module")
def ontology() -> Ontology:
    return parse_ontology(yaml.safe_load(ONTOLOGY_FILE.read_text(encoding="utf-8")))


def rel(
    subject: str,
    relation: str,
    obj: str,
    quote: str,
    *,
    types: tuple[str, str] = ("Person", "Team"),
    modality: Modality = Modality.FACT,
) -> RelationItem:
    return RelationItem(subject, types[0], relation, obj, types[1], quote, 0.9, modality=modality)


def claim(entity: str, entity_type: str, attribute: str, value: str, quote: str) -> ClaimItem:
    return ClaimItem(entity, entity_type, attribute, value, quote, 0.9)


# --- qualifiers ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "polarity", "modality"),
    [
        ("Priya Raman leads the Routing team.", Polarity.POSITIVE, None),
        ("Atlas does not plan warehouse labour; Harbor does", Polarity.NEGATIVE, None),
        ("LEJ-2 no longer uses Harbor", Polarity.NEGATIVE, None),
        ("We never sign contracts longer than three years", Polarity.NEGATIVE, None),
        ("Beacon didn\u2019t go down", Polarity.NEGATIVE, None),
        ("There is no on-call rotation for Compass", Polarity.NEGATIVE, None),
        ("The project was cancelled in March.", Polarity.POSITIVE, None),  # a status, not a denial
        ("It's not only cheaper but faster", Polarity.POSITIVE, None),
        # A status field names the state a plan is in: a fact about it, not a plan (the value may say "plan").
        ("**Status:** Draft \u2014 for discussion, no decision", Polarity.POSITIVE, None),
        ("**Status:** Approved plan \u00b7 **Owner:** Aisha Mensah", Polarity.POSITIVE, None),
        ("**Status:** Planned", Polarity.POSITIVE, None),
        ("There is no decision on the Lisbon office yet", Polarity.POSITIVE, Modality.PLAN),
        ("we might get back to 64", Polarity.POSITIVE, Modality.HYPOTHETICAL),
        ("I think we might get back to 64 if hiring picks up", Polarity.POSITIVE, Modality.HYPOTHETICAL),
        ("Could Compass replace Ledger reporting?", Polarity.POSITIVE, Modality.HYPOTHETICAL),
        ("We plan to raise LEJ-2 capacity to 30,000 pallets", Polarity.POSITIVE, Modality.PLAN),
        ("Completion is planned for the end of May 2024", Polarity.POSITIVE, Modality.PLAN),
        ("Routing is planning to move Atlas to Kubernetes", Polarity.POSITIVE, Modality.PLAN),
        ("Project Lodestar is the plan to move Beacon to CockroachDB", Polarity.POSITIVE, Modality.PLAN),
        # Words that only contain "plan" refer to a plan without stating one.
        ("| Atlas | Route planning and optimisation engine | Routing |", Polarity.POSITIVE, None),
        ("The planned migration of Beacon is cancelled.", Polarity.POSITIVE, None),
        ("Headcount is 58, in line with the plan", Polarity.POSITIVE, None),
        ("Project Lodestar will move Beacon to a new distributed database", Polarity.POSITIVE, Modality.PLAN),
        ("The target is about \u20ac29,500 per month more expensive", Polarity.POSITIVE, Modality.PLAN),
        ("I think this is the best lever we have", Polarity.POSITIVE, Modality.OPINION),
        ("We probably need a new WMS", Polarity.POSITIVE, Modality.OPINION),
        ("According to Lena, the contract ends in June", Polarity.POSITIVE, Modality.REPORTED),
        ("Oliver said that CHI-3 is full", Polarity.POSITIVE, Modality.REPORTED),
        ("ChatGPT suggested moving Atlas to Kubernetes", Polarity.POSITIVE, Modality.AI_SUGGESTION),
        ("The assistant recommended CockroachDB", Polarity.POSITIVE, Modality.AI_SUGGESTION),
        ("The response target is 4 business hours.", Polarity.POSITIVE, None),  # an attribute, not a plan
        ("Robots on site and mapping in May 2024", Polarity.POSITIVE, None),  # May the month
        ("Will Turner leads the CHI-3 site", Polarity.POSITIVE, None),  # Will the name
        ("Kenji won't join the rotation", Polarity.NEGATIVE, Modality.PLAN),
    ],
)
def test_detect_qualifiers(sentence: str, polarity: Polarity, modality: Modality | None) -> None:
    found = detect_qualifiers(sentence)
    assert (found.polarity, found.modality) == (polarity, modality)


@pytest.mark.parametrize(
    ("quote", "first", "last", "polarity"),
    [
        ("LEJ-2 no longer uses Harbor; it now runs Atlas.", "LEJ-2", "Harbor", Polarity.NEGATIVE),
        ("LEJ-2 no longer uses Harbor; it now runs Atlas.", "LEJ-2", "Atlas", Polarity.POSITIVE),
        ("Beacon will not move to CockroachDB.", "Beacon", "CockroachDB", Polarity.NEGATIVE),
        ("Capacity is not 30,000 pallets.", "LEJ-2", "30 000", Polarity.NEGATIVE),  # value only; digit groups
        ("Neither Atlas nor Beacon uses Redis.", "Atlas", "Redis", Polarity.NEGATIVE),
        (
            "All team leads report to Maria Chen, VP Engineering, except Ravi Patel, who reports to the CEO.",
            "Ravi Patel",
            "Maria Chen",
            Polarity.NEGATIVE,
        ),
        # The negation is about something else in the quote.
        (
            "- Engineering headcount is 58, in line with the plan, with no layoffs.",
            "Engineering",
            "58",
            Polarity.POSITIVE,
        ),
        ("No four-day week trial in 2024.", "four-day week trial", "cancelled", Polarity.POSITIVE),
        ("Kenji didn't join the call, but Atlas uses Redis.", "Atlas", "Redis", Polarity.POSITIVE),
        ("It's not only cheaper: Atlas uses Redis", "Atlas", "Redis", Polarity.POSITIVE),
    ],
)
def test_scoped_polarity_reads_only_the_item(quote: str, first: str, last: str, polarity: Polarity) -> None:
    assert scoped_polarity(quote, first, last) is polarity


@pytest.mark.parametrize(
    ("quote", "names", "modality"),
    [
        ("Atlas uses Redis; we plan to move Beacon to Kafka.", ("Atlas", "Redis"), None),
        ("Atlas uses Redis; we plan to move Beacon to Kafka.", ("Beacon", "Kafka"), Modality.PLAN),
        ("| Atlas | Route planning and optimisation engine | Routing | Priya Raman |", ("Routing", "Atlas"), None),
        ("Will Turner leads CHI-3. Will Turner will lead LEJ-2.", ("Will Turner", "LEJ-2"), Modality.PLAN),
        ("Will Turner leads CHI-3.", ("Will Turner", "CHI-3"), None),
        ("Nothing here names it; we might get back to 64", ("Engineering", "70"), Modality.HYPOTHETICAL),
    ],
)
def test_scoped_modality_reads_the_clauses_about_the_item(
    quote: str, names: tuple[str, ...], modality: Modality | None
) -> None:
    assert scoped_modality(quote, names) is modality


# --- values ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value_type", "raw", "normalised"),
    [
        (ValueType.INTEGER, "18,000", "18000"),
        (ValueType.INTEGER, "24 500", "24500"),
        (ValueType.INTEGER, "64", "64"),
        (ValueType.INTEGER, "18k", "18000"),
        (ValueType.INTEGER, "1.5", None),
        (ValueType.INTEGER, "12,34", None),
        (ValueType.INTEGER, "about sixty", None),
        (ValueType.NUMBER, "1,234.50", "1234.5"),
        (ValueType.PERCENT, "99.9%", "99.9%"),
        (ValueType.PERCENT, "99.9 %", "99.9%"),
        (ValueType.PERCENT, "15 percent", "15%"),
        (ValueType.PERCENT, "high", None),
        (ValueType.MONEY, "\u20ac2.15", "EUR 2.15"),
        (ValueType.MONEY, "EUR 141,000", "EUR 141000"),
        (ValueType.MONEY, "\u20ac1.35M", "EUR 1350000"),
        (ValueType.MONEY, "$86,400", "USD 86400"),
        (ValueType.MONEY, "\u20ac29,500 per month", "EUR 29500 per month"),
        (ValueType.MONEY, "141,000", None),  # no currency
        (ValueType.MONEY, "XYZ 5", None),
        (ValueType.DATE, "2024-09-02", "2024-09-02"),
        (ValueType.DATE, "2 September 2024", "2024-09-02"),
        (ValueType.DATE, "September 2024", "2024-09"),
        (ValueType.DATE, "13/09/2024", "2024-09-13"),
        (ValueType.DATE, "02/09/2024", None),  # February or September: refused, not guessed
        (ValueType.DATE, "May", None),  # no year: the parser would invent one
        (ValueType.DATE, "next week", None),
        (ValueType.DATE, "2024-13-01", None),
        (ValueType.DURATION, "4 business hours", "4 business hours"),
        (ValueType.DURATION, "2 weeks", "2 weeks"),
        (ValueType.DURATION, "10 min", "10 minutes"),
        (ValueType.DURATION, "2 h 10 min", "2 hours 10 minutes"),
        (ValueType.DURATION, "six weeks", "6 weeks"),
        (ValueType.DURATION, "5 apples", None),
        (ValueType.STRING, "  CockroachDB ", "CockroachDB"),
        (ValueType.STRING, "   ", None),
        (ValueType.STRING, "x" * 301, None),
    ],
)
def test_check_value(value_type: ValueType, raw: str, normalised: str | None) -> None:
    result = check_value(value_type, raw)
    assert result == normalised
    if result is not None:  # a stored value checks again to itself
        assert check_value(value_type, result) == result


def test_to_date_uses_the_first_day_at_month_precision() -> None:
    assert str(to_date("September 2024")) == "2024-09-01"
    assert str(to_date("2 September 2024")) == "2024-09-02"
    assert to_date("soon") is None


# --- validation -------------------------------------------------------------------------------------

CHUNK = (
    "Priya Raman leads the \u201cRouting\u201d team \u2014 she took over in   March.\n"
    "LEJ-2 no longer uses Harbor; it now runs Atlas. Capacity is 24,500 pallets.\n"
    "We plan to raise capacity to 30,000 pallets. Tom asked Priya about the Beacon migration."
)


@pytest.mark.parametrize(
    "quote",
    [
        'Priya Raman leads the "Routing" team',  # straight quotes for curly ones
        "Priya Raman leads the \u201cRouting\u201d team - she took over in March.",  # dash and whitespace
        "Priya   Raman leads the \u201cRouting\u201d\nteam",
    ],
)
def test_quote_normalisation_keeps_verbatim_quotes(ontology: Ontology, quote: str) -> None:
    out = validate("c1", CHUNK, [], [rel("Priya Raman", "LEADS", "Routing", quote)], [], ontology)
    assert len(out.relations) == 1
    assert out.dropped == ()


def test_a_paraphrase_is_not_a_quote(ontology: Ontology) -> None:
    quote = "Priya Raman is the lead of the Routing team"
    out = validate("c1", CHUNK, [], [rel("Priya Raman", "LEADS", "Routing", quote)], [], ontology)
    assert out.relations == ()
    assert [d.reason for d in out.dropped] == [DropReason.QUOTE_NOT_FOUND]
    assert out.dropped[0].detail.startswith("c1: ")


def test_ontology_checks_drop_with_their_reason(ontology: Ontology) -> None:
    quote = "Priya Raman leads the \u201cRouting\u201d team"
    relations = [
        rel("Priya Raman", "LEADS", "Routing", quote, types=("Team", "Person")),  # wrong direction
        rel("Priya Raman", "ADMIRES", "Routing", quote),
        rel("Priya Raman", "LEADS", "Routing", quote, types=("Person", "Galaxy")),
        rel("Priya Raman", "LEADS", "", quote),
    ]
    entities = [EntityMention("Priya Raman", "Wizard", quote, 0.8), EntityMention("Priya Raman", "Person", quote, 0.8)]
    out = validate("c1", CHUNK, entities, relations, [], ontology)
    assert [d.reason for d in out.dropped] == [
        DropReason.UNKNOWN_ENTITY_TYPE,
        DropReason.TRIPLE_NOT_ALLOWED,
        DropReason.UNKNOWN_RELATION,
        DropReason.UNKNOWN_ENTITY_TYPE,
        DropReason.MISSING_FIELD,
    ]
    assert [e.type for e in out.entities] == ["Person"]
    assert "(Team, LEADS, Person)" in out.dropped[1].detail


def test_relation_endpoints_must_be_named_in_the_chunk_and_the_quote(ontology: Ontology) -> None:
    quote = "Priya Raman leads the \u201cRouting\u201d team"
    out = validate(
        "c1",
        CHUNK,
        [],
        [
            rel("Priya Raman", "LEADS", "Dispatch", quote),  # Dispatch never occurs in the chunk
            rel("Tom", "LEADS", "Beacon", "Capacity is 24,500 pallets.", types=("Person", "Project")),
        ],
        [],
        ontology,
    )
    assert [d.reason for d in out.dropped] == [DropReason.ENDPOINT_NOT_IN_QUOTE] * 2


def test_negation_and_plans_become_polarity_and_modality(ontology: Ontology) -> None:
    negated = RelationItem(
        "LEJ-2", "Site", "USES", "Harbor", "System", "LEJ-2 no longer uses Harbor; it now runs Atlas.", 0.9
    )
    current = RelationItem(
        "LEJ-2", "Site", "USES", "Atlas", "System", "LEJ-2 no longer uses Harbor; it now runs Atlas.", 0.9
    )
    plan = claim("LEJ-2", "Site", "capacity_pallets", "30,000", "We plan to raise capacity to 30,000 pallets.")
    fact = claim("LEJ-2", "Site", "capacity_pallets", "24,500", "Capacity is 24,500 pallets.")
    opinion_kept = rel(
        "Priya Raman", "LEADS", "Routing", "Priya Raman leads the \u201cRouting\u201d team", modality=Modality.OPINION
    )
    out = validate("c1", CHUNK, [], [negated, current, opinion_kept], [plan, fact], ontology)
    assert out.dropped == ()
    assert [(r.object, r.polarity) for r in out.relations[:2]] == [
        ("Harbor", Polarity.NEGATIVE),
        ("Atlas", Polarity.POSITIVE),  # the negation belongs to the other clause
    ]
    assert out.relations[2].modality is Modality.OPINION  # an item's own non-fact reading is kept
    assert [(c.value, c.modality, c.polarity) for c in out.claims] == [
        ("30000", Modality.PLAN, Polarity.POSITIVE),
        ("24500", Modality.FACT, Polarity.POSITIVE),
    ]


SITE_CHUNK = "## Capacity\n\n- Capacity: 18,000 pallet positions, of which 2,000 are chilled.\n"


def test_names_in_the_heading_breadcrumb_count_but_quotes_must_be_in_the_chunk(ontology: Ontology) -> None:
    crumb = "LEJ-2 Leipzig site profile > Capacity"
    quote = "- Capacity: 18,000 pallet positions"
    capacity = claim("LEJ-2", "Site", "capacity_pallets", "18,000", quote)
    mention = EntityMention("LEJ-2", "Site", quote, 0.8)
    crumb_quote = claim("LEJ-2", "Site", "capacity_pallets", "18,000", "LEJ-2 Leipzig site profile")
    without = validate("c1", SITE_CHUNK, [mention], [], [capacity], ontology)
    assert without.claims == () and without.entities == ()
    assert {d.reason for d in without.dropped} == {DropReason.QUOTE_NOT_FOUND}
    out = validate("c1", SITE_CHUNK, [mention], [], [capacity, crumb_quote], ontology, context=crumb)
    assert [(c.entity, c.value) for c in out.claims] == [("LEJ-2", "18000")]
    assert out.entities == (mention,)
    assert [d.reason for d in out.dropped] == [DropReason.QUOTE_NOT_FOUND]  # the quote from the breadcrumb


def test_plan_states_and_descriptions_of_plans_stay_facts(ontology: Ontology) -> None:
    text = (
        "Project Lodestar, the planned migration of Beacon from PostgreSQL to CockroachDB, is cancelled.\n"
        "**Owner:** Aisha Mensah (Tracking) \u00b7 **Status:** Approved plan\n"
        "Project Lodestar will move Beacon to CockroachDB. The Beacon upgrade is planned for October."
    )
    cancelled = claim("Project Lodestar", "Project", "status", "cancelled", text.splitlines()[0])
    approved = claim("Project Lodestar", "Project", "status", "approved", "**Status:** Approved plan")
    database = claim("Beacon", "System", "database", "PostgreSQL", text.splitlines()[0])
    member = RelationItem("Aisha Mensah", "Person", "MEMBER_OF", "Tracking", "Team", text.splitlines()[1], 0.9)
    about = RelationItem(
        "Project Lodestar", "Project", "ABOUT", "Beacon", "System", "Project Lodestar will move Beacon", 0.9
    )
    moves = RelationItem(
        "Beacon",
        "System",
        "MIGRATES_TO",
        "CockroachDB",
        "System",
        "Project Lodestar will move Beacon to CockroachDB",
        0.9,
    )
    upgrade = claim("Beacon", "System", "database", "PostgreSQL 16", "The Beacon upgrade is planned for October.")
    out = validate("c1", text, [], [member, about, moves], [cancelled, approved, database, upgrade], ontology)
    assert out.dropped == ()
    assert [r.modality for r in out.relations] == [Modality.FACT, Modality.FACT, Modality.PLAN]
    assert [c.modality for c in out.claims] == [Modality.FACT, Modality.FACT, Modality.FACT, Modality.PLAN]
    assert {r.polarity for r in out.relations} | {c.polarity for c in out.claims} == {Polarity.POSITIVE}


def test_negation_only_where_it_scopes_over_the_item(ontology: Ontology) -> None:
    text = (
        "- Engineering headcount is 58, in line with the plan, with no layoffs.\n"
        "All team leads report to Maria Chen, VP Engineering, except Ravi Patel, who reports to the CEO."
    )
    headcount = claim("Engineering", "Team", "headcount", "58", text.splitlines()[0])
    except_ravi = rel("Ravi Patel", "REPORTS_TO", "Maria Chen", text.splitlines()[1], types=("Person", "Person"))
    out = validate("c1", text, [], [except_ravi], [headcount], ontology)
    assert [(c.value, c.polarity, c.modality) for c in out.claims] == [("58", Polarity.POSITIVE, Modality.FACT)]
    assert [r.polarity for r in out.relations] == [Polarity.NEGATIVE]


def test_claim_attribute_and_value_checks(ontology: Ontology) -> None:
    quote = "Capacity is 24,500 pallets."
    out = validate(
        "c1",
        CHUNK,
        [],
        [],
        [
            claim("LEJ-2", "Site", "capacity_pallets", "lots", quote),
            claim("LEJ-2", "Site", "favourite_colour", "blue", quote),
            claim("LEJ-2", "Site", "sla", "99.9%", quote),
            claim("LEJ-2", "Site", "capacity_pallets", "24,500", quote),
        ],
        ontology,
    )
    assert [d.reason for d in out.dropped] == [
        DropReason.VALUE_TYPE_INVALID,
        DropReason.UNKNOWN_ATTRIBUTE,
        DropReason.ATTRIBUTE_NOT_ALLOWED,
    ]
    assert [c.value for c in out.claims] == ["24500"]


def test_conversation_mechanics_are_not_relations(ontology: Ontology) -> None:
    quote = "Tom asked Priya about the Beacon migration."
    asked = rel("Tom", "REPORTS_TO", "Priya", quote, types=("Person", "Person"))
    assistant = rel("the assistant", "MEMBER_OF", "Routing", "Priya Raman leads the \u201cRouting\u201d team")
    participant = EntityMention("user", "Person", quote, 0.8)
    out = validate("c1", CHUNK, [participant], [asked, assistant], [], ontology)
    assert out.relations == () and out.entities == ()
    assert [d.reason for d in out.dropped] == [DropReason.CONVERSATION_MECHANICS] * 3


def test_validation_is_idempotent(ontology: Ontology) -> None:
    items = [claim("LEJ-2", "Site", "capacity_pallets", "24,500", "Capacity is 24,500 pallets.")]
    once = validate("c1", CHUNK, [], [], items, ontology)
    twice = validate("c1", CHUNK, [], [], list(once.claims), ontology)
    assert twice == once


# --- the tier-3 policy ----------------------------------------------------------------------------------


def test_tier3_policy_selects_only_some_chunks() -> None:
    policy = Tier3Policy(priority_sources=frozenset({"decisions"}), min_entities=3, low_confidence=0.5)
    sure = EntityMention("Atlas", "System", "Atlas", 0.9)
    assert policy.reason("wiki", ([sure], [], [])) is None
    assert policy.reason("decisions", ([], [], [])) == "priority_source"
    unsure = RelationItem("Atlas", "System", "USES", "Redis", "System", "Atlas uses Redis", 0.3)
    assert policy.reason("wiki", ([sure], [unsure], [])) == "low_confidence"
    many = [EntityMention(n, "System", n, 0.9) for n in ("Atlas", "Beacon", "Harbor")]
    assert policy.reason("wiki", (many, [], [])) == "entity_dense"
    a = claim("LEJ-2", "Site", "capacity_pallets", "18000", "x")
    b = claim("LEJ-2", "Site", "capacity_pallets", "24500", "y")
    assert policy.reason("wiki", ([], [], [a, b])) == "conflicting"
    multi = Tier3Policy(multi_valued_attributes=frozenset({"capacity_pallets"}))
    assert multi.reason("wiki", ([], [], [a, b])) is None
