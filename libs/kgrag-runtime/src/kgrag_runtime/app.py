"""The embedded application: the use cases wired to one process's adapters.

The CLI and the HTTP API both drive this object; neither touches an adapter directly.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from kgrag_core.acl import Caller
from kgrag_core.answering.extractive import extractive_answer
from kgrag_core.answering.generative import generative_answer
from kgrag_core.connectors import ConnectorFailure, ConnectorItem
from kgrag_core.documents import SourceDocument
from kgrag_core.events import (
    DOCUMENTS_CHANGED,
    DOCUMENTS_DELETED,
    DocumentDeleted,
    document_changed_from_source,
)
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_core.ingest import IngestOutcome, IngestStatus
from kgrag_core.limits import EVIDENCE_CHUNKS
from kgrag_core.ports import Cache, ChatModel, IngestLog, StatsSource
from kgrag_core.retrieval.hybrid import HybridSearcher, SearchMode
from kgrag_core.search import SearchResponse
from kgrag_runtime.bus import InProcessBus

ProgressCallback = Callable[[int], None]


@dataclass(slots=True)
class KgragApp:
    searcher: HybridSearcher
    handler: ChunkIndexerHandler
    bus: InProcessBus
    ingest_log: IngestLog
    stats_source: StatsSource
    cache: Cache
    llm: ChatModel | None
    batch_documents: int = 64
    answer_cache_ttl_s: int = 300

    def __post_init__(self) -> None:
        # Subscribe before anything is published: the embedded bus keeps no retention for unheard topics.
        for topic in self.handler.topics:
            self.bus.subscribe(topic)

    # --- ingestion -----------------------------------------------------------------------------------

    def ingest(
        self, items: Iterable[ConnectorItem], *, progress: ProgressCallback | None = None
    ) -> list[IngestOutcome]:
        """Publish documents.changed for each item and run the chunk indexer until the bus is drained."""
        outcomes: list[IngestOutcome] = []
        failures: list[IngestOutcome] = []
        pending: list[SourceDocument] = []
        for item in items:
            if isinstance(item, ConnectorFailure):
                failures.append(IngestOutcome(item.doc_id or item.uri, IngestStatus.REJECTED, uri=item.uri,
                                              error_code=item.code, message=item.message))
                if progress:
                    progress(1)
                continue
            pending.append(item)
            if len(pending) >= self.batch_documents:
                outcomes.extend(self._index(pending, progress))
                pending = []
        if pending:
            outcomes.extend(self._index(pending, progress))
        # Failures the connector found never reached the bus; they belong in the ingest log all the same.
        self.ingest_log.record_outcomes(failures)
        return failures + outcomes

    def _index(self, docs: Sequence[SourceDocument], progress: ProgressCallback | None) -> list[IngestOutcome]:
        self.bus.publish_many(
            DOCUMENTS_CHANGED, ((d.doc_id, document_changed_from_source(d).model_dump(mode="json")) for d in docs)
        )
        report = self.bus.drain(self.handler)
        self.ingest_log.record_outcomes(report.outcomes)
        if progress:
            progress(len(docs))
        return report.outcomes

    def delete(self, doc_id: str) -> IngestOutcome:
        self.bus.publish(DOCUMENTS_DELETED, doc_id, DocumentDeleted(doc_id=doc_id).model_dump(mode="json"))
        report = self.bus.drain(self.handler)
        self.ingest_log.record_outcomes(report.outcomes)
        return report.outcomes[-1]

    # --- queries -------------------------------------------------------------------------------------

    def search(
        self, query: str, caller: Caller, *, top_k: int | None = None, mode: SearchMode = SearchMode.HYBRID
    ) -> SearchResponse:
        return self.searcher.search(query, caller, top_k=top_k, mode=mode)

    def ask(self, question: str, caller: Caller, *, evidence_chunks: int | None = None) -> dict[str, object]:
        """Answer with citations. Cached per caller scope; any index change invalidates the cache."""
        n = EVIDENCE_CHUNKS.resolve(evidence_chunks)
        key = self._answer_key(question, caller, n)
        cached = self.cache.get(key)
        if cached is not None:
            return {**json.loads(cached), "cached": True}
        response = self.searcher.search(question, caller, top_k=n)
        if self.llm is not None:
            answer = generative_answer(question, response.hits, self.llm)
        else:
            answer = extractive_answer(question, response.hits)
        out = answer.as_dict()
        if self.answer_cache_ttl_s > 0:
            self.cache.set(key, json.dumps(out).encode("utf-8"), self.answer_cache_ttl_s)
        return {**out, "cached": False}

    def _answer_key(self, question: str, caller: Caller, n: int) -> str:
        digest = hashlib.sha256(f"{question.strip()}\x1f{n}\x1f{self.llm is not None}".encode()).hexdigest()
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
            "dead_letters": {k: len(v) for k, v in sorted(self.bus.dead_letters.items())},
        }
