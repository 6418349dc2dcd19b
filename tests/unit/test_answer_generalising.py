"""Issue 11, stop 24: answer mechanisms that do not depend on how a question is worded (core, no I/O).

Lower-case names link for the answer's facts read; a plan-only value never appears unhedged whatever the
answerer; two values dated by different start days are a timeline while a repost that changes a name stays a
conflict; a figure a newer source calls replaced is history in an older sentence; a sentence written before
its subject was called off is told as a plan; the composed picker meets inflections the stemmer leaves apart.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from kgrag_core.answering.compose import composed_answer
from kgrag_core.answering.context import FactStatus, build_context, sequenced
from kgrag_core.answering.extractive import ExtractiveSettings, extractive_answer
from kgrag_core.answering.model import Answer, AnswerMode, AnswerSentence, cite
from kgrag_core.answering.verification import PLAN_AS_FACT, SupportingFact, verify_answer
from kgrag_core.extraction.records import ClaimStatus
from kgrag_core.graph_retrieval.linking import candidate_spans, link_entities
from kgrag_core.graph_retrieval.searcher import EstimatedTokens
from kgrag_core.search import SearchHit
from tests.unit.test_answer_composition import _assert_exact_bytes, _claim, _doc
from tests.unit.test_graph_retrieval_doubles import PUBLIC, SECRET, InMemoryGraph

VISIBLE = [PUBLIC.acl_class_id]


def test_lower_case_names_link_only_when_asked_and_only_to_an_entity_of_exactly_that_name() -> None:
    graph = InMemoryGraph()
    team = graph.add_entity("team_eng", "Engineering", "Team")
    pilot = graph.add_entity("prj_amr", "AMR pilot", "Project")
    memo = graph.add_entity("team_fin", "Finance", "Team")
    graph.add_edge(team, "USES", pilot, ["c1"])
    graph.add_edge(memo, "USES", pilot, ["c2"], acl=SECRET.acl_class_id)
    question = "How many people work in engineering and did the AMR pilot run?"
    assert link_entities(question, graph, VISIBLE) == []  # the walk's seeds: capitalised spans only, as before
    linked = link_entities(question, graph, VISIBLE, lowercase=True)
    assert {c.entity.entity.entity_id for lm in linked for c in lm.candidates} == {"team_eng", "prj_amr"}
    assert all(lm.mention.kind == "lower" for lm in linked if lm.mention.text == "engineering")
    # Function words never open or close a span, and an entity seen only through unreadable evidence never links;
    # a reader who may see it does (positive control).
    assert not {m.text for m in candidate_spans("Is it still on for them?", lowercase=True)} & {"it", "on", "them"}
    assert link_entities("what does finance use?", graph, VISIBLE, lowercase=True) == []
    assert link_entities("what does finance use?", graph, None, lowercase=True)[0].candidates[0].entity.entity.name == (
        "Finance"
    )


PLAN, _ = _doc("rfc", "RFC: move Beacon", "Beacon moves to CockroachDB in Q3.", date(2023, 5, 1))
DONE, _ = _doc("notes", "Arch notes", "Beacon moved to CockroachDB last night.", date(2023, 9, 1))


def _one(text: str, hit: SearchHit) -> Answer:
    """A model's one-sentence answer quoting the whole of `hit` (the quote check passes)."""
    citation = cite(1, hit, hit.start_byte, hit.end_byte, hit.text)
    return Answer("Did Beacon move?", AnswerMode.LLM, (AnswerSentence(text, (1,)),), (citation,), "", "HIGH")


