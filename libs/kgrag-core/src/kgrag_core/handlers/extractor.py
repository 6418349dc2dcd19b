"""The extractor handler: chunks.changed -> tiered extraction of the document's current chunks.

Like the graph-writer it trusts only the event's key and re-reads the document from PostgreSQL, so a late
or replayed event extracts what is there now. A deleted document needs no work here: its chunks are gone,
and with them (in the same PostgreSQL transaction) their evidence and every fact left without evidence.
Unchanged chunks are cache hits, so a re-index or an ACL change costs one cache lookup per chunk.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kgrag_core.documents import DocumentStatus
from kgrag_core.errors import ErrorCode
from kgrag_core.events import CHUNKS_CHANGED, GRAPH_CHANGED, GraphChanged
from kgrag_core.extraction.pipeline import Extractor, SourcedChunk
from kgrag_core.handlers.protocol import DeadLetter, HandlerResult, OutputEvent
from kgrag_core.ports import DocumentStore


@dataclass(slots=True)
class ExtractorHandler:
    documents: DocumentStore
    extractor: Extractor
    name: str = "extractor"
    topics: tuple[str, ...] = (CHUNKS_CHANGED,)

    def handle(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> HandlerResult:
        result = HandlerResult()
        doc_ids: list[str] = []
        for key, payload in batch:
            doc_id = payload.get("doc_id")
            if not isinstance(doc_id, str) or not doc_id:
                reason = "the event has no doc_id"
                result.dead_letters.append(DeadLetter(key, payload, ErrorCode.MALFORMED_EVENT.value, reason))
                continue
            if doc_id not in doc_ids:  # one extraction per document per batch, however many events it had
                doc_ids.append(doc_id)
        docs = self.documents.get_documents(doc_ids)
        chunks: list[SourcedChunk] = []
        for doc_id in doc_ids:
            doc = docs.get(doc_id)
            if doc is not None and doc.status is not DocumentStatus.DELETED:
                chunks.extend(SourcedChunk(c, doc.source) for c in self.documents.chunks_of(doc_id))
        # One extraction call for the whole batch: tier 2 runs its model over many chunks at once and tier 3
        # packs several chunks per request. No ingest outcomes: the document's ingest outcome is the
        # indexer's; extraction state is queryable per chunk (`kgrag extract status`).
        report = self.extractor.extract(chunks)
        items = dict.fromkeys(doc_ids, 0)
        doc_of = {c.chunk.chunk_id: c.chunk.doc_id for c in chunks}
        for extraction in report.results:
            items[doc_of[extraction.chunk_id]] += extraction.item_count
        for doc_id in doc_ids:
            if doc_id in docs:
                event = GraphChanged(doc_id=doc_id, items=items[doc_id])
                result.outputs.append(OutputEvent(GRAPH_CHANGED, doc_id, event.model_dump(mode="json")))
        return result
