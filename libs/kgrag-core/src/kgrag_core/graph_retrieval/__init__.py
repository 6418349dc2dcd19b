"""Graph-assisted retrieval: route the question, link its entities, expand a bounded neighbourhood, and add
the graph's evidence to hybrid search as a down-weighted route (pure logic over `GraphReader`)."""

from kgrag_core.graph_retrieval.evidence import ContextPack, GraphEvidence, GraphLine, gather_evidence, pack_context
from kgrag_core.graph_retrieval.expansion import ExpansionSettings, expand
from kgrag_core.graph_retrieval.linking import LinkCandidate, LinkedMention, Mention, link_entities
from kgrag_core.graph_retrieval.router import QuestionKind, Route, route
from kgrag_core.graph_retrieval.searcher import (
    GraphAssistedSearcher,
    GraphSearchResponse,
    GraphSearchSettings,
    HybridBackend,
)

__all__ = [
    "ContextPack",
    "ExpansionSettings",
    "GraphAssistedSearcher",
    "GraphEvidence",
    "GraphLine",
    "GraphSearchResponse",
    "GraphSearchSettings",
    "HybridBackend",
    "LinkCandidate",
    "LinkedMention",
    "Mention",
    "QuestionKind",
    "Route",
    "expand",
    "gather_evidence",
    "link_entities",
    "pack_context",
    "route",
]