def test_a_plan_only_value_is_never_stated_as_done_by_any_answerer_but_another_sources_statement_stands() -> None:
    planned = SupportingFact("F1: Beacon database = CockroachDB (plan)", (PLAN.chunk_id,), planned="CockroachDB")
    # The plan's own words, quoted exactly, pass the quote check but not the guard.
    removed = verify_answer(_one("Beacon moves to CockroachDB in Q3.", PLAN), [planned])
    assert removed.mode is AnswerMode.REFUSED and removed.removed[0].reason == PLAN_AS_FACT
    # Hedged, it stays.
    hedged = verify_answer(_one("Beacon plans to move to CockroachDB in Q3.", PLAN), [planned])
    assert len(hedged.sentences) == 1
    # Another document that says plainly it happened is a source, not the plan (positive control).
    kept = verify_answer(_one("Beacon moved to CockroachDB last night.", DONE), [planned])
    assert len(kept.sentences) == 1
    # A bare figure is a plan only beside its subject.
    headcount = SupportingFact(
        "F2: Engineering headcount = 58 (plan)", (PLAN.chunk_id,), planned="58", subject="Beacon"
    )
    assert len(verify_answer(_one("Beacon moves to CockroachDB in Q3.", PLAN), [headcount]).sentences) == 1


MEMO, MEMO_BODY = _doc(
    "memo",
    "Headcount update",
    "Engineering headcount is 61 as of 1 March 2025. We ended June 2024 at 58.",
    date(2025, 3, 14),
)


def test_values_dated_by_different_start_days_are_a_timeline_and_a_same_day_repost_stays_a_conflict() -> None:
    now = _claim(MEMO, "61", "Engineering headcount is 61", attribute="headcount", entity="Engineering",
                 status=ClaimStatus.CONFLICT, valid_from=date(2025, 3, 1), conflicts_with=("clm_58",),
                 claim_id="clm_61")  # fmt: skip
    then = _claim(MEMO, "58", "We ended June 2024 at 58", attribute="headcount", entity="Engineering",
                  status=ClaimStatus.CONFLICT, valid_from=date(2024, 6, 30), conflicts_with=("clm_61",),
                  claim_id="clm_58")  # fmt: skip
    read = {c.claim_id: c for c in sequenced([now, then])}
    assert read["clm_61"].status is ClaimStatus.CURRENT and read["clm_58"].status is ClaimStatus.SUPERSEDED
    assert read["clm_58"].superseded_by == "clm_61" and not read["clm_61"].conflicts_with
    ctx = build_context("What is the engineering headcount now?", [MEMO], claims=[now, then], counter=EstimatedTokens())
    answer = composed_answer(ctx)
    assert answer.sentences[0].text.startswith("Engineering's headcount is 61, since 1 March 2025")
    assert not answer.conflicts
    _assert_exact_bytes(answer, {MEMO.doc_id: MEMO_BODY})
    # The repost rule: no start day on either side (or the same one) says nothing of which came later.
    lars, mei = replace(now, valid_from=None), replace(then, valid_from=None)
    assert {c.status for c in sequenced([lars, mei])} == {ClaimStatus.CONFLICT}
    same = [replace(now, valid_from=date(2024, 3, 12)), replace(then, valid_from=date(2024, 3, 12))]
    assert {c.status for c in sequenced(same)} == {ClaimStatus.CONFLICT}
    ctx = build_context("How big is engineering?", [MEMO], claims=[lars, mei], counter=EstimatedTokens())
    assert {f.status for f in ctx.facts} == {FactStatus.CONFLICT}


def test_an_older_sentence_stating_a_figure_a_newer_source_calls_replaced_is_history() -> None:
    old, old_body = _doc("vendor", "Vendor profile", "Our cloud spend is about €182,000 per month, billed in euros.",
                         date(2023, 2, 27))  # fmt: skip
    new, new_body = _doc("invoice", "Spend update",
                         "The cloud invoice came in at €141,000, down from €182,000 a month.",
                         date(2024, 12, 16))  # fmt: skip
    ctx = build_context("What is our cloud spend per month?", [old, new], counter=EstimatedTokens())
    answer = composed_answer(ctx)
    texts = [s.text for s in answer.sentences]
    assert texts[0].startswith("The cloud invoice came in at €141,000")
    assert (
        texts[1] == "Earlier, written 27 February 2023: Our cloud spend is about €182,000 per month, billed in euros."
    )
    _assert_exact_bytes(answer, {old.doc_id: old_body, new.doc_id: new_body})
    # Without the newer source, the older sentence is the answer as written (positive control).
    alone = composed_answer(build_context("What is our cloud spend per month?", [old], counter=EstimatedTokens()))
    assert alone.sentences[0].text.startswith("Our cloud spend is about €182,000")


