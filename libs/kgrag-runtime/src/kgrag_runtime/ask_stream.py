"""`KgragApp.ask` as a stream of events, for server-sent events and `kgrag ask --stream`.

Order (docs/api.md, "Streaming answers"): `route`, `citations` (the sources the answer may cite), one
`sentence` per verified sentence as soon as it is verified, then `conflicts`, `graph_evidence`,
`confidence` and `done` (the same body a non-streaming ask returns, with its `trace_id`). A sentence that
fails verification is never sent. Closing the iterator (a client that went away) stops the model.

A streamed answer is traced like any other but neither read from nor written to the answer cache: the
point of streaming is the first sentence now, and a cached body would arrive whole anyway.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from kgrag_core.acl import Caller
from kgrag_core.answering.model import Answer
from kgrag_core.answering.streaming import StreamedSentence, stream_answer
from kgrag_core.graph_retrieval.searcher import GraphSearchResponse
from kgrag_core.limits import EVIDENCE_CHUNKS
from kgrag_core.search import SearchHit, SearchResponse
from kgrag_core.tracing.build import answer_part, search_body
from kgrag_core.tracing.model import TraceKind
from kgrag_core.tracing.timing import measuring
from kgrag_runtime.answer_flow import extractive_for, supporting_facts
from kgrag_runtime.ask_contract import global_part, request_part

if TYPE_CHECKING:
    from kgrag_core.communities.global_route import GlobalResult
    from kgrag_runtime.app import AskRequestOptions, KgragApp

AskEvent = tuple[str, dict[str, object]]


def ask_events(
    kg: KgragApp,
    question: str,
    caller: Caller,
    options: AskRequestOptions,
    *,
    evidence_chunks: int | None = None,
    graph: bool | None = None,
) -> Iterator[AskEvent]:
    n = EVIDENCE_CHUNKS.resolve(evidence_chunks)
    started = time.perf_counter()
    plan = kg._plan(graph, options)
    # The search runs in one step (no yield inside), so its stage timings stay in one context.
    with measuring() as timings:
        # The same search the non-streaming ask runs.
        response = kg._ask_search(question, caller, n, plan, options)
        # The GLOBAL route, when the ask takes it: the same themes and fused answer as the plain ask's.
        found = kg._global(question, caller, response, options, graph)
    route = _route(response, kg)
    if found is not None:
        route["global"] = True  # the themes answer, not the route's hybrid (or graph) answer
    yield "route", route
    yield "citations", {"sources": [_source(i, h) for i, h in enumerate(response.hits, start=1)]}
    answering = time.perf_counter()
    answer: Answer | None = None
    if found is not None:
        answer, found = kg._global_answer(question, caller, response, options, found)
        yield from _global_events(answer, found)
    else:
        context = kg.answer_context_for(question, caller, response, options)
        facts = supporting_facts(response, context)
        extractive = extractive_for(question, response.hits, context, as_of=options.as_of)
        for event in stream_answer(question, response.hits, kg.llm, extractive, facts=facts, context=context):
            if isinstance(event, StreamedSentence):
                yield "sentence", event.as_dict()
            else:
                answer = event
    if answer is None:  # stream_answer always ends with the answer
        raise AssertionError("the answer stream ended without its answer")
    done = time.perf_counter()
    kg.quality.record_stage("answer", done - answering)
    kg.quality.record_stage("ask", done - started)
    kg.quality.record_answer(
        answer.mode.value, answer.confidence, removed_sentences=answer.removed_sentences, fallback=answer.fallback
    )
    out = kg._answer_body(answer.as_dict(), response, options, plan)
    if found is not None:
        global_part(out, found)
    yield "conflicts", {"conflicts": out.get("conflicts", [])}
    yield "graph_evidence", {"graph_evidence": out.get("graph_evidence", [])}
    yield "confidence", {"confidence": out["confidence"]}
    request: dict[str, object] = {"evidence_chunks": evidence_chunks, "graph": graph, "stream": True}
    if options.requested:
        request.update(request_part(options.mode, options.filters, options.max_hops, options.include_graph_paths))
    timings.add("answer", done - answering)
    trace_id = _trace(kg, caller, response, out, answer, request, timings.rounded())
    yield "done", {**out, "cached": False, "streamed": True, "trace_id": trace_id}


def _global_events(answer: Answer, found: GlobalResult | None) -> Iterator[AskEvent]:
    """The GLOBAL answer's events: its themes (points citing the answer's citations), then each sentence with
    the citations it introduces, numbered as in the final answer."""
    if found is not None:
        themed: dict[str, object] = {"citations": [c.as_dict() for c in answer.citations]}
        global_part(themed, found)  # the themes exactly as the final body holds them
        yield "themes", {"themes": themed["themes"], "communities": list(found.communities_used)}
    by_id = {c.id: c for c in answer.citations}
    sent: set[int] = set()
    for index, sentence in enumerate(answer.sentences):
        new = tuple(by_id[i] for i in sentence.citation_ids if i in by_id and i not in sent)
        sent.update(c.id for c in new)
        yield "sentence", StreamedSentence(index, sentence, new).as_dict()


def _route(response: SearchResponse | GraphSearchResponse, kg: KgragApp) -> dict[str, object]:
    routed = isinstance(response, GraphSearchResponse)
    return {
        "route": response.route.as_dict() if isinstance(response, GraphSearchResponse) else None,
        "graph_degraded": response.degraded if isinstance(response, GraphSearchResponse) else None,
        "answerer": "extractive" if kg.llm is None else "llm",
        "graph": routed,
    }


def _source(n: int, hit: SearchHit) -> dict[str, object]:
    return {"source": n, "chunk_id": hit.chunk_id, "doc_id": hit.doc_id, "title": hit.title, "uri": hit.uri}


def _trace(
    kg: KgragApp,
    caller: Caller,
    response: SearchResponse | GraphSearchResponse,
    out: dict[str, object],
    answer: Answer,
    request: dict[str, object],
    timings_ms: dict[str, float],
) -> str | None:
    if kg.traces is None:
        return None
    body = search_body(response, caller, request=request, versions=kg.traces.versions(), timings_ms=timings_ms)
    part = answer_part(out, cached=False, removed=answer.removed)
    strategy = out.get("strategy_used")
    if isinstance(strategy, dict) and "communities" in strategy:  # the GLOBAL route: what it read
        part["communities"] = strategy["communities"]
    body["answer"] = part
    return kg.traces.record(TraceKind.ASK, caller, body)
