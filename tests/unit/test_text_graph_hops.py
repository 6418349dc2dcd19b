"""Query-time second-hop rules of the text graph: bridge shape, hop queries, bridged slots."""

from __future__ import annotations

import pytest

from kgrag_core.text_graph.hops import bridge_shaped, chain_length, hop_query, paired_bridge, place_bridged


@pytest.mark.parametrize(
    "question",
    [
        "In which city is the employer of Mateo Berg based?",
        "Where was the teacher of Pavel Berg born?",
        "Where does the organisation Hugo Tanaka worked for have its seat?",
        "Who founded the company that employed Ada Lovelace?",
        "In which province is the seat of the organisation that employed the mentor of Amara Rossi?",
        "In which city is the museum that employed the author of 'The Pale Canals' based?",
    ],
)
def test_a_named_entity_and_an_attribute_of_a_related_one_is_bridge_shaped(question: str) -> None:
    assert bridge_shaped(question)


@pytest.mark.parametrize(
    "question",
    [
        "In which province is Valparaiso?",
        "What is the population of Valparaiso?",  # an attribute of the named entity itself
        "Who is the employer of Mateo Berg?",  # the related entity is the answer: one hop
        "Which was founded first, Barrow Pharmaceuticals or Norrland Aircraft Works?",
        "where is the employer of the person based?",  # no entity named
        "What is our refund policy?",
    ],
)
def test_lookups_comparisons_and_one_hop_questions_are_not_bridge_shaped(question: str) -> None:
    assert not bridge_shaped(question)


def test_hop_query_is_the_bridge_and_the_ask_without_the_questions_own_names() -> None:
    query = hop_query("Quillon Museum", "Where does the organisation Hugo Tanaka worked for have its seat?")
    assert query.startswith("Quillon Museum ")
    assert "Hugo" not in query and "Tanaka" not in query
    assert "seat" in query and "organisation" in query
    assert "Pale" not in hop_query("Lumen Institute", "Who employed the author of 'The Pale Canals'?")


def test_bridged_passages_take_the_last_top_slots_and_push_the_rest_down_without_losing_any() -> None:
    ranked = ["h1", "h2", "h3", "h4", "h5", "h6"]
    placed = place_bridged(ranked, ["b1", "b2", "b3"], top=5, slots=2, keep=2)
    assert placed == ["h1", "h2", "h3", "b1", "b2", "h4", "h5", "h6"]


def test_bridged_slots_never_displace_the_kept_head_and_a_bridged_passage_already_on_top_is_not_repeated() -> None:
    placed = place_bridged(["h1", "h2", "h3", "b1"], ["h1", "b1"], top=3, slots=3, keep=2)
    assert placed[:2] == ["h1", "h2"]
    assert placed[2] == "b1"
    assert sorted(placed) == ["b1", "h1", "h2", "h3"]
    assert place_bridged(["h1", "h2"], [], top=5, slots=2, keep=2) == ["h1", "h2"]


@pytest.mark.parametrize(
    ("question", "passages"),
    [
        ("Where was the teacher of Pavel Berg born?", 2),  # never fewer than the entity's and the related one's
        ("In which city is the employer of Mateo Berg based?", 2),
        ("Which organisation employed the founder of Halden University?", 2),  # "University" is in the name
        ("In which city is the organisation that employed the author of 'The Pale Canals' based?", 3),
        ("In which province is the seat of the organisation that employed the mentor of Amara Rossi?", 4),
        # A region asked of a person's or an organisation's place: the place's passage, then the region's.
        ("In which province was the mentor of Kofi Jensen born?", 3),
        ("Which province is the employer of Nadia Jensen based in?", 3),
        ("In which province is the employer of the author of 'The Frozen Lanterns' based?", 4),
        # "the city where ... has its seat" is one place, not two.
        ("In which province is the city where the employer of Tomas Lambert has its seat?", 3),
    ],
)
def test_a_chain_needs_a_passage_per_relation_the_question_stacks(question: str, passages: int) -> None:
    assert chain_length(question) == passages


@pytest.mark.parametrize(
    ("question", "paired"),
    [
        ("Are the employers of Nadia Kowalski and Selin Romero based in the same city?", True),
        ("Were the mentors of Omar Sato and Hana Santos born in the same province?", True),
        ("Are Nadia Kowalski and Selin Romero based in the same city?", False),  # no related entity
        ("Who was born earlier, Viktor Brennan or Marco Romero?", False),
        ("Are the employers of the staff based in the same city?", False),  # no named entities
    ],
)
def test_a_paired_bridge_compares_the_entities_related_to_two_named_ones(question: str, paired: bool) -> None:
    assert paired_bridge(question) is paired
