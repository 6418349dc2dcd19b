"""Composed extractive answers (kgrag_core.answering.compose) on hand-built contexts: current value with its
date then its history, plans reported as plans, negations kept, conflicts with both sides, `as_of` from the
timeline, and headings never passing as sentences. Every citation must be the exact bytes of its document."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime

from kgrag_core.answering.compose import composed_answer
from kgrag_core.answering.context import AnswerContext, FactStatus, asks_a_known_fact, build_context, merge_facts
from kgrag_core.answering.extractive import extractive_answer
from kgrag_core.answering.model import Answer
from kgrag_core.answering.verification import SupportingFact, verify_answer
from kgrag_core.extraction.model import Modality, Polarity, Tier
from kgrag_core.extraction.records import ClaimRecord, ClaimStatus
from kgrag_core.graph.model import Edge, EntityRef
from kgrag_core.graph_retrieval.searcher import EstimatedTokens, GraphFacts
from kgrag_core.search import SearchHit

# Each document is one chunk after a short preamble, so spans are document offsets, not chunk offsets.
PREAMBLE = "Intro line.\n\n"


def _doc(doc_id: str, title: str, text: str, written: date) -> tuple[SearchHit, bytes]:
    body = (PREAMBLE + text).encode("utf-8")
    start = len(PREAMBLE.encode("utf-8"))
    hit = SearchHit(
        f"ch_{doc_id}",
        doc_id,
        title,
        f"test://{doc_id}",
        "wiki",
        (title,),
        start,
        len(body),
        text,
        1.0,
        doc_time=datetime(written.year, written.month, written.day),
    )
    return hit, body


def _claim(
    hit: SearchHit,
    value: str,
    quote: str,
    *,
    attribute: str = "capacity_pallets",
    entity: str = "LEJ-2",
    status: ClaimStatus = ClaimStatus.CURRENT,
    modality: Modality = Modality.FACT,
    polarity: Polarity = Polarity.POSITIVE,
    valid_from: date | None = None,
    valid_to: date | None = None,
    superseded_by: str | None = None,
    conflicts_with: tuple[str, ...] = (),
    claim_id: str | None = None,
) -> ClaimRecord:
    assert hit.doc_time is not None
    return ClaimRecord(
        claim_id=claim_id or f"clm_{hit.doc_id}_{value}",
        entity_id=f"ent_{entity}",
        entity_name=entity,
        entity_type="Site",
        attribute=attribute,
        value=value,
        quote=quote,
        modality=modality,
        polarity=polarity,
        valid_from=valid_from,
        valid_to=valid_to,
        written_at=hit.doc_time.date(),
        chunk_id=hit.chunk_id,
        doc_id=hit.doc_id,
        acl_class_id="acl_public",
        tier=Tier.LLM,
        confidence=0.9,
        status=status,
        superseded_by=superseded_by,
        conflicts_with=conflicts_with,
    )


def _context(question: str, hits: list[SearchHit], claims: list[ClaimRecord], **kw: object) -> AnswerContext:
    return build_context(question, hits, claims=claims, counter=EstimatedTokens(), **kw)  # type: ignore[arg-type]


def _assert_exact_bytes(answer: Answer, bodies: dict[str, bytes]) -> None:
    assert answer.citations
    for c in answer.citations:
        assert bodies[c.doc_id][c.start_byte : c.end_byte].decode("utf-8") == c.quote, c


NEW, NEW_BODY = _doc(
    "profile-2024",
    "LEJ-2 site profile (July 2024)",
    "Capacity: 24,500 pallet positions after the mezzanine expansion completed in June 2024.",
    date(2024, 7, 22),
)
OLD, OLD_BODY = _doc(
    "profile-2023",
    "LEJ-2 site profile",
    "Capacity: 18,000 pallet positions, of which 2,000 are chilled.",
    date(2023, 2, 1),
)
BODIES = {NEW.doc_id: NEW_BODY, OLD.doc_id: OLD_BODY}
CURRENT = _claim(NEW, "24,500", "Capacity: 24,500 pallet positions", valid_from=date(2024, 6, 14), claim_id="clm_new")
OUTDATED = _claim(
    OLD, "18,000", "Capacity: 18,000 pallet positions", status=ClaimStatus.SUPERSEDED, superseded_by="clm_new"
)


def test_current_value_leads_with_its_date_and_citation_then_its_history() -> None:
    answer = composed_answer(_context("What is the pallet capacity of LEJ-2?", [OLD, NEW], [OUTDATED, CURRENT]))
    first, second = answer.sentences[0], answer.sentences[1]
    assert "24,500" in first.text and "14 June 2024" in first.text and "18,000" not in first.text
    assert [answer.citations[i - 1].doc_id for i in first.citation_ids] == [NEW.doc_id]
    assert second.text == "Until 14 June 2024 it was 18,000."
    # The day is the newer value's start, so the newer claim that dates it is cited beside the old one.
    assert [answer.citations[i - 1].doc_id for i in second.citation_ids] == [OLD.doc_id, NEW.doc_id]
    assert answer.conflicts == ()
    _assert_exact_bytes(answer, BODIES)


def test_the_sentences_style_quotes_the_outdated_figure_without_saying_so() -> None:
    # The comparison the eval runs: today's answerer quotes both figures, neither marked as history.
    old_style = extractive_answer("What is the pallet capacity of LEJ-2?", [OLD, NEW])
    quoted = " ".join(s.text for s in old_style.sentences)
    assert "18,000" in quoted and "Until" not in quoted


def test_a_plan_is_reported_as_a_plan_and_never_as_done() -> None:
    hit, body = _doc(
        "rfc", "RFC: Beacon database", "We will upgrade Beacon to PostgreSQL 16 in October.", date(2024, 5, 2)
    )
    plan = _claim(
        hit,
        "PostgreSQL 16",
        "We will upgrade Beacon to PostgreSQL 16 in October.",
        entity="Beacon",
        attribute="database",
        modality=Modality.PLAN,
        status=ClaimStatus.NOT_A_FACT,
    )
    answer = composed_answer(_context("Which database does Beacon use?", [hit], [plan]))
    text = answer.render()
    assert "describes a plan" in text and "none of the documents says it happened" in text
    assert "database is PostgreSQL 16" not in text
    _assert_exact_bytes(answer, {hit.doc_id: body})


def test_a_negation_is_kept() -> None:
    hit, body = _doc("memo", "Capacity memo", "The site capacity is not 30,000 pallet positions.", date(2024, 3, 1))
    negated = _claim(
        hit,
        "30,000",
        "The site capacity is not 30,000 pallet positions.",
        polarity=Polarity.NEGATIVE,
        status=ClaimStatus.NOT_A_FACT,
    )
    answer = composed_answer(_context("What is the pallet capacity of LEJ-2?", [hit], [negated]))
    text = answer.render()
    assert "LEJ-2's capacity pallets is not 30,000" in text
    assert "capacity pallets is 30,000" not in text
    _assert_exact_bytes(answer, {hit.doc_id: body})


def test_a_conflict_shows_both_sides_with_sources_and_dates_and_says_they_disagree() -> None:
    day = date(2024, 9, 3)
    a, a_body = _doc("ops-mail", "Ops e-mail", "LEJ-2 now holds 24,500 pallet positions.", day)
    b, b_body = _doc("finance-sheet", "Finance sheet", "LEJ-2 holds 22,000 pallet positions.", day)
    first = _claim(
        a, "24,500", "LEJ-2 now holds 24,500 pallet positions.", status=ClaimStatus.CONFLICT, claim_id="c1",
        conflicts_with=("c2",),
    )  # fmt: skip
    second = _claim(
        b, "22,000", "LEJ-2 holds 22,000 pallet positions.", status=ClaimStatus.CONFLICT, claim_id="c2",
        conflicts_with=("c1",),
    )  # fmt: skip
    answer = composed_answer(_context("What is the pallet capacity of LEJ-2?", [a, b], [first, second]))
    lead = answer.sentences[0]
    assert "disagree" in lead.text and "24,500" in lead.text and "22,000" in lead.text
    assert {answer.citations[i - 1].doc_id for i in lead.citation_ids} == {"ops-mail", "finance-sheet"}
    (conflict,) = answer.conflicts
    assert conflict.attribute == "capacity_pallets" and conflict.subject == "LEJ-2"
    sides = {v.value: v for v in conflict.values}
    assert set(sides) == {"24,500", "22,000"}
    assert sides["22,000"].sources[0][0] == "finance-sheet" and sides["22,000"].written_at == ("2024-09-03",)
    assert "disagree" in conflict.note
    assert answer.confidence != "HIGH"  # a conflict never reads as a sure answer
    _assert_exact_bytes(answer, {a.doc_id: a_body, b.doc_id: b_body})


def test_as_of_answers_from_the_timeline_as_the_documents_stood() -> None:
    context = _context("What is the pallet capacity of LEJ-2?", [OLD, NEW], [OUTDATED, CURRENT], as_of=date(2024, 1, 1))
    assert [f.status for f in context.facts] == [FactStatus.CURRENT]  # re-read as of the day: 18,000 was current
    answer = composed_answer(context)
    text = answer.render()
    assert text.startswith("As of 1 January 2024:") and "18,000" in text
    assert "24,500" not in text  # written later: not what the documents said that day
    _assert_exact_bytes(answer, BODIES)


def test_headings_subject_lines_titles_and_questions_are_not_sentences() -> None:
    text = (
        "# Project Lodestar: migrating Beacon to CockroachDB\n\n"
        "Subject: Beacon move to CockroachDB\n\n"
        "Should Beacon move to CockroachDB at all?\n\n"
        "Beacon will not move to CockroachDB, the decision record says.\n"
    )
    hit, body = _doc("plan", "Project Lodestar: migrating Beacon to CockroachDB", text, date(2024, 2, 20))
    old_style = extractive_answer("Did Beacon move to CockroachDB?", [hit])
    # The demo's complaint, reproduced: today's answerer quotes a subject line and a question as answers.
    assert {"Subject: Beacon move to CockroachDB", "Should Beacon move to CockroachDB at all?"} <= {
        s.text for s in old_style.sentences
    }
    answer = composed_answer(AnswerContext("Did Beacon move to CockroachDB?", (hit,)))
    assert [s.text for s in answer.sentences] == ["Beacon will not move to CockroachDB, the decision record says."]
    _assert_exact_bytes(answer, {hit.doc_id: body})


def test_field_lines_of_a_ticket_are_not_sentences_but_the_prose_after_them_is() -> None:
    """A dev case (a ticket's "Summary: …" line passed as a sentence): label lines, bold or bulleted too, are
    values, not answers; a label-like time ("At 10:05 the …") inside prose is still prose."""
    text = (
        "Customer: Halden Outdoor\n"
        "Summary: Halden asks for 4,000 extra pallet positions for Q4 peak\n"
        "**Status:** Resolved\n"
        "- Priority: P2\n\n"
        "At 10:05 the site team confirmed 4,000 extra pallet positions for Halden.\n"
    )
    hit, body = _doc("ticket", "SUP-1 Halden peak capacity", text, date(2023, 10, 2))
    question = "How many extra pallet positions did Halden ask for?"
    old_style = extractive_answer(question, [hit])
    assert any(s.text.startswith("Summary:") for s in old_style.sentences)  # the defect, reproduced
    answer = composed_answer(AnswerContext(question, (hit,)))
    assert [s.text for s in answer.sentences] == [
        "At 10:05 the site team confirmed 4,000 extra pallet positions for Halden."
    ]
    _assert_exact_bytes(answer, {hit.doc_id: body})


def _edge(rel_id: str, hit: SearchHit, polarity: Polarity, modality: Modality) -> Edge:
    assert hit.doc_time is not None
    return Edge(
        rel_id,
        EntityRef("ent_beacon", "Beacon", "System"),
        "MIGRATES_TO",
        EntityRef("ent_crdb", "CockroachDB", "System"),
        polarity,
        modality,
        None,
        None,
        (hit.chunk_id,),
        0.9,
        latest_written=hit.doc_time.date(),
        first_written=hit.doc_time.date(),
    )


def test_a_yes_no_question_about_a_cancelled_plan_answers_no_and_reports_the_plan_as_one() -> None:
    plan_hit, plan_body = _doc(
        "plan",
        "Project Lodestar: migrating Beacon to CockroachDB",
        "# Project Lodestar: migrating Beacon to CockroachDB\n\nProject Lodestar is the plan to move Beacon to "
        "a CockroachDB cluster.",
        date(2023, 5, 15),
    )
    record, record_body = _doc(
        "decision",
        "Decision record: Project Lodestar cancelled",
        "Project Lodestar is cancelled. Beacon will not move to CockroachDB.",
        date(2024, 2, 20),
    )
    edges = [
        _edge("rel_plan", plan_hit, Polarity.POSITIVE, Modality.PLAN),
        _edge("rel_no", record, Polarity.NEGATIVE, Modality.FACT),
    ]
    context = build_context(
        "Did Beacon move to CockroachDB?",
        [plan_hit, record],
        edges=edges,
        counter=EstimatedTokens(),
    )
    answer = composed_answer(context)
    first, second = answer.sentences[0], answer.sentences[1]
    # The source's title and date are on the citation, not inlined as a heading of the sentence.
    assert first.text == "No: Beacon will not move to CockroachDB."
    assert answer.citations[first.citation_ids[0] - 1].title == "Decision record: Project Lodestar cancelled"
    assert "describes a plan" in second.text and "none of the documents says it happened" in second.text
    assert all("migrating" not in c.quote for c in answer.citations)  # the heading is never the quoted answer
    assert first.fact_ids and answer.facts
    _assert_exact_bytes(answer, {plan_hit.doc_id: plan_body, record.doc_id: record_body})


def test_a_fact_whose_evidence_was_not_loaded_is_left_out() -> None:
    # The evidence map is what passed the ACL recheck: a claim on any other chunk must neither show nor cite.
    hidden, _ = _doc("salary", "Compensation bands", "LEJ-2 capacity is 99,999 pallet positions.", date(2024, 8, 1))
    secret = _claim(hidden, "99,999", "LEJ-2 capacity is 99,999 pallet positions.", claim_id="clm_secret")
    context = _context("What is the pallet capacity of LEJ-2?", [OLD], [OUTDATED, secret])
    assert all(f.value != "99,999" for f in context.facts)
    assert "99,999" not in composed_answer(context).render()


def test_the_budget_leaves_facts_out_and_says_so() -> None:
    context = _context(
        "What is the pallet capacity of LEJ-2?", [OLD, NEW], [OUTDATED, CURRENT], budget_tokens=60, fact_share=0.1
    )
    assert context.facts_left_out >= 1 and context.truncated
    assert context.left_out()["facts"] == context.facts_left_out


def test_namesakes_do_not_mix_the_answer_follows_the_sense_the_question_links_to_best() -> None:
    other, _ = _doc("namesake", "LEJ-2 forklift", "Forklift LEJ-2 holds 9 pallet positions.", date(2024, 8, 1))
    namesake = replace(
        _claim(other, "9", "Forklift LEJ-2 holds 9 pallet positions."), entity_id="ent_forklift", claim_id="clm_9"
    )
    weights = {"ent_LEJ-2": 0.6, "ent_forklift": 0.3}
    context = _context(
        "What is the pallet capacity of LEJ-2?",
        [OLD, NEW, other],
        [OUTDATED, CURRENT, namesake],
        entity_weights=weights,
    )
    answer = composed_answer(context)
    assert answer.sentences[0].text.startswith("LEJ-2's capacity pallets is 24,500")
    assert all(" 9 " not in s.text and not s.text.endswith(" 9.") for s in answer.sentences[:2])
    assert all(f["value"] != "9" for f in answer.facts)


def test_two_facts_stated_by_one_sentence_give_that_sentence_once() -> None:
    hit, body = _doc(
        "moved",
        "Beacon migration done",
        "Beacon moved to CockroachDB in March. The old cluster was retired.",
        date(2024, 3, 30),
    )
    # Two relations between the same two entities, both stated by the document's first sentence.
    edges = [
        _edge("rel_a", hit, Polarity.POSITIVE, Modality.FACT),
        replace(_edge("rel_b", hit, Polarity.POSITIVE, Modality.FACT), relation="RUNS_ON"),
    ]
    context = build_context("How is Beacon related to CockroachDB?", [hit], edges=edges, counter=EstimatedTokens())
    answer = composed_answer(context)
    texts = [s.text for s in answer.sentences]
    assert texts and len(texts) == len(set(texts)), texts
    assert any("Beacon moved to CockroachDB" in t for t in texts)
    _assert_exact_bytes(answer, {hit.doc_id: body})


def test_an_outdated_value_is_told_only_as_history_never_in_a_supporting_sentence() -> None:
    """A dev case (temporal): a third chunk still says 18,000 in prose; after "… is 24,500, since …" and
    "Until … it was 18,000." that sentence would state the old figure as current, so it is left out, while a
    sentence naming both figures stays."""
    notes, notes_body = _doc(
        "ops-notes",
        "LEJ-2 ops notes",
        "LEJ-2 stores up to 18,000 pallet positions for Brightwater. LEJ-2 has 24,500 pallet positions since "
        "the June 2024 expansion, up from 18,000.",
        date(2023, 9, 1),
    )
    question = "What is the pallet capacity of LEJ-2?"
    answer = composed_answer(_context(question, [notes, OLD, NEW], [OUTDATED, CURRENT]))
    texts = [s.text for s in answer.sentences]
    assert texts[0].startswith("LEJ-2's capacity pallets is 24,500") and "Until 14 June 2024 it was 18,000." in texts
    assert "LEJ-2 stores up to 18,000 pallet positions for Brightwater." not in texts
    assert any("up from 18,000" in t for t in texts), texts  # history beside the current value: kept
    _assert_exact_bytes(answer, {**BODIES, notes.doc_id: notes_body})


def _relation(rel_id: str, hit: SearchHit, subject: EntityRef, relation: str, obj: EntityRef) -> Edge:
    assert hit.doc_time is not None
    day = hit.doc_time.date()
    return Edge(rel_id, subject, relation, obj, Polarity.POSITIVE, Modality.FACT, None, None, (hit.chunk_id,), 0.9,
                latest_written=day, first_written=day)  # fmt: skip


def test_a_proposal_labelled_as_fact_is_never_answered_yes() -> None:
    """A dev case: "Yes: We propose opening a small engineering office in Lisbon …" — a relation whose only
    sentence proposes it is reported as a plan."""
    hit, body = _doc("lisbon", "Lisbon office proposal", "We propose opening an engineering office in Lisbon.",
                     date(2023, 11, 6))  # fmt: skip
    edge = _relation(
        "rel_lisbon",
        hit,
        EntityRef("ent_nw", "Northwind", "Org"),
        "OPENS_OFFICE_IN",
        EntityRef("ent_l", "Lisbon", "Place"),
    )
    context = build_context("Did Northwind open an office in Lisbon?", [hit], edges=[edge], counter=EstimatedTokens())
    answer = composed_answer(context)
    texts = [s.text for s in answer.sentences]
    assert texts and not any(t.startswith("Yes") for t in texts), texts
    assert any("describes a plan" in t and "none of the documents says it happened" in t for t in texts), texts
    _assert_exact_bytes(answer, {hit.doc_id: body})


def test_a_verdict_needs_a_relation_between_what_the_question_names() -> None:
    """A dev case: "Did the Brio AMR pilot run at the Leipzig warehouse?" was answered "Yes:" by a sentence
    about Harbor running at Leipzig. The positive control: asked about Harbor, the same fact answers "Yes"."""
    hit, body = _doc("harbor", "Harbor sites", "Harbor runs at the Leipzig warehouse.", date(2024, 1, 5))
    edge = _relation(
        "rel_runs", hit, EntityRef("ent_h", "Harbor", "System"), "RUNS_AT", EntityRef("ent_lej", "Leipzig", "Site")
    )

    def first(question: str) -> str:
        context = build_context(question, [hit], edges=[edge], counter=EstimatedTokens())
        answer = composed_answer(context)
        _assert_exact_bytes(answer, {hit.doc_id: body})
        return answer.sentences[0].text

    assert not first("Did the Brio robot pilot run at the Leipzig warehouse?").startswith("Yes")
    assert first("Does Harbor run at the Leipzig warehouse?") == "Yes: Harbor runs at the Leipzig warehouse."


def test_a_month_is_not_a_hedge_but_a_proposal_is() -> None:
    from kgrag_core.answering.verification import hedged

    assert not hedged("Harbor was down in May 2024.") and not hedged("Harbor has run at LEJ-2 since May.")
    assert hedged("We propose opening an office in Lisbon.") and hedged("Harbor may move to CHI-3.")
    assert hedged("May we open an office in Lisbon?")  # the opening modal is still one


def test_a_value_superseded_in_a_sibling_timeline_is_not_stated_as_current() -> None:
    """A dev case (q27's shape): "Beacon's sla" and "Kestrel Pharma's sla" both answer "What SLA applies to
    Kestrel now?". An old contract gives Beacon's sla 99.5% with no successor of its own, while Kestrel's
    timeline shows 99.5% superseded by 99.9%: 99.5% is history in the answer, never a current value."""
    old, old_body = _doc("contract-2023", "Kestrel contract 2023", "Beacon availability SLA: 99.5% per month.",
                         date(2023, 1, 10))  # fmt: skip
    new, new_body = _doc("amendment-2025", "Kestrel amendment", "From January 2025 the SLA is 99.9% per month.",
                         date(2024, 12, 1))  # fmt: skip
    beacon = _claim(old, "99.5%", "Beacon availability SLA: 99.5% per month.", attribute="sla", entity="Beacon",
                    claim_id="b_old")  # fmt: skip
    kestrel_old = _claim(old, "99.5%", "Beacon availability SLA: 99.5% per month.", attribute="sla",
                         entity="Kestrel Pharma", status=ClaimStatus.SUPERSEDED, superseded_by="k_new",
                         claim_id="k_old")  # fmt: skip
    kestrel_new = _claim(new, "99.9%", "From January 2025 the SLA is 99.9% per month.", attribute="sla",
                         entity="Kestrel Pharma", valid_from=date(2025, 1, 1), claim_id="k_new")  # fmt: skip
    question = "What Beacon availability SLA applies to Kestrel Pharma now?"
    answer = composed_answer(_context(question, [old, new], [beacon, kestrel_old, kestrel_new]))
    texts = [s.text for s in answer.sentences]
    assert texts[0] == "Kestrel Pharma's sla is 99.9%, since 1 January 2025.", texts
    stating_old = [t for t in texts if "99.5%" in t]
    assert stating_old and all(t.startswith(("Until", "Earlier")) for t in stating_old), texts
    _assert_exact_bytes(answer, {old.doc_id: old_body, new.doc_id: new_body})
    # The positive control: without Kestrel's timeline nothing says 99.5% is over, and it is stated as current.
    alone = composed_answer(_context(question, [old], [beacon]))
    assert alone.sentences[0].text.startswith("Beacon's sla is 99.5%"), [s.text for s in alone.sentences]


def test_a_conflict_whose_one_side_is_a_record_field_is_still_surfaced_with_both_sides() -> None:
    """A record's field line ("owns: Atlas") is no sentence of the answer, but a side of a conflict it is: the
    composed sentence names both sides and cites the field line. Positive control: the prose side alone is
    stated as a plain negation, with no conflict."""
    day = date(2025, 6, 3)
    record, record_body = _doc("record-team-routing", "Team: Routing", "name: Routing\nowns: Atlas", day)
    memo, memo_body = _doc("memo", "Ownership memo", "The Routing team does not own Atlas any more.", day)
    routing, atlas = EntityRef("ent_routing", "Routing", "Team"), EntityRef("ent_atlas", "Atlas", "System")
    owns = _relation("rel_owns", record, routing, "OWNS", atlas)
    disowns = replace(_relation("rel_disowns", memo, routing, "OWNS", atlas), polarity=Polarity.NEGATIVE)
    question = "Does the Routing team own Atlas?"
    both = build_context(question, [record, memo], edges=[owns, disowns], counter=EstimatedTokens())
    answer = composed_answer(both)
    lead = answer.sentences[0]
    assert "disagree" in lead.text and "says it does," in lead.text and "says it does not" in lead.text
    assert {answer.citations[i - 1].doc_id for i in lead.citation_ids} == {"record-team-routing", "memo"}
    assert any(c.quote == "owns: Atlas" for c in answer.citations)
    assert all(s.text != "owns: Atlas." for s in answer.sentences)  # the field line is cited, not stated
    (conflict,) = answer.conflicts
    assert {v.value for v in conflict.values} == {"yes", "no"}
    _assert_exact_bytes(answer, {record.doc_id: record_body, memo.doc_id: memo_body})

    alone = composed_answer(build_context(question, [memo], edges=[disowns], counter=EstimatedTokens()))
    assert alone.conflicts == () and "does not own Atlas" in alone.render()


def test_without_facts_a_newer_document_restating_other_figures_leads_and_the_older_is_history() -> None:
    """A dev case (d02): no claim covers the hotel cap, and the 2023 policy's "$220" led the answer before the
    2024 update's "$190". Positive control: with one document only, its sentence is stated as it is."""
    old, old_body = _doc("policy-2023", "Expense policy (2023)",
                         "The hotel cap is €160 per night in EU cities and $220 per night in US cities.",
                         date(2023, 2, 15))  # fmt: skip
    new, new_body = _doc("policy-2024", "Expense policy update (2024)",
                         "The hotel cap is lowered to €140 per night in EU cities and $190 per night in US cities.",
                         date(2024, 2, 1))  # fmt: skip
    question = "What is the hotel cap per night in US cities now?"
    answer = composed_answer(_context(question, [old, new], []))
    texts = [s.text for s in answer.sentences]
    assert "$190" in texts[0] and "$220" not in texts[0], texts
    assert texts[1] == f"Earlier, written 15 February 2023: {old.text}", texts
    assert answer.citations[answer.sentences[1].citation_ids[0] - 1].doc_id == "policy-2023"
    _assert_exact_bytes(answer, {old.doc_id: old_body, new.doc_id: new_body})

    alone = composed_answer(_context(question, [old], []))
    assert [s.text for s in alone.sentences] == [old.text]


def test_a_restatement_that_differs_only_in_its_dates_is_no_older_value() -> None:
    """Restatement rule: "Earlier, written …" only when the value differs. Two documents naming one owner with
    different dates state the same thing (the demo's owner question was told twice, the older as history).
    The positive control is the test above: other figures make the older sentence history."""
    old, old_body = _doc("handover", "On-call handover",
                         "Kenji Watanabe is the Atlas on-call owner from 1 September 2024 onwards.",
                         date(2024, 8, 20))  # fmt: skip
    new, new_body = _doc("policy-2025", "On-call policy (2025)",
                         "Kenji Watanabe is the Atlas on-call owner since September 2024, as agreed in 2024.",
                         date(2025, 2, 3))  # fmt: skip
    answer = composed_answer(_context("Who is the Atlas on-call owner?", [old, new], []))
    texts = [s.text for s in answer.sentences]
    assert texts and not any(t.startswith("Earlier, written") for t in texts), texts
    assert {old.text, new.text} <= set(texts), texts
    _assert_exact_bytes(answer, {old.doc_id: old_body, new.doc_id: new_body})


def test_a_chunk_sentence_naming_a_value_only_ever_planned_is_told_as_a_plan() -> None:
    """Plans as done (issue 11): the plan document's own sentence ("Beacon moves to CockroachDB in Q3 2023")
    has no plan word, so quoted as it is it states the plan as done. It is told as a plan. Positive
    control: once a fact states the value as done, the same sentence stands as written."""
    plan_text = "Beacon moves to CockroachDB in Q3 2023 under Project Lodestar."
    plan_doc, plan_body = _doc("lodestar-plan", "Project Lodestar", plan_text, date(2023, 5, 15))
    planned = _claim(plan_doc, "CockroachDB", "Beacon moves to CockroachDB", attribute="database", entity="Beacon",
                     status=ClaimStatus.NOT_A_FACT, modality=Modality.PLAN)  # fmt: skip
    question = "Which database is Project Lodestar about?"
    answer = composed_answer(_context(question, [plan_doc], [planned]))
    texts = [s.text for s in answer.sentences]
    assert texts == [
        "A source written 15 May 2023 describes a plan: Beacon moves to CockroachDB in Q3 2023 under Project "
        "Lodestar; none of the documents says it happened."
    ], texts
    _assert_exact_bytes(answer, {plan_doc.doc_id: plan_body})
    # The answer path's verifier keeps it: the date is the cited source's own (its title and date back it).
    source = SupportingFact(f"{plan_doc.title} 2023-05-15", (plan_doc.chunk_id,))
    assert verify_answer(answer, [source]).sentences == answer.sentences

    done = replace(planned, status=ClaimStatus.CURRENT, modality=Modality.FACT, claim_id="clm_done")
    stated = composed_answer(_context(question, [plan_doc], [done]))
    assert plan_doc.text in [s.text for s in stated.sentences]


def test_a_named_entitys_current_claim_joins_the_context_only_through_readable_evidence() -> None:
    """Retrieval missed the chunk holding the current value (dev d04, d05, d07): the named entity's claims
    read for the question join the walk's, and their evidence chunk (loaded through the ACL recheck) lets the
    answer lead with the current value. An outsider's recheck loads no chunk of the restricted memo, so its
    claim never appears, not even as history; the reader who may open it gets it (positive control)."""
    memo, memo_body = _doc("memo-2025", "Headcount update (restricted)",
                           "Engineering headcount is 61 as of 1 March 2025.", date(2025, 3, 14))  # fmt: skip
    current = _claim(memo, "61", "Engineering headcount is 61", attribute="headcount", entity="Engineering",
                     valid_from=date(2025, 3, 1), claim_id="clm_61")  # fmt: skip
    older = _claim(OLD, "64", "Capacity: 18,000 pallet positions", attribute="headcount", entity="Engineering",
                   status=ClaimStatus.SUPERSEDED, superseded_by="clm_61")  # fmt: skip
    question = "How many people work in engineering these days?"
    walk = GraphFacts((), {}, (OLD,))  # the walk reached nothing about the question's entity
    assert not asks_a_known_fact(question, walk.claims) and asks_a_known_fact(question, [current])

    def answer(evidence: tuple[SearchHit, ...]) -> Answer:
        named = GraphFacts((current, older), {"ent_Engineering": 1.0}, evidence)
        facts = merge_facts(walk, named)
        loaded = {h.chunk_id: h for h in facts.fact_evidence}
        ctx = build_context(question, [OLD], claims=facts.claims, evidence=loaded, counter=EstimatedTokens())
        return composed_answer(ctx)

    reader = answer((memo, OLD))
    assert "61" in reader.sentences[0].text and "1 March 2025" in reader.sentences[0].text
    _assert_exact_bytes(reader, {memo.doc_id: memo_body, OLD.doc_id: OLD_BODY})

    outsider = answer((OLD,))  # the recheck refused the memo's chunk
    assert all("61" not in s.text for s in outsider.sentences)
    assert all(c.doc_id != memo.doc_id for c in outsider.citations)
    assert all(f["value"] != "61" for f in outsider.facts)


def test_a_sentence_two_copies_of_a_message_give_is_said_once_citing_both() -> None:
    """Dev c02: the support email and its Customer Success copy gave the answer the same sentence twice."""
    line = "From 15 April 2024 the first-response target changes from 8 to 4 business hours."
    first, first_body = _doc("frt", "First-response target", line, date(2024, 4, 2))
    copy, copy_body = _doc("frt-cs", "First-response target (copy)", line, date(2024, 4, 3))
    answer = composed_answer(_context("What is the first-response target from 15 April 2024?", [first, copy], []))
    assert [s.text for s in answer.sentences] == [line]
    assert {c.doc_id for c in answer.citations} == {"frt", "frt-cs"}
    _assert_exact_bytes(answer, {first.doc_id: first_body, copy.doc_id: copy_body})


def test_a_possessive_names_the_entity_so_its_claim_is_the_focus() -> None:
    """Dev c03, c05: "What is Kenji Watanabe's role?" read the term "watanabe'", so no claim was the focus and
    the answer abstained although the claims table had the role. Control: a question naming someone else."""
    hit, _ = _doc("policy", "On-call policy", "Kenji Watanabe has been the Atlas on-call owner since 2024.",
                  date(2025, 2, 3))  # fmt: skip
    role = _claim(hit, "Atlas on-call owner", "Kenji Watanabe has been the Atlas on-call owner", attribute="role",
                  entity="Kenji Watanabe")  # fmt: skip
    asked = _context("What is Kenji Watanabe's role?", [hit], [role])
    assert [f.focus for f in asked.facts] == [True]
    assert "Atlas on-call owner" in composed_answer(asked).sentences[0].text
    other = _context("What is Tom Becker's role?", [hit], [role])
    assert [f.focus for f in other.facts] == [False]


def test_a_quoted_sentence_holding_a_disputed_claim_brings_the_dispute_into_the_answer() -> None:
    """Dev c01: the answer quoted one sentence of two values the claims table holds in conflict, and said
    nothing of the conflict. Now it says so, with both sides (here one source: "more than one"); across two
    documents, "the sources disagree". Control: the same claims not in conflict add nothing."""
    line = "Failed trackers are replaced within five working days in NL and ten working days in the US."
    hit, body = _doc("tidewave", "Vendor profile: Tidewave", line, date(2023, 6, 5))
    five = _claim(hit, "5 working days", "within five working days", attribute="response_target", entity="Tidewave",
                  status=ClaimStatus.CONFLICT, conflicts_with=("clm_ten",), claim_id="clm_five")  # fmt: skip
    ten = _claim(hit, "10 working days", "ten working days", attribute="response_target", entity="Tidewave",
                 status=ClaimStatus.CONFLICT, conflicts_with=("clm_five",), claim_id="clm_ten")  # fmt: skip
    question = "How many working days does a tracker replacement take?"
    answer = composed_answer(_context(question, [hit], [five, ten]))
    texts = [s.text for s in answer.sentences]
    assert any("more than one" in t and "5 working days" in t and "10 working days" in t for t in texts), texts
    assert line in texts and len(answer.conflicts) == 1
    _assert_exact_bytes(answer, {hit.doc_id: body})
    ctx = _context(question, [hit], [five, ten])
    support = [SupportingFact(f"{f.render()} {hit.title} 2023-06-05", f.evidence_chunk_ids) for f in ctx.facts]
    assert verify_answer(answer, support).sentences == answer.sentences  # the answer path keeps it

    settled = [replace(c, status=ClaimStatus.CURRENT, conflicts_with=()) for c in (five, ten)]
    plain = composed_answer(_context(question, [hit], settled))
    assert [s.text for s in plain.sentences] == [line] and plain.conflicts == ()


def test_history_dated_by_the_newer_values_start_cites_the_newer_value_too() -> None:
    """Dev c05: "Until 1 September 2024 it was software engineer." cited only the older claim, whose quote and
    fact hold no such day, so the verifier removed it. It cites the newer claim that dates it. Control: a
    value the text itself closes ("until 14 June") is dated by its own claim and cites only that."""
    new, _ = _doc("policy", "On-call policy", "Kenji has been the Atlas on-call owner since September 2024.",
                  date(2025, 2, 3))  # fmt: skip
    old, _ = _doc("directory", "People directory", "Kenji Watanabe, software engineer, Routing.", date(2023, 3, 20))
    now = _claim(new, "Atlas on-call owner", "Kenji has been the Atlas on-call owner", attribute="role",
                 entity="Kenji", valid_from=date(2024, 9, 1), claim_id="clm_now")  # fmt: skip
    was = _claim(old, "software engineer", "software engineer", attribute="role", entity="Kenji",
                 status=ClaimStatus.SUPERSEDED, superseded_by="clm_now")  # fmt: skip
    ctx = _context("What is Kenji's role?", [new, old], [now, was])
    answer = composed_answer(ctx)
    history = next(s for s in answer.sentences if s.text.startswith("Until 1 September 2024"))
    assert {answer.citations[i - 1].doc_id for i in history.citation_ids} == {"policy", "directory"}
    support = [SupportingFact(f.render(), f.evidence_chunk_ids) for f in ctx.facts]
    assert history in verify_answer(answer, support).sentences

    ended = replace(OUTDATED, valid_to=date(2024, 6, 14))
    closed = composed_answer(_context("What is the pallet capacity of LEJ-2?", [OLD, NEW], [ended, CURRENT]))
    (until,) = [s for s in closed.sentences if s.text.startswith("Until")]
    assert [closed.citations[i - 1].doc_id for i in until.citation_ids] == [OLD.doc_id]
