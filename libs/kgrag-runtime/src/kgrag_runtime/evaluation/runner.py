"""Run a question set against the app and aggregate metrics per question type and configuration.

Configurations are ablations of the same index: BM25 only, dense only, hybrid (RRF), and hybrid+graph (the
routed graph layer on hybrid search, when the app has one). Hybrid+graph has to beat hybrid here to earn its
cost, so the two are compared question by question (sign tests, overall and per type).

Key facts are counted in what an answerer with `budget_tokens` would read. For hybrid+graph that is the graph
lines (up to the searcher's line share of the budget) followed by the chunks in what the lines left, packed
exactly as the searcher packs its context (`pack_context`): lines are text the model reads, so they spend
budget and may displace chunks. Every configuration counts tokens with the same estimate.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import date
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from kgrag_core.chunking import estimate_tokens
from kgrag_core.evaluation.metrics import (
    all_gold_at,
    current_value_first,
    key_facts_found,
    mean,
    ndcg_at,
    ranks_before,
    read_in_budget,
    recall_at,
    reciprocal_rank,
    sign_test,
    temporal_gold,
    unique_docs,
    values_found,
)
from kgrag_core.evaluation.questions import EvalQuestion, parse_questions
from kgrag_core.graph_retrieval.evidence import GraphLine, pack_context
from kgrag_core.graph_retrieval.router import QuestionRouter
from kgrag_core.graph_retrieval.searcher import GRAPH_MODE, EstimatedTokens, GraphSearchResponse
from kgrag_core.retrieval.hybrid import SearchMode
from kgrag_core.search import SearchHit
from kgrag_runtime.app import KgragApp
from kgrag_runtime.evaluation.answers import Answerer, comparison_routers, evaluate_answers, router_accuracy

DEPTH = 20
HYBRID = SearchMode.HYBRID.value
# Scores compared question by question between hybrid+graph and hybrid (the budget's key-fact column is added).
_COMPARED = ("ndcg@10", "recall@10", "mrr")


def run_evaluation(
    app: KgragApp,
    questions_path: Path | Sequence[Path],
    *,
    budget_tokens: int,
    progress_console: Console | None,
    graph: bool | None = None,
    only: Collection[str] | None = None,
    meter: Callable[[], float] | None = None,
    answers: bool = True,
    answerers: Mapping[str, Answerer] | None = None,
    compare: tuple[str, str] | None = None,
    routers: Mapping[str, QuestionRouter] | None = None,
) -> dict[str, object]:
    """Score every configuration; `graph=None` adds hybrid+graph whenever the app has a graph layer.
    `only`: score just these question ids. `meter`: what the answering model has cost so far (read before
    and after each answer, for the cost per query in `queries`). `answers`: also the answer metrics per
    answerer and split (`evaluation/answers.py`; `answerers` and `compare` as there) and router accuracy
    per split (`routers`; by default the rules against the learned router)."""
    paths = [questions_path] if isinstance(questions_path, Path) else list(questions_path)
    questions = [q for path in paths for q in parse_questions(path.read_text(encoding="utf-8").splitlines())]
    if only is not None:
        questions = [q for q in questions if q.id in only]
    spent = meter or (lambda: 0.0)
    queries: list[dict[str, object]] = []
    with_graph = app.graph_searcher is not None if graph is None else graph and app.graph_searcher is not None
    modes = (SearchMode.BM25, SearchMode.DENSE, SearchMode.HYBRID)
    configs = [m.value for m in modes] + ([GRAPH_MODE] if with_graph else [])
    per_question: dict[str, dict[str, dict[str, float]]] = {c: {} for c in configs}
    latencies: dict[str, list[float]] = {c: [] for c in configs}
    graph_latencies: list[float] = []  # hybrid+graph, only the questions the graph layer worked on
    routes: dict[str, dict[str, object]] = {}
    dates = _gold_dates(app, questions)
    steps_per_question = len(modes) + 1 + (2 if with_graph else 0)
    with Progress(console=progress_console, disable=progress_console is None) as bar:
        task = bar.add_task("Evaluating", total=len(questions) * steps_per_question)
        for q in questions:
            search_ms: dict[str, float] = {}
            ask_ms: dict[str, float] = {}
            cost_before = spent()
            queries.append({"id": q.id, "type": q.type, "search_ms": search_ms, "ask_ms": ask_ms})
            for mode in modes:
                started = time.perf_counter()
                response = app.search(q.question, q.caller, top_k=DEPTH, mode=mode, graph=False)
                latencies[mode.value].append((time.perf_counter() - started) * 1000)
                search_ms[mode.value] = round(latencies[mode.value][-1], 2)
                per_question[mode.value][q.id] = {
                    **_retrieval_metrics(q, list(response.hits), (), budget_tokens, 0.0),
                    **_temporal_metrics(q, [h.doc_id for h in response.hits], dates),
                }
                bar.advance(task)
            started = time.perf_counter()
            answer = app.ask(q.question, q.caller, graph=False)
            ask_ms[HYBRID] = round((time.perf_counter() - started) * 1000, 2)
            per_question[HYBRID][q.id].update(_answer_metrics(q, answer))
            bar.advance(task)
            if not with_graph:
                queries[-1]["cost"] = round(spent() - cost_before, 6)
                continue
            started = time.perf_counter()
            found = app.search(q.question, q.caller, top_k=DEPTH, graph=True)
            elapsed_ms = (time.perf_counter() - started) * 1000
            latencies[GRAPH_MODE].append(elapsed_ms)
            search_ms[GRAPH_MODE] = round(elapsed_ms, 2)
            if not isinstance(found, GraphSearchResponse):
                raise TypeError(f"graph search returned {type(found).__name__}")
            if _graph_used(found):
                graph_latencies.append(elapsed_ms)
            per_question[GRAPH_MODE][q.id] = _graph_metrics(q, found, budget_tokens, _line_share(app), dates)
            routes[q.id] = _route_record(q, found)
            bar.advance(task)
            started = time.perf_counter()
            answer = app.ask(q.question, q.caller, graph=True)
            ask_ms[GRAPH_MODE] = round((time.perf_counter() - started) * 1000, 2)
            per_question[GRAPH_MODE][q.id].update(_answer_metrics(q, answer))
            queries[-1]["cost"] = round(spent() - cost_before, 6)
            bar.advance(task)
    latency = {cfg: _percentiles(v) for cfg, v in latencies.items()}
    report: dict[str, object] = {
        "questions": len(questions),
        "budget_tokens": budget_tokens,
        "per_type": {cfg: _aggregate(questions, rows) for cfg, rows in per_question.items()},
        "sign_tests": _sign_tests(questions, per_question, budget_tokens),
        "latency_ms": latency,
        "per_question": per_question,
        "queries": queries,  # per question: search and answer latency per configuration, the answers' cost
    }
    if with_graph:
        latency[f"{GRAPH_MODE} (graph used)"] = _percentiles(graph_latencies)
        report["graph"] = _graph_summary(questions, per_question, routes, budget_tokens)
        report["routes"] = routes
    splits = sorted({q.split for q in questions if q.split is not None})
    if splits:
        report["per_split"] = {
            split: {
                cfg: _aggregate([q for q in questions if q.split == split], rows) for cfg, rows in per_question.items()
            }
            for split in splits
        }
    if answers:
        report["answers"] = evaluate_answers(app, questions, graph=with_graph, answerers=answerers, compare=compare)
        report["router"] = router_accuracy(questions, routers if routers is not None else comparison_routers(app))
    return report


def _line_share(app: KgragApp) -> float:
    return app.graph_searcher.settings.line_share if app.graph_searcher is not None else 0.0


def _gold_dates(app: KgragApp, questions: Sequence[EvalQuestion]) -> dict[str, date | None]:
    """The date of each gold document (its `published_at`), for current-before-superseded."""
    wanted = sorted({d for q in questions if q.type == "temporal" for d in q.gold})
    docs = app.searcher.documents.get_documents(wanted) if wanted else {}
    return {d: (doc.modified_at.date() if doc.modified_at else None) for d, doc in docs.items()}


def _retrieval_metrics(
    q: EvalQuestion, hits: Sequence[SearchHit], lines: Sequence[str], budget: int, line_share: float
) -> dict[str, float]:
    if not q.answerable:
        return {}
    docs = unique_docs([h.doc_id for h in hits])
    out = {
        "recall@10": recall_at(docs, q.gold, 10),
        "recall@20": recall_at(docs, q.gold, 20),
        "mrr": reciprocal_rank(docs, q.gold),
        "ndcg@10": ndcg_at(docs, q.gold, 10),
        "all_gold@20": all_gold_at(docs, q.gold, 20),
    }
    if lines:
        read_lines, read_chunks = _read_within_budget(lines, hits, budget, line_share)
    else:
        read_lines, read_chunks = [], read_in_budget([h.text for h in hits], budget, estimate_tokens)
    read = [*read_lines, *read_chunks]
    out[f"key_facts@{budget}"] = key_facts_found(read, q.key_facts)
    if q.answer_values:
        out[f"values@{budget}"] = values_found(read, q.answer_values)
    if q.outdated_values:
        out["current_value_first"] = current_value_first(read, q.answer_values, q.outdated_values)
    if lines:
        # What the lines hold on their own: they carry values, not the documents' sentences, so the key
        # facts are rarely in them; the answer values often are.
        out["key_facts_in_lines"] = key_facts_found(read_lines, q.key_facts)
        if q.answer_values:
            out["values_in_lines"] = values_found(read_lines, q.answer_values)
        out["lines_read"] = float(len(read_lines))
    return out


def _read_within_budget(
    lines: Sequence[str], hits: Sequence[SearchHit], budget: int, line_share: float
) -> tuple[list[str], list[str]]:
    """(lines read, chunk texts read) within the budget, packed as the graph searcher packs its context."""
    packed = pack_context(
        [GraphLine(text, "line", (), 0.0) for text in lines],
        hits,
        budget_tokens=budget,
        counter=EstimatedTokens(),
        line_share=line_share,
    )
    return [line.text for line in packed.lines], [h.text for h in packed.hits]


def _temporal_metrics(q: EvalQuestion, chunk_docs: Sequence[str], dates: Mapping[str, date | None]) -> dict[str, float]:
    """Current before superseded: does a current (and the latest) gold document outrank the outdated ones?"""
    if q.type != "temporal":
        return {}
    split = temporal_gold(q.gold, dates)
    if split is None:
        return {}
    current, latest, outdated = split
    docs = unique_docs(chunk_docs)
    return {
        "current_first": ranks_before(docs, current, outdated),
        "latest_first": ranks_before(docs, {latest}, outdated),
    }


def _graph_metrics(
    q: EvalQuestion,
    response: GraphSearchResponse,
    budget: int,
    line_share: float,
    dates: Mapping[str, date | None],
) -> dict[str, float]:
    lines = [line.text for line in response.graph_lines]
    out = {
        **_retrieval_metrics(q, list(response.hits), lines, budget, line_share),
        **_temporal_metrics(q, [h.doc_id for h in response.hits], dates),
        "degraded": 1.0 if response.degraded else 0.0,
        "graph_used": 1.0 if _graph_used(response) else 0.0,
    }
    if q.answerable and not lines:
        out["key_facts_in_lines"] = 0.0
        out["lines_read"] = 0.0
    if q.type != "unanswerable":
        out["router_correct"] = 1.0 if response.route.kind.value == q.type else 0.0
    return out


def _graph_used(response: GraphSearchResponse) -> bool:
    info = response.limits.get("graph")
    return isinstance(info, dict) and bool(info.get("used"))


def _route_record(q: EvalQuestion, response: GraphSearchResponse) -> dict[str, object]:
    info = response.limits.get("graph")
    traversal = response.traversal
    return {
        "type": q.type,
        "route": response.route.kind.value,
        "confidence": round(response.route.confidence, 3),
        "graph_used": _graph_used(response),
        "why_not": info.get("reason") if isinstance(info, dict) and not info.get("used") else None,
        "degraded_reason": response.degraded_reason,
        "linked": [lm.mention.text for lm in response.links],
        "steps": len(traversal.steps) if traversal is not None else 0,
        "truncated": list(traversal.truncated) if traversal is not None else [],
        "lines": [line.text for line in response.graph_lines],
        "graph_ms": response.limits.get("graph_ms"),
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


def _paired(
    ids: Sequence[str], a: Mapping[str, Mapping[str, float]], b: Mapping[str, Mapping[str, float]], metric: str
) -> dict[str, float | int]:
    both = [i for i in ids if metric in a.get(i, {}) and metric in b.get(i, {})]
    return sign_test([a[i][metric] for i in both], [b[i][metric] for i in both])


def _sign_tests(
    questions: Sequence[EvalQuestion], per_question: dict[str, dict[str, dict[str, float]]], budget: int
) -> dict[str, dict[str, float | int]]:
    answerable = [q.id for q in questions if q.answerable]
    hybrid = per_question[HYBRID]
    out: dict[str, dict[str, float | int]] = {}
    for other in (SearchMode.BM25.value, SearchMode.DENSE.value):
        out[f"hybrid vs {other} (nDCG@10)"] = _paired(answerable, hybrid, per_question[other], "ndcg@10")
    if GRAPH_MODE in per_question:
        graph = per_question[GRAPH_MODE]
        for metric in ("ndcg@10", f"key_facts@{budget}", f"values@{budget}"):
            out[f"{GRAPH_MODE} vs hybrid ({metric})"] = _paired(answerable, graph, hybrid, metric)
        for metric in ("current_first", "current_value_first"):
            out[f"{GRAPH_MODE} vs hybrid ({metric}, temporal)"] = _paired(answerable, graph, hybrid, metric)
    return out


def _graph_summary(
    questions: Sequence[EvalQuestion],
    per_question: dict[str, dict[str, dict[str, float]]],
    routes: Mapping[str, Mapping[str, object]],
    budget: int,
) -> dict[str, object]:
    """Router accuracy and confusion, degraded and graph-used counts, and wins/losses per type vs hybrid."""
    typed = [q for q in questions if q.type != "unanswerable"]
    confusion: dict[str, Counter[str]] = defaultdict(Counter)
    for q in typed:
        confusion[q.type][str(routes[q.id]["route"])] += 1
    graph, hybrid = per_question[GRAPH_MODE], per_question[HYBRID]
    by_type: dict[str, dict[str, dict[str, float | int]]] = {}
    for qtype in sorted({q.type for q in questions if q.answerable}):
        ids = [q.id for q in questions if q.answerable and q.type == qtype]
        compared = (*_COMPARED, f"key_facts@{budget}", f"values@{budget}", "current_value_first")
        by_type[qtype] = {m: _paired(ids, graph, hybrid, m) for m in compared}
    return {
        "router_accuracy": round(mean([1.0 if routes[q.id]["route"] == q.type else 0.0 for q in typed]), 3),
        "router_confusion": {t: dict(sorted(c.items())) for t, c in sorted(confusion.items())},
        "degraded": sum(1 for r in routes.values() if r["degraded_reason"] is not None),
        "graph_used": sum(1 for r in routes.values() if r["graph_used"]),
        "questions": len(routes),
        "vs_hybrid_by_type": by_type,
    }


def _percentiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0}
    ordered = sorted(values)
    return {
        "p50": round(ordered[len(ordered) // 2], 2),
        "p95": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 2),
    }
