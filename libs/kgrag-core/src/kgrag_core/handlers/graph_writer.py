"""The graph-writer handler: keep the lexical graph equal to PostgreSQL for every document it hears of.

It listens to chunks.changed only, which the chunk-indexer, the deletion-worker and the acl-propagator
produce after their PostgreSQL commit. It never trusts the event's contents, only its key: it reads the
document's current state from PostgreSQL and projects that, so a late event removes rather than
resurrects, and replays converge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kgrag_core.documents import DocumentStatus
from kgrag_core.errors import ErrorCode
from kgrag_core.events import CHUNKS_CHANGED
from kgrag_core.handlers.protocol import DeadLetter, HandlerResult
from kgrag_core.ingest import IngestOutcome, IngestStatus
from kgrag_core.ports import DocumentStore, LexicalGraph


@dataclass(slots=True)
class GraphWriterHandler:
    documents: DocumentStore
    graph: LexicalGraph
    name: str = "graph-writer"
    topics: tuple[str, ...] = (CHUNKS_CHANGED,)

    def handle(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> HandlerResult:
        result = HandlerResult()
        for key, payload in batch:
            doc_id = payload.get("doc_id")
            if not isinstance(doc_id, str) or not doc_id:
                reason = "the event has no doc_id"
                result.dead_letters.append(DeadLetter(key, payload, ErrorCode.MALFORMED_EVENT.value, reason))
                continue
            result.outcomes.append(self.sync(doc_id))
        return result

    def sync(self, doc_id: str) -> IngestOutcome:
        doc = self.documents.get_document(doc_id)
        if doc is None or doc.status is DocumentStatus.DELETED:
            removed = self.graph.delete_document(doc_id)
            return IngestOutcome(doc_id, IngestStatus.DELETED, chunks_removed=removed, message="graph: removed")
        chunks = self.documents.chunks_of(doc_id)
        # The run ID names the document version projected, so a replay writes the same ID again.
        run_id = f"{doc.content_hash.removeprefix('sha256:')[:16]}-v{doc.version}"
        self.graph.upsert_document(doc, chunks, run_id=run_id)
        return IngestOutcome(doc_id, IngestStatus.UPDATED, chunks_total=len(chunks), message="graph: projected")
