"""Tier 1: record rendering and parsing, mapping rules checked against the ontology, records mapped to items."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kgrag_core.answering.quotes import quote_in_text
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.model import ClaimItem, EntityMention, Modality, Polarity, RelationItem
from kgrag_core.extraction.ontology import Ontology, parse_ontology
from kgrag_core.extraction.records_text import field_key, parse_record, render_record
from kgrag_core.extraction.tier1 import Direction, MappingRules, load_mapping_rules, map_record

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ontology() -> Ontology:
    return parse_ontology(yaml.safe_load((ROOT / "schemas" / "ontology" / "ontology.yaml").read_text("utf-8")))


@pytest.fixture(scope="module")
def rules_data() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "schemas" / "mappings" / "records.yaml").read_text("utf-8"))
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def rules(rules_data: dict[str, Any], ontology: Ontology) -> MappingRules:
    return load_mapping_rules(rules_data, ontology)


# --- rendering and parsing -------------------------------------------------------------------------


def test_render_and_parse_round_trip() -> None:
    text = render_record(
        "Person",
        {"Name": "José Núñez", "E-mail": " jose.nunez@northwind.example ", "team": ["Routing", "Guild"], "x": ""},
    )
    assert text == (
        "record_type: person\nname: José Núñez\ne_mail: jose.nunez@northwind.example\nteam: Routing; Guild\n"
    )
    assert parse_record(text) == (
        "person",
        {"name": ["José Núñez"], "e_mail": ["jose.nunez@northwind.example"], "team": ["Routing; Guild"]},
    )


def test_render_keeps_one_line_per_field() -> None:
    text = render_record("note", {"body": "line one\nrecord_type: forged\n\nline three", "record_type": "other"})
    assert text == "record_type: note\nbody: line one record_type: forged line three\n"
    with pytest.raises(ValueError, match="no letters or digits"):
        render_record(" -- ", {"a": "b"})


def test_repeated_lines_collect() -> None:
    assert parse_record("record_type: team\nowns: Relay\nowns: Ledger\n") == ("team", {"owns": ["Relay", "Ledger"]})


@pytest.mark.parametrize(
    "text",
    [
        "",
        "# Routing team\n\nPriya leads it.",
        "name: Priya Raman\nrecord_type: person\n",  # the type must come first
        "record_type: person\nThis line is prose, not a field.\n",
        "record_type: \nname: x\n",
    ],
)
def test_parse_rejects_non_records(text: str) -> None:
    assert parse_record(text) is None


def test_field_key() -> None:
    assert field_key("  Account ID ") == "account_id"
    assert field_key("Owner-Team") == "owner_team"
    assert field_key("--") == ""


# --- rules ------------------------------------------------------------------------------------------


def test_rules_load(rules: MappingRules, ontology: Ontology) -> None:
    assert rules.ontology_version == ontology.version
    assert {"person", "team", "system", "customer", "site", "vendor"} <= set(rules.rules)
    person = rules.rules["person"]
    assert (person.entity_type, person.name_field) == ("Person", "name")
    assert dict(person.strong_ids) == {"email": "email", "user_id": "user_id"}
    lead = next(r for r in rules.rules["team"].relations if r.field == "lead")
    assert (lead.relation, lead.type, lead.direction) == ("LEADS", "Person", Direction.OBJECT)
    language = next(a for a in rules.rules["system"].attributes if a.field == "language")
    assert language.multi and not next(a for a in person.attributes if a.attribute == "role").multi


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("person", "entity_type"), "Human", "unknown entity type 'Human'"),
        (("person", "attributes", "role"), "job_title", "unknown attribute 'job_title'"),
        (("person", "attributes", "role"), "database", "Person may not have attribute 'database'"),
        (("person", "strong_ids"), {"domain": "email"}, "no strong identifier 'domain'"),
        (("person", "relations", "team", "relation"), "MANAGES", "unknown relation 'MANAGES'"),
        (("person", "relations", "team", "relation"), "OWNS", "does not allow (Person)-[OWNS]->(Team)"),
        (("team", "relations", "lead", "direction"), "subject", "does not allow (Team)-[LEADS]->(Person)"),
        (("team", "relations", "lead", "direction"), "sideways", "direction must be 'subject' or 'object'"),
        (("team", "relations", "owns", "type"), "Gadget", "unknown entity type 'Gadget'"),
        (("team", "name_field"), "Team Name", "not a record field key"),
        (("site", "name_field"), None, "name_field must be a non-empty string"),
    ],
)
def test_bad_rule_is_ontology_invalid(
    rules_data: dict[str, Any], ontology: Ontology, path: tuple[str, ...], value: object, message: str
) -> None:
    data = copy.deepcopy(rules_data)
    target = data["record_types"]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(KgragError) as excinfo:
        load_mapping_rules(data, ontology)
    assert excinfo.value.code is ErrorCode.ONTOLOGY_INVALID
    assert message in excinfo.value.message


@pytest.mark.parametrize(
    "data",
    [None, [], {"version": "1"}, {"record_types": {"a": {}}}, {"version": "1", "record_types": {"Bad Type": {}}}],
)
def test_malformed_rules(data: object, ontology: Ontology) -> None:
    with pytest.raises(KgragError) as excinfo:
        load_mapping_rules(data, ontology)
    assert excinfo.value.code is ErrorCode.ONTOLOGY_INVALID


# --- mapping ----------------------------------------------------------------------------------------


def assert_all_quoted(text: str, items: tuple[list[EntityMention], list[RelationItem], list[ClaimItem]]) -> None:
    entities, relations, claims = items
    quoted: list[EntityMention | RelationItem | ClaimItem] = [*entities, *relations, *claims]
    for item in quoted:
        assert quote_in_text(item.quote, text), item
        assert item.quote in text.splitlines()  # the exact line, not just a normalised match
        assert item.confidence == 1.0
    stated: list[RelationItem | ClaimItem] = [*relations, *claims]
    for fact in stated:
        assert (fact.modality, fact.polarity) == (Modality.FACT, Polarity.POSITIVE)


def test_map_person(rules: MappingRules) -> None:
    text = render_record(
        "person",
        {
            "name": "Kenji Watanabe",
            "user_id": "kenji.watanabe",
            "email": "kenji.watanabe@northwind.example",
            "role": "Software Engineer",
            "team": "Routing",
            "manager": "Priya Raman",
            "hobby": "climbing",  # no rule: searchable text only
        },
    )
    entities, relations, claims = items = map_record(text, rules)
    assert entities[0] == EntityMention(
        "Kenji Watanabe",
        "Person",
        "name: Kenji Watanabe",
        1.0,
        (("email", "kenji.watanabe@northwind.example"), ("user_id", "kenji.watanabe")),
    )
    assert {(e.name, e.type) for e in entities[1:]} == {("Routing", "Team"), ("Priya Raman", "Person")}
    assert [(r.subject, r.relation, r.object, r.object_type, r.quote) for r in relations] == [
        ("Kenji Watanabe", "MEMBER_OF", "Routing", "Team", "team: Routing"),
        ("Kenji Watanabe", "REPORTS_TO", "Priya Raman", "Person", "manager: Priya Raman"),
    ]
    assert sorted((c.attribute, c.value, c.quote) for c in claims) == [
        ("email", "kenji.watanabe@northwind.example", "email: kenji.watanabe@northwind.example"),
        ("role", "Software Engineer", "role: Software Engineer"),
    ]
    assert_all_quoted(text, items)


def test_map_team_lists_and_object_direction(rules: MappingRules) -> None:
    text = render_record("team", {"name": "Integrations", "lead": "Ines Carvalho", "owns": ["Relay", "Ledger"]})
    entities, relations, claims = items = map_record(text, rules)
    assert claims == []
    assert [(r.subject, r.subject_type, r.relation, r.object, r.object_type) for r in relations] == [
        ("Ines Carvalho", "Person", "LEADS", "Integrations", "Team"),
        ("Integrations", "Team", "OWNS", "Relay", "System"),
        ("Integrations", "Team", "OWNS", "Ledger", "System"),
    ]
    assert {r.quote for r in relations if r.relation == "OWNS"} == {"owns: Relay; Ledger"}
    assert [e.name for e in entities] == ["Integrations", "Ines Carvalho", "Relay", "Ledger"]
    assert_all_quoted(text, items)
    # A list written by hand with ";" maps the same.
    assert map_record(text.replace("owns: Relay; Ledger", "owns: Relay ;Ledger;"), rules)[1][1:] == [
        RelationItem("Integrations", "Team", "OWNS", o, "System", "owns: Relay ;Ledger;", 1.0)
        for o in ("Relay", "Ledger")
    ]


def test_map_system_multi_valued_attribute(rules: MappingRules) -> None:
    text = render_record(
        "system",
        {"name": "Atlas", "owner_team": "Routing", "language": ["Python", "C++"], "database": "Redis; PostgreSQL"},
    )
    _, relations, claims = items = map_record(text, rules)
    assert [(r.subject, r.relation, r.object) for r in relations] == [("Routing", "OWNS", "Atlas")]
    assert sorted((c.attribute, c.value) for c in claims) == [
        ("database", "Redis; PostgreSQL"),  # single-valued: the value as written
        ("language", "C++"),
        ("language", "Python"),
    ]
    assert_all_quoted(text, items)


def test_map_customer_strong_ids(rules: MappingRules) -> None:
    text = render_record(
        "customer",
        {
            "name": "Kestrel Pharma",
            "account_id": "NW-C-1001",
            "domain": "kestrel.example",
            "sla": "99.9%",
            "sites": ["RTM-1"],
            "customer_of": "Northwind Logistics",
        },
    )
    entities, relations, claims = items = map_record(text, rules)
    assert entities[0].type == "Organization"
    assert entities[0].strong_ids == (("account_id", "NW-C-1001"), ("domain", "kestrel.example"))
    assert [(c.attribute, c.value) for c in claims] == [("sla", "99.9%")]
    assert {(r.relation, r.object, r.object_type) for r in relations} == {
        ("SERVED_AT", "RTM-1", "Site"),
        ("CUSTOMER_OF", "Northwind Logistics", "Organization"),
    }
    assert_all_quoted(text, items)


@pytest.mark.parametrize(
    "text",
    [
        "Kestrel Pharma is our largest cold-chain customer.",
        render_record("invoice", {"name": "INV-1"}),  # no rule for this type
        render_record("person", {"team": "Routing"}),  # no name
    ],
)
def test_unmappable_text_gives_nothing(rules: MappingRules, text: str) -> None:
    assert map_record(text, rules) == ([], [], [])


def test_bundled_records_map_cleanly(rules: MappingRules, ontology: Ontology) -> None:
    """Every record of the bundled export maps to items the ontology allows, each quoting its record."""
    lines = (ROOT / "corpora" / "northwind" / "records.jsonl").read_text("utf-8").splitlines()
    assert 40 <= len(lines) <= 60
    types: set[str] = set()
    for line in lines:
        record = json.loads(line)
        assert record["published_at"] == "2025-06-03" and "acl" not in record
        text = render_record(record["record"]["type"], record["record"]["fields"])
        entities, relations, claims = items = map_record(text, rules)
        assert entities, record["id"]
        types.add(record["record"]["type"])
        assert_all_quoted(text, items)
        for entity in entities:
            assert entity.type in ontology.entity_types
        for relation in relations:
            assert ontology.allows_triple(relation.subject_type, relation.relation, relation.object_type)
        for claim in claims:
            assert ontology.allows_attribute(claim.entity_type, claim.attribute)
    # Ticket records come from ticket exports, not this file (tests/unit/test_ticket_connectors.py maps them).
    assert types == set(rules.rules) - {"ticket"}
