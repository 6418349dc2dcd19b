"""The text-graph handler: chunks.changed -> the document's part of the text graph, rebuilt.

Like the extractor it trusts only the event's key and re-reads the document from PostgreSQL, so a late or
replayed event builds what is there now; a deleted document (or one whose chunks are gone) loses its edges.
A re-permissioned document's edges are rebuilt with the new ACL class (the walk also rechecks the chunk's
current class in SQL, so a stale edge can hide a passage but never show one).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kgrag_core.documents import DocumentStatus
from kgrag_core.errors import ErrorCode
from kgrag_core.events import CHUNKS_CHANGED
from kgrag_core.handlers.protocol import DeadLetter, HandlerResult
from kgrag_core.ports import DocumentStore
from kgrag_core.text_graph.builder import TextGraphBuilder
from kgrag_core.text_graph.model import Passage


@dataclass(slots=True)
class TextGraphHandler:
    documents: DocumentStore
    builder: TextGraphBuilder
    name: str = "text-graph"
    topics: tuple[str, ...] = (CHUNKS_CHANGED,)
    # Told the seconds each batch took (the runtimes' text-graph build-time histogram).
    on_batch: Callable[[float], None] | None = None

    def handle(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> HandlerResult:
        started = time.perf_counter()
        result = HandlerResult()
        doc_ids: list[str] = []
        for key, payload in batch:
            doc_id = payload.get("doc_id")
            if not isinstance(doc_id, str) or not doc_id:
                reason = "the event has no doc_id"
                result.dead_letters.append(DeadLetter(key, payload, ErrorCode.MALFORMED_EVENT.value, reason))
                continue
            if doc_id not in doc_ids:  # one build per document per batch, however many events it had
                doc_ids.append(doc_id)
        docs = self.documents.get_documents(doc_ids)
        built: list[tuple[str, str, list[Passage]]] = []
        for doc_id in doc_ids:
            doc = docs.get(doc_id)
            chunks = self.documents.chunks_of(doc_id) if doc is not None else []
            if doc is None or doc.status is DocumentStatus.DELETED or not chunks:
                self.builder.store.delete_document(doc_id)
                continue
            passages = [Passage(c.chunk_id, doc_id, c.acl_class_id, doc.title, c.text) for c in chunks]
            built.append((doc_id, doc.title, passages))
        if built:  # the batch's documents in one pass (one spaCy run, one embedding call for its new names)
            self.builder.build_many(built)
        if self.on_batch is not None and doc_ids:
            self.on_batch(time.perf_counter() - started)
        return result
