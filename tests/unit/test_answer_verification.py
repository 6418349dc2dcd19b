"""Sentence-level verification: a scripted model (the labelled FAKE) writes fluent, unfaithful sentences on
top of real quotes: numbers changed, negations flipped, plans stated as done, names swapped. Each must be
removed and counted; the faithful sentences beside them must be kept (the positive control)."""

from __future__ import annotations

import json

import pytest

from kgrag_core.answering.generative import generative_answer
from kgrag_core.answering.model import Answer, AnswerMode, AnswerSentence, Citation
from kgrag_core.answering.verification import (
    PLAN_AS_FACT,
    POLARITY_MISMATCH,
    UNSUPPORTED_DATE,
    UNSUPPORTED_ENTITY,
    UNSUPPORTED_NUMBER,
    SupportingFact,
    check_sentence,
    verify_answer,
)
from kgrag_core.search import SearchHit
from kgrag_testing.scripted_llm import ScriptedChatModel

ATLAS = "The on-call owner of Atlas is Priya Raman since March 2024. Atlas plans 120 routes per night."
BEACON = "Beacon did not move to CockroachDB in 2024. We plan to move Beacon to Spanner next year."
HITS = [
    SearchHit("c_atlas", "atlas", "Atlas", "uri://atlas", "wiki", ("Atlas",), 0, len(ATLAS.encode()), ATLAS, 1.0),
    SearchHit("c_beacon", "beacon", "Beacon", "uri://b", "wiki", ("Beacon",), 0, len(BEACON.encode()), BEACON, 0.9),
]
OWNER = "The on-call owner of Atlas is Priya Raman since March 2024."
ROUTES = "Atlas plans 120 routes per night."
NOT_MOVED = "Beacon did not move to CockroachDB in 2024."
PLAN = "We plan to move Beacon to Spanner next year."

FAITHFUL = [
    ("Priya Raman has been the on-call owner of Atlas since March 2024.", 1, OWNER),
    ("Atlas plans 120 routes each night.", 1, ROUTES),
    ("Beacon did not move to CockroachDB in 2024.", 2, NOT_MOVED),
    ("The team plans to move Beacon to Spanner next year.", 2, PLAN),
]
UNFAITHFUL = [
    ("Atlas plans 150 routes per night.", 1, ROUTES, UNSUPPORTED_NUMBER),
    ("Priya Raman has owned Atlas on call since May 2024.", 1, OWNER, UNSUPPORTED_DATE),
    ("Kenji Watanabe is the on-call owner of Atlas.", 1, OWNER, UNSUPPORTED_ENTITY),
    ("Beacon moved to CockroachDB in 2024.", 2, NOT_MOVED, POLARITY_MISMATCH),
    ("Beacon moved to Spanner.", 2, PLAN, PLAN_AS_FACT),
]


def _reply(sentences: list[tuple[str, int, str]]) -> str:
    items = [{"text": t, "evidence": [{"source": s, "quote": q}]} for t, s, q in sentences]
    return json.dumps({"insufficient_evidence": False, "sentences": items})


@pytest.mark.parametrize(("text", "source", "quote", "reason"), UNFAITHFUL)
def test_each_unfaithful_sentence_has_its_reason(text: str, source: int, quote: str, reason: str) -> None:
    assert check_sentence(text, [quote]) == reason


@pytest.mark.parametrize(("text", "source", "quote"), FAITHFUL)
def test_each_faithful_paraphrase_is_supported(text: str, source: int, quote: str) -> None:
    assert check_sentence(text, [quote]) is None


def test_the_model_answer_keeps_the_faithful_sentences_and_removes_the_rest() -> None:
    mixed = [*FAITHFUL[:2], *(u[:3] for u in UNFAITHFUL), *FAITHFUL[2:]]
    answer = generative_answer("What about Atlas and Beacon?", HITS, ScriptedChatModel([_reply(mixed)]))
    assert answer.mode is AnswerMode.LLM
    assert [s.text for s in answer.sentences] == [f[0] for f in FAITHFUL]
    assert answer.removed_sentences == len(UNFAITHFUL)
    assert sorted(r.reason for r in answer.removed) == sorted(u[3] for u in UNFAITHFUL)
    # Citations are those of the kept sentences only, numbered densely in reading order.
    assert [c.id for c in answer.citations] == [1, 2, 3, 4]
    assert [s.citation_ids for s in answer.sentences] == [(1,), (2,), (3,), (4,)]
    body = answer.as_dict()
    assert body["removed"] == {"count": 5, "reasons": {r: 1 for r in sorted(u[3] for u in UNFAITHFUL)}}
    assert "150 routes" not in json.dumps(body)
    assert answer.confidence != "HIGH"  # something was removed


