"""The application: the use cases wired to one process's adapters, embedded or distributed.

The CLI and the HTTP API both drive this object; neither touches an adapter directly.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kgrag_core.acl import AclClass, Caller
from kgrag_core.answering.extractive import extractive_answer
from kgrag_core.answering.generative import generative_answer
from kgrag_core.connectors import ConnectorItem
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.graph.routing import RoutedGraphReader
from kgrag_core.graph_retrieval.searcher import GraphAssistedSearcher, GraphSearchResponse
from kgrag_core.ingest import IngestOutcome
from kgrag_core.limits import EVIDENCE_CHUNKS
from kgrag_core.ports import Cache, ChatModel, IngestLog, StatsSource
from kgrag_core.retrieval.hybrid import HybridSearcher, SearchMode
from kgrag_core.search import SearchResponse
from kgrag_runtime.ingest_gateway import EmbeddedIngest, IngestGateway, ProgressCallback

if TYPE_CHECKING:  # built only when extraction is on; a search never imports them
    from kgrag_runtime.extraction_admin import ExtractionAdmin
    from kgrag_runtime.graph_admin import GraphAdmin


@dataclass(slots=True)
class KgragApp:
    searcher: HybridSearcher
    ingestion: IngestGateway
    ingest_log: IngestLog
    stats_source: StatsSource
    cache: Cache
    llm: ChatModel | None
    answer_cache_ttl_s: int = 300
    extraction: ExtractionAdmin | None = None  # None when KGRAG_EXTRACTION_ENABLED=false
    graph_searcher: GraphAssistedSearcher | None = None
    graph_by_default: bool = False
    graph: GraphAdmin | None = None  # the entity API; None when extraction is off
    graph_reads: RoutedGraphReader | None = None  # distributed, Neo4j configured: where graph reads went

    def require_extraction(self) -> ExtractionAdmin:
        """The extraction admin, or CONFIGURATION_INVALID when extraction is switched off."""
        if self.extraction is None:
            raise KgragError(
                ErrorCode.CONFIGURATION_INVALID,
                "Extraction is switched off.",
                hint="Set KGRAG_EXTRACTION_ENABLED=true (the default) and ingest again.",
            )
        return self.extraction

    def require_graph(self) -> GraphAdmin:
        """The entity API, or CONFIGURATION_INVALID when the knowledge graph is switched off."""
        if self.graph is None:
            raise KgragError(
                ErrorCode.CONFIGURATION_INVALID,
                "The knowledge graph is switched off.",
                hint="Set KGRAG_EXTRACTION_ENABLED=true (the default) and ingest again.",
            )
        return self.graph

    # --- ingestion -----------------------------------------------------------------------------------

    def ingest(
        self, items: Iterable[ConnectorItem], *, progress: ProgressCallback | None = None
    ) -> list[IngestOutcome]:
        """Submit documents (embedded: indexed when this returns; distributed: queued on Kafka)."""
        return self.ingestion.ingest(items, progress=progress)

    def delete(self, doc_id: str) -> IngestOutcome:
        return self.ingestion.delete(doc_id)

    def change_acl(self, doc_id: str, acl: AclClass) -> IngestOutcome:
        return self.ingestion.change_acl(doc_id, acl)

    # --- queries -------------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        caller: Caller,
        *,
        top_k: int | None = None,
        mode: SearchMode = SearchMode.HYBRID,
        graph: bool | None = None,
    ) -> SearchResponse | GraphSearchResponse:
        """Hybrid search; with the graph layer (graph=True, or the configured default) the question is routed
        and, unless it is a lookup, graph evidence joins the fusion. Only hybrid mode has a graph layer."""
        if self._use_graph(graph) and mode is SearchMode.HYBRID and self.graph_searcher is not None:
            return self.graph_searcher.search(query, caller, top_k=top_k)
        return self.searcher.search(query, caller, top_k=top_k, mode=mode)

    def ask(
        self, question: str, caller: Caller, *, evidence_chunks: int | None = None, graph: bool | None = None
    ) -> dict[str, object]:
        """Answer with citations. Cached per caller scope; any index change invalidates the cache."""
        n = EVIDENCE_CHUNKS.resolve(evidence_chunks)
        use_graph = self._use_graph(graph) and self.graph_searcher is not None
        key = self._answer_key(question, caller, n, use_graph)
        cached = self.cache.get(key)
        if cached is not None:
            return {**json.loads(cached), "cached": True}
        response = self.search(question, caller, top_k=n, graph=use_graph)
        if self.llm is not None:
            answer = generative_answer(question, response.hits, self.llm)
        else:
            answer = extractive_answer(question, response.hits)
        out = answer.as_dict()
        if isinstance(response, GraphSearchResponse):
            out["route"] = response.route.as_dict()
            out["graph_lines"] = [line.text for line in response.graph_lines]
            out["graph_degraded"] = response.degraded
        if self.answer_cache_ttl_s > 0:
            self.cache.set(key, json.dumps(out).encode("utf-8"), self.answer_cache_ttl_s)
        return {**out, "cached": False}

    def _use_graph(self, graph: bool | None) -> bool:
        return self.graph_by_default if graph is None else graph

    def _answer_key(self, question: str, caller: Caller, n: int, graph: bool) -> str:
        digest = hashlib.sha256(f"{question.strip()}\x1f{n}\x1f{self.llm is not None}\x1f{graph}".encode()).hexdigest()
        return f"ask:{caller.scope_key()}:{self.cache.generation()}:{digest[:32]}"

    # --- status --------------------------------------------------------------------------------------

    def status(self) -> dict[str, object]:
        s = self.stats_source.stats()
        return {
            "documents": s.documents,
            "deleted_documents": s.deleted_documents,
            "chunks": s.chunks,
            "acl_classes": s.acl_classes,
            "cached_vectors": s.cached_vectors,
            "ingest_errors": s.ingest_errors,
            "vector_points": self.searcher.vectors.count(),
            "keyword_docs": self.searcher.keywords.count(),
            "embedding_model": self.searcher.embedder.model_id,
            "llm": self.llm.model_id if self.llm else None,
            "dead_letters": (
                {k: len(v) for k, v in sorted(self.ingestion.bus.dead_letters.items())}
                if isinstance(self.ingestion, EmbeddedIngest)
                else None
            ),
            "extraction": self.extraction.status() if self.extraction is not None else None,
        }
