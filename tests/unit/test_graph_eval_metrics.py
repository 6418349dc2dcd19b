"""The hybrid+graph evaluation: current-before-superseded, key facts with graph lines in the budget, and the
runner's comparison of hybrid+graph against hybrid on a small in-memory world."""

from __future__ import annotations

import dataclasses
import json
from datetime import date, datetime
from pathlib import Path
from typing import Any, cast

import pytest

from kgrag_adapters.memory.cache import InMemoryCache
from kgrag_core.chunking import estimate_tokens
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.evaluation.metrics import (
    current_value_first,
    key_fact_recall,
    key_facts_found,
    ranks_before,
    temporal_gold,
    values_found,
)
from kgrag_core.evaluation.questions import parse_questions
from kgrag_core.graph_retrieval.router import RuleRouter
from kgrag_core.graph_retrieval.searcher import GRAPH_MODE, GraphAssistedSearcher
from kgrag_core.search import SearchHit
from kgrag_runtime.app import KgragApp
from kgrag_runtime.evaluation.runner import _retrieval_metrics, run_evaluation
from tests.unit.test_graph_retrieval_doubles import FakeClock, FakeStore, InMemoryGraph, hybrid_over

# --- current before superseded --------------------------------------------------------------------------


def test_temporal_gold_splits_current_latest_and_outdated() -> None:
    gold = {"new": 2, "also-new": 2, "old": 1, "later-background": 1}
    dates = {
        "new": date(2024, 7, 22),
        "also-new": date(2024, 6, 27),
        "old": date(2023, 4, 18),
        "later-background": date(2024, 9, 1),
    }
    split = temporal_gold(gold, dates)
    assert split == (frozenset({"new", "also-new"}), "new", frozenset({"old"}))


def test_temporal_gold_says_nothing_without_an_older_grade_one_or_a_dated_grade_two() -> None:
    assert temporal_gold({"new": 2, "later": 1}, {"new": date(2024, 4, 2), "later": date(2024, 5, 14)}) is None
    assert temporal_gold({"new": 2, "old": 1}, {"old": date(2023, 1, 1)}) is None


def test_ranks_before_compares_the_best_current_with_every_ranked_outdated_document() -> None:
    assert ranks_before(["x", "new", "old"], {"new"}, {"old"}) == 1.0
    assert ranks_before(["old", "new"], {"new"}, {"old"}) == 0.0
    # A current document above an outdated one that never ranked still counts as first.
    assert ranks_before(["new"], {"new"}, {"old"}) == 1.0
    # Any current document will do, the best-ranked one is compared.
    assert ranks_before(["b", "old", "a"], {"a", "b"}, {"old"}) == 1.0
    # No current document ranked at all: the outdated value is what the reader gets.
    assert ranks_before(["x"], {"new"}, {"old"}) == 0.0
    assert ranks_before(["old"], {"new"}, {"old"}) == 0.0


# --- key facts with graph lines in the budget -------------------------------------------------------------


def test_key_facts_found_matches_key_fact_recall_when_everything_fits() -> None:
    texts = ["The refresh cycle is “four years”.", "Unrelated text."]
    facts = ['refresh cycle is "four years"', "not in there at all"]
    assert key_facts_found(texts, facts) == 0.5
    assert key_fact_recall(texts, facts, 10_000, estimate_tokens) == key_facts_found(texts, facts)
    assert key_facts_found(texts, []) == 0.0


def _hit(chunk_id: str, text: str) -> SearchHit:
    return SearchHit(chunk_id, "doc_" + chunk_id, chunk_id, "", "test", (), 0, len(text), text, 1.0)


def test_graph_lines_spend_the_budget_and_can_push_a_chunk_out() -> None:
    question = parse_questions(
        [
            json.dumps(
                {
                    "id": "q",
                    "question": "?",
                    "type": "multi_hop",
                    "gold": {"doc_a": 2},
                    "key_facts": ["the answer sits in the second chunk"],
                }
            )
        ]
    )[0]
    hits = [_hit("a", "first chunk " * 20), _hit("b", "here the answer sits in the second chunk, plainly")]
    budget = estimate_tokens(hits[0].text) + estimate_tokens(hits[1].text)
    plain = _retrieval_metrics(question, hits, (), budget, 0.0)
    assert plain[f"key_facts@{budget}"] == 1.0
    line = "Atlas OWNS Routing (confidence 0.90; 1 evidence) [c1]"
    with_lines = _retrieval_metrics(question, hits, [line], budget, 0.5)
    # The line is read first and takes budget the second chunk needed.
    assert with_lines["lines_read"] == 1.0
    assert with_lines[f"key_facts@{budget}"] == 0.0
    assert with_lines["key_facts_in_lines"] == 0.0
    # A line that holds the fact itself counts, both in the window and on its own.
    holding = _retrieval_metrics(question, hits, ["note: the answer sits in the second chunk"], budget, 0.5)
    assert holding[f"key_facts@{budget}"] == 1.0 and holding["key_facts_in_lines"] == 1.0


