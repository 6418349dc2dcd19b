"""Run a question set against the app and aggregate metrics per question type and configuration.

Configurations are ablations of the same index: BM25 only, dense only, and hybrid (RRF). The graph
layer will be one more configuration, and has to beat hybrid here to earn its cost.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from kgrag_core.chunking import estimate_tokens
from kgrag_core.evaluation.metrics import (
    all_gold_at,
    key_fact_recall,
    mean,
    ndcg_at,
    recall_at,
    reciprocal_rank,
    sign_test,
    unique_docs,
)
from kgrag_core.evaluation.questions import EvalQuestion, parse_questions
from kgrag_core.retrieval.hybrid import SearchMode
from kgrag_runtime.app import KgragApp

DEPTH = 20


def run_evaluation(
    app: KgragApp, questions_path: Path, *, budget_tokens: int, progress_console: Console | None
) -> dict[str, object]:
    questions = parse_questions(questions_path.read_text(encoding="utf-8").splitlines())
    configs = (SearchMode.BM25, SearchMode.DENSE, SearchMode.HYBRID)
    per_question: dict[str, dict[str, dict[str, float]]] = {m.value: {} for m in configs}
    latencies: dict[str, list[float]] = {m.value: [] for m in configs}
    with Progress(console=progress_console, disable=progress_console is None) as bar:
        task = bar.add_task("Evaluating", total=len(questions) * (len(configs) + 1))
        for q in questions:
            for mode in configs:
                started = time.perf_counter()
                response = app.search(q.question, q.caller, top_k=DEPTH, mode=mode)
                latencies[mode.value].append((time.perf_counter() - started) * 1000)
                per_question[mode.value][q.id] = _retrieval_metrics(
                    q, [h.doc_id for h in response.hits], [h.text for h in response.hits], budget_tokens
                )
                bar.advance(task)
            answer = app.ask(q.question, q.caller)
            per_question[SearchMode.HYBRID.value][q.id].update(_answer_metrics(q, answer))
            bar.advance(task)
    return {
        "questions": len(questions),
        "budget_tokens": budget_tokens,
        "per_type": {cfg: _aggregate(questions, rows) for cfg, rows in per_question.items()},
        "sign_tests": _sign_tests(questions, per_question),
        "latency_ms": {cfg: _percentiles(v) for cfg, v in latencies.items()},
        "per_question": per_question,
    }


def _retrieval_metrics(
    q: EvalQuestion, chunk_docs: Sequence[str], chunk_texts: Sequence[str], budget: int
) -> dict[str, float]:
    if not q.answerable:
        return {}
    docs = unique_docs(chunk_docs)
    return {
        "recall@10": recall_at(docs, q.gold, 10),
        "recall@20": recall_at(docs, q.gold, 20),
        "mrr": reciprocal_rank(docs, q.gold),
        "ndcg@10": ndcg_at(docs, q.gold, 10),
        "all_gold@20": all_gold_at(docs, q.gold, 20),
        f"key_facts@{budget}": key_fact_recall(chunk_texts, q.key_facts, budget, estimate_tokens),
    }


def _answer_metrics(q: EvalQuestion, answer: dict[str, object]) -> dict[str, float]:
    answered = bool(answer["answered"])
    if not q.answerable:
        # Split the two kinds of "no answer": absent from the corpus, or present but not readable by the asker.
        kind = "abstained_acl_denied" if q.acl_denied else "abstained_not_in_corpus"
        return {"abstained": 0.0 if answered else 1.0, kind: 0.0 if answered else 1.0}
    citations = answer.get("citations") or []
    cited_docs = {c["doc_id"] for c in citations} if isinstance(citations, list) else set()
    return {
        "answered": 1.0 if answered else 0.0,
        "cites_gold": 1.0 if cited_docs & set(q.gold) else 0.0,
    }


def _aggregate(
    questions: Sequence[EvalQuestion], rows: dict[str, dict[str, float]]
) -> dict[str, dict[str, float | int]]:
    by_type: dict[str, list[dict[str, float]]] = defaultdict(list)
    for q in questions:
        by_type[q.type].append(rows.get(q.id, {}))
        by_type["ALL"].append(rows.get(q.id, {}))
    out: dict[str, dict[str, float | int]] = {}
    for qtype in sorted(by_type, key=lambda t: (t == "ALL", t)):
        items = by_type[qtype]
        keys = sorted({k for item in items for k in item})
        out[qtype] = {"n": len(items), **{k: round(mean([i[k] for i in items if k in i]), 3) for k in keys}}
    return out


def _sign_tests(
    questions: Sequence[EvalQuestion], per_question: dict[str, dict[str, dict[str, float]]]
) -> dict[str, dict[str, float | int]]:
    answerable = [q.id for q in questions if q.answerable]
    hybrid = per_question[SearchMode.HYBRID.value]
    out: dict[str, dict[str, float | int]] = {}
    for other in (SearchMode.BM25.value, SearchMode.DENSE.value):
        a = [hybrid[i]["ndcg@10"] for i in answerable]
        b = [per_question[other][i]["ndcg@10"] for i in answerable]
        out[f"hybrid vs {other} (nDCG@10)"] = sign_test(a, b)
    return out


def _percentiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0}
    ordered = sorted(values)
    return {
        "p50": round(ordered[len(ordered) // 2], 2),
        "p95": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 2),
    }
