"""The retrieval strategy a caller may request for an answer (`mode` of POST /v1/ask, `kgrag ask --mode`).

AUTO leaves it to the router (and the server's graph setting); the others choose. VECTOR is hybrid search
alone (dense + BM25: what "vector RAG" means here), GRAPH_ASSISTED always adds the graph layer (a question
the router takes for a lookup is read as one about the entities it names), MULTI_HOP walks the graph as a
chain. GLOBAL is map-reduce over the caller's views of the communities (kgrag_core.communities.global_route,
issue 12); while none exist it answers from hybrid search with `global_fallback: true`, so the caller learns
that the corpus-wide answer is not there yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kgrag_core.graph_retrieval.router import QuestionKind


class AskMode(StrEnum):
    AUTO = "AUTO"
    VECTOR = "VECTOR"
    GRAPH_ASSISTED = "GRAPH_ASSISTED"
    MULTI_HOP = "MULTI_HOP"
    GLOBAL = "GLOBAL"


@dataclass(frozen=True, slots=True)
class ModePlan:
    use_graph: bool
    kind: QuestionKind | None  # None: the router decides
    global_fallback: bool = False
    lookup_as_entity: bool = False  # GRAPH_ASSISTED: a routed lookup is read as an entity question


def plan_mode(mode: AskMode, *, graph_default: bool, graph_available: bool) -> ModePlan:
    """How a requested mode runs on this server (without a graph layer every mode is hybrid)."""
    if mode is AskMode.AUTO:
        return ModePlan(graph_default and graph_available, None)
    if mode is AskMode.VECTOR or not graph_available:
        return ModePlan(False, None, global_fallback=mode is AskMode.GLOBAL)
    if mode is AskMode.GLOBAL:
        return ModePlan(False, None, global_fallback=True)
    if mode is AskMode.MULTI_HOP:
        return ModePlan(True, QuestionKind.MULTI_HOP)
    return ModePlan(True, None, lookup_as_entity=True)
