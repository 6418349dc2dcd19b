"""The extractor handler: chunks.changed -> tiered extraction of the document's current chunks.

Like the graph-writer it trusts only the event's key and re-reads the document from PostgreSQL, so a late
or replayed event extracts what is there now. A deleted document's own chunks are gone, and with them (in
the same PostgreSQL transaction) their evidence and every fact left without evidence. What a deletion may
leave here is *orphaned duplicates*: chunks of live documents that tier 0 had recorded as copies of a
deleted chunk. They kept their own evidence, and every batch extracts them again (the first becomes the
new representative, the others its duplicates), so the deletion event that removed their representative
is what re-anchors them, on the embedded bus and on Kafka alike. Unchanged chunks are cache hits, so a
re-index or an ACL change costs one cache lookup per chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from kgrag_core.documents import DocumentStatus
from kgrag_core.errors import ErrorCode
from kgrag_core.events import CHUNKS_CHANGED, GRAPH_CHANGED, GraphChanged
from kgrag_core.extraction.model import ChunkExtraction
from kgrag_core.extraction.pipeline import ExtractionReport, Extractor, SourcedChunk
from kgrag_core.handlers.protocol import DeadLetter, HandlerResult, OutputEvent
from kgrag_core.ports import DocumentStore


@dataclass(slots=True)
class ExtractorHandler:
    documents: DocumentStore
    extractor: Extractor
    name: str = "extractor"
    topics: tuple[str, ...] = (CHUNKS_CHANGED,)
    # Told of every extraction's report (the runtimes count tier 3's calls, tokens and spend from it).
    on_report: Callable[[ExtractionReport], None] | None = None

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
        report = self._extract(chunks)
        results = list(report.results)
        # After the batch: a deletion in it may just have orphaned copies elsewhere.
        orphans = self._extract_orphans({c.chunk.chunk_id for c in chunks})
        results.extend(orphans.results)
        chunks.extend(orphans.chunks)
        doc_of = {c.chunk.chunk_id: c.chunk.doc_id for c in chunks}
        announced = [d for d in doc_ids if d in docs] + [d for d in orphans.doc_ids if d not in doc_ids]
        items = dict.fromkeys(announced, 0)
        for extraction in results:
            items[doc_of[extraction.chunk_id]] += extraction.item_count
        for doc_id in announced:
            event = GraphChanged(doc_id=doc_id, items=items[doc_id])
            result.outputs.append(OutputEvent(GRAPH_CHANGED, doc_id, event.model_dump(mode="json")))
        return result

    def _extract(self, chunks: Sequence[SourcedChunk]) -> ExtractionReport:
        report = self.extractor.extract(chunks)
        if self.on_report is not None:
            self.on_report(report)
        return report

    def _extract_orphans(self, done: set[str]) -> _Orphans:
        """Extract again every chunk left a duplicate of a deleted chunk; usually there is none (one query)."""
        out = _Orphans()
        seen = set(done)
        while True:
            ids = [i for i in self.extractor.store.orphaned_duplicates(ORPHAN_SLICE) if i not in seen]
            if not ids:  # none left, or only ones this call already extracted (never loop on them)
                return out
            seen.update(ids)
            found = self.documents.get_chunks(ids)
            docs = self.documents.get_documents(sorted({c.doc_id for c in found.values()}))
            # Oldest first, as the store lists them: the oldest surviving copy becomes the representative.
            sourced = [
                SourcedChunk(found[i], docs[found[i].doc_id].source)
                for i in ids
                if i in found and found[i].doc_id in docs and docs[found[i].doc_id].status is not DocumentStatus.DELETED
            ]
            report = self._extract(sourced)
            out.chunks.extend(sourced)
            out.results.extend(report.results)
            for item in sourced:
                if item.chunk.doc_id not in out.doc_ids:
                    out.doc_ids.append(item.chunk.doc_id)


ORPHAN_SLICE = 256


@dataclass(slots=True)
class _Orphans:
    chunks: list[SourcedChunk] = field(default_factory=list)
    results: list[ChunkExtraction] = field(default_factory=list)
    doc_ids: list[str] = field(default_factory=list)
