"""Confidence comes from the evidence for every answerer (kgrag_core.answering.confidence), and the LLM's
prompt carries the structured context with the source numbers each fact must be cited by."""

from __future__ import annotations

import json
from datetime import date, datetime

from kgrag_core.answering.confidence import grade, lexical_support
from kgrag_core.answering.context import build_context
from kgrag_core.answering.generative import build_messages, context_sources, generative_answer
from kgrag_core.extraction.model import Modality, Polarity, Tier
from kgrag_core.extraction.records import ClaimRecord, ClaimStatus
from kgrag_core.graph_retrieval.searcher import EstimatedTokens
from kgrag_core.search import SearchHit
from kgrag_testing.scripted_llm import ScriptedChatModel

QUOTE = "The on-call owner of Atlas is Priya Raman since March 2024."


def _hit(doc_id: str, text: str) -> SearchHit:
    return SearchHit(
        f"ch_{doc_id}", doc_id, doc_id, f"test://{doc_id}", "wiki", (doc_id,), 0, len(text.encode()), text, 1.0,
        doc_time=datetime(2024, 3, 1),
    )  # fmt: skip


def test_grade_falls_with_conflicts_truncation_and_weak_sentences() -> None:
    assert grade([0.95, 0.9]) == "HIGH"
    assert grade([0.95, 0.9], conflicts=1) != "HIGH"
    assert grade([0.85, 0.85]) == "HIGH" and grade([0.85, 0.85], truncated=True) == "MEDIUM"
    assert grade([0.95, 0.1]) == "LOW"  # one unsupported sentence drags the answer down
    assert grade([0.75, 0.75], corroborated=True) == "HIGH" and grade([0.75, 0.75]) == "MEDIUM"
    assert grade([]) == "LOW"


def test_lexical_support_is_the_share_of_the_sentence_found_in_its_quotes() -> None:
    assert lexical_support("Priya Raman is the on-call owner of Atlas.", [QUOTE]) == 1.0
    assert lexical_support("Kenji Watanabe leads Harbor.", [QUOTE]) == 0.0


def _reply(text: str) -> str:
    return json.dumps(
        {"insufficient_evidence": False, "sentences": [{"text": text, "evidence": [{"source": 1, "quote": QUOTE}]}]}
    )


def test_the_llm_answer_confidence_is_computed_not_constant() -> None:
    hits = [_hit("atlas", QUOTE)]
    restated = generative_answer("Who is on call for Atlas?", hits, ScriptedChatModel([_reply(QUOTE)]))
    loose = generative_answer(
        "Who is on call for Atlas?",
        hits,
        ScriptedChatModel([_reply("Priya Raman answers the pager whenever alarms ring during nights and weekends.")]),
    )
    embroidered = generative_answer(
        "Who is on call for Atlas?",
        hits,
        ScriptedChatModel([_reply("Priya Raman, hired from Globex in 2019 to run five Berlin teams, owns Atlas.")]),
    )
    assert restated.mode.value == "llm" and loose.mode.value == "llm"  # both quotes are found…
    assert restated.confidence == "HIGH"
    assert loose.confidence == "LOW"  # …but most of the second sentence is in no quote
    # Names and numbers no quote holds: verification removes the sentence, nothing is left to grade.
    assert embroidered.mode.value == "refused" and embroidered.removed_sentences == 1


def test_the_prompt_lists_the_facts_with_the_sources_they_rest_on() -> None:
    hits = [_hit("atlas", QUOTE)]
    evidence = _hit("handover", "Effective 2 September 2024, Kenji Watanabe is the Atlas on-call owner.")
    claim = ClaimRecord(
        "clm_1", "ent_atlas", "Atlas", "System", "on_call_owner", "Kenji Watanabe",
        "Effective 2 September 2024, Kenji Watanabe is the Atlas on-call owner.", Modality.FACT, Polarity.POSITIVE,
        date(2024, 9, 2), None, date(2024, 8, 26), evidence.chunk_id, evidence.doc_id, "acl_public", Tier.LLM, 0.9,
        ClaimStatus.CURRENT,
    )  # fmt: skip
    context = build_context(
        "Who is the Atlas on-call owner?",
        hits,
        claims=[claim],
        evidence={evidence.chunk_id: evidence},
        counter=EstimatedTokens(),
    )
    sources = context_sources(hits, context)
    assert [h.chunk_id for h in sources] == ["ch_atlas", "ch_handover"]  # the fact's chunk becomes source 2
    system, user = build_messages("Who is the Atlas on-call owner?", sources, context)
    assert "never state a plan" in system.content
    assert "F1: Atlas on_call_owner = Kenji Watanabe (current; valid 2024-09-02 to now" in user.content
    assert "[sources: 2]" in user.content
    plain_system, plain_user = build_messages("Who is the Atlas on-call owner?", hits)
    assert "Facts:" not in plain_user.content and "never state a plan" not in plain_system.content
