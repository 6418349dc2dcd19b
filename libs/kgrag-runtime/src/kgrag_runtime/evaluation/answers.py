"""Answer metrics per answerer, question type and split, old against new answerer, and router accuracy per split.

Every answerer reads the same search response per question (hybrid+graph when the app has a graph layer,
`EVIDENCE_CHUNKS` hits), so a difference between two answerers is the answerers' alone. Answerers are named
functions of (question, response) -> Answer: `extractive` (the embedded default) and, when the app has an
answering model (a recorded one replayed with KGRAG_LLM_REPLAY_DIR, or a live one), `llm`. Other composers
join by name (`answerers=`), and `compare=(old, new)` names the pair the sign tests compare, per split.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from kgrag_core.acl import Caller
from kgrag_core.answering.context import AnswerContext
from kgrag_core.answering.extractive import extractive_answer
from kgrag_core.answering.generative import generative_answer
from kgrag_core.answering.model import Answer
from kgrag_core.answering.verification import verify_answer
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.evaluation.answer_metrics import answer_metrics
from kgrag_core.evaluation.metrics import mean, sign_test
from kgrag_core.evaluation.questions import EvalQuestion
from kgrag_core.graph_retrieval.router import QuestionKind, QuestionRouter, RuleRouter
from kgrag_core.graph_retrieval.searcher import GraphSearchResponse
from kgrag_core.limits import EVIDENCE_CHUNKS
from kgrag_core.search import SearchResponse
from kgrag_runtime.answer_flow import answer_verified, supporting_facts
from kgrag_runtime.app import KgragApp
from kgrag_runtime.graph import learned_router

Answerer = Callable[[str, Caller, SearchResponse | GraphSearchResponse], Answer]
ALL = "all"
# Compared question by question between two answerers: lower is better for the three in LOWER_IS_BETTER.
COMPARED = (
    "answer_ok",
    "value_accuracy",
    "outdated_as_current",
    "plan_as_done",
    "unsupported_rate",
    "conflict_surfaced",
)
LOWER_IS_BETTER = frozenset({"outdated_as_current", "plan_as_done", "unsupported_rate"})


def _llm(app: KgragApp) -> Answerer:
    model = app.llm
    if model is None:
        raise KgragError(
            ErrorCode.CONFIGURATION_INVALID,
            "The llm answerer needs an answering model.",
            hint="Set KGRAG_LLM_REPLAY_DIR to recorded replies (or KGRAG_LLM_BASE_URL and KGRAG_LLM_MODEL).",
        )

    def answer(question: str, caller: Caller, response: SearchResponse | GraphSearchResponse) -> Answer:
        # The app's prompt and verification, but no fallback: a model failure is counted as one, by code.
        context = _context_of(app, question, caller, response)
        facts = supporting_facts(response, context)
        return verify_answer(generative_answer(question, response.hits, model, facts=facts, context=context), facts)

    return answer


def _composed(app: KgragApp) -> Answerer:
    def answer(question: str, caller: Caller, response: SearchResponse | GraphSearchResponse) -> Answer:
        return answer_verified(question, response, None, context=_context_of(app, question, caller, response))

    return answer


# The context of the response being scored, read once: the answerers and the support the eval scores them
# against must see the same facts, and the named-entity facts read has a time budget that a loaded machine
# can overrun on one read and not the next.
_LAST_CONTEXT: dict[str, tuple[SearchResponse | GraphSearchResponse, AnswerContext]] = {}


def _context_of(
    app: KgragApp, question: str, caller: Caller, response: SearchResponse | GraphSearchResponse
) -> AnswerContext:
    held = _LAST_CONTEXT.get(question)
    if held is not None and held[0] is response:
        return held[1]
    context = app.answer_context(question, caller, response)
    _LAST_CONTEXT.clear()
    _LAST_CONTEXT[question] = (response, context)
    return context


# Answerers by name, each built for an app; a new composer registers here to be compared by name.
# `extractive` is the best-sentence picker (the `sentences` style, the answerer before the composed one):
# the baseline `composed` is compared against.
ANSWERERS: dict[str, Callable[[KgragApp], Answerer]] = {
    "extractive": lambda app: lambda q, caller, r: extractive_answer(q, r.hits),
    "composed": _composed,
    "llm": _llm,
}


def register_answerer(name: str, factory: Callable[[KgragApp], Answerer]) -> None:
    ANSWERERS[name] = factory


def default_answerers(app: KgragApp) -> dict[str, Answerer]:
    """`extractive` (the old answerer), `composed` (the new), and `llm` when the app has an answering model."""
    names = ["extractive", "composed", *(["llm"] if app.llm is not None else [])]
    return answerers_named(app, names)


def answerers_named(app: KgragApp, names: Sequence[str]) -> dict[str, Answerer]:
    unknown = [n for n in names if n not in ANSWERERS]
    if unknown:
        raise KgragError(
            ErrorCode.INVALID_QUERY,
            f"No answerer {unknown[0]!r}.",
            hint=f"Answerers: {', '.join(sorted(ANSWERERS))}.",
        )
    return {name: ANSWERERS[name](app) for name in names}


def evaluate_answers(
    app: KgragApp,
    questions: Sequence[EvalQuestion],
    *,
    graph: bool,
    answerers: Mapping[str, Answerer] | None = None,
    compare: tuple[str, str] | None = None,
) -> dict[str, object]:
    chosen = dict(answerers) if answerers is not None else default_answerers(app)
    names = list(chosen)
    if compare is None and len(names) >= 2:
        compare = (names[0], names[1])
    if compare is not None and not set(compare) <= set(names):
        raise ValueError(f"compare names an answerer that is not run: {compare}")
    rows: dict[str, dict[str, dict[str, float]]] = {name: {} for name in names}
    failures: dict[str, dict[str, str]] = {name: {} for name in names}
    n = EVIDENCE_CHUNKS.resolve(None)
    for q in questions:
        response = app.search(q.question, q.caller, top_k=n, graph=graph)
        # Every answerer is scored against the support the verifier is given on the answer path.
        facts = supporting_facts(response, _context_of(app, q.question, q.caller, response))
        for name, answerer in chosen.items():
            try:
                answer = answerer(q.question, q.caller, response).as_dict()
            except KgragError as err:  # a failed answer is an answer that says nothing: counted, and named
                failures[name][q.id] = err.code.value
                answer = {"answered": False, "sentences": [], "citations": []}
            rows[name][q.id] = answer_metrics(q, answer, facts)
    splits = [ALL, *sorted({q.split for q in questions if q.split is not None})]
    report: dict[str, object] = {
        "answerers": names,
        "compared": list(compare) if compare is not None else None,
        "per_split": {split: {name: _by_type(_in(questions, split), rows[name]) for name in names} for split in splits},
        "failures": {name: f for name, f in failures.items() if f},
        "per_question": rows,
    }
    if compare is not None:
        old, new = compare
        report["sign_tests"] = {
            f"{new} vs {old} ({metric}, {split})": _paired(_in(questions, split), rows[new], rows[old], metric)
            for split in splits
            for metric in COMPARED
        }
    return report


def router_accuracy(questions: Sequence[EvalQuestion], routers: Mapping[str, QuestionRouter]) -> dict[str, object]:
    """Share of typed questions each router routes to their type, per split (unanswerable is not a wording)."""
    kinds = {k.value for k in QuestionKind}
    typed = [q for q in questions if q.type in kinds]
    splits = [ALL, *sorted({q.split for q in typed if q.split is not None})]
    out: dict[str, object] = {}
    for name, router in routers.items():
        right = {q.id: router.route(q.question).kind.value == q.type for q in typed}
        out[name] = {
            "version": router.version,
            **{
                split: {
                    "accuracy": round(mean([1.0 if right[q.id] else 0.0 for q in _in(typed, split)]), 3),
                    "n": len(_in(typed, split)),
                }
                for split in splits
            },
        }
    return out


def comparison_routers(app: KgragApp, router_set: Path | None = None) -> dict[str, QuestionRouter]:
    """The rules, the learned router (the default's: the bundled sets with their shipped fit; or trained once per
    process on `router_set`), and the app's own router when it is neither. The default learned router trains on
    the bundled dev questions, so its dev figure here is in-sample (`benchmarks/router.py` cross-validates it)."""
    routers: dict[str, QuestionRouter] = {"rules": RuleRouter()}
    routers["learned"] = learned_router(app.searcher.embedder, router_set)
    if app.graph_searcher is not None and app.graph_searcher.router.version not in {
        r.version for r in routers.values()
    }:
        routers["configured"] = app.graph_searcher.router
    return routers


def _in(questions: Sequence[EvalQuestion], split: str) -> list[EvalQuestion]:
    return list(questions) if split == ALL else [q for q in questions if q.split == split]


def _by_type(
    questions: Sequence[EvalQuestion], rows: Mapping[str, Mapping[str, float]]
) -> dict[str, dict[str, float | int]]:
    grouped: dict[str, list[Mapping[str, float]]] = defaultdict(list)
    for q in questions:
        grouped[q.type].append(rows[q.id])
        grouped["ALL"].append(rows[q.id])
    out: dict[str, dict[str, float | int]] = {}
    for qtype in sorted(grouped, key=lambda t: (t == "ALL", t)):
        items = grouped[qtype]
        keys = sorted({k for item in items for k in item})
        out[qtype] = {"n": len(items), **{k: round(mean([i[k] for i in items if k in i]), 3) for k in keys}}
    return out


def _paired(
    questions: Sequence[EvalQuestion],
    new: Mapping[str, Mapping[str, float]],
    old: Mapping[str, Mapping[str, float]],
    metric: str,
) -> dict[str, float | int]:
    both = [q.id for q in questions if metric in new[q.id] and metric in old[q.id]]
    sign = -1.0 if metric in LOWER_IS_BETTER else 1.0  # a win is always "new is better"
    return sign_test([sign * new[i][metric] for i in both], [sign * old[i][metric] for i in both])