def test_an_answer_with_nothing_supported_is_withheld() -> None:
    answer = generative_answer("Did Beacon move?", HITS, ScriptedChatModel([_reply([u[:3] for u in UNFAITHFUL])]))
    assert answer.mode is AnswerMode.REFUSED and not answer.sentences and not answer.citations
    assert answer.error_code == "INSUFFICIENT_EVIDENCE" and answer.removed_sentences == len(UNFAITHFUL)


def test_a_graph_fact_resting_on_a_cited_chunk_supports_what_the_quote_lacks() -> None:
    text = "Priya Raman has owned Atlas on call since March 2024, until 31 August 2024."
    fact = SupportingFact("Atlas on-call owner: Priya Raman (2024-03-01 to 2024-08-31)", ("c_atlas",))
    elsewhere = SupportingFact(fact.text, ("c_other",))
    assert check_sentence(text, [OWNER]) == UNSUPPORTED_DATE
    reply = ScriptedChatModel([_reply([(text, 1, OWNER)]), _reply([(text, 1, OWNER)])])
    assert generative_answer("Who?", HITS, reply, facts=[fact]).answered
    assert not generative_answer("Who?", HITS, reply, facts=[elsewhere]).answered  # its evidence was not cited


def _extractive(sentences: list[tuple[str, str]]) -> Answer:
    citations = tuple(Citation(i, "c_atlas", "atlas", "Atlas", "u", 0, 1, q) for i, (_, q) in enumerate(sentences, 1))
    return Answer(
        "q",
        AnswerMode.EXTRACTIVE,
        tuple(AnswerSentence(t, (i,)) for i, (t, _) in enumerate(sentences, 1)),
        citations,
        "extractive",
        "HIGH",
    )


def test_verify_answer_checks_any_answerer_and_abstains_when_nothing_is_left() -> None:
    kept = verify_answer(_extractive([(ROUTES, ROUTES), ("Atlas plans 150 routes per night.", ROUTES)]))
    assert [s.text for s in kept.sentences] == [ROUTES] and [c.id for c in kept.citations] == [1]
    assert kept.removed_sentences == 1 and kept.removed[0].reason == UNSUPPORTED_NUMBER
    none_left = verify_answer(_extractive([("Beacon moved to Spanner.", PLAN)]))
    assert none_left.mode is AnswerMode.ABSTAINED and none_left.removed_sentences == 1
    untouched = _extractive([(OWNER, OWNER)])
    assert verify_answer(untouched) is untouched


CALLED_OFF = "Project Lodestar, the planned migration of Beacon to CockroachDB, is cancelled."


def test_a_yes_no_verdict_is_checked_apart_from_the_statement_it_opens() -> None:
    # "No:" answers the question; the statement after it is checked on its own and keeps its support.
    assert check_sentence(f"No: {CALLED_OFF}", [CALLED_OFF]) is None
    assert check_sentence("No: Beacon did not move to CockroachDB.", ["Beacon did not move to CockroachDB."]) is None
    # A "No" that no source backs (nothing denied or called off), and a statement the quote does not hold.
    assert check_sentence("No: Beacon moved to CockroachDB.", ["Beacon moved to CockroachDB."]) == POLARITY_MISMATCH
    assert check_sentence(f"No: {CALLED_OFF}".replace("Beacon", "Harbor"), [CALLED_OFF]) == UNSUPPORTED_ENTITY
    assert check_sentence("Yes: Beacon moved to CockroachDB.", ["Beacon did not move to CockroachDB."]) == (
        POLARITY_MISMATCH
    )
