"""Which answerer runs, with the LLM's fallback and every answer's sentence verification, in one place.

Both `KgragApp.ask` and its streaming form go through here, so an answer is verified the same way
whichever runtime, answerer or transport produced it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date

from kgrag_core.answering.compose import composed_answer
from kgrag_core.answering.context import AnswerContext, planned_only
from kgrag_core.answering.extractive import extractive_answer
from kgrag_core.answering.fallback import answer_or_fallback
from kgrag_core.answering.model import Answer
from kgrag_core.answering.verification import SupportingFact, verify_answer
from kgrag_core.graph_retrieval.searcher import GraphSearchResponse
from kgrag_core.ports import ChatModel
from kgrag_core.search import SearchHit, SearchResponse


def supporting_facts(
    response: SearchResponse | GraphSearchResponse, context: AnswerContext | None = None
) -> tuple[SupportingFact, ...]:
    """What may back a sentence besides its quotes, each with the chunks it rests on (all already
    visibility-filtered): the graph lines the search found, the context's facts, and each source's own title
    and date (a composed sentence names the document it cites and when it was written)."""
    out: list[SupportingFact] = []
    if isinstance(response, GraphSearchResponse):
        out.extend(SupportingFact(line.text, line.chunk_ids) for line in response.graph_lines)
    if context is not None:
        sources = {h.chunk_id: h for h in (*context.chunks, *context.evidence.values())}
        planned = {f.fact_id for f in planned_only(context.facts)}
        for fact in context.facts:
            titles = " ".join(sources[c].title for c in fact.evidence_chunk_ids if c in sources)
            if fact.fact_id in planned:
                # Never stated as done by any answerer (verification's plan guard); a bare figure or a relation's
                # object is the plan only beside its subject ("headcount 58", "Beacon … CockroachDB").
                figure = not any(ch.isalpha() for ch in fact.value)
                subject = fact.subject if figure or fact.kind == "relation" else ""
                out.append(
                    SupportingFact(
                        f"{fact.render()} {titles}", fact.evidence_chunk_ids, planned=fact.value, subject=subject
                    )
                )
            else:
                out.append(SupportingFact(f"{fact.render()} {titles}", fact.evidence_chunk_ids))
        for hit in sources.values():
            day = hit.doc_time.date().isoformat() if hit.doc_time else ""
            out.append(SupportingFact(f"{hit.title} {day}", (hit.chunk_id,)))
    return tuple(out)


def extractive_for(
    question: str, hits: Sequence[SearchHit], context: AnswerContext | None, *, as_of: date | None = None
) -> Callable[[], Answer]:
    """The answerer without a model: composed from the context's facts, or (no context: the `sentences`
    style) today's best supporting sentences."""

    def extractive() -> Answer:
        if context is None:
            return extractive_answer(question, hits, as_of=as_of)
        return composed_answer(context)

    return extractive


def answer_verified(
    question: str,
    response: SearchResponse | GraphSearchResponse,
    llm: ChatModel | None,
    *,
    context: AnswerContext | None = None,
    as_of: date | None = None,
) -> Answer:
    """The LLM's answer when there is a model (the extractive one, flagged, when it fails), else the
    extractive one; either way without the sentences their quotes do not support."""
    facts = supporting_facts(response, context)
    hits = response.hits
    extractive = extractive_for(question, hits, context, as_of=as_of)
    answer = (
        extractive()
        if llm is None
        else answer_or_fallback(question, hits, llm, extractive, facts=facts, context=context)
    )
    return verify_answer(answer, facts)
