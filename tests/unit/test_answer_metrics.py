"""Answer metrics (kgrag_core/evaluation/answer_metrics.py) and the answers section of the eval report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kgrag_core.answering.model import Answer, AnswerMode, AnswerSentence, Citation
from kgrag_core.evaluation.answer_metrics import answer_metrics, sentence_supported
from kgrag_core.evaluation.questions import parse_questions
from kgrag_core.graph_retrieval.router import RuleRouter
from kgrag_runtime.evaluation.runner import run_evaluation
from tests.unit.test_graph_eval_metrics import _app

ADMIN = {"user": "ann", "groups": []}


def _q(**fields: object) -> Any:
    raw = {"id": "x", "question": "?", "type": "temporal", "gold": {"d": 2}, "principal": ADMIN, **fields}
    return parse_questions([json.dumps(raw)])[0]


def _answer(*sentences: tuple[str, str]) -> dict[str, object]:
    """An answer whose n-th sentence cites the n-th quote."""
    cites = [Citation(i, f"c{i}", "d", "t", "u", 0, len(q), q) for i, (_, q) in enumerate(sentences, start=1)]
    said = [AnswerSentence(text, (i,)) for i, (text, _) in enumerate(sentences, start=1)]
    return Answer("?", AnswerMode.LLM, tuple(said), tuple(cites), "", "HIGH").as_dict()


def test_the_current_value_counts_and_an_outdated_one_stated_as_current_is_caught() -> None:
    q = _q(answer_values=["24,500"], outdated_values=["18,000"])
    good = answer_metrics(q, _answer(("LEJ-2 has 24500 pallet positions.", "LEJ-2 has 24,500 pallet positions.")))
    assert good["value_accuracy"] == 1.0 and good["outdated_as_current"] == 0.0 and good["answer_ok"] == 1.0
    history = _answer(("LEJ-2 holds 24,500 positions, up from 18,000.", "holds 24,500 positions, up from 18,000"))
    assert answer_metrics(q, history)["outdated_as_current"] == 0.0
    stale = answer_metrics(q, _answer(("LEJ-2 has 18,000 pallet positions.", "LEJ-2 has 18,000 pallet positions.")))
    assert stale["value_accuracy"] == 0.0 and stale["outdated_as_current"] == 1.0 and stale["answer_ok"] == 0.0


def test_a_plan_stated_as_done_is_caught_and_a_plan_reported_as_one_is_not() -> None:
    q = _q(type="modality", plan_values=["CockroachDB"])
    done = _answer(("Beacon moved to CockroachDB in 2024.", "Beacon moved to CockroachDB in 2024."))
    assert answer_metrics(q, done)["plan_as_done"] == 1.0
    reported = _answer(("Beacon will not move to CockroachDB.", "Beacon will not move to CockroachDB."))
    assert answer_metrics(q, reported)["plan_as_done"] == 0.0
    wished = _answer(("Staff most requested CockroachDB.", "Staff most requested CockroachDB."))
    assert answer_metrics(q, wished)["plan_as_done"] == 0.0  # a wish is not an event
    # A dev case (q39): "the possible acquisition of Baltic Haulage" reports a possibility, not a deal.
    osprey = _q(type="modality", plan_values=["Baltic Haulage"])
    possible = "Project Osprey is our code name for the possible acquisition of Baltic Haulage."
    assert answer_metrics(osprey, _answer((possible, possible)))["plan_as_done"] == 0.0
    acquired = "Northwind acquired Baltic Haulage."
    assert answer_metrics(osprey, _answer((acquired, acquired)))["plan_as_done"] == 1.0


def test_a_conflict_is_surfaced_only_when_every_side_is_named() -> None:
    q = _q(type="lookup", conflict_values=["Lars", "Mei"], answer_values=["Lars"])
    one = answer_metrics(q, _answer(("Next primary: Lars.", "Next on-call primary: Lars (18–24 March).")))
    both = _answer(("Next primary: Lars.", "primary: Lars"), ("The repost says Mei.", "primary: Mei (18–24 March)"))
    assert one["conflict_surfaced"] == 0.0 and answer_metrics(q, both)["conflict_surfaced"] == 1.0


def test_unfaithful_sentences_on_real_quotes_are_unsupported_and_their_citations_imprecise() -> None:
    quote = "Beacon will not move to CockroachDB. The cluster cost about €57,000 per month."
    assert sentence_supported("The cluster cost about €57,000 per month.", [quote])
    assert not sentence_supported("The cluster cost about €75,000 per month.", [quote])  # number changed
    assert not sentence_supported("Beacon moved to CockroachDB.", ["Beacon did not move to CockroachDB."])  # polarity
    swapped = sentence_supported("The team moved Halden to CockroachDB.", ["The team moved Beacon to CockroachDB."])
    assert not swapped  # entity swapped
    assert not sentence_supported("The cluster cost €57,000.", [])  # cites nothing
    # Numbers keep what is glued to them: "2nd" is found as "2nd", and "3rd" is not.
    invoices = ["Invoices are generated on the 2nd working day"]
    assert sentence_supported("Invoices go out on the 2nd working day.", invoices)
    assert not sentence_supported("Invoices go out on the 3rd working day.", invoices)
    q = _q(type="lookup", answer_values=["€57,000"])
    mixed = _answer(("It cost €57,000 per month.", quote), ("It cost €75,000 per month.", quote))
    scored = answer_metrics(q, mixed)
    assert scored["unsupported_rate"] == 0.5 and scored["citation_precision"] == 0.5 and scored["answer_ok"] == 0.0


def test_abstention_is_scored_on_every_question() -> None:
    nothing = Answer("?", AnswerMode.ABSTAINED, (), (), "No answer.", "LOW").as_dict()
    assert answer_metrics(_q(type="unanswerable", gold={}), nothing) == {"abstained": 1.0}
    missed = answer_metrics(_q(answer_values=["24,500"]), nothing)
    assert missed["abstained"] == 1.0 and missed["answer_ok"] == 0.0 and "unsupported_rate" not in missed


def test_the_report_compares_two_answerers_per_split_and_the_routers(tmp_path: Path) -> None:
    rows = [
        {"id": "t1", "question": "What is the current pallet capacity of LEJ-2?", "type": "temporal", "split": "test",
         "gold": {"doc_c_new": 2, "doc_c_old": 1}, "answer_values": ["24,500"], "outdated_values": ["18,000"],
         "principal": ADMIN},
        {"id": "l1", "question": "What is the standard laptop refresh cycle?", "type": "lookup", "split": "dev",
         "gold": {"doc_d_direct": 2}, "answer_values": ["four years"], "principal": ADMIN},
    ]  # fmt: skip
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")

    def quoting(value: str) -> Any:
        """An answerer that answers with the one retrieved chunk holding `value`."""

        def answer(question: str, caller: Any, response: Any) -> Answer:
            hit = next((h for h in response.hits if value in h.text), response.hits[0])
            cite = Citation(1, hit.chunk_id, hit.doc_id, "t", "u", 0, len(hit.text), hit.text)
            return Answer(question, AnswerMode.LLM, (AnswerSentence(hit.text, (1,)),), (cite,), "", "HIGH")

        return answer

    app = _app()
    answerers = {"old": quoting("18,000"), "new": quoting("24,500")}
    report: Any = run_evaluation(
        app, [path], budget_tokens=2000, progress_console=None, answerers=answerers, routers={"rules": RuleRouter()}
    )
    answers = report["answers"]
    assert answers["answerers"] == ["old", "new"] and answers["compared"] == ["old", "new"]
    assert set(answers["per_split"]) == {"all", "dev", "test"}
    old_test = answers["per_split"]["test"]["old"]["temporal"]
    assert old_test["outdated_as_current"] == 1.0 and old_test["value_accuracy"] == 0.0
    new_test = answers["per_split"]["test"]["new"]["temporal"]
    assert new_test["outdated_as_current"] == 0.0 and new_test["value_accuracy"] == 1.0
    sign = answers["sign_tests"]["new vs old (outdated_as_current, test)"]
    assert sign["wins"] == 1 and sign["losses"] == 0
    assert "new vs old (conflict_surfaced, test)" in answers["sign_tests"]  # compared too (no such question here)
    assert report["router"]["rules"]["test"] == {"accuracy": 1.0, "n": 1}
    assert set(report["per_split"]) == {"dev", "test"}


def test_a_replayed_model_is_scored_next_to_the_extractive_answer(tmp_path: Path) -> None:
    """A recorded reply that quotes real text under a changed number: generation keeps it (its quote exists),
    the answer metrics do not. A question with no recording is a named failure, scored as saying nothing."""
    from kgrag_adapters.llm.replay import ReplayChatModel, request_document, request_key, write_recording
    from kgrag_core.acl import Caller
    from kgrag_core.answering.generative import ANSWER_SCHEMA, build_messages, context_sources

    question = "What is the current pallet capacity of LEJ-2?"
    rows = [
        {"id": "t1", "question": question, "type": "temporal", "split": "test", "gold": {"doc_c_new": 2},
         "answer_values": ["24,500"], "outdated_values": ["18,000"], "principal": ADMIN},
        {"id": "l1", "question": "What is the standard laptop refresh cycle?", "type": "lookup", "split": "test",
         "gold": {"doc_d_direct": 2}, "answer_values": ["four years"], "principal": ADMIN},
    ]  # fmt: skip
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    app = _app()
    # The prompt the app sends: the search's hits and the structured context's facts (and their sources).
    response = app.search(question, Caller(user="ann"), top_k=8, graph=True)
    context = app.answer_context(question, Caller(user="ann"), response)
    hits = context_sources(response.hits, context)
    messages = build_messages(question, hits, context)
    source = 1 + next(i for i, h in enumerate(hits) if "24,500" in h.text)
    reply = {
        "insufficient_evidence": False,
        "sentences": [
            {"text": "LEJ-2 holds 18,000 pallet positions.", "evidence": [{"source": source, "quote": "24,500"}]}
        ],
    }
    key = request_key("recorded", messages, ANSWER_SCHEMA)
    write_recording(tmp_path / "replies", key, request_document("recorded", messages, ANSWER_SCHEMA),
                    json.dumps(reply), "recorded")  # fmt: skip
    app.llm = ReplayChatModel(tmp_path / "replies", "recorded")
    from kgrag_runtime.evaluation.answers import evaluate_answers

    # The answers alone: the rest of the run asks through the app, which has no recording for those requests.
    questions = parse_questions(path.read_text("utf-8").splitlines())
    answers: Any = evaluate_answers(app, questions, graph=True, compare=("extractive", "llm"))
    assert answers["answerers"] == ["extractive", "composed", "llm"]
    llm = answers["per_question"]["llm"]
    # The replayed reply states the outdated 18,000 on a quote that says 24,500: verification removes that
    # sentence, so the model's answer abstains instead of stating the old value as current.
    assert llm["t1"]["abstained"] == 1.0 and llm["t1"]["outdated_as_current"] == 0.0
    assert "unsupported_rate" not in llm["t1"]  # no sentence left to grade
    assert answers["failures"] == {"llm": {"l1": "LLM_UNAVAILABLE"}} and llm["l1"]["abstained"] == 1.0
    assert answers["per_question"]["extractive"]["l1"]["abstained"] == 0.0  # the positive control
    assert answers["sign_tests"]["llm vs extractive (answer_ok, test)"]["losses"] >= 1


def test_the_eval_counts_the_support_the_verifier_counts_and_only_on_a_cited_chunk() -> None:
    """One support check: a graph fact (or a source's title and date) backs a sentence citing its chunk,
    in the eval exactly as in verification; the same fact on an uncited chunk backs nothing."""
    from kgrag_core.answering.verification import SupportingFact, verify_answer

    q = _q(answer_values=["PostgreSQL 16"])
    said = "Atlas's database is PostgreSQL 16, since 19 October 2024."
    answer = Answer(
        "?", AnswerMode.EXTRACTIVE, (AnswerSentence(said, (1,)),),
        (Citation(1, "c1", "d", "Atlas upgrade", "u", 0, 30, "Atlas now runs PostgreSQL 16."),), "", "HIGH",
    )  # fmt: skip
    on_cited = [SupportingFact("Atlas database PostgreSQL 16 valid from 2024-10-19", ("c1",))]
    elsewhere = [SupportingFact("Atlas database PostgreSQL 16 valid from 2024-10-19", ("c9",))]
    assert answer_metrics(q, answer.as_dict(), on_cited)["unsupported_rate"] == 0.0
    assert answer_metrics(q, answer.as_dict(), on_cited)["citation_precision"] == 1.0
    assert answer_metrics(q, answer.as_dict(), elsewhere)["unsupported_rate"] == 1.0  # the date is in no cited text
    assert answer_metrics(q, answer.as_dict())["unsupported_rate"] == 1.0
    # The verifier agrees sentence for sentence: it keeps what the eval counts as supported, and only that.
    assert verify_answer(answer, on_cited).sentences == answer.sentences
    assert verify_answer(answer, elsewhere).sentences == ()


def test_one_of_several_citations_is_precise_when_it_holds_part_of_the_sentence() -> None:
    q = _q(type="lookup", answer_values=["Lars"])
    cites = (
        Citation(1, "c1", "d", "t", "u", 0, 10, "Primary: Lars."),
        Citation(2, "c2", "d", "t", "u", 0, 10, "Secondary: Mei."),
        Citation(3, "c3", "d", "t", "u", 0, 10, "The canteen opens at 8."),
    )
    said = (AnswerSentence("Lars is primary and Mei is secondary.", (1, 2, 3)),)
    scored = answer_metrics(q, Answer("?", AnswerMode.LLM, said, cites, "", "HIGH").as_dict())
    assert scored["unsupported_rate"] == 0.0 and scored["citation_precision"] == 2 / 3  # the canteen holds nothing
