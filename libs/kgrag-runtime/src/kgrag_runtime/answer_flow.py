"""Which answerer runs, with the LLM's fallback and every answer's sentence verification, in one place.

Both `KgragApp.ask` and its streaming form go through here, so an answer is verified the same way
whichever runtime, answerer or transport produced it.
"""

from __future__ import annotations

from datetime import date

from kgrag_core.answering.extractive import extractive_answer
from kgrag_core.answering.fallback import answer_or_fallback
from kgrag_core.answering.model import Answer
from kgrag_core.answering.verification import SupportingFact, verify_answer
from kgrag_core.graph_retrieval.searcher import GraphSearchResponse
from kgrag_core.ports import ChatModel
from kgrag_core.search import SearchResponse


def supporting_facts(response: SearchResponse | GraphSearchResponse) -> tuple[SupportingFact, ...]:
    """The graph lines the search found, each with the chunks it rests on (already visibility-filtered)."""
    if not isinstance(response, GraphSearchResponse):
        return ()
    return tuple(SupportingFact(line.text, line.chunk_ids) for line in response.graph_lines)


def answer_verified(
    question: str, response: SearchResponse | GraphSearchResponse, llm: ChatModel | None, *, as_of: date | None = None
) -> Answer:
    """The LLM's answer when there is a model (the extractive one, flagged, when it fails), else the
    extractive one; either way without the sentences their quotes do not support."""
    facts = supporting_facts(response)
    hits = response.hits

    def extractive() -> Answer:
        return extractive_answer(question, hits, as_of=as_of)

    answer = extractive() if llm is None else answer_or_fallback(question, hits, llm, extractive, facts=facts)
    return verify_answer(answer, facts)
