"""Entity-name normalisation, phonetic keys, and the forms that are never matching keys."""

from __future__ import annotations

import pytest

from kgrag_core.resolution.features import INITIALS, SURNAME_ONLY, name_similarity
from kgrag_core.resolution.normalise import (
    is_generic_one_word,
    is_pronoun,
    matching_key,
    name_tokens,
    normalise_entity_name,
    phonetic_key,
)


@pytest.mark.parametrize(
    ("name", "entity_type", "expected"),
    [
        ("Brightwater Foods B.V.", "Organization", "brightwater foods"),
        ("BRIGHTWATER FOODS BV", "Organization", "brightwater foods"),
        ("Halden Outdoor, Inc.", "Organization", "halden outdoor"),
        ("Cobalt Cloud Intl. Ltd", "Organization", "cobalt cloud international"),
        ("Marks & Spencer plc", "Organization", "marks and spencer"),
        ("Velora Electronics GmbH", "Organization", "velora electronics"),
        ("José  Núñez", "Person", "jose nunez"),
        ("Grace O'Neill", "Person", "grace oneill"),
        ("maria.chen@northwind.example", "Person", "maria chen"),
        ("Chen, Maria", "Person", "maria chen"),
        ("M. Chen", "Person", "m chen"),
        ("LEJ-2", "Site", "lej 2"),
        ("Harbour St. depot", "Site", "harbour street depot"),
        ("Routing team", "Team", "routing"),
        ("Project Lodestar", "Project", "lodestar"),
        ("The Atlas routing engine", "System", "atlas routing engine"),
    ],
)
def test_normalise_entity_name(name: str, entity_type: str, expected: str) -> None:
    assert normalise_entity_name(name, entity_type) == expected


def test_legal_suffix_only_stripped_for_organisations_and_never_to_nothing() -> None:
    assert normalise_entity_name("Gatekeeper SA", "System") == "gatekeeper sa"
    assert normalise_entity_name("Ltd", "Organization") == "ltd"
    assert name_tokens("Team", "Team") == ("team",)


def test_phonetic_key_joins_spelling_variants() -> None:
    assert phonetic_key("Harbor", "System") == phonetic_key("Harbour", "System")
    assert phonetic_key("Zoe Muller", "Person") != phonetic_key("Tomasz Nowak", "Person")
    assert phonetic_key("LEJ-2", "Site").endswith(" 2")


@pytest.mark.parametrize("word", ["he", "She", "it", "His", "their", "they."])
def test_pronouns(word: str) -> None:
    assert is_pronoun(word)
    assert matching_key(word, "Person") is None


@pytest.mark.parametrize("name", ["Helen", "Atlas", "LEJ-2", "Tom Becker", "HIS", "IT"])
def test_names_are_not_pronouns(name: str) -> None:
    assert not is_pronoun(name)


@pytest.mark.parametrize("name", ["team", "platform", "relay", "Team", "the system", "Customer", "our customers"])
def test_generic_one_word_forms_are_never_keys(name: str) -> None:
    assert is_generic_one_word(name)
    assert matching_key(name, "System") is None


@pytest.mark.parametrize("name", ["Relay", "RELAY", "Platform", "HIS", "Relay gateway", "platform team"])
def test_capitalised_or_multi_word_forms_are_keys(name: str) -> None:
    assert not is_generic_one_word(name)
    assert matching_key(name, "System") is not None


def test_name_similarity_shapes() -> None:
    person = {"person": True}
    assert name_similarity(("maria", "chen"), ("m", "chen"), **person) == INITIALS
    assert name_similarity(("maria", "chen"), ("wei", "chen"), **person) == SURNAME_ONLY
    assert name_similarity(("fatima", "al", "sayed"), ("fatima", "alsayed")) > 0.9
    assert name_similarity(("atlas", "freight"), ("ferro", "freight")) < 0.55
    assert name_similarity(("brightwater",), ("brightwater", "foods")) < 0.85
    assert name_similarity((), ("x",)) == 0.0