def test_a_sentence_written_before_its_subject_was_called_off_is_told_as_a_plan() -> None:
    plan, plan_body = _doc("pilot", "Robot pilot", "A three-month pilot of 12 robots from Brio starts in Q2 2024.",
                           date(2023, 12, 4))  # fmt: skip
    ops, ops_body = _doc("ops", "Ops notes", "The Brio robot pilot is postponed indefinitely.", date(2024, 4, 9))
    planned = _claim(plan, "planned", "A three-month pilot of 12 robots", attribute="status", entity="Brio pilot",
                     status=ClaimStatus.SUPERSEDED, superseded_by="clm_off")  # fmt: skip
    off = _claim(ops, "postponed indefinitely", "The Brio robot pilot is postponed indefinitely", attribute="status",
                 entity="Brio pilot", claim_id="clm_off")  # fmt: skip
    ctx = build_context("How many robots did the Brio pilot use?", [plan], claims=[planned, off],
                        evidence={ops.chunk_id: ops}, counter=EstimatedTokens())  # fmt: skip
    answer = composed_answer(ctx)
    told = [s.text for s in answer.sentences if "12 robots" in s.text]
    assert told and all("describes a plan" in t and "none of the documents says it happened" in t for t in told)
    _assert_exact_bytes(answer, {plan.doc_id: plan_body, ops.doc_id: ops_body})


def test_the_composed_picker_meets_inflections_and_contractions_the_old_picker_does_not() -> None:
    hit, _ = _doc("policy", "Travel policy", "The hotel cap is €140 per night in EU cities, including taxes.",
                  date(2024, 2, 1))  # fmt: skip
    question = "What's the nightly hotel allowance for a trip to an EU city?"
    assert extractive_answer(question, [hit]).mode is AnswerMode.ABSTAINED  # the old picker, unchanged
    loose = extractive_answer(question, [hit], ExtractiveSettings(prose_only=True, loose_terms=True))
    assert loose.sentences[0].text.startswith("The hotel cap is €140")
    # Still no answer from a merely nearby sentence (an unanswerable question stays unanswered).
    assert extractive_answer(
        "What does the parking garage cost?", [hit], ExtractiveSettings(loose_terms=True)
    ).mode is (AnswerMode.ABSTAINED)


def test_a_field_line_answers_only_when_no_prose_sentence_does() -> None:
    notes, _ = _doc("notes", "Routing weekly",
                    "## On-call\n\n- Next on-call primary: Mei (18–24 March), secondary Lars.",
                    date(2024, 3, 13))  # fmt: skip
    question = "Who was secondary on call for 18–24 March?"
    strict = ExtractiveSettings(prose_only=True)
    assert extractive_answer(question, [notes], strict).mode is AnswerMode.ABSTAINED
    answer = extractive_answer(question, [notes], replace(strict, label_lines=True))
    assert answer.sentences[0].text == "Next on-call primary: Mei (18–24 March), secondary Lars."