# --- answer values: what a reader must find, and meet before any older value ------------------------------


def test_answer_values_match_whole_tokens_and_ignore_thousands_separators() -> None:
    texts = ["LEJ-2 capacity_pallets = 24500 (current)", "Zoë Müller leads Warehouse Systems; fee EUR 2.15."]
    assert values_found(texts, ["24,500", "zoë müller", "2.15"]) == 1.0
    assert values_found(texts, ["2.1", "245", "Müller Zoë"]) == 0.0  # never a piece of another token
    assert values_found(["24 500 pallets"], ["24,500"]) == 1.0
    assert values_found(texts, []) == 0.0


def test_current_value_first_reads_in_order() -> None:
    assert current_value_first(["was 18,000", "now 24,500"], ["24,500"], ["18,000"]) == 0.0
    assert current_value_first(["24500 (current)", "was 18,000"], ["24,500"], ["18,000"]) == 1.0
    assert current_value_first(["now 24,500"], ["24,500"], ["18,000"]) == 1.0  # the old value never shows
    assert current_value_first(["was 18,000"], ["24,500"], ["18,000"]) == 0.0  # the current one never shows


def test_value_metrics_count_lines_and_chunks_within_the_budget() -> None:
    raw = {"id": "q", "question": "?", "type": "temporal", "gold": {"doc_a": 2}, "key_facts": ["x"],
           "answer_values": ["24,500"], "outdated_values": ["18,000"]}  # fmt: skip
    question = parse_questions([json.dumps(raw)])[0]
    assert question.answer_values == ("24,500",) and question.outdated_values == ("18,000",)
    hits = [_hit("a", "Capacity was 18,000 pallet positions."), _hit("b", "Capacity is 24,500 pallet positions.")]
    plain = _retrieval_metrics(question, hits, (), 2000, 0.0)
    assert plain["values@2000"] == 1.0 and plain["current_value_first"] == 0.0
    lined = _retrieval_metrics(question, hits, ["LEJ-2 capacity_pallets = 24500 (current)"], 2000, 0.1)
    assert lined["values@2000"] == 1.0 and lined["current_value_first"] == 1.0 and lined["values_in_lines"] == 1.0
    assert "current_value_first" not in _retrieval_metrics(
        parse_questions([json.dumps({**raw, "outdated_values": []})])[0], hits, (), 2000, 0.0
    )


@pytest.mark.parametrize("bad", [{"answer_values": "24,500"}, {"answer_values": [""]}, {"outdated_values": [3]}])
def test_malformed_answer_values_reject_the_file(bad: dict[str, object]) -> None:
    raw = {"id": "q", "question": "?", "type": "temporal", "gold": {"doc_a": 2}, **bad}
    with pytest.raises(KgragError) as err:
        parse_questions([json.dumps(raw)])
    assert err.value.code is ErrorCode.MISSING_FIELD and "line 1" in str(err.value)


# --- the runner, hybrid vs hybrid+graph --------------------------------------------------------------------

ADMIN = {"user": "ann", "groups": []}
QUESTIONS = [
    {
        "id": "l1",
        "question": "What is the standard laptop refresh cycle?",
        "type": "lookup",
        "gold": {"doc_d_direct": 2},
        "key_facts": ["laptops are refreshed every four years"],
        "principal": ADMIN,
    },
    {
        "id": "t1",
        "question": "What is the current pallet capacity of LEJ-2?",
        "type": "temporal",
        "gold": {"doc_c_new": 2, "doc_c_old": 1},
        "key_facts": ["LEJ-2 now holds 24,500 pallet positions"],
        "principal": ADMIN,
    },
    {"id": "u1", "question": "What is the CEO's favourite colour?", "type": "unanswerable", "principal": ADMIN},
]


