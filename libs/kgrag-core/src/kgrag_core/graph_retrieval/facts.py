"""Which graph facts a question is about, in the terms both the searcher and the answer context use.

Here rather than in `kgrag_core.answering` so the graph searcher can pick the facts' evidence chunks without
importing the answering package (which imports this one).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kgrag_core.extraction.records import ClaimRecord
from kgrag_core.graph.model import Edge
from kgrag_core.graph_retrieval.evidence import DEFAULT_ATTRIBUTE_CUES, attribute_relevance
from kgrag_core.text_terms import content_terms

# A possessive ("Kenji Watanabe's role") names the entity: without this the term read is "watanabe'".
_POSSESSIVE = re.compile(r"(?<=\w)['’]s?\b")


def named_in(question: str, name: str) -> bool:
    """Whether the question names this entity: every content term of the name is among the question's."""
    terms = set(content_terms(name))
    return bool(terms) and terms <= set(content_terms(_POSSESSIVE.sub("", question)))


def fact_chunk_ids(
    question: str, claims: Sequence[ClaimRecord], edges: Sequence[Edge], *, limit: int = 40
) -> list[str]:
    """The evidence chunks worth loading for the context: those of claims about an attribute the question asks
    for or of an entity it names, and of relations touching a named entity; the most relevant first."""
    ranked: list[tuple[float, str]] = []
    for claim in claims:
        fit = attribute_relevance(question, claim.attribute, DEFAULT_ATTRIBUTE_CUES)
        is_named = named_in(question, claim.entity_name)
        if fit >= 1.0 or is_named:
            ranked.append((fit + is_named, claim.chunk_id))
    for edge in edges:
        ends = sum(named_in(question, end.name) for end in (edge.subject, edge.object))
        if ends:
            ranked.extend((ends + 0.5, c) for c in edge.evidence_chunk_ids)
    ranked.sort(key=lambda r: -r[0])
    return list(dict.fromkeys(c for _, c in ranked))[:limit]