def test_two_copies_of_one_record_that_differ_are_said_to_disagree_with_both_quoted() -> None:
    """The repost rule: the same notes posted a day later with primary and secondary swapped are a conflict
    (no later valid time, no correction said), not an update; a single copy is quoted as it is."""
    first, first_body = _doc("weekly", "Routing weekly — 12 March", "Next on-call primary: Lars (18–24 March), "
                             "secondary Mei, for the week.", date(2024, 3, 12))  # fmt: skip
    repost, repost_body = _doc("weekly-repost", "Routing weekly — 12 March", "Next on-call primary: Mei (18–24 "
                               "March), secondary Lars, for the week.", date(2024, 3, 13))  # fmt: skip
    question = "Who was the primary on call for 18–24 March?"
    answer = composed_answer(build_context(question, [repost, first], counter=EstimatedTokens()))
    lead = answer.sentences[0].text
    assert lead.startswith("The copies of “Routing weekly — 12 March” written 12 March 2024 and written 13 March 2024")
    assert "12 March 2024" in lead and "13 March 2024" in lead
    assert {s.text for s in answer.sentences[1:]} >= {first.text, repost.text}
    assert answer.conflicts and [v.written_at for v in answer.conflicts[0].values] == [("2024-03-12",), ("2024-03-13",)]
    assert verify_answer(answer, _sources(first, repost)).sentences == answer.sentences
    _assert_exact_bytes(answer, {first.doc_id: first_body, repost.doc_id: repost_body})
    alone = composed_answer(build_context(question, [first], counter=EstimatedTokens()))
    assert [s.text for s in alone.sentences] == [first.text] and not alone.conflicts


def _sources(*hits: SearchHit) -> list[SupportingFact]:
    """What the answer path lets back a sentence besides its quotes: each source's title and date."""
    return [SupportingFact(f"{h.title} {h.doc_time.date().isoformat() if h.doc_time else ''}", (h.chunk_id,))
            for h in hits]  # fmt: skip


def test_a_question_naming_one_entity_and_no_attribute_asks_what_changed_and_days_read_as_written() -> None:
    freeze, body = _doc("lifted", "Travel freeze lifted", "The travel freeze is lifted from today.", date(2025, 1, 6))
    start, start_body = _doc("freeze", "Travel freeze", "All travel is frozen from today.", date(2024, 1, 8))
    lifted = _claim(freeze, "lifted", "The travel freeze is lifted", attribute="status", entity="travel freeze",
                    valid_from=date(2025, 1, 6), claim_id="clm_lifted")  # fmt: skip
    frozen = _claim(start, "frozen", "All travel is frozen", attribute="status", entity="travel freeze",
                    status=ClaimStatus.SUPERSEDED, superseded_by="clm_lifted")  # fmt: skip
    ends = _claim(start, "2024-06-30", "All travel is frozen", attribute="contract_end", entity="travel freeze")
    ctx = build_context("Is the travel freeze still on?", [freeze, start], claims=[lifted, frozen, ends],
                        counter=EstimatedTokens())  # fmt: skip
    answer = composed_answer(ctx)
    assert answer.sentences[0].text == "travel freeze's status is lifted, since 6 January 2025."
    assert answer.sentences[1].text.startswith("Until 6 January 2025 it was frozen")
    _assert_exact_bytes(answer, {freeze.doc_id: body, start.doc_id: start_body})
    # Two named things: nothing says whose change is asked, so no attribute is chosen for the question.
    kestrel = replace(ends, entity_id="ent_k", entity_name="Kestrel Pharma")
    both = build_context("Is the travel freeze still on for Kestrel Pharma?", [freeze, start],
                         claims=[lifted, frozen, kestrel], counter=EstimatedTokens())  # fmt: skip
    assert {f.subject for f in both.facts} == {"travel freeze", "Kestrel Pharma"}
    assert not any(f.focus for f in both.facts)
    # A possessive names an owner, not what changed ("the travel freeze's exemptions").
    owned = build_context("What are the travel freeze's exemptions?", [freeze, start], claims=[lifted, frozen],
                          counter=EstimatedTokens())  # fmt: skip
    assert not any(f.focus for f in owned.facts)
    # A normalised day is told in the documents' own form.
    dated = build_context(
        "When does the travel freeze contract end?", [start], claims=[ends], counter=EstimatedTokens()
    )
    assert composed_answer(dated).sentences[0].text.startswith("travel freeze's contract end is 30 June 2024")