def _app() -> KgragApp:
    store = FakeStore()
    store.add("d_direct", "Engineers get a laptop on day one; laptops are refreshed every four years.")
    store.add("c_old", "LEJ-2 capacity: LEJ-2 holds 18,000 pallet positions in the main hall.")
    store.add("c_new", "After the mezzanine, LEJ-2 now holds 24,500 pallet positions.")
    for doc_id, when in (("doc_c_old", datetime(2023, 4, 18)), ("doc_c_new", datetime(2024, 7, 22))):
        store.docs[doc_id] = dataclasses.replace(store.docs[doc_id], modified_at=when)
    graph = InMemoryGraph()
    site = graph.add_entity("site_lej", "LEJ-2", "Site")
    graph.add_claim(site, "capacity_pallets", "24,500", "c_new", written=date(2024, 7, 22))
    # Both hybrid routes rank the outdated chunk first: only the graph's current claim can lift the new one.
    hybrid = hybrid_over(store, ["c_old", "c_new", "d_direct"], ["c_old", "c_new", "d_direct"])
    searcher = GraphAssistedSearcher(hybrid, graph, clock=FakeClock())
    unused = cast(Any, None)
    return KgragApp(
        searcher=hybrid,
        ingestion=unused,
        ingest_log=unused,
        stats_source=unused,
        cache=InMemoryCache(),
        llm=None,
        graph_searcher=searcher,
    )


RULES = {"rules": RuleRouter()}  # the learned router needs a real embedding model (tests/pipeline)


@pytest.fixture
def questions_file(tmp_path: Path) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n", encoding="utf-8")
    return path


def test_runner_reports_hybrid_plus_graph_next_to_hybrid(questions_file: Path) -> None:
    report = run_evaluation(_app(), questions_file, budget_tokens=2000, progress_console=None, routers=RULES)
    per_type: Any = report["per_type"]
    assert set(per_type) == {"bm25", "dense", "hybrid", GRAPH_MODE}
    # The lookup went to plain hybrid: identical scores, no graph work.
    per_question: Any = report["per_question"]
    assert per_question[GRAPH_MODE]["l1"]["ndcg@10"] == per_question["hybrid"]["l1"]["ndcg@10"]
    assert per_question[GRAPH_MODE]["l1"]["graph_used"] == 0.0
    # Temporal: hybrid ranks the outdated document first, the graph's current claim lifts the latest one.
    assert per_type["hybrid"]["temporal"]["current_first"] == 0.0
    assert per_type[GRAPH_MODE]["temporal"]["current_first"] == 1.0
    assert per_type[GRAPH_MODE]["temporal"]["latest_first"] == 1.0
    assert per_question[GRAPH_MODE]["t1"]["graph_used"] == 1.0
    assert per_question[GRAPH_MODE]["t1"]["lines_read"] >= 1.0
    assert "cites_gold" in per_question[GRAPH_MODE]["t1"]
    assert "abstained" in per_question[GRAPH_MODE]["u1"] and "router_correct" not in per_question[GRAPH_MODE]["u1"]
    signs: Any = report["sign_tests"]
    assert signs[f"{GRAPH_MODE} vs hybrid (current_first, temporal)"] == {
        "wins": 1,
        "losses": 0,
        "ties": 0,
        "p_value": 1.0,
    }
    assert signs[f"{GRAPH_MODE} vs hybrid (ndcg@10)"]["wins"] == 1
    graph: Any = report["graph"]
    assert graph["router_accuracy"] == 1.0
    assert graph["router_confusion"] == {"lookup": {"lookup": 1}, "temporal": {"temporal": 1}}
    assert graph["degraded"] == 0 and graph["graph_used"] == 1 and graph["questions"] == 3
    assert graph["vs_hybrid_by_type"]["temporal"]["ndcg@10"]["wins"] == 1
    assert graph["vs_hybrid_by_type"]["lookup"]["ndcg@10"]["ties"] == 1
    routes: Any = report["routes"]
    assert routes["t1"]["route"] == "temporal" and routes["t1"]["linked"] == ["LEJ-2"]
    latency: Any = report["latency_ms"]
    assert set(latency) == {"bm25", "dense", "hybrid", GRAPH_MODE, f"{GRAPH_MODE} (graph used)"}


def test_runner_without_the_graph_layer_keeps_the_three_configurations(questions_file: Path) -> None:
    report = run_evaluation(
        _app(), questions_file, budget_tokens=2000, progress_console=None, graph=False, routers=RULES
    )
    per_type: Any = report["per_type"]
    assert set(per_type) == {"bm25", "dense", "hybrid"}
    assert "graph" not in report
    signs: Any = report["sign_tests"]
    assert set(signs) == {"hybrid vs bm25 (nDCG@10)", "hybrid vs dense (nDCG@10)"}
